//! `data = ..` may name a `#[data]` type imported under another name (`use .. as ..`):
//! the import renames the type and the macro `#[data]` generates beside it alike.
use agent_core::typed::prelude::*;

mod model {
    use agent_core::typed::prelude::*;

    /// What the agent collects.
    #[data]
    pub struct Booking {
        /// City
        pub city: String,
    }
}

use model::Booking as Order;

#[flow(data = Order)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(end, prompt = "Confirm.", requires(city))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<Order, ()> {
        PreDirective::new().append_prompt(format!("City: {}", v.city))
    }
}

fn main() {
    let f = booking::flow().expect("a renamed data type builds");
    assert_eq!(f.steps().len(), 2);
}
