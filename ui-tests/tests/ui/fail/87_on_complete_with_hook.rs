//! `on_complete` and `on_complete_hook` both say what follows the flow's completion;
//! together they are a compile error (not a `flow()` error at run time).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking, on_complete = Directive::complete(), on_complete_hook = after)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    fn after(_v: Completed<'_>) -> impl IntoDirective<Booking> {
        Directive::new().reply("Done.")
    }
}

#[flow(data = Booking, on_complete = FeedbackFlow, on_complete_hook = thanks)]
mod other {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    fn thanks(_v: Completed<'_>) -> impl IntoDirective<Booking> {
        Directive::new().reply("Thanks.")
    }
}

#[flow(data = Booking)]
mod feedback {
    #[step(prompt = "Ask for feedback.")]
    fn ask() {}
}

fn main() {}
