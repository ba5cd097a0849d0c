//! The testing kit (part of the product): a scripted provider that answers by call
//! kind and records every request, and a conversation helper that asserts on steps,
//! data, stopped reasons and model-call counts.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::agent::AgentConfig;
use crate::error::ProviderError;
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::provider::{
    CallKind, FinishReason, ModelRequest, ModelResponse, Provider, StreamChunk, ToolCall, Usage,
};

mod conversation;

pub use conversation::{Conversation, ConversationError, Said};

type AnswerFn = Arc<dyn Fn(&ModelRequest) -> Result<ModelResponse, ProviderError> + Send + Sync>;

/// One scripted answer. Structured fields are rendered as JSON when the request asks for
/// structured output, and the message alone otherwise.
#[derive(Clone)]
pub struct Answer {
    kind: AnswerKind,
}

#[derive(Clone)]
enum AnswerKind {
    Reply {
        message: String,
        data: Option<Value>,
        step: Option<String>,
        switch: Option<String>,
        verdicts: Vec<(String, bool)>,
        commands: Vec<crate::command::Command>,
    },
    Verdicts {
        conditions: Vec<(String, bool)>,
        extracted: Vec<(String, Value)>,
        flow: Option<String>,
    },
    Raw(String, FinishReason),
    Tools(Vec<ToolCall>),
    Error(ProviderError),
    Fn(AnswerFn),
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Answer({})", self.describe())
    }
}

