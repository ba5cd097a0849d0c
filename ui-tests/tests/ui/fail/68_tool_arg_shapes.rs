//! Tool arguments the model's JSON cannot fill: a borrowed `&str` (take `String`), an
//! `impl Trait` (take a concrete type), and a type without `Deserialize`/`JsonSchema`
//! named by a path (reported once, on the whole path).
use agent_core::typed::prelude::*;

mod hotels {
    pub struct Hotel {
        pub name: String,
    }
}

/// Look a city up.
#[tool]
async fn lookup(city: &str, note: impl std::fmt::Display) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("{city} {note}")))
}

/// Book the room.
#[tool]
async fn book(hotel: hotels::Hotel) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel.name))
}

fn main() {}
