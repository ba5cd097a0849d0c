//! `data = ..` naming a `#[data]` type imported under another name (`use .. as ..`)
//! works (pass case `data_type_renamed`); a field it lacks is our message, naming the
//! type as the flow wrote it.
use agent_core::typed::prelude::*;

mod model {
    use agent_core::typed::prelude::*;

    #[data]
    pub struct Booking {
        /// City
        pub city: String,
    }
}

use model::Booking as Order;

#[flow(data = Order)]
mod booking {
    #[step(end, prompt = "Ask the city.", collect(citty))]
    fn ask_city() {}
}

fn main() {}