impl Answer {
    /// The model replies with `text` and writes no data: the answer to a respond or tool-round
    /// call. Chain [`with_data`](Self::with_data) to have it extract values as well.
    pub fn message(text: impl Into<String>) -> Self {
        Self {
            kind: AnswerKind::Reply {
                message: text.into(),
                data: None,
                step: None,
                switch: None,
                verdicts: Vec::new(),
                commands: Vec::new(),
            },
        }
    }
    /// A verdict for a condition the respond call judges (unlisted ones are false).
    pub fn judging(mut self, condition: impl Into<String>, verdict: bool) -> Self {
        if let AnswerKind::Reply { verdicts, .. } = &mut self.kind {
            verdicts.push((condition.into(), verdict));
        }
        self
    }
    /// Extracted data (a JSON object) alongside the reply, or alone for extract calls.
    pub fn with_data(mut self, data: Value) -> Self {
        if let AnswerKind::Reply { data: d, .. } = &mut self.kind {
            *d = Some(data);
        }
        self
    }
    /// Extracted data only (for extract calls).
    pub fn data(data: Value) -> Self {
        Self::message("").with_data(data)
    }
    /// The step the model claims it replied for (a real model names it by what its
    /// message asks for, `reply_asks_for`). Without a claim, a read-ahead reply counts
    /// for whichever of its two steps the turn lands on, unless that step was already
    /// asked (its question awaits the answer).
    pub fn claiming(mut self, step: impl Into<String>) -> Self {
        if let AnswerKind::Reply { step: s, .. } = &mut self.kind {
            *s = Some(step.into());
        }
        self
    }
    /// A command the model read in the user's message ([`crate::command`]), written
    /// out in the answer's `commands` list (for structured respond calls). The older
    /// keys ([`Answer::with_data`], [`Answer::switching_to`]) read as the same commands.
    pub fn command(mut self, c: crate::command::Command) -> Self {
        if let AnswerKind::Reply { commands, .. } = &mut self.kind {
            commands.push(c);
        }
        self
    }
    /// The model asks to switch to another flow.
    pub fn switching_to(mut self, flow: impl Into<String>) -> Self {
        if let AnswerKind::Reply { switch, .. } = &mut self.kind {
            *switch = Some(flow.into());
        }
        self
    }
    /// Classifier verdicts by condition text (unlisted conditions are false).
    pub fn verdicts<I, S>(v: I) -> Self
    where
        I: IntoIterator<Item = (S, bool)>,
        S: Into<String>,
    {
        Self {
            kind: AnswerKind::Verdicts {
                conditions: v.into_iter().map(|(c, b)| (c.into(), b)).collect(),
                extracted: Vec::new(),
                flow: None,
            },
        }
    }
    /// The model routes the conversation into the flow `flow` (answer to a route call, or the
    /// routing part of a classify call).
    pub fn route(flow: impl Into<String>) -> Self {
        Self {
            kind: AnswerKind::Verdicts {
                conditions: Vec::new(),
                extracted: Vec::new(),
                flow: Some(flow.into()),
            },
        }
    }
    /// Add a routing choice to a verdicts answer.
    pub fn and_route(mut self, f: impl Into<String>) -> Self {
        if let AnswerKind::Verdicts { flow, .. } = &mut self.kind {
            *flow = Some(f.into());
        }
        self
    }
    /// Add an extracted value for a condition to a verdicts answer.
    pub fn extracting(mut self, condition: impl Into<String>, value: Value) -> Self {
        if let AnswerKind::Verdicts { extracted, .. } = &mut self.kind {
            extracted.push((condition.into(), value));
        }
        self
    }
    /// Raw content, sent as is (for malformed-output tests).
    pub fn raw(content: impl Into<String>) -> Self {
        Self {
            kind: AnswerKind::Raw(content.into(), FinishReason::Stop),
        }
    }
    /// The answer to a code flow's open question (`ctx.ask`), as the extraction call
    /// returns it; `Value::Null` when the message does not answer it.
    pub fn answering(value: Value) -> Self {
        Self::raw(json!({ "answer": value }).to_string())
    }
    /// A routing answer with the detector's confidence (for `Router::Detector` with
    /// `min_confidence`).
    pub fn route_with_confidence(flow: impl Into<String>, confidence: f64) -> Self {
        Self::raw(json!({ "flow": flow.into(), "confidence": confidence }).to_string())
    }
    /// A classic reply carrying a schema intent (`Router::SchemaIntent`).
    pub fn intent(message: impl Into<String>, flow: Option<&str>) -> Self {
        Self::raw(json!({ "message": message.into(), "intent": flow }).to_string())
    }
    /// Raw content cut by the token limit.
    pub fn truncated(content: impl Into<String>) -> Self {
        Self {
            kind: AnswerKind::Raw(content.into(), FinishReason::Length),
        }
    }
    /// The model asks to call the tool `name` with `arguments` (a JSON object); chain
    /// [`and_tool`](Self::and_tool) for parallel calls. The tool's own code runs; the engine
    /// then makes the tool-round call, whose answer comes from the next scripted reply.
    pub fn tool(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            kind: AnswerKind::Tools(Vec::new()),
        }
        .and_tool(name, arguments)
    }
    /// Another tool call in the same answer.
    pub fn and_tool(mut self, name: impl Into<String>, arguments: Value) -> Self {
        if let AnswerKind::Tools(calls) = &mut self.kind {
            let id = format!("call_{}", calls.len());
            calls.push(ToolCall {
                id,
                name: name.into(),
                arguments,
            });
        }
        self
    }
    /// The model call fails with `e` (a network error, a rate limit, a refusal): for testing
    /// how a turn fails, that the session is left unchanged, and retries.
    pub fn error(e: ProviderError) -> Self {
        Self {
            kind: AnswerKind::Error(e),
        }
    }
    /// Computed from the request.
    pub fn from_fn(
        f: impl Fn(&ModelRequest) -> Result<ModelResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind: AnswerKind::Fn(Arc::new(f)),
        }
    }

    /// What the answer says, short: `message "When?" with data {"city":"Porto"}`.
    fn describe(&self) -> String {
        const MAX: usize = 80;
        let short = |s: String| match s.char_indices().nth(MAX) {
            Some((i, _)) => format!("{}…", &s[..i]),
            None => s,
        };
        match &self.kind {
            AnswerKind::Reply { message, data, .. } => {
                let mut d = format!("message {:?}", short(message.clone()));
                if let Some(data) = data {
                    d.push_str(&format!(" with data {}", short(data.to_string())));
                }
                d
            }
            AnswerKind::Verdicts {
                conditions, flow, ..
            } => {
                let judged: Vec<String> = conditions
                    .iter()
                    .map(|(c, v)| format!("{c:?}={v}"))
                    .collect();
                match flow {
                    Some(f) => format!("route to {f:?} verdicts [{}]", judged.join(", ")),
                    None => format!("verdicts [{}]", judged.join(", ")),
                }
            }
            AnswerKind::Raw(c, _) => format!("raw {:?}", short(c.clone())),
            AnswerKind::Tools(calls) => {
                let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
                format!("tool call(s) {}", names.join(", "))
            }
            AnswerKind::Error(e) => format!("error {:?}", short(e.to_string())),
            AnswerKind::Fn(_) => "computed answer (Answer::from_fn)".to_owned(),
        }
    }

    fn render(&self, req: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let usage = Usage {
            input_tokens: (req.system.len() / 4) as u64,
            output_tokens: 8,
            cached_input_tokens: 0,
        };
        let ok = |content: String, finish| {
            Ok(ModelResponse {
                content,
                tool_calls: Vec::new(),
                usage,
                finish,
                id: None,
            })
        };
        match &self.kind {
            AnswerKind::Reply {
                message,
                data,
                step,
                switch,
                verdicts,
                commands,
            } => {
                if req.output.is_none() {
                    return ok(message.clone(), FinishReason::Stop);
                }
                let mut m = Map::new();
                if let Some(d) = data {
                    m.insert("data".into(), d.clone());
                } else if schema_has(req, "data") {
                    m.insert("data".into(), json!({}));
                }
                if let Some(s) = step {
                    m.insert("step".into(), Value::String(s.clone()));
                }
                if let Some(flows) = schema_prop(req, "handoff")
                    .and_then(|h| h.get("properties"))
                    .and_then(Value::as_object)
                {
                    // Every flow listed judged false, the one switched to true (named
                    // even when unlisted, to test that the engine ignores it).
                    let mut h: Map<String, Value> = flows
                        .keys()
                        .map(|k| (k.clone(), Value::Bool(false)))
                        .collect();
                    if let Some(to) = switch {
                        h.insert(to.clone(), Value::Bool(true));
                    }
                    m.insert("handoff".into(), Value::Object(h));
                }
                if schema_has(req, "conditions") {
                    m.insert(
                        "conditions".into(),
                        Value::Object(condition_map(req, verdicts)),
                    );
                }
                if schema_has(req, "message") {
                    m.insert("message".into(), Value::String(message.clone()));
                }
                if !commands.is_empty() {
                    m.insert("commands".into(), json!(commands));
                }
                ok(Value::Object(m).to_string(), FinishReason::Stop)
            }
            AnswerKind::Verdicts {
                conditions,
                extracted,
                flow,
            } => {
                let keys = condition_keys(req);
                let conds = condition_map(req, conditions);
                let mut ex = Map::new();
                for (text, v) in extracted {
                    if let Some(k) = keys.get(text) {
                        ex.insert(k.clone(), v.clone());
                    }
                }
                let mut m = Map::new();
                m.insert("conditions".into(), Value::Object(conds));
                if !ex.is_empty() {
                    m.insert("extracted".into(), Value::Object(ex));
                }
                m.insert(
                    "flow".into(),
                    flow.clone().map_or(Value::Null, Value::String),
                );
                ok(Value::Object(m).to_string(), FinishReason::Stop)
            }
            AnswerKind::Raw(c, finish) => ok(c.clone(), *finish),
            AnswerKind::Tools(calls) => Ok(ModelResponse {
                content: String::new(),
                tool_calls: calls.clone(),
                usage,
                finish: FinishReason::ToolCalls,
                id: None,
            }),
            AnswerKind::Error(e) => Err(e.clone()),
            AnswerKind::Fn(f) => f(req),
        }
    }
}

