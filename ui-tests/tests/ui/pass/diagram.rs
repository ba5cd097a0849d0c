//! The Mermaid diagram: steps with their shapes, branch labels, linear successors,
//! cross-flow edges, `on_complete`.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking, on_complete = FeedbackFlow)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city, guests))]
    fn ask() {}

    #[step(auto, requires(guests), branches(
        if |b| b.guests > 8 => large_group,
        else => confirm,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm.", branches(
        when "the user wants to leave feedback" => FeedbackFlow,
        when "the user changes the city" => ask,
    ))]
    fn confirm() {}

    #[step(end, reply = "A specialist will call you.")]
    fn large_group() {}
}

#[flow(data = Booking)]
mod feedback {
    #[step(prompt = "Ask for feedback.")]
    fn ask_feedback() {}
}

fn main() {
    let d = booking::diagram();
    let expected = r#"flowchart TD
    %% flow `booking`: booking
    s_ask["ask · collect city, guests"]
    s_route{{"route (auto)"}}
    s_confirm["confirm"]
    s_large_group>"large_group: A specialist will call you."]
    s_ask --> s_route
    s_route -->|"if |b| b.guests > 8"| s_large_group
    s_route -->|"else"| s_confirm
    s_confirm -->|"the user wants to leave feedback"| f_FeedbackFlow
    s_confirm -->|"the user changes the city"| s_ask
    s_confirm --> e_end
    s_large_group --> e_end
    f_FeedbackFlow[["FeedbackFlow"]]
    e_on_complete[["FeedbackFlow"]]
    e_end -.->|on_complete| e_on_complete
    e_end(((end)))
"#;
    assert_eq!(d, expected, "\n{d}");
    assert_eq!(<BookingFlow as FlowDef>::diagram(), d);
}
