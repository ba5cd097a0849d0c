//! `.directive(..)` merges into a `PreDirective` or `ToolOutput`. A `PreDirective`'s type
//! records its reply and position, so the compiler rejects a `reply` with an `abort`;
//! a `ToolOutput`'s does not, and the `#[tool]` macro sees two position fields written
//! in one expression.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city(_v: ask_city::View<'_>) -> impl IntoPreDirective<Booking, ()> {
        PreDirective::new()
            .reply("bye")
            .directive(Directive::abort("spam"))
    }

    #[step(end, prompt = "Confirm.", on_enter = entering)]
    fn confirm() {}

    fn entering(_v: confirm::View<'_>) -> impl IntoPreDirective<Booking, ()> {
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
