//! A tool without a description.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[tool]
async fn book(hotel: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel))
}

fn main() {}
