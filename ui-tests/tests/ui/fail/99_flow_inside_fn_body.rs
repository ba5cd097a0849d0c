//! `#[flow]` on a module declared inside a fn body: the generated items name the
//! data type through `super::`, which a module in a block cannot see into. rustc's
//! errors, one per generated name (five here, one more per step); the macro cannot tell
//! a module in a block from one at module level. See the macro reference.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

fn main() {
    #[flow(data = Booking)]
    mod booking {
        #[step(end, prompt = "Ask the city.", collect(city))]
        fn ask_city() {}
    }
}
