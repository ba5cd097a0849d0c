//! The untyped runtime `Directive` is not accepted where a typed flow takes a directive
//! (branch targets, `on_complete`, `finalize`, `on_complete_hook`, merged into a
//! `PreDirective`): its shape (here `reply` with `abort`) and targets would only be
//! checked when the turn runs. It enters through `TypedDirective::try_from_untyped`.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

fn rude() -> agent_core::directive::Directive {
    agent_core::directive::Directive::abort("rude").reply("Bye!")
}

#[flow(data = Booking, on_complete = rude())]
mod booking {
    #[step(prompt = "Ask the city.", collect(city), finalize = after, branches(
        when "the user is rude" => super::rude(),
    ))]
    fn ask_city(_v: ask_city::View<'_>) -> PreDirective<Booking, ()> {
        PreDirective::new().directive(super::rude())
    }

    fn after(_v: ask_city::View<'_>) -> agent_core::directive::Directive {
        super::rude()
    }

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn main() {}
