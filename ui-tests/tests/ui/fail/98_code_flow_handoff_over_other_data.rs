//! A code flow hands off only to flows over its own data type: `ctx.handoff::<F>()`
//! naming a flow over another `#[data]` type is a compile error (not a `build()` pass
//! and a turn that fails).
use agent_core::typed::prelude::*;

#[data]
pub struct Survey {
    /// Score
    pub score: String,
}

#[flow(data = Survey)]
mod survey {
    #[step(prompt = "Ask the score.", collect(score))]
    fn ask_score() {}
}

#[flow]
async fn reminder(ctx: FlowCx<(), ()>) -> FlowResult {
    ctx.handoff::<SurveyFlow>()
}

fn main() {}
