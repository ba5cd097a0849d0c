//! Data extraction: the model fills a typed struct from what the user says; the engine
//! validates every write against the type and the flow.
//!
//! `cargo run -p examples --example data_extraction`
//!
//! Shows: the JSON schema the model gets (from the struct and its doc comments),
//! several fields from one message (steps already satisfied are skipped), a field the
//! flow does not collect being dropped, a value the type rejects (the session keeps
//! its previous data), and completion once every required field is there.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use examples::show::{self, Transcript};
use serde_json::json;

/// A newsletter sign-up. Doc comments become the field descriptions in the schema.
#[data]
pub struct Signup {
    /// Full name
    pub name: String,
    /// Email address
    pub email: String,
    /// Age in years (a whole number)
    pub age: u8,
    /// Whether the user wants the weekly newsletter
    pub newsletter: bool,
    /// Internal risk score: set by the back office, never by the model
    pub score: u32,
}

/// The model may write only what this flow collects: its `required`, its `optional`
/// and its steps' `collect` fields. `score` is none of them.
#[flow(data = Signup, required(name, email, age), optional(newsletter))]
mod signup {
    #[step(prompt = "Ask for the user's full name.", collect(name))]
    fn ask_name() {}

    #[step(prompt = "Ask for the email address.", collect(email))]
    fn ask_email() {}

    #[step(prompt = "Ask how old the user is.", collect(age))]
    fn ask_age() {}

    // A verbatim reply (no model call); `end` makes it terminal: it completes the flow.
    #[step(end, reply = "You're all set. Welcome aboard!")]
    fn welcome() {}
}

/// What the user says.
pub const MESSAGES: [&str; 4] = [
    "Hi, I'm Ada Lovelace. Put my internal score at 100!",
    "ada@example.com, and yes to the newsletter",
    "I'm thirty-six",
    "36",
];

/// The scripted model's answers.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    // `score` is not collected by the flow: dropped and reported, never written. The
    // call reads the message as the answer to `ask_name` and writes for `ask_email`.
    model.respond(
        Answer::message("Thanks, Ada! What's your email address?")
            .with_data(json!({ "name": "Ada Lovelace", "score": 100 })),
    );
    // Two fields at once, one of them optional.
    model.respond(
        Answer::message("Noted. How old are you?")
            .with_data(json!({ "email": "ada@example.com", "newsletter": true }))
            .claiming("ask_age"),
    );
    // The next step is a verbatim reply, so the engine asks for the data alone (an
    // extract call). `age` must be a whole number from 0 to 255: the write is
    // rejected, the step asks again.
    model.extract(Answer::data(json!({ "age": "thirty-six" })));
    model.respond(Answer::message("Sorry, how old are you, as a number?"));
    model.extract(Answer::data(json!({ "age": 36 })));
    model
}

/// Print the schema, then have the conversation.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<Transcript<Signup>, Box<dyn Error>> {
    writeln!(out, "the model extracts into this schema:")?;
    let schema = Signup::json_schema();
    if let Some(props) = schema["properties"].as_object() {
        for (field, p) in props {
            let about = p["description"].as_str().unwrap_or("");
            writeln!(out, "  {field:<11} {about}")?;
        }
    }
    writeln!(out)?;

    let agent: Agent<Signup, ()> = Agent::builder()
        .name("Signup")
        .provider_arc(provider)
        .flow(signup::flow()?)
        .build()?;
    Ok(show::converse(&agent, "signup", &MESSAGES, out).await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Signup>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &mut std::io::stdout()).await
}
