//! An unknown effect class: the error suggests the closest one and lists them all.
use agent_core::typed::prelude::*;

/// Charge the card.
#[tool(effect = onse)]
async fn charge(amount_cents: u64) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("charged {amount_cents}")))
}

/// Refund the card.
#[tool(effect = "once")]
async fn refund(amount_cents: u64) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("refunded {amount_cents}")))
}

fn main() {}
