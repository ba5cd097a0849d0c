//! A handoff names its target by type: a flow that does not exist is a compile error.
use agent_core::typed::prelude::*;

#[flow]
async fn reminder(ctx: FlowCx<(), ()>) -> FlowResult {
    ctx.handoff::<TutorFlow>()
}

#[flow]
async fn tutor(ctx: FlowCx<(), ()>) -> FlowResult {
    ctx.handoff::<RemindFlow>()
}

fn main() {}