/// Condition texts to the keys the engine listed in the prompt ("- cN: text").
fn condition_keys(req: &ModelRequest) -> HashMap<String, String> {
    let mut keys = HashMap::new();
    // The list is in the per-turn state, appended to the latest user message.
    let state = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == crate::provider::Role::User)
        .map(|m| &*m.content)
        .unwrap_or_default();
    for line in req.system.lines().chain(state.lines()) {
        if let Some(rest) = line.strip_prefix("- c")
            && let Some((n, text)) = rest.split_once(": ")
            && !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit())
        {
            keys.insert(text.to_owned(), format!("c{n}"));
        }
    }
    keys
}

fn condition_map(req: &ModelRequest, verdicts: &[(String, bool)]) -> Map<String, Value> {
    let keys = condition_keys(req);
    let mut conds = Map::new();
    for key in keys.values() {
        conds.insert(key.clone(), Value::Bool(false));
    }
    for (text, v) in verdicts {
        if let Some(k) = keys.get(text) {
            conds.insert(k.clone(), Value::Bool(*v));
        }
    }
    conds
}

fn schema_prop<'a>(req: &'a ModelRequest, key: &str) -> Option<&'a Value> {
    req.output
        .as_ref()
        .and_then(|o| o.schema.get("properties"))
        .and_then(|p| p.get(key))
}

