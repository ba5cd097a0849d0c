//! Every valid directive shape: each position alone, with a reply, with data and
//! context writes; `complete_then`; pre-directives with `append_prompt`, `inject_tool`,
//! `halt`; conversion into the runtime types.
use agent_core::directive::{Directive as Runtime, Position};
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[context]
pub struct Concierge {
    /// Tier
    pub tier: String,
}

#[flow(data = Booking, context = Concierge)]
mod booking {
    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

/// Look up a hotel.
#[tool]
async fn lookup() -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text("found"))
}

fn rt<P, R, D>(d: TypedDirective<P, R, D>) -> Runtime {
    let d: Runtime = d.into();
    d.validate().expect("valid directive");
    d
}

fn main() {
    let data = || Booking::patch().city("Lisbon");
    let ctx = || Concierge::patch().tier("gold");
    let all = [
        rt(Directive::new()),
        rt(Directive::go_to::<BookingFlow>()),
        rt(Directive::go_to_step(booking::Step::confirm)),
        rt(Directive::complete()),
        rt(Directive::complete_then(Directive::go_to::<BookingFlow>())),
        rt(Directive::abort("spam")),
        rt(Directive::abort_and_clear("gdpr")),
        rt(Directive::reset()),
        rt(Directive::reset_clearing_data()),
        rt(Directive::reply("Hello!")),
        rt(Directive::data(data())),
        rt(Directive::context(ctx())),
        rt(Directive::go_to::<BookingFlow>().reply("On it.").data(data()).context(ctx())),
        rt(Directive::reply("Done.").complete()),
        rt(Directive::data(data()).go_to_step(booking::Step::confirm).because("user asked")),
        rt(Directive::reset().reply("Let's start over.")),
        rt(Directive::abort("bye").data(data()).context(ctx())),
    ];
    assert!(matches!(all[1].position, Some(Position::GoTo(ref g)) if g.flow == "booking"));
    assert!(matches!(all[2].position, Some(Position::GoToStep(ref g)) if g.step == "confirm" && g.flow.as_deref() == Some("booking")));
    assert_eq!(all[10].data.as_ref().and_then(|d| d.get("city")), Some(&"Lisbon".into()));
    assert_eq!(all[11].context.as_ref().and_then(|d| d.get("tier")), Some(&"gold".into()));

    let pre = PreDirective::<Booking, Concierge>::new()
        .append_prompt("Be brief.")
        .inject_tool(lookup)
        .halt()
        .reply("One moment.")
        .data(data())
        .context(ctx())
        .directive(Directive::go_to_step(booking::Step::confirm));
    let pre = pre.into_runtime();
    assert!(pre.halt && pre.append_prompt.len() == 1 && pre.inject_tools.len() == 1);
    assert!(pre.base.position.is_some());

    let out: agent_core::tool::ToolOutput = ToolOutput::text("ok")
        .data(data())
        .context(ctx())
        .directive(Directive::complete())
        .into();
    assert!(out.directive.data.is_some() && out.directive.context.is_some());
}
