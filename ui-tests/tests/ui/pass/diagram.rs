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
    ask["ask · collect city, guests"]
    route{{"route (auto)"}}
    confirm["confirm"]
    large_group>"large_group: A specialist will call you."]
    ask --> route
    route -->|"if |b| b.guests > 8"| large_group
    route -->|"else"| confirm
    confirm -->|"the user wants to leave feedback"| flow_FeedbackFlow
    confirm -->|"the user changes the city"| ask
    confirm --> END
    large_group --> END
    flow_FeedbackFlow[["FeedbackFlow"]]
    on_complete[["FeedbackFlow"]]
    END -.->|on_complete| on_complete
    END(((end)))
"#;
    assert_eq!(d, expected, "\n{d}");
    assert_eq!(<BookingFlow as FlowDef>::diagram(), d);
}
