//! A typed directive carries the data type of its patches and targets: in a flow over
//! `Booking`, one that names a flow over `Survey` or writes a `Survey` patch is a
//! compile error wherever it comes from (a literal, a helper fn, a generic, a closure,
//! a hook), and so is an `initial_data` patch of `Survey`.
use agent_core::typed::prelude::*;
use agent_core::typed::directive::state::{JumpToFlow, NoPosition, NoReply};

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[data]
pub struct Survey {
    /// Score
    pub score: String,
}

fn to_survey() -> TypedDirective<JumpToFlow, NoReply, Survey> {
    Directive::go_to::<SurveyFlow>()
}

fn jump<F: OfData>() -> TypedDirective<JumpToFlow, NoReply, F::Data> {
    Directive::go_to::<F>()
}

fn score() -> TypedDirective<NoPosition, NoReply, Survey> {
    Directive::data(Survey::patch().score("5"))
}

#[flow(data = Booking, initial_data = Survey::patch().score("1"), on_complete = score())]
mod booking {
    #[step(prompt = "Ask the city.", collect(city), finalize = after, branches(
        when "the user wants the survey" => Directive::go_to::<SurveyFlow>(),
        when "the user rates us" => Directive::data(Survey::patch().score("1")),
        when "the user wants it now" => super::to_survey(),
        when "the user insists" => super::jump::<SurveyFlow>(),
        when "the user asks twice" => (|| Directive::go_to::<SurveyFlow>())(),
        when "the user names a question" => Directive::go_to_step(survey::Step::ask_score),
    ))]
    fn ask_city(_v: ask_city::View<'_>) -> PreDirective<Booking, ()> {
        PreDirective::new().data(Survey::patch().score("2"))
    }

    fn after(_v: ask_city::View<'_>) -> impl IntoDirective<Booking> {
        let d = Directive::go_to::<SurveyFlow>();
        d
    }

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

#[flow(data = Survey)]
mod survey {
    #[step(prompt = "Ask the score.", collect(score))]
    fn ask_score() {}
}

fn main() {}
