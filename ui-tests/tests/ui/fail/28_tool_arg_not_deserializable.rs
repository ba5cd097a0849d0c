//! Tool argument types that cannot be deserialized or described: one with neither
//! `Deserialize` nor `JsonSchema`, one with `Deserialize` only. Each is reported once,
//! at the argument's type.
use agent_core::__private::serde;
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

#[derive(serde::Deserialize)]
#[serde(crate = "agent_core::__private::serde")]
pub struct Room {
    pub number: u32,
}

/// Book the room.
#[tool]
async fn book(hotel: Hotel) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel.name))
}

/// Pick a room.
#[tool]
async fn pick(room: Room) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(room.number.to_string()))
}

fn main() {}
