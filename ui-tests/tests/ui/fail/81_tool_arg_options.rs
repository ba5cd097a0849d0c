//! `#[arg(..)]` on a tool parameter: only `derived`, and only on a parameter the
//! model fills (not the `ToolCx`).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

/// Search hotels.
#[tool]
async fn search(
    #[arg(derived)] cx: ToolCx<Booking, ()>,
    /// What to look for
    #[arg(computed)]
    query: String,
) -> Result<ToolOutput, ToolError> {
    let _ = cx;
    Ok(ToolOutput::text(query))
}

/// Book the room.
#[tool]
async fn book(
    /// Hotel name
    hotel: String,
    /// The search words the model chose
    #[arg(derived)]
    words: Option<String>,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("{hotel} {words:?}")))
}

fn main() {}
