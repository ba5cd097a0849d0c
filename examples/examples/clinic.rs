//! The clinic: booking an appointment, interrupted by a question about opening hours
//! and by a prescription renewal, each of which ends and hands the patient back to
//! the booking where it stood.
//!
//! `cargo run -p examples --example clinic`
//!
//! Three flows on one data type. The routing answer (no flow under way) names the
//! flow the patient wants; in a flow, the model's answer may start another (one
//! yes/no per flow). A flow started while the booking is under way interrupts it: the
//! booking waits on the dialogue stack and, when the other flow ends (completes or is
//! cancelled), asks its question again in the same turn. The opening hours are a reply
//! written by code; the booking and the renewal write their outcome from the state
//! (verbatim replies of their tools), so no reply can claim what did not happen.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::codeflow::{Fallback, Router};
use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use examples::show::{self, Transcript};
use serde_json::json;

/// What the clinic collects.
#[data]
pub struct Visit {
    /// The patient's full name
    #[field(len = 2..=80)]
    pub patient: String,
    /// What the visit is for, in the patient's words (a check-up, a sore throat)
    #[field(len = 2..=120)]
    pub reason: String,
    /// Day of the appointment, YYYY-MM-DD
    #[field(not_past)]
    pub day: Date,
    /// The medicine to renew, as the patient names it
    #[field(len = 2..=80)]
    pub medicine: String,
    /// Appointment reference
    pub appointment_id: String,
    /// Renewal request reference
    pub renewal_id: String,
}

/// Book the appointment the patient confirmed. The reply is code's, from the state.
/// `confirm`: a call waits for the patient's yes to the summary (the `confirm` step's
/// `ask`), and runs only then.
#[tool(confirm)]
async fn book_appointment(cx: ToolCx<Visit, ()>) -> Result<ToolOutput, ToolError> {
    let v = cx.data();
    let (Some(patient), Some(reason), Some(day)) = (&v.patient, &v.reason, &v.day) else {
        return Err(ToolError::msg(
            "the patient's name, the reason and the day are needed first",
        ));
    };
    let id = format!("APT-{}", day.to_string().replace('-', ""));
    let reply = format!("Booked: {reason} for {patient} on {day}. Your reference is {id}.");
    Ok(ToolOutput::text(format!("booked {id}"))
        .data(Visit::patch().appointment_id(id))
        .directive(Directive::complete().reply(reply)))
}

/// Send the renewal request to the doctor. The reply is code's, from the state.
#[tool(confirm)]
async fn renew_prescription(cx: ToolCx<Visit, ()>) -> Result<ToolOutput, ToolError> {
    let v = cx.data();
    let (Some(patient), Some(medicine)) = (&v.patient, &v.medicine) else {
        return Err(ToolError::msg(
            "the patient's name and the medicine are needed first",
        ));
    };
    let id = format!("RX-{}", medicine.len() + patient.len());
    let reply = format!(
        "Sent: the doctor will review the renewal of {medicine} for {patient} within two working days (request {id})."
    );
    Ok(ToolOutput::text(format!("renewal requested, {id}"))
        .data(Visit::patch().renewal_id(id))
        .directive(Directive::complete().reply(reply)))
}

/// ask_name -> ask_reason -> ask_day -> confirm (books on a yes)
#[flow(title = "Appointment booking", when = "the patient wants to book an appointment",
       data = Visit, required(patient, reason, day))]
mod appointment {
    #[step(prompt = "Ask for the patient's full name.", collect(patient))]
    fn ask_name() {}

    #[step(prompt = "Ask what the visit is for.", collect(reason))]
    fn ask_reason() {}

    #[step(prompt = "Ask which day the patient would like to come.", collect(day))]
    fn ask_day() {}

    /// The summary is code's; the booking runs only on the patient's yes to it.
    #[step(
        end,
        prompt = "Summarise the appointment and ask the patient to confirm.",
        ask = "Here is your appointment: {reason} for {patient} on {day}. Shall I book it?",
        requires(patient, reason, day),
        tools(book_appointment),
        requires_tool(book_appointment)
    )]
    fn confirm() {}
}

/// One reply written by code: a question about the hours gets the clinic's hours,
/// never a model's guess. Reentrant: it can be asked again.
#[flow(title = "Opening hours", when = "the patient asks when the clinic is open",
       data = Visit, reentrant)]
mod hours {
    #[step(
        end,
        reply = "We're open Monday to Friday from 8:00 to 18:00, and on Saturday from 9:00 to 12:00."
    )]
    fn opening_hours() {}
}

