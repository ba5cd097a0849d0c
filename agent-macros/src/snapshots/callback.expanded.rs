::core::compile_error! {
    "`collect` names `cache`, which is `#[serde(skip)]` in `Booking`: the model and the engine never see it; remove the skip or the name"
}
::core::compile_error! {
    "`requires` names `gusts`, which is not a field of `Booking`; did you mean `guests`? known fields: `city`, `guests`"
}
::core::compile_error! {
    "the template names `{cty}`, which is not a field of `Booking`; did you mean `city`? known fields: `city`, `guests`"
}
::core::compile_error! {
    "the template of step `done` names `{guests}`, which may be empty there: not every path to `done` collects `guests`; add `requires(guests)` to the step"
}
#[cfg(feature = "x")]
::core::compile_error! {
    "the template of step `extra` names `{city}`, which may be empty there: not every path to `extra` collects `city`; add `requires(city)` to the step"
}
impl<'a> ::agent_core::__private::StepView<'a> for __agent_flow_booking_step_route {
    type View = <Booking as ::agent_core::__private::ViewOf<
        'a,
        Concierge,
        (::agent_core::__private::Opt, ::agent_core::__private::Req),
    >>::View;
}
#[cfg(feature = "x")]
impl<'a> ::agent_core::__private::StepView<'a> for __agent_flow_booking_step_extra {
    type View = <Booking as ::agent_core::__private::ViewOf<
        'a,
        Concierge,
        (::agent_core::__private::Opt, ::agent_core::__private::Opt),
    >>::View;
}
impl<'a> ::agent_core::__private::StepView<'a> for __agent_flow_booking_step___flow {
    type View = <Booking as ::agent_core::__private::ViewOf<
        'a,
        Concierge,
        (::agent_core::__private::Opt, ::agent_core::__private::Opt),
    >>::View;
}
