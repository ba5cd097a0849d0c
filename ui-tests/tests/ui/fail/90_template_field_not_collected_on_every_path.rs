//! A template's field must be present when the step speaks: the step `requires` it, or
//! every path to the step collects it. The flow's `required(..)` is not enough (it is
//! checked when the flow ends, after this reply), nor is a step on only one of the paths
//! or an `auto` step's `requires`.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking, required(city, guests))]
mod booking {
    #[step(reply = "Booking in {city}.")]
    fn intro() {}

    #[step(prompt = "Ask the guests.", collect(guests), branches(
        if |v| v.guests == Some(&1) => single,
        else => ask_city,
    ))]
    fn ask_guests() {}

    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(end, reply = "{guests} guests in {city}.")]
    fn done() {}

    #[step(auto, requires(city))]
    fn single() {}

    #[step(end, reply = "One guest in {city}.")]
    fn single_done() {}
}

fn main() {}
