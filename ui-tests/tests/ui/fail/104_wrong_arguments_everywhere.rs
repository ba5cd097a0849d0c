// The argument rules hold on every builder that takes the argument, each reported at the
// argument in one short error: a data patch as a context write (tool output,
// pre-directive, `Directive::context`), a context patch as a data write (tool output,
// directive, pre-directive) or a patch of another data type in a pre-directive, a
// non-step to `go_to_step`, a non-flow to `.go_to` or `ctx.handoff`, and a directive to
// a tool output that is not one.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    pub city: String,
}

#[data]
pub struct Survey {
    pub score: String,
}

#[context]
pub struct Concierge {
    pub tier: String,
}

fn main() {
    let _ = ToolOutput::text("x").context(Booking::patch().city("Lisbon"));
    let _ = ToolOutput::text("x").data(Concierge::patch().tier("gold"));
    let _ = PreDirective::<Booking, Concierge>::new().context(Booking::patch().city("Lisbon"));
    let _ = Directive::context(Booking::patch().city("Lisbon"));
    let _ = Directive::go_to_step(BookingFlow);
    let _ = ToolOutput::text("x").directive("complete");
    let _ = Directive::new().go_to::<Booking>();
    let _ = Directive::new().go_to_step("confirm");
    let _ = Directive::data(Concierge::patch().tier("gold"));
    let _ = Directive::new().data(Concierge::patch().tier("gold"));
    let _ = PreDirective::<Booking, Concierge>::new().data(Concierge::patch().tier("gold"));
    let _ = PreDirective::<Booking, Concierge>::new().data(Survey::patch().score("1"));
}

#[flow(data = Booking)]
mod booking {
    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

#[flow]
async fn tutor(ctx: FlowCx<Booking, Concierge>) -> FlowResult {
    ctx.handoff::<Booking>()
}
