//! A tool name model APIs reject.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

/// Book the room.
#[tool(name = "book room!")]
async fn book(hotel: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel))
}

fn main() {}