fn schema_has(req: &ModelRequest, key: &str) -> bool {
    schema_prop(req, key).is_some()
}

#[derive(Default)]
struct Script {
    queues: HashMap<CallKind, VecDeque<Answer>>,
    defaults: HashMap<CallKind, Answer>,
    requests: Vec<ModelRequest>,
    /// Stream answers in pieces of this many characters (one piece when unset).
    chunk_chars: Option<usize>,
    /// The profile it reports ([`crate::policy`]).
    profile: crate::policy::ModelProfile,
}

/// A provider that answers from a script, by call kind, and records every request.
/// Clone it to keep a handle after giving it to the agent.
#[derive(Clone, Default)]
pub struct ScriptedProvider {
    script: Arc<Mutex<Script>>,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider").finish_non_exhaustive()
    }
}

impl ScriptedProvider {
    /// An empty script: every call fails until answers are queued.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Report `profile` as the model's ([`crate::policy`]), to test an agent's
    /// behaviour on a small model (the default is
    /// [`ModelProfile::Capable`](crate::policy::ModelProfile::Capable)).
    pub fn with_profile(self, profile: crate::policy::ModelProfile) -> Self {
        self.lock().profile = profile;
        self
    }

    /// Queue an answer for the next call of `kind`.
    pub fn push(&self, kind: CallKind, answer: Answer) -> &Self {
        self.lock()
            .queues
            .entry(kind)
            .or_default()
            .push_back(answer);
        self
    }
    /// Answer every call of `kind` with this when nothing is queued.
    pub fn default_answer(&self, kind: CallKind, answer: Answer) -> &Self {
        self.lock().defaults.insert(kind, answer);
        self
    }
    /// Queue the answer to the next respond call (the structured call of a flow step: the
    /// reply, the data read and the claimed step).
    pub fn respond(&self, a: Answer) -> &Self {
        self.push(CallKind::Respond, a)
    }
    /// Queue the answer to the next tool-round call (the call after tool results).
    pub fn tool_round(&self, a: Answer) -> &Self {
        self.push(CallKind::ToolRound, a)
    }
    /// Queue a classify answer.
    pub fn classify(&self, a: Answer) -> &Self {
        self.push(CallKind::Classify, a)
    }
    /// Queue a route answer.
    pub fn route(&self, a: Answer) -> &Self {
        self.push(CallKind::Route, a)
    }
    /// Queue an extract answer.
    pub fn extract(&self, a: Answer) -> &Self {
        self.push(CallKind::Extract, a)
    }
    /// Queue a summarize answer.
    pub fn summarize(&self, a: Answer) -> &Self {
        self.push(CallKind::Summarize, a)
    }
    /// Queue an agreement answer (`{"agrees": true}` or `false`): the check that the
    /// user's answer to a confirmation agrees before a tool with effects runs
    /// ([`AgentConfig::check_agreement`](crate::config::AgentConfig::check_agreement)).
    pub fn agreement(&self, agrees: bool) -> &Self {
        self.push(
            CallKind::Agreement,
            Answer::raw(serde_json::json!({ "agrees": agrees }).to_string()),
        )
    }

