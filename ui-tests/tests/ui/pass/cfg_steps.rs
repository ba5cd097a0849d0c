//! `#[cfg]` on a step: a step compiled out is not a step (not in `Step`, the views,
//! `flow()` or `DIAGRAM`), and not "unreachable"; the steps after it are reached in its
//! place. A step may have alternative definitions under complementary `#[cfg]`s.
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    // Compiled out: without it, `ask_guests` follows `ask_city`.
    #[cfg(any())]
    #[step(end, prompt = "Never.", finalize = missing_hook)]
    fn gone(v: gone::View<'_>) -> PreDirective<Booking, ()> {
        PreDirective::new().append_prompt(format!("{:?}", v.city))
    }

    #[cfg(all())]
    #[step(prompt = "Ask how many guests.", collect(guests))]
    fn ask_guests() {}

    // Alternative definitions of one step under complementary `#[cfg]`s.
    #[cfg(any())]
    #[step(end, reply = "Booked.")]
    fn done() {}

    #[cfg(not(any()))]
    #[step(end, prompt = "Confirm the booking.")]
    fn done() {}
}

fn main() {
    let f = booking::flow().expect("valid without the cfg'd-out step");
    let ids: Vec<&str> = f.steps().iter().map(|s| s.id()).collect();
    assert_eq!(ids, ["ask_city", "ask_guests", "done"]);
    assert!(matches!(
        f.step("done").expect("done").kind(),
        agent_core::step::StepKind::Model
    ));
    assert_eq!(booking::Step::ALL.len(), 3);
    assert_eq!(booking::Step::ALL[1].id(), "ask_guests");
    // The diagram of this build: no `gone`, the model-step `done`.
    let expected = r#"flowchart TD
    %% flow `booking`: booking
    s_ask_city["ask_city · collect city"]
    s_ask_guests["ask_guests · collect guests"]
    s_done["done"]
    s_ask_city --> s_ask_guests
    s_ask_guests --> s_done
    s_done --> e_end
    e_end(((end)))
"#;
    assert_eq!(booking::DIAGRAM, expected, "\n{}", booking::DIAGRAM);
    assert_eq!(<BookingFlow as FlowDef>::diagram(), expected);
}
