//! Triage: one front desk, several specialists, and hand-offs inside a single turn (the
//! A3 "transitions"). The user sees one answer per message even when several flows
//! took part; each hop is an event on the stream and a record on the response.
//!
//! `cargo run -p examples --example triage`
//!
//! Three ways to hand over, as in A3: the model picks another flow in its answer
//! (`handoff`, one yes/no per registered flow: A3's transition list), code decides
//! (a tool returns `go_to`: A3's transition function), or a `when` branch the model
//! judges while it replies; the front desk's `prepare` hook also sends refund requests
//! and messages that name an invoice number to billing by code. When a flow hands over after its reply was written, that
//! reply is not shown: the next flow gets it as context and speaks. The refund's
//! outcome is the tool's own text (no model call after it).
//! `max_transitions_per_turn` (default 10) stops ping-pong.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use examples::exit::Tally;
use examples::show;
use futures::StreamExt;
use serde_json::json;

/// What the desk collects.
#[data]
pub struct Case {
    /// Invoice number, as the user gives it (INV- and digits)
    // (Doc comments are the model's field description; this is not.) The pattern is
    // checked on every write and sent to the model; it also tells the engine that a
    // message without "INV-" and digits cannot give the invoice, so no call is asked
    // to read one from it (a small model made one up in 14 of 16 such calls).
    #[field(pattern = "^INV-[0-9]+$")]
    pub invoice: String,
    /// The device the problem is on, as the user names it (a phone, tablet or computer
    /// such as a Pixel 8), not the app
    pub device: String,
}

/// Refund a duplicate charge, then hand the user back to the front desk.
///
/// Money moves, so it runs once per call (`effect = once`), and a call waits for the
/// user's yes: the model's call does not run; the user reads code's summary
/// ("Refund the duplicate charge on INV-7. Shall I go ahead?") and a yes runs exactly
/// that call. `request_words` lets the front desk route a request for a refund to
/// billing in code.
///
/// Code knows the outcome, so code says it: the reply is the tool's (no model call
/// after the refund, and no sentence about money the refund did not move), and the
/// invoice refunded is recorded.
///
/// The model reads `description`, not this doc.
#[tool(
    description = "Refund the duplicate charge on an invoice.",
    effect = once,
    summary = "Refund the duplicate charge on {invoice}",
    request_words = ["refund", "money back", "reimburs", "reembols", "devolu", "rembours", "erstatt"]
)]
async fn refund(
    /// Invoice number
    invoice: String,
) -> Result<ToolOutput, ToolError> {
    let reply =
        format!("Refunded the duplicate charge on {invoice}. Anything else I can help with?");
    Ok(
        ToolOutput::text(format!("refunded the duplicate charge on {invoice}"))
            .data(Case::patch().invoice(invoice))
            .directive(Directive::go_to::<TriageFlow>().reply(reply)),
    )
}

/// The front desk. Its reply may hand the user to another flow (`handoff` in the
/// model's answer, judged for each flow that says `when` it applies, before the reply
/// is written; the flow handed to reads the same message); once it has asked, its
/// branches send the answer on. It has no `when` itself: only code sends users back
/// to it (the refund's `go_to`). Its task is done once it sent the user on, so a flow
/// started from it does not leave it waiting (`interrupted = end`).
#[flow(title = "Front desk", data = Case, reentrant, interrupted = end)]
mod triage {
    /// Code routes what it can read for sure (the fn body is the step's `prepare`
    /// hook, run before its model call): a message in the refund tool's own request
    /// words, or one that names an invoice number, goes to billing, which reads it. Asked to judge, Qwen2.5 1.5B kept "I
    /// want a refund" and "Refund please, I paid twice" at the desk; routed by code,
    /// the turn makes one call, billing's.
    #[step(prompt = "Find out what the user needs.", branches(
        when "the user has a billing or payment question" => BillingFlow,
        when "the user reports a technical problem" => TechFlow,
        else => ask_need,
    ))]
    fn ask_need(v: ask_need::View<'_>) -> impl IntoPreDirective<Case, ()> {
        if Tool::<Case, ()>::requested_in(&refund, v.message()) || names_invoice(v.message()) {
            PreDirective::new()
                .directive(Directive::go_to::<BillingFlow>())
                .erase()
        } else {
            PreDirective::new().erase()
        }
    }
}

