pub async fn tutor(ctx: FlowCx<Notes, ()>) -> FlowResult {
    let name: String = ctx.ask("name", "What's your name?").await;
    ctx.say(format!("Nice to meet you, {name}.")).await;
    ctx.handoff::<ReminderFlow>()
}
///The code flow `tutor` (`#[flow]` on `tutor`): register it with `.code_flow(TutorFlow)`, hand off to it with `ctx.handoff::<TutorFlow>()`.
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::default::Default
)]
pub struct TutorFlow;
impl ::agent_core::__private::FlowRef for TutorFlow {
    const ID: &'static str = "tutor";
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::FlowOver<Notes> for TutorFlow {}
impl ::agent_core::__private::OfData for TutorFlow {
    type Data = Notes;
}
impl ::agent_core::__private::IntoCodeFlow<Notes, ()> for TutorFlow {
    fn into_code_flow(self) -> ::agent_core::__private::CodeFlow<Notes, ()> {
        ::agent_core::__private::CodeFlow::new("tutor", tutor)
            .title("English tutor")
            .when("the user wants to practise English")
    }
}
