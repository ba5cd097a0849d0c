//! A flow whose only step is compiled out has no steps; a branch to a compiled-out
//! step targets nothing; a step after a compiled-out `end` step is not unreachable.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod empty {
    #[cfg(any())]
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city), branches(
        when "the user is unsure" => help,
    ))]
    fn ask_city() {}

    #[cfg(any())]
    #[step(end, prompt = "Help the user.")]
    fn help() {}

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn main() {}
