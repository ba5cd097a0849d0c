//! More forms an outside audit found wrongly rejected, each accepted and working: a step
//! reached only by a directive target, a step behind `#[cfg_attr(.., step(..))]`, a step
//! fn named like the tool it offers, a `prepare` hook with a named lifetime, a tool
//! under another attribute macro (`#[tracing::instrument]`), steps named like the
//! diagram's own nodes (`END`, `end`, `on_complete`), and template fields present
//! without `requires`: collected on every path to the step, or set by `initial_data`.
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Booking {
    /// City
    pub city: String,
}

/// Book the room.
#[tool]
#[tracing::instrument(skip_all)]
async fn book_room(
    /// Hotel
    hotel: String,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("booked {hotel}")))
}

#[flow(data = Booking, on_complete = Directive::complete())]
mod booking {
    #[step(prompt = "Ask the city.", collect(city), branches(
        when "the user wants extras" => Directive::go_to_step(Step::extra),
        when "the user is in a hurry" => Directive::new().go_to_step(self::Step::book_room),
    ))]
    fn ask_city() {}

    #[step(end, prompt = "Confirm.", requires(city))]
    fn confirm<'a>(v: confirm::View<'a>) -> PreDirective<Booking, ()> {
        PreDirective::new().append_prompt(format!("City: {}", v.city))
    }

    #[step(end, prompt = "Offer extras.")]
    fn extra() {}

    #[step(end, prompt = "Book the room.", tools(book_room), requires_tool(book_room))]
    fn book_room() {}

    #[cfg_attr(all(), step(end, jump_target, prompt = "Say goodbye."), allow(dead_code))]
    #[cfg_attr(any(), step(prompt = "Never a step."))]
    fn goodbye() {}
}

#[flow(data = Booking)]
mod names {
    #[allow(non_snake_case)]
    #[step(prompt = "Ask the city.", collect(city))]
    fn END() {}

    #[step(prompt = "Ask again.")]
    fn end() {}

    #[step(end, reply = "Done in {city}.", requires(city))]
    fn on_complete() {}
}

#[flow(data = Booking, initial_data = Booking::patch().city("Lisbon"))]
mod preset {
    #[step(end, reply = "Booking in {city}.")]
    fn hello() {}
}

#[flow(data = Booking)]
mod paths {
    #[step(prompt = "Ask how to go on.", branches(
        when "the user is in a hurry" => quick,
        else => slow,
    ))]
    fn start() {}

    #[step(prompt = "Ask the city quickly.", collect(city), branches(else => done))]
    fn quick() {}

    #[step(prompt = "Ask the city slowly.", collect(city))]
    fn slow() {}

    #[step(end, reply = "Booked in {city}.")]
    fn done() {}
}

fn main() {
    preset::flow().expect("`initial_data` sets the city from the start");
    paths::flow().expect("both paths to `done` collect the city");
    let f = booking::flow().expect("valid");
    assert!(f.step("extra").is_some());
    assert!(f.step("goodbye").is_some());
    assert_eq!(booking::Step::ALL.len(), 5);
    // `tools(book_room)` is the tool, not the step fn (else `tool_arc` would not compile).
    assert!(f.step("book_room").is_some());
    assert_eq!(Tool::<Booking, ()>::name(&book_room), "book_room");

    let n = names::flow().expect("valid");
    assert_eq!(n.steps().len(), 3);
    let d = names::DIAGRAM;
    assert!(d.contains("s_END[\"END · collect city\"]"), "{d}");
    assert!(d.contains("s_end[\"end\"]"), "{d}");
    assert!(d.contains("s_end --> s_on_complete"), "{d}");
    assert!(d.contains("s_on_complete --> e_end"), "{d}");
}
