//! A tool argument type that cannot be deserialized nor described.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

pub struct Hotel {
    pub name: String,
}

/// Book the room.
#[tool]
async fn book(hotel: Hotel) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel.name))
}

fn main() {}
