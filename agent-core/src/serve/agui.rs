//! AG-UI: `POST /agui` takes AG-UI's `RunAgentInput` and answers with the run as AG-UI
//! events over server-sent events (the module docs of [`crate::serve`] say which).

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Value, json};

use super::events::pending_list;
use super::openai::content_text;
use super::web::unauthorized;
use super::{BodyError, Log, OPERATOR_ONLY, Server, not_yours, read_json, valid_id};
use crate::approval::Decision;
use crate::data::{AgentContext, AgentData, patch_of};
use crate::directive::Directive;
use crate::response::Event as TurnEvent;

pub(super) fn routes<D: AgentData, C: AgentContext>() -> Router<Server<D, C>> {
    Router::new().route("/agui", post(run::<D, C>))
}

fn error(status: StatusCode, what: &str) -> Response {
    (status, Json(json!({ "error": what }))).into_response()
}

fn bad_request(what: &str) -> Response {
    error(StatusCode::BAD_REQUEST, what)
}

/// What a run is asked to do: answer a message or decide a waiting call.
enum Work {
    Message(String),
    Resume { call: String, decision: Decision },
}

/// A resume entry as a decision.
fn decision_of(entry: &Value) -> Result<(String, Decision), String> {
    let id = entry["interruptId"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or("a resume entry needs an `interruptId`")?
        .to_owned();
    let payload = &entry["payload"];
    let decision = match entry["status"].as_str() {
        Some("resolved") if payload.get("decision").is_some() => {
            serde_json::from_value::<Decision>(payload.clone())
                .map_err(|e| format!("the payload of interrupt {id} is not a decision: {e}"))?
        }
        Some("resolved") => Decision::Approve,
        Some("cancelled") => Decision::Deny {
            reason: payload["reason"]
                .as_str()
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .unwrap_or("cancelled in the client")
                .to_owned(),
        },
        _ => {
            return Err(format!(
                "the status of interrupt {id} must be `resolved` or `cancelled`"
            ));
        }
    };
    if let Decision::Deny { reason } = &decision
        && reason.trim().is_empty()
    {
        return Err("a denial needs a reason".into());
    }
    Ok((id, decision))
}

fn parse(body: &Value) -> Result<(String, String, Work), String> {
    let thread = body["threadId"]
        .as_str()
        .ok_or("`threadId` (a string) is required")?;
    if !valid_id(thread) {
        return Err("`threadId` (the session) must be 1 to 64 letters, digits, '-' or '_'".into());
    }
    let run = body["runId"]
        .as_str()
        .filter(|r| !r.is_empty())
        .ok_or("`runId` (a string) is required")?;
    let messages = body["messages"]
        .as_array()
        .ok_or("`messages` (an array) is required")?;
    let resume = body["resume"].as_array().filter(|r| !r.is_empty());
    let work = if let Some(entries) = resume {
        let [entry] = entries.as_slice() else {
            return Err("one resume entry at a time: a run waits for one call here".into());
        };
        let (call, decision) = decision_of(entry)?;
        Work::Resume { call, decision }
    } else {
        let last = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .ok_or("`messages` has no user message (and there is no `resume`)")?;
        let text = content_text(&last["content"])
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or("the last user message has no text")?;
        Work::Message(text)
    };
    Ok((thread.to_owned(), run.to_owned(), work))
}

fn event(v: Value) -> SseEvent {
    SseEvent::default().data(v.to_string())
}

/// Turns the agent's events into AG-UI events, keeping what is open.
struct Run {
    thread: String,
    run: String,
    log: Log,
    messages: usize,
    /// The open text message and the text it got.
    text: Option<String>,
    streamed: String,
    tools: usize,
    /// Calls started whose result has not come: (id, tool, arguments).
    open_calls: Vec<(String, String, Value)>,
    /// Ids the calls of a resumed round already have: (tool, arguments, id).
    known: Vec<(String, Value, String)>,
    /// The open AG-UI step.
    step: Option<String>,
}

impl Run {
    fn open_text(&mut self, out: &mut Vec<SseEvent>) -> String {
        if let Some(id) = &self.text {
            return id.clone();
        }
        self.messages += 1;
        let id = format!("{}-msg-{}", self.run, self.messages);
        out.push(event(json!({
            "type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"
        })));
        self.text = Some(id.clone());
        id
    }

    fn close_text(&mut self, out: &mut Vec<SseEvent>) {
        if let Some(id) = self.text.take() {
            out.push(event(
                json!({ "type": "TEXT_MESSAGE_END", "messageId": id }),
            ));
        }
    }

    fn close_step(&mut self, out: &mut Vec<SseEvent>) {
        if let Some(name) = self.step.take() {
            out.push(event(json!({ "type": "STEP_FINISHED", "stepName": name })));
        }
    }

    fn call(&mut self, out: &mut Vec<SseEvent>, id: String, tool: &str, arguments: &Value) {
        self.close_text(out);
        out.push(event(json!({
            "type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": tool
        })));
        out.push(event(json!({
            "type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": arguments.to_string()
        })));
        out.push(event(json!({ "type": "TOOL_CALL_END", "toolCallId": id })));
        self.open_calls
            .push((id, tool.to_owned(), arguments.clone()));
    }

    fn on<D: serde::Serialize>(&mut self, e: TurnEvent<D>) -> Vec<SseEvent> {
        let mut out = Vec::new();
        match e {
            TurnEvent::StepEntered(r) => {
                self.close_step(&mut out);
                out.push(event(json!({ "type": "STEP_STARTED", "stepName": r.step })));
                out.push(event(json!({
                    "type": "STATE_DELTA",
                    "delta": [
                        { "op": "add", "path": "/flow", "value": r.flow },
                        { "op": "add", "path": "/step", "value": r.step },
                    ],
                })));
                self.step = Some(r.step);
            }
            TurnEvent::Transition(t) => out.push(event(json!({
                "type": "STATE_DELTA",
                "delta": [{ "op": "add", "path": "/flow", "value": t.to }],
            }))),
            TurnEvent::ToolCall { name, arguments } => {
                let id = match self
                    .known
                    .iter()
                    .position(|(t, a, _)| *t == name && *a == arguments)
                {
                    Some(i) => self.known.remove(i).2,
                    None => {
                        self.tools += 1;
                        format!("{}-call-{}", self.run, self.tools)
                    }
                };
                self.call(&mut out, id, &name, &arguments);
            }
            TurnEvent::ApprovalRequested(c) => {
                self.call(&mut out, c.id.clone(), &c.tool, &c.arguments);
                // It waits: no result comes in this run.
                self.open_calls.retain(|(id, _, _)| *id != c.id);
            }
            TurnEvent::ToolResult(r) => {
                let at = self
                    .open_calls
                    .iter()
                    .position(|(_, t, a)| *t == r.name && *a == r.arguments)
                    .or_else(|| self.open_calls.iter().position(|(_, t, _)| *t == r.name));
                if let Some(i) = at {
                    let (id, _, _) = self.open_calls.remove(i);
                    self.messages += 1;
                    out.push(event(json!({
                        "type": "TOOL_CALL_RESULT",
                        "messageId": format!("{}-result-{}", self.run, self.messages),
                        "toolCallId": id,
                        "content": r.output,
                        "role": "tool",
                    })));
                }
            }
            TurnEvent::TextDelta(t) if !t.is_empty() => {
                let id = self.open_text(&mut out);
                self.streamed.push_str(&t);
                out.push(event(json!({
                    "type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": t
                })));
            }
            TurnEvent::Done(r) => {
                // The deltas concatenate to the message; send what is missing.
                let rest = r
                    .message
                    .strip_prefix(self.streamed.as_str())
                    .unwrap_or_default()
                    .to_owned();
                if !rest.is_empty() {
                    let id = self.open_text(&mut out);
                    out.push(event(json!({
                        "type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": rest
                    })));
                }
                self.close_text(&mut out);
                self.close_step(&mut out);
                if r.stopped == crate::response::StoppedReason::HumanHandoff {
                    // For the frontend: a person has the conversation now.
                    out.push(event(json!({
                        "type": "CUSTOM",
                        "name": "human_handoff",
                        "value": { "threadId": self.thread, "flow": r.flow, "step": r.step },
                    })));
                }
                out.push(event(json!({
                    "type": "STATE_SNAPSHOT",
                    "snapshot": {
                        "flow": r.flow,
                        "step": r.step,
                        "data": r.data,
                        "stopped": r.stopped,
                        "awaiting_approval": pending_list(&r.awaiting_approval),
                    },
                })));
                let outcome = if r.awaiting_approval.is_empty() {
                    json!({ "type": "success" })
                } else {
                    let interrupts: Vec<Value> = r
                        .awaiting_approval
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "reason": "tool_approval",
                                "message": format!("{} waits for a person's approval", c.tool),
                                "toolCallId": c.id,
                                "metadata": { "tool": c.tool, "arguments": c.arguments },
                            })
                        })
                        .collect();
                    json!({ "type": "interrupt", "interrupts": interrupts })
                };
                let u = &r.usage;
                out.push(event(json!({
                    "type": "RUN_FINISHED",
                    "threadId": self.thread,
                    "runId": self.run,
                    "outcome": outcome,
                    "result": { "message": r.message, "stopped": r.stopped },
                    "usage": [{
                        "inputTokens": u.input_tokens,
                        "outputTokens": u.output_tokens,
                        "totalTokens": u.input_tokens + u.output_tokens,
                        "cachedInputTokens": u.cached_input_tokens,
                    }],
                })));
            }
            TurnEvent::Error(err) => {
                (self.log)(&format!(
                    "[server] session {}: AG-UI run {} failed: {err} (the session is unchanged)",
                    self.thread, self.run
                ));
                out.push(event(json!({
                    "type": "RUN_ERROR", "message": err.to_string(), "code": "turn_failed"
                })));
            }
            _ => {}
        }
        out
    }
}

