//! `.directive(..)` merges into a `PreDirective` or `ToolOutput`, and their declared
//! types carry no state, so these chains type-check; written in one expression, the
//! macros see them: a `reply` with an `abort`, and two position fields.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city(_v: ask_city::View<'_>) -> PreDirective<Booking, ()> {
        PreDirective::new()
            .reply("bye")
            .directive(Directive::abort("spam"))
    }

    #[step(end, prompt = "Confirm.", on_enter = entering)]
    fn confirm() {}

    fn entering(_v: confirm::View<'_>) -> PreDirective<Booking, ()> {
        PreDirective::new()
            .directive(Directive::complete_then(Directive::abort("spam")))
            .reply("bye")
    }
}

#[flow(data = Booking)]
mod feedback {
    #[step(prompt = "Ask for feedback.")]
    fn ask() {}
}

/// Book the room.
#[tool]
async fn book(hotel: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(hotel)
        .directive(Directive::complete())
        .directive(Directive::go_to::<FeedbackFlow>()))
}

fn main() {}