/// ask_medicine -> ask_name (skipped when the booking has the name) -> confirm_renewal
#[flow(title = "Prescription renewal", when = "the patient wants a prescription renewed",
       data = Visit, required(patient, medicine))]
mod renewal {
    #[step(
        prompt = "Ask which medicine the patient wants renewed.",
        collect(medicine)
    )]
    fn ask_medicine() {}

    #[step(prompt = "Ask for the patient's full name.", collect(patient))]
    fn ask_name() {}

    #[step(
        end,
        prompt = "Summarise the renewal request and ask the patient to confirm.",
        ask = "I'll ask the doctor to renew {medicine} for {patient}. Shall I send the request?",
        requires(patient, medicine),
        tools(renew_prescription),
        requires_tool(renew_prescription)
    )]
    fn confirm_renewal() {}
}

/// The clinic's definition without a provider (the eval adds its own, with a fixed
/// clock).
pub fn builder(config: AgentConfig) -> Result<AgentBuilder<Visit, ()>, ConfigErrors> {
    Ok(Agent::builder()
        .name("Clinic")
        .persona("The front desk of a small family clinic. Short, kind answers.")
        .instruction(Instruction::never("give medical advice"))
        // The routing answer names the flow: no classifier call.
        .router(Router::SchemaIntent {
            fallback: Fallback::Classic,
        })
        .config(config)
        .flow(appointment::flow()?)
        .flow(hours::flow()?)
        .flow(renewal::flow()?))
}

/// The clinic agent on `provider`.
pub fn agent(
    provider: Arc<dyn Provider>,
    config: AgentConfig,
) -> Result<Agent<Visit, ()>, ConfigErrors> {
    builder(config)?.provider_arc(provider).build()
}

/// What the patient says, turn by turn.
pub const MESSAGES: [&str; 6] = [
    "Hi, I'd like to book an appointment",
    "Anna Berg",
    "Wait, are you open on Saturdays?",
    "A check-up",
    "Next Monday",
    "Yes please",
];

/// A scripted model that answers [`MESSAGES`] the way a good model would.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    // Turn 1: the routing answer names the booking, whose first question is asked.
    model.respond(Answer::intent("", Some("appointment")));
    model.respond(Answer::message(
        "Of course. What is the patient's full name?",
    ));
    // Turn 2: the name; the booking asks what the visit is for.
    model.respond(
        Answer::message("Thank you. What is the visit for?")
            .with_data(json!({ "patient": "Anna Berg" }))
            .claiming("ask_reason"),
    );
    // Turn 3: the hours interrupt the booking; their reply is code's, then the booking
    // asks its question again.
    model.respond(Answer::message("Let me check.").switching_to("hours"));
    model.respond(Answer::message("And what is the visit for?"));
    // Turn 4: the reason.
    model.respond(
        Answer::message("Which day would suit you?")
            .with_data(json!({ "reason": "a check-up" }))
            .claiming("ask_day"),
    );
    // Turn 5: the day; the summary is code's.
    model.respond(Answer::message("Noted.").with_data(json!({ "day": next_monday().to_string() })));
    // Turn 6: the yes to the summary books it with no model call; the reply is the
    // tool's.
    model
}

/// Next Monday on the system clock (what "next Monday" means today).
pub fn next_monday() -> Date {
    use agent_core::clock::{Clock, SystemClock, TimeZone};
    let mut day = TimeZone::utc().local(SystemClock.now_ms()).date();
    for _ in 0..7 {
        match day.next_day() {
            Some(next) => day = next,
            None => break,
        }
        if day.weekday().number_from_monday() == 1 {
            break;
        }
    }
    Date::from(day)
}

/// Talk to the clinic and print every turn. Failed turns are printed and the
/// conversation goes on.
pub async fn run(
    provider: Arc<dyn Provider>,
    config: AgentConfig,
    out: &mut dyn Write,
) -> Result<Transcript<Visit>, Box<dyn Error>> {
    let agent = agent(provider, config)?;
    let transcript = show::converse(&agent, "clinic", &MESSAGES, out).await?;
    writeln!(
        out,
        "{} turns ({} failed), {} model calls",
        transcript.turns.len(),
        transcript.failures(),
        transcript.model_calls()
    )?;
    Ok(transcript)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::init_logging();
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Visit>, Box<dyn Error>> {
    let model = examples::model::real_or_local(scripted)?;
    println!("{}", model.description());
    println!();
    run(model.provider(), model.config(), &mut std::io::stdout()).await
}
