//! Steps, flows, fields, tools and hooks are named by their Rust names, not strings: a
//! quoted one gets one message saying to drop the quotes (and nothing from rustc).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

/// Book the room.
#[tool]
async fn book_room(city: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(city))
}

#[flow(data = Booking, on_complete = "feedback", on_exit = "left")]
mod booking {
    #[step(prompt = "Ask the city.", collect("city"), branches(
        when "the user is sure" => "confirm",
        else => confirm,
    ))]
    fn ask_city() {}

    #[step(end, prompt = "Confirm.", tools("book_room"))]
    fn confirm() {}
}

fn main() {}
