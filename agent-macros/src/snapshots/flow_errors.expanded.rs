::core::compile_error! {
    "an `auto` step cannot have `prompt`: auto steps make no model call; remove `auto` to make `route` a model step"
}
::core::compile_error! {
    "an `auto` step cannot have `when` branches: `route` makes no model call to judge them; use an `if` predicate"
}
::core::compile_error! {
    "unconditional branch entry is not last: the entry after it can never be reached; move `else` to the end"
}
::core::compile_error! {
    "branch of step `route` targets `confrim`, which is not a step of this flow; did you mean `confirm`? known steps: `route`, `confirm` (a step of another flow is written `other_flow::Step::confrim`, a flow by its type, e.g. `FeedbackFlow`)"
}
::core::compile_error! {
    "empty branch table on step `confirm`: add at least one entry (`if .. => step`, `when \"..\" => step`, `else => step`) or remove `branches`"
}
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
///The `booking` flow (booking): name it in branch targets, `on_complete` and `Directive::go_to::<BookingFlow>()`.
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
type __agent_flow_booking_Context = ();
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
    = __agent_flow_booking; vis = (); views { route[] confirm[] __flow[] __completed[] }
    checks { collect[] requires[] depends_on[] required[] optional[] cancel_clears[]
    template[] } absent {}
}
mod booking {
    #[allow(unused_imports)]
    use super::*;
    #[allow(dead_code)]
    fn route() {}
    #[allow(dead_code)]
    fn confirm() {}
    #[allow(unused_imports)]
    use super::{
        __agent_flow_booking_Data as __D, __agent_flow_booking_Context as __C,
        __agent_flow_booking_view___flow, __agent_flow_booking_view___completed,
        __agent_flow_booking_view_route, __agent_flow_booking_view_confirm,
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
        ///An `auto` step (no model call). Route.
        route,
        ///A model step. Confirm.
        confirm,
    }
    #[allow(dead_code)]
    impl Step {
        /// Every step, in declaration order.
        pub const ALL: [Step; 2usize] = [Step::route, Step::confirm];
        /// The step id.
        pub const fn id(self) -> &'static str {
            match self {
                Step::route => "route",
                Step::confirm => "confirm",
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
    pub const DIAGRAM: &str = "flowchart TD\n    %% flow `booking`: booking\n    s_route{{\"route (auto)\"}}\n    s_confirm[\"confirm\"]\n    s_route -->|\"else\"| s_confrim\n    s_route -->|\"never\"| s_confirm\n    s_confirm --> e_end\n    e_end(((end)))\n";
    /// The Mermaid diagram of the flow.
    #[allow(dead_code)]
    pub fn diagram() -> &'static str {
        DIAGRAM
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
        let __b = ::agent_core::__private::Flow::<__D, __C>::builder("booking");
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<__D, __C>::auto("route")
                    .prompt("Route.")
                    .branches(
                        ::std::vec::Vec::from([
                            ::agent_core::__private::Branch::<
                                __D,
                                __C,
                            >::to_step("confirm")
                                .when("never"),
                        ]),
                    ),
            );
        let __b = __b
            .step(
                ::agent_core::__private::RtStep::<__D, __C>::model("confirm")
                    .prompt("Confirm.")
                    .branches(::std::vec::Vec::from([]))
                    .end(),
            );
        __b.checks(<__D as ::agent_core::__private::DataType>::field_checks()).build()
    }
}
