//! The words by which a user asks for a tool's action are plain, non-empty strings:
//! a number or an empty word could never be matched against what the user wrote.
use agent_core::typed::prelude::*;

/// Refund a charge.
#[tool(effect = once, request_words = ["refund", 7])]
async fn refund(invoice: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(invoice))
}

/// Cancel an order.
#[tool(effect = once, request_words = ["cancel", " "])]
async fn cancel(order: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(order))
}

fn main() {}