    /// Stream every answer as text pieces of `chars` characters, as a real provider
    /// streams tokens (all ready at once), to test what a consumer of
    /// [`Agent::respond_stream`](crate::Agent::respond_stream) sees. Without it, a
    /// streamed answer arrives in one piece. `0` is treated as 1.
    pub fn stream_in_chunks(&self, chars: usize) -> &Self {
        self.lock().chunk_chars = Some(chars.max(1));
        self
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }
    /// How many calls so far.
    pub fn calls(&self) -> usize {
        self.lock().requests.len()
    }
    /// How many calls of a kind so far.
    pub fn calls_of(&self, kind: CallKind) -> usize {
        self.lock()
            .requests
            .iter()
            .filter(|r| r.kind == kind)
            .count()
    }
    /// A copy of the most recent request the engine sent, `None` before the first call: for
    /// asserting on the prompt, tools or schema of the call just made.
    pub fn last_request(&self) -> Option<ModelRequest> {
        self.lock().requests.last().cloned()
    }
    /// Forget recorded requests (answers stay queued).
    pub fn clear_requests(&self) {
        self.lock().requests.clear();
    }
    /// Answers still queued, by kind.
    pub fn unused(&self) -> usize {
        self.lock().queues.values().map(VecDeque::len).sum()
    }
    /// Remove the answers still queued and describe each, kind first
    /// (`Respond: message "When?"`), in a fixed order of kinds, each kind in queue order.
    pub fn take_unused(&self) -> Vec<String> {
        const KINDS: [CallKind; 7] = [
            CallKind::Respond,
            CallKind::Extract,
            CallKind::Classify,
            CallKind::Route,
            CallKind::ToolRound,
            CallKind::Summarize,
            CallKind::Agreement,
        ];
        let mut s = self.lock();
        KINDS
            .iter()
            .flat_map(|kind| {
                s.queues
                    .remove(kind)
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |a| format!("{kind:?}: {}", a.describe()))
            })
            .collect()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn profile(&self) -> crate::policy::ModelProfile {
        self.lock().profile
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let answer = {
            let mut s = self.lock();
            s.requests.push(request.clone());
            let n = s.requests.len();
            match s
                .queues
                .get_mut(&request.kind)
                .and_then(VecDeque::pop_front)
            {
                Some(a) => a,
                None => match s.defaults.get(&request.kind) {
                    Some(a) => a.clone(),
                    None => {
                        return Err(ProviderError::Other(format!(
                            "scripted provider has no answer for call #{n} ({:?}); queue one with ScriptedProvider::push",
                            request.kind
                        )));
                    }
                },
            }
        };
        answer.render(request)
    }

    fn generate_stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        let chunk = self.lock().chunk_chars;
        Box::pin(
            futures::stream::once(self.generate(request)).flat_map(move |r| {
                let items: Vec<Result<StreamChunk, ProviderError>> = match r {
                    Ok(resp) => {
                        let mut items: Vec<_> = match chunk {
                            _ if resp.content.is_empty() => Vec::new(),
                            None => vec![Ok(StreamChunk::Text(resp.content.clone()))],
                            Some(n) => {
                                let chars: Vec<char> = resp.content.chars().collect();
                                chars
                                    .chunks(n)
                                    .map(|c| Ok(StreamChunk::Text(c.iter().collect())))
                                    .collect()
                            }
                        };
                        items.push(Ok(StreamChunk::Done(resp)));
                        items
                    }
                    Err(e) => vec![Err(e)],
                };
                futures::stream::iter(items)
            }),
        )
    }
}

/// The test kit's always-replay mode for code flows: after every recorded effect the
/// flow runs again from scratch against its journal and must reach the same point, so
/// a flow that is not deterministic fails on its first turn, not in production.
pub fn always_replay() -> AgentConfig {
    AgentConfig {
        always_replay: true,
        ..AgentConfig::default()
    }
}
