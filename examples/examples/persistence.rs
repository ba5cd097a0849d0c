//! Persistence: sessions in a SQLite file survive a restart. A second agent on the
//! same file (a new process, a redeploy) picks the conversation up where it stopped.
//!
//! `cargo run -p examples --example persistence`
//!
//! Uses agent-core's `sqlite` feature (`SqliteStore`: one file, WAL mode). Saves are
//! compare-and-swap on a version, so several processes may share the file. The file
//! lives in the system's temp directory and is removed at the end.

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::prelude::*;
use agent_core::provider::Provider;
use agent_core::store::SqliteStore;
use agent_core::testing::{Answer, ScriptedProvider};
use examples::show::{self, Transcript};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the onboarding collects.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Profile {
    /// First name
    pub name: Option<String>,
    /// Company the user works for
    pub company: Option<String>,
    /// The user's role at the company
    pub role: Option<String>,
}

/// The agent on `provider`, keeping its sessions in the SQLite file at `db`.
fn agent(provider: Arc<dyn Provider>, db: &Path) -> Result<Agent<Profile, ()>, Box<dyn Error>> {
    let onboarding = Flow::builder("onboarding")
        .required(["name", "company", "role"])
        .step(
            Step::model("ask_name")
                .prompt("Ask for the user's first name.")
                .collect(["name"]),
        )
        .step(
            Step::model("ask_company")
                .prompt("Ask which company they work for.")
                .collect(["company"]),
        )
        .step(
            Step::model("ask_role")
                .prompt("Ask what their role is.")
                .collect(["role"]),
        )
        .step(Step::reply("done", "Thanks, your profile is complete!").end())
        .build()?;
    Ok(Agent::builder()
        .name("Onboarding")
        .provider_arc(provider)
        .store(SqliteStore::open(db)?)
        .flow(onboarding)
        .build()?)
}

/// The scripted model's answers.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    model.respond(Answer::message("Welcome! What's your first name?"));
    model.respond(
        Answer::message("Hi Grace! Which company do you work for?")
            .with_data(json!({ "name": "Grace" }))
            .claiming("ask_company"),
    );
    model.respond(
        Answer::message("The Navy! And your role there?")
            .with_data(json!({ "company": "US Navy" }))
            .claiming("ask_role"),
    );
    model.extract(Answer::data(json!({ "role": "rear admiral" })));
    model
}

/// A session file of its own under the temp directory.
pub fn temp_db() -> PathBuf {
    std::env::temp_dir().join(format!(
        "agent-examples-persistence-{}.db",
        std::process::id()
    ))
}

/// Delete the file and SQLite's side files.
fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

/// Two turns with one agent, "restart", two more with a new agent on the same file.
pub async fn run(
    provider: Arc<dyn Provider>,
    db: &Path,
    out: &mut dyn Write,
) -> Result<Transcript<Profile>, Box<dyn Error>> {
    remove_db(db);
    writeln!(out, "sessions are kept in {}\n", db.display())?;
    let mut transcript = Transcript::default();

    let first = agent(provider.clone(), db)?;
    for m in ["Hi!", "I'm Grace"] {
        show::say(&first, "grace", m, &mut transcript, out).await?;
    }
    drop(first);
    writeln!(out, "--- restart: a new agent on the same file ---\n")?;

    let second = agent(provider, db)?;
    if let Some(s) = second.session("grace").await? {
        writeln!(
            out,
            "resumed session `grace` (version {}, {} turns) at step {} with {}\n",
            s.version,
            s.turns,
            s.step.as_deref().unwrap_or("-"),
            show::data(&s.data)
        )?;
    }
    for m in ["I work for the US Navy", "Rear admiral"] {
        show::say(&second, "grace", m, &mut transcript, out).await?;
    }
    drop(second);
    remove_db(db);
    Ok(transcript)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Profile>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &temp_db(), &mut std::io::stdout()).await
}