/// What the frontend sent that the engine cannot use, for the warning.
fn ignored(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(tools) = body["tools"].as_array().filter(|t| !t.is_empty()) {
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        out.push(format!(
            "{} frontend tool(s) ({}): the agent calls only its own tools",
            tools.len(),
            names.join(", ")
        ));
    }
    if let Some(context) = body["context"].as_array().filter(|c| !c.is_empty()) {
        let what: Vec<&str> = context
            .iter()
            .filter_map(|c| c["description"].as_str())
            .collect();
        out.push(format!(
            "{} context item(s) ({}): the agent's prompt is built from its flows only",
            context.len(),
            what.join("; ")
        ));
    }
    out
}

/// The fields of the frontend's `state.data` that differ from the session's data.
fn state_changes<D: serde::Serialize>(body: &Value, data: &D) -> Option<Value> {
    let sent = body["state"]["data"].as_object()?;
    let ours = serde_json::to_value(data).ok()?;
    let changed: serde_json::Map<String, Value> = sent
        .iter()
        .filter(|(k, v)| ours.get(k.as_str()) != Some(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!changed.is_empty()).then_some(Value::Object(changed))
}

/// `POST /agui`.
async fn run<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let who = match server.caller(&headers).await {
        Ok(p) => p,
        Err(e) => return unauthorized(json!({ "error": e.to_string() })),
    };
    let body = match read_json(body, server.shared.body_limit).await {
        Ok(b) => b,
        Err(BodyError::TooLarge(limit)) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the body is larger than this server takes ({limit} bytes)"),
            );
        }
        Err(BodyError::Invalid(e)) => {
            return bad_request(&format!("the body must be an AG-UI RunAgentInput ({e})"));
        }
    };
    let (thread, run_id, work) = match parse(&body) {
        Ok(p) => p,
        Err(e) => return bad_request(&e),
    };
    if matches!(work, Work::Resume { .. }) && !who.is_operator() {
        return error(
            StatusCode::FORBIDDEN,
            &format!("{OPERATOR_ONLY}: a `resume` decides a waiting call"),
        );
    }
    if matches!(work, Work::Message(_)) && !server.may_write(&who, &thread).await {
        return error(StatusCode::FORBIDDEN, &not_yours(&thread));
    }
    let log = server.shared.log.clone();
    let agent = server.agent();
    let session = match agent.session(&thread).await {
        Ok(s) => s,
        Err(e) => {
            log(&format!("[server] AG-UI thread {thread}: {e}"));
            return error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string());
        }
    };
    for what in ignored(&body) {
        log(&format!(
            "[server] AG-UI thread {thread}, run {run_id}: ignored {what}"
        ));
    }
    let data = session.as_ref().map(|s| s.data.clone()).unwrap_or_default();
    // Only the owner's frontend writes to the session (an operator's resume does not).
    if let (Work::Message(_), Some(changes)) = (&work, state_changes(&body, &data)) {
        let directive = match patch_of(&changes) {
            Ok(p) => Directive::new().data(p),
            Err(e) => return bad_request(&format!("`state.data` cannot be written: {e}")),
        };
        if let Err(e) = agent.dispatch(&thread, directive).await {
            return bad_request(&format!("`state.data` was refused: {e}"));
        }
    }
    let before = match &session {
        Some(s) => json!({
            "flow": s.flow,
            "step": s.step,
            "data": s.data,
            "awaiting_approval": pending_list(
                &s.approval.as_ref().map(|p| p.waiting()).unwrap_or_default()
            ),
        }),
        None => json!({
            "flow": null, "step": null, "data": D::default(), "awaiting_approval": [],
        }),
    };
    let waiting = session
        .as_ref()
        .and_then(|s| s.approval.as_ref())
        .map(|p| p.waiting())
        .unwrap_or_default();
    let mut state = Run {
        thread: thread.clone(),
        run: run_id.clone(),
        log,
        messages: 0,
        text: None,
        streamed: String::new(),
        tools: 0,
        open_calls: Vec::new(),
        known: waiting
            .iter()
            .map(|c| (c.tool.clone(), c.arguments.clone(), c.id.clone()))
            .collect(),
        step: None,
    };
    let turn = match work {
        Work::Message(text) => agent.respond_stream(&thread, &text),
        Work::Resume { call, decision } => {
            if !waiting.iter().any(|c| c.id == call) {
                let ids: Vec<&str> = waiting.iter().map(|c| c.id.as_str()).collect();
                return (
                    StatusCode::CONFLICT,
                    Json(json!({
                        "error": format!("no call `{call}` waits for a decision in thread {thread}"),
                        "waiting": ids,
                    })),
                )
                    .into_response();
            }
            agent.resolve_approval_stream(&thread, &call, decision)
        }
    };
    let head = vec![
        event(json!({ "type": "RUN_STARTED", "threadId": thread, "runId": run_id })),
        event(json!({ "type": "STATE_SNAPSHOT", "snapshot": before })),
    ];
    let events = futures::stream::iter(head)
        .chain(
            turn.map(move |e| state.on(e))
                .flat_map(futures::stream::iter),
        )
        .map(Ok::<_, std::convert::Infallible>);
    Sse::new(events).into_response()
}
