//! A tool time limit of zero would cancel every call before it starts.
use agent_core::typed::prelude::*;

/// Book the room.
#[tool(timeout_ms = 0)]
async fn book(hotel: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel))
}

fn main() {}
