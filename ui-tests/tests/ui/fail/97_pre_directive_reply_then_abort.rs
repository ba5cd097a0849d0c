//! A `PreDirective`'s type records its reply and position: merging an `abort` after a
//! `reply`, or a second position, is a compile error wherever the merged directive
//! comes from (one expression, a variable, a helper fn, a generic, a closure).
use agent_core::typed::prelude::*;
use agent_core::typed::directive::state::{AbortConversation, NoReply};

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

fn spam() -> TypedDirective<AbortConversation, NoReply> {
    Directive::new().abort("spam")
}

fn same<T>(t: T) -> T {
    t
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city(_v: ask_city::View<'_>) -> impl IntoPreDirective<Booking, ()> {
        PreDirective::new().reply("bye").directive(Directive::new().abort("spam"))
    }

    #[step(prompt = "Ask again.", collect(city))]
    fn ask_again(_v: ask_again::View<'_>) -> impl IntoPreDirective<Booking, ()> {
        let d = Directive::abort("spam");
        PreDirective::new().reply("bye").directive(d)
    }

    #[step(prompt = "Ask once more.", collect(city))]
    fn ask_once_more(_v: ask_once_more::View<'_>) -> impl IntoPreDirective<Booking, ()> {
        PreDirective::new().reply("bye").directive(spam())
    }

    #[step(prompt = "Ask through a generic.", collect(city))]
    fn ask_generic(_v: ask_generic::View<'_>) -> impl IntoPreDirective<Booking, ()> {
        PreDirective::new().reply("bye").directive(same(Directive::abort("spam")))
    }

    #[step(prompt = "Ask last.", collect(city))]
    fn ask_last(_v: ask_last::View<'_>) -> impl IntoPreDirective<Booking, ()> {
        let f = || Directive::abort("spam");
        PreDirective::new().reply("bye").directive(f())
    }

    #[step(end, prompt = "Confirm.")]
    fn confirm(_v: confirm::View<'_>) -> impl IntoPreDirective<Booking, ()> {
        let p = PreDirective::new().directive(Directive::complete());
        p.directive(Directive::reset())
    }
}

fn main() {}
