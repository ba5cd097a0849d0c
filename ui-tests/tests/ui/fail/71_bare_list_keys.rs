//! `branches` and `collect` written as flags, and `prompt` without its value: the
//! error is on the key.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt, collect, branches)]
    fn ask_city() {}
}

fn main() {}
