use agent_core::typed::prelude::*;

/// Book a room in a hotel.
#[tool(effect = once, timeout_ms = 5_000)]
async fn book_room(
    cx: ToolCx<(), ()>,
    /// Hotel name
    hotel: String,
    /// Special requests
    notes: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let _ = notes;
    // The idempotency key is the same when the same call runs again.
    Ok(ToolOutput::text(format!("booked {hotel} ({})", cx.idempotency_key())))
}

/// Look up the weather in a city.
#[tool(name = "weather", concurrency_safe, effect = pure)]
fn weather(
    /// The city, in the model's words
    #[arg(derived)]
    city: String,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("sunny in {city}")))
}

fn main() {
    // `#[tool]` turns the fn into a unit struct of the same name implementing `Tool`.
    let t: &dyn Tool<(), ()> = &book_room;
    assert_eq!(t.name(), "book_room");
    assert_eq!(t.description(), "Book a room in a hotel.");
    assert_eq!(t.parameters()["required"][0], "hotel"); // `notes` is optional
    assert_eq!(t.effect(), agent_core::tool::Effect::Once);

    let w: &dyn Tool<(), ()> = &weather;
    assert_eq!(w.name(), "weather");
    assert!(w.concurrency_safe());
}
