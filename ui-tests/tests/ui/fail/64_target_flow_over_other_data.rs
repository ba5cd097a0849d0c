//! A branch (a flow or a typed step) or `on_complete` naming a flow over another `#[data]`
//! type: an agent has one data type, so `build()` could never register both.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[data]
pub struct Notes {
    /// Topic
    pub topic: String,
}

#[flow(data = Booking, on_complete = NotesFlow)]
mod booking {
    #[step(end, prompt = "Ask the city.", collect(city), branches(
        when "the user wants to take notes" => NotesFlow,
        when "the user names a topic" => notes::Step::ask_topic,
    ))]
    fn ask_city() {}
}

#[flow(data = Notes)]
mod notes {
    #[step(prompt = "Ask the topic.", collect(topic))]
    fn ask_topic() {}
}

fn main() {}
