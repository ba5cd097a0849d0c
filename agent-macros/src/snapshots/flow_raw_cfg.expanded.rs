#[cfg(not(feature = "loops"))]
::core::compile_error! {
    "branch of step `ask` targets `loop`, which its `#[cfg(..)]` leaves out of this build; gate the branch's step the same way, or branch elsewhere"
}
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_match_step_ask;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_match_view_ask<'a> = <__agent_flow_match_step_ask as ::agent_core::__private::StepView<
    'a,
>>::View;
#[cfg(feature = "loops")]
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_match_step_loop;
#[cfg(feature = "loops")]
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_match_view_loop<'a> = <__agent_flow_match_step_loop as ::agent_core::__private::StepView<
    'a,
>>::View;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_match_step_done;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_match_view_done<'a> = <__agent_flow_match_step_done as ::agent_core::__private::StepView<
    'a,
>>::View;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_match_step___flow;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_match_view___flow<'a> = <__agent_flow_match_step___flow as ::agent_core::__private::StepView<
    'a,
>>::View;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_match_step___completed;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_match_view___completed<'a> = <__agent_flow_match_step___completed as ::agent_core::__private::StepView<
    'a,
>>::View;
///The `match` flow (match): name it in branch targets, `on_complete` and `Directive::go_to::<MatchFlow>()`.
#[allow(dead_code)]
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::default::Default
)]
struct MatchFlow;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_match_Data = <Order as ::agent_core::__private::FlowData>::Checked;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_match_Context = ();
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::FlowOver<__agent_flow_match_Data> for MatchFlow {}
impl ::agent_core::__private::OfData for MatchFlow {
    type Data = __agent_flow_match_Data;
}
impl ::agent_core::__private::FlowDef for MatchFlow {
    const ID: &'static str = "match";
    type Data = __agent_flow_match_Data;
    type Context = __agent_flow_match_Context;
    fn flow() -> ::core::result::Result<
        ::agent_core::__private::Flow<
            __agent_flow_match_Data,
            __agent_flow_match_Context,
        >,
        ::agent_core::__private::ConfigErrors,
    > {
        r#match::flow()
    }
    fn diagram() -> &'static str {
        r#match::DIAGRAM
    }
}
#[allow(dead_code)]
impl MatchFlow {
    /// The flow id (`FlowDef::ID`; inherent, so `BookingFlow::ID` is not ambiguous
    /// between the traits that carry it).
    pub const ID: &'static str = "match";
}
Order! {
    data_name = "Order"; data = Order; context = __agent_flow_match_Context; prefix =
    __agent_flow_match; vis = (); views { ask[] #[cfg(feature = "loops")] r#loop[] done[]
    __flow[] __completed[r#type] } checks { collect[r#type r#loop] requires[]
    depends_on[] required[r#type] optional[] cancel_clears[] template[type] } absent {}
}
mod r#match {
    #[allow(unused_imports)]
    use super::*;
    #[allow(dead_code)]
    fn ask() {}
    #[allow(dead_code)]
    #[cfg(feature = "loops")]
    fn r#loop() {}
    #[allow(dead_code)]
    fn done() {}
    fn greet(_v: r#loop::View<'_>) -> Directive {
        Directive::new()
    }
    #[allow(unused_imports)]
    use super::{
        __agent_flow_match_Data as __D, __agent_flow_match_Context as __C,
        __agent_flow_match_view___flow, __agent_flow_match_view___completed,
        __agent_flow_match_view_ask, __agent_flow_match_view_done,
    };
    #[cfg(feature = "loops")]
    #[allow(unused_imports)]
    use super::__agent_flow_match_view_loop;
    /// The steps of this flow (typed step ids).
    #[allow(non_camel_case_types, dead_code)]
    #[derive(
        ::core::fmt::Debug,
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::core::cmp::PartialEq,
        ::core::cmp::Eq,
        ::core::hash::Hash
    )]
    pub enum Step {
        ///A model step. Ask the kind.
        ask,
        ///A model step. Ask the rounds.
        #[cfg(feature = "loops")]
        r#loop,
        ///A `reply` step: "Done: {type}."
        done,
    }
    #[allow(dead_code)]
    impl Step {
        /// Every step, in declaration order.
        pub const ALL: [Step; {
            let __steps: &[()] = &[(), #[cfg(feature = "loops")] (), ()];
            __steps.len()
        }] = [Step::ask, #[cfg(feature = "loops")] Step::r#loop, Step::done];
        /// The step id.
        pub const fn id(self) -> &'static str {
            match self {
                Step::ask => "ask",
                #[cfg(feature = "loops")]
                Step::r#loop => "loop",
                Step::done => "done",
            }
        }
    }
    impl ::agent_core::__private::StepId for Step {
        type Data = __D;
        const FLOW_ID: &'static str = "match";
        fn id(self) -> &'static str {
            Step::id(self)
        }
    }
    #[diagnostic::do_not_recommend]
    impl ::agent_core::__private::StepOver<__D> for Step {}
    ///Step `ask`.
    #[allow(non_snake_case)]
    pub mod ask {
        ///The typed view of step `ask`: the fields it `requires` are plain values, the others `Unrequired` (read with `.get()`).
        #[allow(dead_code)]
        pub type View<'a> = super::__agent_flow_match_view_ask<'a>;
    }
    #[cfg(feature = "loops")]
    ///Step `loop`.
    #[allow(non_snake_case)]
    pub mod r#loop {
        ///The typed view of step `loop`: the fields it `requires` are plain values, the others `Unrequired` (read with `.get()`).
        #[allow(dead_code)]
        pub type View<'a> = super::__agent_flow_match_view_loop<'a>;
    }
    ///Step `done`.
    #[allow(non_snake_case)]
    pub mod done {
        ///The typed view of step `done`: the fields it `requires` are plain values, the others `Unrequired` (read with `.get()`).
        #[allow(dead_code)]
        pub type View<'a> = super::__agent_flow_match_view_done<'a>;
    }
    /// The flow-level view (no field required): flow hooks and `if` see it.
    #[allow(dead_code)]
    pub type View<'a> = __agent_flow_match_view___flow<'a>;
    /// The view of `on_complete_hook`: the flow's `required` fields are plain values.
    #[allow(dead_code)]
    pub type Completed<'a> = __agent_flow_match_view___completed<'a>;
    /// The flow id.
    #[allow(dead_code)]
    pub const ID: &str = "match";
    #[cfg(not(feature = "loops"))]
    /// The Mermaid diagram of the flow (steps, branch labels, cross-flow edges).
    #[allow(dead_code)]
    pub const DIAGRAM: &str = "flowchart TD\n    %% flow `match`: match\n    s_ask[\"ask · collect type\"]\n    s_done>\"done: Done: {type}.\"]\n    s_ask --> s_done\n    s_done --> e_end\n    e_end(((end)))\n";
    #[cfg(feature = "loops")]
    /// The Mermaid diagram of the flow (steps, branch labels, cross-flow edges).
    #[allow(dead_code)]
    pub const DIAGRAM: &str = "flowchart TD\n    %% flow `match`: match\n    s_ask[\"ask · collect type\"]\n    s_loop[\"loop · collect loop\"]\n    s_done>\"done: Done: {type}.\"]\n    s_ask -->|\"the user wants a loop\"| s_loop\n    s_ask --> s_loop\n    s_loop --> s_done\n    s_done --> e_end\n    e_end(((end)))\n";
    /// The Mermaid diagram of the flow.
    #[allow(dead_code)]
    pub fn diagram() -> &'static str {
        DIAGRAM
    }
    #[cfg(feature = "loops")]
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __agent_on_enter_loop;
    #[cfg(feature = "loops")]
    #[::agent_core::__private::async_trait::async_trait]
    impl ::agent_core::__private::PreHook<__D, __C> for __agent_on_enter_loop {
        async fn call(
            &self,
            __cx: &::agent_core::__private::Cx<'_, __D, __C>,
        ) -> ::agent_core::__private::RtPreDirective<__D, __C> {
            match <r#loop::View<'_>>::__new(__cx) {
                ::core::option::Option::Some(__v) => {
                    ::agent_core::__private::pre_hook_result(__cx, greet(__v))
                }
                ::core::option::Option::None => ::core::default::Default::default(),
            }
        }
    }
    /// Build the runtime flow (the runtime validates it again).
    #[allow(dead_code)]
    pub fn flow() -> ::core::result::Result<
        ::agent_core::__private::Flow<__D, __C>,
        ::agent_core::__private::ConfigErrors,
    > {
        #[allow(unused_variables)]
        let __field = |__f: &'static str| -> &'static str {
            <__D as ::agent_core::__private::DataType>::json_name(__f).unwrap_or(__f)
        };
        let __b = ::agent_core::__private::Flow::<__D, __C>::builder("match")
            .required([__field("type")])
            .cancel_after_tool("The order stays placed.");
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<__D, __C>::model("ask")
                    .prompt("Ask the kind.")
                    .collect([__field("type")])
                    .branches(
                        ::std::vec::Vec::from([
                            ::agent_core::__private::Branch::<__D, __C>::to_step("loop")
                                .when("the user wants a loop"),
                        ]),
                    ),
            );
        #[cfg(feature = "loops")]
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<__D, __C>::model("loop")
                    .prompt("Ask the rounds.")
                    .collect([__field("loop")])
                    .on_enter(__agent_on_enter_loop),
            );
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<
                    __D,
                    __C,
                >::reply(
                        "done",
                        ::agent_core::__private::reply_template::<__D>("Done: {type}."),
                    )
                    .end(),
            );
        __b.checks(<__D as ::agent_core::__private::DataType>::field_checks()).build()
    }
}
