//! `#[flow]` on a module declared inside a fn body: the module reaches the items
//! generated beside it through `super::`, which a module in a block cannot see into.
//! rustc's one error (one `use` of them all), whatever the number of steps; the macro
//! cannot tell a module in a block from one at module level. See the macro reference.
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
