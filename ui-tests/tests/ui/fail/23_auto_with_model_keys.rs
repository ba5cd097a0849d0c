//! `auto` with `prompt`, `collect` and `tools` (all reported).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

/// Look the hotel up.
#[tool]
async fn lookup() -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text("found"))
}

#[flow(data = Booking)]
mod booking {
    #[step(auto, prompt = "Route.", collect(city), tools(lookup))]
    fn route() {}
}

fn main() {}
