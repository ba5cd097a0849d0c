use agent_core::typed::prelude::*;

// A code flow: an async fn that asks, says and hands over; a paused flow resumes by
// running the fn again against what it recorded.
#[flow(title = "English tutor", when = "the user wants to practise English")]
async fn tutor(ctx: FlowCx<(), ()>) -> FlowResult {
    let name: String = ctx.ask("name", "What's your name?").await;
    ctx.say(format!("Nice to meet you, {name}.")).await;
    ctx.handoff::<ReminderFlow>()
}

#[flow(id = "remind", when = "the user wants a reminder")]
async fn reminder(ctx: FlowCx<(), ()>) -> FlowResult {
    let task: String = ctx.ask("task", "What should I remind you about?").await;
    ctx.say(format!("Noted: {task}")).await;
    ctx.end("reminder_scheduled")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = Agent::<(), ()>::builder()
        .provider(agent_core::testing::ScriptedProvider::new())
        .code_flow(TutorFlow)
        .code_flow(ReminderFlow)
        .build()?;
    let _ = agent;
    Ok(())
}
