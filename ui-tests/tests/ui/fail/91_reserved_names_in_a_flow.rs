//! A step (or another item of the flow module) cannot take a name `#[flow]` generates
//! there (`flow`, `diagram`, `Step`, `View`, `Completed`, `ID`, `DIAGRAM`): one message
//! each, and none from rustc about the clash.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn flow() {}

    #[step(prompt = "Draw.")]
    fn diagram() {}

    #[allow(non_snake_case)]
    #[step(end, prompt = "Confirm.")]
    fn Step() {}

    #[allow(dead_code)]
    const ID: u8 = 1;
}

fn main() {}
