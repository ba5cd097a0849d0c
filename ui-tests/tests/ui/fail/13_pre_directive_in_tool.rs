//! A pre-LLM-only field (`halt`) in a tool result.
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
async fn lookup(cx: ToolCx<Booking, ()>) -> Result<ToolOutput, ToolError> {
    let _ = cx;
    Ok(ToolOutput::text("found").directive(PreDirective::<Booking, ()>::new().halt()))
}

fn main() {}
