//! `requires_tool` names a tool item: a misspelled one is a compile error.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    pub city: String,
}

/// Book the room.
#[tool]
async fn book_room(/// Hotel name
    hotel: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel))
}

#[flow(data = Booking)]
mod booking {
    #[step(end, prompt = "Confirm.", tools(book_room), requires_tool(bok_room))]
    fn confirm() {}
}

fn main() {}
