//! A flow that offers a once-tool says what a cancel says after it ran: the tool's
//! effect is not undone, so the built-in "I've stopped it" would be false. Checked
//! for a `#[tool]` named by path in the flow's or a step's `tools(..)`; an idempotent
//! tool needs nothing.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

/// Book the room.
#[tool(effect = once)]
async fn book_room(city: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("booked in {city}")))
}

/// Look the hotel up.
#[tool(effect = idempotent)]
async fn find_hotel(city: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("hotels in {city}")))
}

#[flow(data = Booking, required(city))]
mod booking {
    #[step(prompt = "Ask the city.", collect(city), tools(super::find_hotel))]
    fn ask_city() {}

    #[step(prompt = "Confirm, then book.", tools(super::book_room))]
    fn confirm() {}
}

#[flow(data = Booking, required(city), tools(book_room))]
mod quick {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

fn main() {}
