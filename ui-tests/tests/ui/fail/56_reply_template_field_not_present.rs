//! A reply template may only name fields present at its step (its `requires`, or
//! collected on every path to it): `{booking_id}` may be empty here.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    pub city: String,
    pub booking_id: String,
}

#[flow(data = Booking, required(city))]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(end, reply = "Booked {booking_id} in {city}.")]
    fn done() {}
}

fn main() {}
