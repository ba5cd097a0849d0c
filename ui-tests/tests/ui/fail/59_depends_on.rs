//! `depends_on(..)` names fields of the data type, on a step that collects something
//! (a correction of a named field clears what the step collects).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Hotel
    pub hotel: String,
}

#[flow(data = Booking, required(city, hotel))]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(prompt = "Ask the hotel.", collect(hotel), depends_on(citty))]
    fn ask_hotel() {}

    #[step(end, prompt = "Confirm.", depends_on(city))]
    fn confirm() {}
}

fn main() {}
