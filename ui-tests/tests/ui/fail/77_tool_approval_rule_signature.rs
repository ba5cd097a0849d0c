//! An approval rule must be a fn `(&serde_json::Value) -> bool`: one taking the typed
//! argument, or returning something else, is reported at the rule's path.
use agent_core::typed::prelude::*;

fn over_limit(amount_cents: u64) -> bool {
    amount_cents > 1000
}

/// Refund the card.
#[tool(approval = over_limit)]
async fn refund(amount_cents: u64) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("refunded {amount_cents}")))
}

/// Charge the card.
#[tool(approval = "always")]
async fn charge(amount_cents: u64) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("charged {amount_cents}")))
}

fn main() {}