/// Whether `message` names an invoice number ("INV-" and a digit, any case): the
/// front desk's model sent "Question about invoice INV-12: when is it due?" to tech
/// on some runs.
fn names_invoice(message: &str) -> bool {
    let lower = message.to_lowercase();
    lower.match_indices("inv-").any(|(i, m)| {
        lower
            .get(i + m.len()..)
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// Billing: the refund is offered only once the user gave the invoice, so it cannot
/// run on a number the model made up (and, being a tool with effects, only when the
/// user asked for it).
#[flow(
    title = "Billing",
    when = "the user has a billing or payment question",
    data = Case,
    cancel_after_tool = "Okay, I've stopped here. The refund already issued stays issued."
)]
mod billing {
    /// The question is code's: a hand-over that lands here with no invoice in the
    /// message needs no second call (the front desk's decided the flow). When the user
    /// answers it with something else, the model replies.
    #[step(
        prompt = "Ask for the invoice number.",
        ask = "Which invoice is it about? Please give me its number (it starts with INV-).",
        collect(invoice)
    )]
    fn ask_invoice() {}

    #[step(
        prompt = "You have the invoice number. Refund the duplicate charge on it if the user asked for a refund; otherwise answer the user's question about it, or ask what they would like to know about it.",
        requires(invoice),
        tools(refund)
    )]
    fn settle() {}
}

#[flow(title = "Technical support", when = "the user reports a technical problem", data = Case)]
mod tech {
    #[step(
        prompt = "Ask which device has the problem.",
        ask = "Which device is the problem on?",
        collect(device)
    )]
    fn ask_device() {}

    /// Code says what happens next. Asked to confirm the outcome of a question the
    /// user had just answered, Qwen2.5 1.5B asked the question again (3 of 3 logged
    /// calls, and 3 more with reworded notes).
    #[step(
        end,
        requires(device),
        reply = "Thanks. I've logged the problem on your {device}; a technician will follow up here."
    )]
    fn logged() {}
}

/// What the user says.
pub const MESSAGES: [&str; 4] = [
    "Hi, I was charged twice this month",
    "It's invoice INV-7. Please refund it",
    "Yes please",
    "Also, my app crashes on start",
];

/// The scripted model's answers.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    // Turn 1: the front desk's answer hands over to billing, whose first question is
    // code's (the message names no invoice, so nothing is read): one call.
    model.respond(Answer::message("Let me get you to billing.").switching_to("billing"));
    // Turn 2: the model calls the refund; it waits for the user's yes, and code
    // writes the summary of the call as the reply.
    model.respond(Answer::tool("refund", json!({ "invoice": "INV-7" })));
    // Turn 3: a plain yes runs that call with no model call; the tool says what it
    // did and sends the user back to the front desk (code decides).
    // Turn 4: the front desk's branch, judged in its reply call, sends the user on;
    // support's first question is code's (its `ask`): one call.
    model.respond(
        Answer::message("Let me get you to support.")
            .judging("the user reports a technical problem", true),
    );
    model
}

/// The help desk's definition without a provider.
pub fn builder() -> Result<AgentBuilder<Case, ()>, ConfigErrors> {
    Ok(Agent::builder()
        .name("Help desk")
        .flow(triage::flow()?)
        .flow(billing::flow()?)
        .flow(tech::flow()?))
}

/// Every conversation starts at the front desk (A3's initial agent): a directive from
/// outside the turn, so no routing call is needed.
pub async fn start(agent: &Agent<Case, ()>, session: &str) -> Result<(), AgentError> {
    agent
        .dispatch(session, Directive::go_to::<TriageFlow>().into())
        .await
}

/// Stream each turn, printing the hops as they happen. Returns the responses of the
/// turns that succeeded, and how the turns went.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<(Vec<AgentResponse<Case>>, Tally), Box<dyn Error>> {
    let agent = builder()?.provider_arc(provider).build()?;
    start(&agent, "case").await?;

    let mut responses = Vec::new();
    let mut tally = Tally::default();
    for message in MESSAGES {
        writeln!(out, "user:  {message}")?;
        let mut events = agent.respond_stream("case", message);
        while let Some(event) = events.next().await {
            match event {
                Event::Transition(t) => {
                    let from = t.from.as_deref().unwrap_or("(start)");
                    writeln!(out, "  >> transition {from} -> {}", t.to)?;
                }
                Event::ToolCall { name, .. } => writeln!(out, "  >> tool {name}")?,
                Event::Done(r) => {
                    show::response(out, &r)?;
                    tally.ok();
                    responses.push(*r);
                }
                Event::Error(e) => {
                    writeln!(out, "error: {e} (the session is unchanged)\n")?;
                    tally.failure(&e);
                }
                _ => {}
            }
        }
        if show::stop_if_unreachable(&tally, out)? {
            break;
        }
    }
    Ok((responses, tally))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<(Vec<AgentResponse<Case>>, Tally), Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &mut std::io::stdout()).await
}
