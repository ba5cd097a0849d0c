//! A `#[tool(..)]` key given twice is an error on the second (as in `#[flow]` and
//! `#[step]`), not "the last one wins"; the rest of the list is still read, and
//! `#[arg(derived, derived)]` is reported the same way.
use agent_core::typed::prelude::*;

/// Book a room.
#[tool(name = "book", effect = once, name = "reserve", timeout_ms = 0, effect = pure)]
async fn book_room(
    /// Hotel
    #[arg(derived, derived)]
    hotel: String,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel))
}

fn main() {
    let _ = book_room;
}
