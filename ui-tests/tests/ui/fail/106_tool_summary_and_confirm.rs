//! A tool's summary is a template over its own arguments: a placeholder that names no
//! argument could never be filled. `confirm` takes a bool or stands alone.
use agent_core::typed::prelude::*;

/// Refund a charge.
#[tool(effect = once, summary = "Refund {invoce} for {amount}")]
async fn refund(invoice: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(invoice))
}

/// Cancel an order.
#[tool(confirm = "yes")]
async fn cancel(order: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(order))
}

fn main() {}
