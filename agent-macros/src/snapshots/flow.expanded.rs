#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_booking_step_ask_city;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_booking_view_ask_city<'a> = <__agent_flow_booking_step_ask_city as ::agent_core::__private::StepView<
    'a,
>>::View;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_booking_step_ask_hotel;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_booking_view_ask_hotel<'a> = <__agent_flow_booking_step_ask_hotel as ::agent_core::__private::StepView<
    'a,
>>::View;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_booking_step_route;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_booking_view_route<'a> = <__agent_flow_booking_step_route as ::agent_core::__private::StepView<
    'a,
>>::View;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_booking_step_confirm;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_booking_view_confirm<'a> = <__agent_flow_booking_step_confirm as ::agent_core::__private::StepView<
    'a,
>>::View;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_booking_step_large_group;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_booking_view_large_group<'a> = <__agent_flow_booking_step_large_group as ::agent_core::__private::StepView<
    'a,
>>::View;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_booking_step___flow;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_booking_view___flow<'a> = <__agent_flow_booking_step___flow as ::agent_core::__private::StepView<
    'a,
>>::View;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
struct __agent_flow_booking_step___completed;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_booking_view___completed<'a> = <__agent_flow_booking_step___completed as ::agent_core::__private::StepView<
    'a,
>>::View;
///The `booking` flow (Hotel booking): name it in branch targets, `on_complete` and `Directive::go_to::<BookingFlow>()`.
#[allow(dead_code)]
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::default::Default
)]
struct BookingFlow;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_booking_Data = <Booking as ::agent_core::__private::FlowData>::Checked;
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
type __agent_flow_booking_Context = Concierge;
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::FlowOver<__agent_flow_booking_Data> for BookingFlow {}
impl ::agent_core::__private::OfData for BookingFlow {
    type Data = __agent_flow_booking_Data;
}
impl ::agent_core::__private::FlowDef for BookingFlow {
    const ID: &'static str = "booking";
    type Data = __agent_flow_booking_Data;
    type Context = __agent_flow_booking_Context;
    fn flow() -> ::core::result::Result<
        ::agent_core::__private::Flow<
            __agent_flow_booking_Data,
            __agent_flow_booking_Context,
        >,
        ::agent_core::__private::ConfigErrors,
    > {
        booking::flow()
    }
    fn diagram() -> &'static str {
        booking::DIAGRAM
    }
}
#[allow(dead_code)]
impl BookingFlow {
    /// The flow id (`FlowDef::ID`; inherent, so `BookingFlow::ID` is not ambiguous
    /// between the traits that carry it).
    pub const ID: &'static str = "booking";
}
Booking! {
    data_name = "Booking"; data = Booking; context = __agent_flow_booking_Context; prefix
    = __agent_flow_booking; vis = (); views { ask_city[] ask_hotel[] route[guests]
    confirm[guests] large_group[] __flow[] __completed[city guests] } checks {
    collect[city hotel] requires[guests guests] depends_on[city] required[city guests]
    optional[] cancel_clears[hotel] template[guests] } absent {}
}
mod booking {
    #[allow(unused_imports)]
    use super::*;
    #[allow(dead_code)]
    fn ask_city() {}
    #[allow(dead_code)]
    fn ask_hotel() {}
    #[allow(dead_code)]
    fn route() {}
    #[allow(dead_code)]
    async fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, Concierge> {
        PreDirective::new().append_prompt(v.context().tier.clone())
    }
    fn done(_v: confirm::View<'_>) -> impl IntoDirective<Booking> {
        Directive::complete()
    }
    #[allow(dead_code)]
    fn large_group() {}
    #[allow(unused_imports)]
    use super::{
        __agent_flow_booking_Data as __D, __agent_flow_booking_Context as __C,
        __agent_flow_booking_view___flow, __agent_flow_booking_view___completed,
        __agent_flow_booking_view_ask_city, __agent_flow_booking_view_ask_hotel,
        __agent_flow_booking_view_route, __agent_flow_booking_view_confirm,
        __agent_flow_booking_view_large_group,
    };
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
        ///A model step. Ask the city.
        ask_city,
        ///A model step. Ask the hotel.
        ask_hotel,
        ///An `auto` step (no model call).
        route,
        ///A model step. Confirm.
        confirm,
        ///A `reply` step: "A specialist will call you."
        large_group,
    }
    #[allow(dead_code)]
    impl Step {
        /// Every step, in declaration order.
        pub const ALL: [Step; 5usize] = [
            Step::ask_city,
            Step::ask_hotel,
            Step::route,
            Step::confirm,
            Step::large_group,
        ];
        /// The step id.
        pub const fn id(self) -> &'static str {
            match self {
                Step::ask_city => "ask_city",
                Step::ask_hotel => "ask_hotel",
                Step::route => "route",
                Step::confirm => "confirm",
                Step::large_group => "large_group",
            }
        }
    }
    impl ::agent_core::__private::StepId for Step {
        type Data = __D;
        const FLOW_ID: &'static str = "booking";
        fn id(self) -> &'static str {
            Step::id(self)
        }
    }
    #[diagnostic::do_not_recommend]
    impl ::agent_core::__private::StepOver<__D> for Step {}
    ///Step `ask_city`.
    #[allow(non_snake_case)]
    pub mod ask_city {
        ///The typed view of step `ask_city`: the fields it `requires` are plain values, the others `Unrequired` (read with `.get()`).
        #[allow(dead_code)]
        pub type View<'a> = super::__agent_flow_booking_view_ask_city<'a>;
    }
    ///Step `ask_hotel`.
    #[allow(non_snake_case)]
    pub mod ask_hotel {
        ///The typed view of step `ask_hotel`: the fields it `requires` are plain values, the others `Unrequired` (read with `.get()`).
        #[allow(dead_code)]
        pub type View<'a> = super::__agent_flow_booking_view_ask_hotel<'a>;
    }
    ///Step `route`.
    #[allow(non_snake_case)]
    pub mod route {
        ///The typed view of step `route`: the fields it `requires` are plain values, the others `Unrequired` (read with `.get()`).
        #[allow(dead_code)]
        pub type View<'a> = super::__agent_flow_booking_view_route<'a>;
    }
    ///Step `confirm`.
    #[allow(non_snake_case)]
    pub mod confirm {
        ///The typed view of step `confirm`: the fields it `requires` are plain values, the others `Unrequired` (read with `.get()`).
        #[allow(dead_code)]
        pub type View<'a> = super::__agent_flow_booking_view_confirm<'a>;
    }
    ///Step `large_group`.
    #[allow(non_snake_case)]
    pub mod large_group {
        ///The typed view of step `large_group`: the fields it `requires` are plain values, the others `Unrequired` (read with `.get()`).
        #[allow(dead_code)]
        pub type View<'a> = super::__agent_flow_booking_view_large_group<'a>;
    }
    /// The flow-level view (no field required): flow hooks and `if` see it.
    #[allow(dead_code)]
    pub type View<'a> = __agent_flow_booking_view___flow<'a>;
    /// The view of `on_complete_hook`: the flow's `required` fields are plain values.
    #[allow(dead_code)]
    pub type Completed<'a> = __agent_flow_booking_view___completed<'a>;
    /// The flow id.
    #[allow(dead_code)]
    pub const ID: &str = "booking";
    /// The Mermaid diagram of the flow (steps, branch labels, cross-flow edges).
    #[allow(dead_code)]
    pub const DIAGRAM: &str = "flowchart TD\n    %% flow `booking`: Hotel booking\n    s_ask_city[\"ask_city · collect city\"]\n    s_ask_hotel[\"ask_hotel · collect hotel\"]\n    s_route{{\"route (auto)\"}}\n    s_confirm[\"confirm\"]\n    s_large_group>\"large_group: A specialist will call you.\"]\n    s_ask_city --> s_ask_hotel\n    s_ask_hotel --> s_route\n    s_route -->|\"if |b| b.guests > 8\"| s_large_group\n    s_route -->|\"else\"| s_confirm\n    s_confirm -->|\"the user asks about pets\"| f_PetsFlow\n    s_confirm -->|\"the user wants to leave feedback\"| c_feedback_Step_ask\n    s_confirm -->|\"the user gives up\"| d_1\n    s_confirm --> e_end\n    s_large_group --> e_end\n    f_PetsFlow[[\"PetsFlow\"]]\n    c_feedback_Step_ask[[\"feedback::Step::ask\"]]\n    d_1([\"Directive::abort(#quot;gave up#quot;)\"])\n    e_on_complete[[\"FeedbackFlow\"]]\n    e_end -.->|on_complete| e_on_complete\n    e_end(((end)))\n";
    /// The Mermaid diagram of the flow.
    #[allow(dead_code)]
    pub fn diagram() -> &'static str {
        DIAGRAM
    }
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __agent_prepare_confirm;
    #[::agent_core::__private::async_trait::async_trait]
    impl ::agent_core::__private::PreHook<__D, __C> for __agent_prepare_confirm {
        async fn call(
            &self,
            __cx: &::agent_core::__private::Cx<'_, __D, __C>,
        ) -> ::agent_core::__private::RtPreDirective<__D, __C> {
            match <confirm::View<'_>>::__new(__cx) {
                ::core::option::Option::Some(__v) => {
                    ::agent_core::__private::pre_hook_result(__cx, confirm(__v).await)
                }
                ::core::option::Option::None => ::core::default::Default::default(),
            }
        }
    }
    #[doc(hidden)]
    #[allow(non_camel_case_types)]
    struct __agent_finalize_confirm;
    #[::agent_core::__private::async_trait::async_trait]
    impl ::agent_core::__private::PostHook<__D, __C> for __agent_finalize_confirm {
        async fn call(
            &self,
            __cx: &::agent_core::__private::Cx<'_, __D, __C>,
        ) -> ::agent_core::__private::RtDirective {
            match <confirm::View<'_>>::__new(__cx) {
                ::core::option::Option::Some(__v) => {
                    ::agent_core::__private::IntoDirective::<
                        __D,
                    >::into_directive(done(__v))
                }
                ::core::option::Option::None => ::core::default::Default::default(),
            }
        }
    }
    const _: () = {
        #[allow(unused_imports)]
        use ::agent_core::__private::ToolOnceFallback as _;
        ::core::assert!(
            ! book_room::__AGENT_ONCE,
            "flow `booking` offers the once-tool `book_room`, whose effect a cancel does not undo: say what a cancel says after it ran with `cancel_after_tool = \"..\"` in `#[flow(..)]` (\"Your room stays booked.\")"
        );
    };
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
        let __b = ::agent_core::__private::Flow::<__D, __C>::builder("booking")
            .title("Hotel booking")
            .required([__field("city"), __field("guests")])
            .corrections(::agent_core::__private::Corrections::Reopen)
            .interrupted(::agent_core::__private::Interruption::Restart)
            .cancel_clears([__field("hotel")])
            .on_complete(
                ::agent_core::__private::RtDirective::go_to(
                    <FeedbackFlow as ::agent_core::__private::FlowTarget<__D>>::flow_id(),
                ),
            );
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<__D, __C>::model("ask_city")
                    .prompt("Ask the city.")
                    .collect([__field("city")]),
            );
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<__D, __C>::model("ask_hotel")
                    .prompt("Ask the hotel.")
                    .collect([__field("hotel")])
                    .depends_on([__field("city")])
                    .interrupted(::agent_core::__private::Interruption::End),
            );
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<__D, __C>::auto("route")
                    .requires([__field("guests")])
                    .branches(
                        ::std::vec::Vec::from([
                            ::agent_core::__private::Branch::<
                                __D,
                                __C,
                            >::to_step("large_group")
                                .if_(|
                                    __cx: &::agent_core::__private::Cx<'_, __D, __C>,
                                | -> bool {
                                    let __p: ::agent_core::__private::ViewPredicate<
                                        '_,
                                        route::View<'_>,
                                    > = &|b| b.guests > 8;
                                    match <route::View<'_>>::__new(__cx) {
                                        ::core::option::Option::Some(__v) => __p(&__v),
                                        ::core::option::Option::None => false,
                                    }
                                }),
                            ::agent_core::__private::Branch::<
                                __D,
                                __C,
                            >::to_step("confirm"),
                        ]),
                    ),
            );
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<__D, __C>::model("confirm")
                    .prompt("Confirm.")
                    .requires([__field("guests")])
                    .tool(::agent_core::__private::tool_arc::<__D, __C, _>(book_room))
                    .prepare(__agent_prepare_confirm)
                    .finalize(__agent_finalize_confirm)
                    .branches(
                        ::std::vec::Vec::from([
                            ::agent_core::__private::Branch::<
                                __D,
                                __C,
                            >::to_flow(
                                    <PetsFlow as ::agent_core::__private::FlowTarget<
                                        __D,
                                    >>::flow_id(),
                                )
                                .when("the user asks about pets"),
                            ::agent_core::__private::Branch::<
                                __D,
                                __C,
                            >::to_directive(
                                    <feedback::Step as ::agent_core::__private::StepTarget<
                                        __D,
                                    >>::go_to(feedback::Step::ask),
                                )
                                .when("the user wants to leave feedback"),
                            ::agent_core::__private::Branch::<
                                __D,
                                __C,
                            >::to_directive(
                                    ::agent_core::__private::IntoDirective::<
                                        __D,
                                    >::into_directive(Directive::abort("gave up")),
                                )
                                .when("the user gives up"),
                        ]),
                    )
                    .ask(
                        ::agent_core::__private::reply_template::<
                            __D,
                        >("Book {guests} guests?"),
                    )
                    .act_on_answer()
                    .end(),
            );
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<
                    __D,
                    __C,
                >::reply(
                        "large_group",
                        ::agent_core::__private::reply_template::<
                            __D,
                        >("A specialist will call you."),
                    )
                    .end(),
            );
        __b.checks(<__D as ::agent_core::__private::DataType>::field_checks()).build()
    }
}
