use agent_core::typed::prelude::*;

/// What the concierge collects.
#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Check-in date, ISO 8601
    pub check_in: String,
    /// Number of guests
    pub guests: u8,
    /// Confirmation id
    pub booking_id: String,
}

/// What the application knows.
#[context]
pub struct Concierge {
    /// Loyalty tier
    pub tier: String,
}

/// Book the room.
#[tool]
async fn book_room(
    _cx: ToolCx<Booking, Concierge>,
    /// Hotel name
    hotel: String,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text("booked")
        .data(Booking::patch().booking_id(format!("BK-{hotel}")))
        .directive(Directive::complete()))
}

#[flow(title = "Hotel booking", when = "the user wants to book a hotel room",
       data = Booking, context = Concierge, required(city, check_in, guests),
       on_complete = FeedbackFlow)]
mod booking {
    #[step(prompt = "Ask which city the user wants to stay in.", collect(city))]
    fn ask_city() {}

    #[step(prompt = "Ask for the check-in date.", collect(check_in), requires(city))]
    fn ask_date() {}

    #[step(prompt = "Ask how many guests.", collect(guests))]
    fn ask_guests() {}

    // No model call: code-only branches over the step's typed view.
    #[step(auto, requires(city, check_in, guests), branches(
        if |b| b.guests > 8 => large_group,
        else => confirm,
    ))]
    fn route() {}

    /// The fn body runs before the step's model call; `requires` fields are plain values.
    #[step(end, prompt = "Confirm the booking.", tools(book_room), requires(city),
           branches(
               when "the user wants another date" => ask_date,
               when "the user gives up" => Directive::abort("gave up"),
           ))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, Concierge> {
        PreDirective::new().append_prompt(format!("City: {}; tier: {}", v.city, v.context().tier))
    }

    #[step(end, reply = "A specialist will call you about groups of {guests}.", requires(guests))]
    fn large_group() {}
}

#[flow(title = "Feedback", data = Booking, context = Concierge)]
mod feedback {
    #[step(prompt = "Ask how the stay went.")]
    fn ask_feedback() {}
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `#[flow]` generates the flow type, the typed step ids and the runtime flow.
    assert_eq!(BookingFlow::ID, "booking");
    assert_eq!(booking::Step::confirm.id(), "confirm");
    assert!(booking::diagram().starts_with("flowchart TD"));

    let agent: Agent<Booking, Concierge> = Agent::builder()
        .provider(agent_core::testing::ScriptedProvider::new())
        .flow(booking::flow()?)
        .flow(feedback::flow()?)
        .tool(book_room.arc())
        .build()?;
    let _ = agent;
    Ok(())
}
