//! A flow's interruption and cancel policies: `interrupted = resume | restart | end`
//! on the flow and on a model step, `cancel_clears(..)`, and `cancel_after_tool`,
//! which a flow offering a once-tool must have.
use agent_core::typed::prelude::*;
use agent_core::flow::Interruption;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Card number, kept only while paying
    pub card: String,
    /// Booking reference
    pub reference: Option<String>,
}

/// Book the room.
#[tool(effect = once)]
async fn book_room(city: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("booked in {city}")))
}

#[flow(
    data = Booking,
    required(city),
    interrupted = restart,
    cancel_clears(reference),
    cancel_after_tool = "Your room stays booked; to cancel it, call the hotel."
)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city), interrupted = resume)]
    fn ask_city() {}

    #[step(prompt = "Ask for the card.", collect(card), interrupted = end)]
    fn ask_card() {}

    #[step(prompt = "Confirm, then book.", tools(super::book_room))]
    fn confirm() {}
}

fn main() {
    let f = booking::flow().expect("valid");
    assert_eq!(f.interrupted(), Interruption::Restart);
    assert_eq!(f.cancel_clears().len(), 1);
    assert_eq!(&*f.cancel_clears()[0], "reference");
    assert!(f.cancel_after_tool().is_some_and(|t| t.starts_with("Your room")));
    let at = |id: &str| f.step(id).and_then(|s| s.interruption());
    assert_eq!(at("ask_city"), Some(Interruption::Resume));
    assert_eq!(at("ask_card"), Some(Interruption::End));
    assert_eq!(at("confirm"), None);
}
