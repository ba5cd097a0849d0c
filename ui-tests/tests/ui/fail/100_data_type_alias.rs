//! `data = ..` naming a type alias of a `#[data]` type: rustc's one error, which says the
//! name is a type alias (the flow calls the macro `#[data]` generates beside the struct; an
//! alias names the type only). Name the struct, or import it under the other name.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

pub type Order = Booking;

#[flow(data = Order)]
mod booking {
    #[step(end, prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

fn main() {}
