//! The same tool offered twice in a step.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

/// Look the hotel up.
#[tool]
async fn lookup() -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text("found"))
}

#[flow(data = Booking)]
mod booking {
    #[step(end, prompt = "Confirm.", tools(lookup, lookup))]
    fn confirm() {}
}

fn main() {}
