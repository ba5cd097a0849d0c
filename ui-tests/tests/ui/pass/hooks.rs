//! Every hook kind: step `prepare` (the fn body, sync and async), `on_enter`,
//! `finalize`; flow `on_enter`, `on_exit`, `on_data_update`, `on_context_update`,
//! `on_complete_hook`; predicates `if`, `skip`, flow `if`.
use agent_core::typed::directive::state::{NoPosition, NoReply, WithReply};
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[context]
pub struct Concierge {
    /// Loyalty tier
    pub tier: String,
}

/// Book the room.
#[tool]
async fn book_room(/// Hotel name
                   hotel: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("booked {hotel}")))
}

#[flow(data = Booking, context = Concierge, required(city),
       if = |v| v.context().tier != "banned",
       on_enter = greet, on_exit = bye, on_data_update = data_changed,
       on_context_update = context_changed, on_complete_hook = done)]
mod booking {
    fn greet(v: View<'_>) -> PreDirective<Booking, Concierge> {
        PreDirective::new().append_prompt(format!("Tier: {}", v.context().tier))
    }
    fn bye(_v: View<'_>) {}
    async fn data_changed(v: View<'_>) {
        let _ = v.city;
    }
    fn context_changed(_v: View<'_>) {}
    fn done(v: Completed<'_>) -> TypedDirective<NoPosition, NoReply, Booking> {
        // `city` is required by the flow: a plain value here.
        let city: String = v.city;
        Directive::data(Booking::patch().city(city))
    }

    #[step(prompt = "Ask the city.", collect(city), on_enter = entering)]
    fn ask_city() {}

    fn entering(_v: ask_city::View<'_>) -> PreDirective<Booking, Concierge> {
        PreDirective::new()
    }

    #[step(prompt = "Ask how many guests.", collect(guests), requires(city),
           skip = |v| v.guests.is_some(), finalize = after_guests)]
    async fn ask_guests(v: ask_guests::View<'_>) -> PreDirective<Booking, Concierge> {
        // `city` is required here: a plain `String`; `guests` is not: an `Unrequired`,
        // read as the `Option` it holds.
        let city: String = v.city;
        let guests: Option<&u8> = v.guests.get();
        PreDirective::new()
            .append_prompt(format!("The guest is going to {city} ({guests:?})."))
            .inject_tool(book_room)
    }

    fn after_guests(_v: ask_guests::View<'_>) -> impl IntoDirective<Booking> {
        Directive::new()
    }

    #[step(prompt = "Upsell.", if = |v| v.context().tier == "gold")]
    fn upsell(_v: upsell::View<'_>) -> PreDirective<Booking, Concierge, NoPosition, WithReply> {
        PreDirective::new().halt().reply("Welcome back!")
    }

    #[step(end, prompt = "Confirm.", when = "the user is ready", requires(city, guests))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, Concierge> {
        let total: u8 = v.guests;
        PreDirective::new().append_prompt(format!("{total} guests in {}", v.city))
    }
}

fn main() {
    let f = booking::flow().expect("valid");
    assert_eq!(f.steps().len(), 4);
}
