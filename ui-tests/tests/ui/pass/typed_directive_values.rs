//! Directive values that are typed correctly compile wherever they come from: a helper
//! fn, a generic, a closure, a variable, branches that build different shapes (erased
//! with `.erase()`, `.over::<D>()`), and a runtime directive through the one conversion,
//! `TypedDirective::try_from_untyped`, whose error the hook handles.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_core::typed::directive::state::{Checked, JumpToFlow, NoPosition, NoReply, WithReply};
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// A note
    pub note: String,
}

fn to_feedback() -> TypedDirective<JumpToFlow, NoReply, Booking> {
    Directive::go_to::<FeedbackFlow>()
}

fn jump<F: OfData>() -> TypedDirective<JumpToFlow, NoReply, F::Data> {
    Directive::go_to::<F>()
}

fn noted() -> TypedDirective<NoPosition, NoReply, Booking> {
    Directive::data(Booking::patch().note("noted"))
}

/// A runtime directive (parsed from JSON, say) enters through the conversion.
fn from_runtime(
    raw: agent_core::directive::Directive,
) -> TypedDirective<Checked, Checked, Booking> {
    match TypedDirective::try_from_untyped(raw) {
        Ok(d) => d,
        Err(_) => Directive::reset().erase().over(),
    }
}

#[flow(data = Booking, initial_data = Booking::patch().note("new"), on_complete = to_feedback())]
mod booking {
    #[step(prompt = "Ask the city.", collect(city), finalize = after, branches(
        when "the user wants feedback" => super::to_feedback(),
        when "the user insists" => super::jump::<FeedbackFlow>(),
        when "the user asks twice" => (|| Directive::go_to::<FeedbackFlow>())(),
        when "the user takes a note" => super::noted().complete(),
        when "the user is done" => Directive::complete().over::<Booking>(),
        when "the user sends a command" => super::from_runtime(agent_core::directive::Directive::complete()),
        when "the user wants the confirmation" => Directive::go_to_step(Step::confirm),
    ))]
    fn ask_city(v: ask_city::View<'_>) -> impl IntoPreDirective<Booking, ()> {
        let d = Directive::go_to::<FeedbackFlow>();
        if v.message() == "feedback" {
            PreDirective::new().directive(d).reply("Thanks!").erase()
        } else {
            PreDirective::new()
                .data(Booking::patch().note("asked"))
                .erase()
        }
    }

    fn after(v: ask_city::View<'_>) -> TypedDirective<Checked, Checked, Booking> {
        let note = Directive::data(Booking::patch().note("after"));
        if v.message() == "done" {
            note.complete().erase()
        } else {
            Directive::reply("Noted.").erase().over()
        }
    }

    #[step(end, prompt = "Confirm.")]
    fn confirm(_v: confirm::View<'_>) -> PreDirective<Booking, (), NoPosition, WithReply> {
        PreDirective::new().halt().reply("Confirmed.")
    }
}

#[flow(data = Booking)]
mod feedback {
    #[step(prompt = "Ask for feedback.")]
    fn ask() {}
}

/// A code flow hands off to a flow over its own data type.
#[flow(when = "the user wants a reminder")]
async fn reminder(ctx: FlowCx<Booking, ()>) -> FlowResult {
    ctx.handoff::<FeedbackFlow>()
}

fn main() {
    booking::flow().expect("valid");
    let raw = agent_core::directive::Directive::abort("rude").reply("Bye!");
    let err = TypedDirective::<_, _, Booking>::try_from_untyped(raw).unwrap_err();
    assert!(matches!(err, UntypedDirectiveError::Shape(_)), "{err:?}");
    let mut patch = agent_core::data::Patch::new();
    patch.insert("score".into(), "5".into());
    let raw = agent_core::directive::Directive::new().data(patch);
    let err = TypedDirective::<_, _, Booking>::try_from_untyped(raw).unwrap_err();
    assert!(
        matches!(&err, UntypedDirectiveError::UnknownField { key, .. } if key == "score"),
        "{err:?}"
    );
    let ok = TypedDirective::<_, _, Booking>::try_from_untyped(
        agent_core::directive::Directive::complete(),
    );
    assert!(ok.is_ok());
}
