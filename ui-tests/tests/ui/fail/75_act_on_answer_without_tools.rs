//! `act_on_answer` holds back a step's own tools: on a step without tools, or on a
//! step that makes no model call, it would do nothing and is refused.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask for the city.", collect(city), act_on_answer)]
    fn ask_city() {}

    #[step(auto, act_on_answer)]
    fn route() {}

    #[step(end, reply = "Done.", act_on_answer)]
    fn done() {}
}

fn main() {}
