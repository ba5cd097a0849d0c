//! Reply templates naming fields present at their step, and a step that may only end
//! its flow once a tool ran.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    pub city: String,
    pub guests: u8,
    pub booking_id: String,
}

/// Book the room.
#[tool]
async fn book_room(
    /// Hotel name
    hotel: String,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel))
}

#[flow(data = Booking, required(city))]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(prompt = "Ask how many guests.", collect(guests))]
    fn ask_guests() {}

    #[step(auto, requires(guests), branches(if |b| b.guests > 8 => big, else => confirm))]
    fn route() {}

    #[step(end, prompt = "Confirm.", tools(book_room), requires_tool(book_room))]
    fn confirm() {}

    // `city` is required by the flow, `guests` by the step; `{{` writes a brace.
    #[step(end, requires(guests), reply = "{guests} in {city} {{group}}: a specialist will call.")]
    fn big() {}
}

fn main() {
    let flow = booking::flow();
    assert!(flow.is_ok(), "{flow:?}");
}
