//! The classifier: `when` conditions judged (with optional extraction) and, when
//! routing, the flow the user wants, in one call per batch.

use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use super::answer::{CUT_SHORT, ask_for_repair, strip_fences};
use super::push::{push_all, push_condition};
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::fxhash::FxHasher;
use crate::pipeline::Turn;
use crate::pipeline::judged::{Judged, condition_index};
use crate::provider::{CallKind, FinishReason, OutputSchema};

/// The classifier's answer.
#[derive(Debug, Default)]
pub(crate) struct Verdicts {
    pub(crate) extracted: Vec<(usize, Value)>,
    pub(crate) flow: Option<String>,
}

/// One question for the classifier.
pub(crate) struct Question {
    pub(crate) condition: String,
    pub(crate) extract: Option<Value>,
}

/// The classifier's answer.
#[derive(serde::Deserialize)]
struct ClassifyOut {
    #[serde(default)]
    conditions: Option<Judged>,
    #[serde(default)]
    extracted: Option<Map<String, Value>>,
    #[serde(default)]
    flow: Option<String>,
    #[serde(default)]
    confidence: Option<f64>,
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Judge `when` conditions (one call per `classifier_batch_size` conditions).
    pub(crate) async fn judge(&mut self, conditions: Vec<String>) -> Result<(), AgentError> {
        let qs: Vec<Question> = conditions
            .into_iter()
            .map(|condition| Question {
                condition,
                extract: None,
            })
            .collect();
        self.classify(&qs, &[]).await.map(|_| ())
    }

    /// The classifier: conditions (with optional extraction) and, when `flows` is not
    /// empty, routing — in one call per batch.
    pub(crate) async fn classify(
        &mut self,
        questions: &[Question],
        flows: &[(&str, &str)],
    ) -> Result<Verdicts, AgentError> {
        let mut verdicts = Verdicts::default();
        let batch = self.a.config.classifier_batch_size.max(1);
        let chunks: Vec<&[Question]> = if questions.is_empty() {
            vec![&[]]
        } else {
            questions.chunks(batch).collect()
        };
        for (ci, chunk) in chunks.into_iter().enumerate() {
            let base = ci * batch;
            let routing = ci == 0 && !flows.is_empty();
            if chunk.is_empty() && !routing {
                continue;
            }
            let kind = if chunk.is_empty() {
                CallKind::Route
            } else {
                CallKind::Classify
            };
            let mut sys = String::with_capacity(self.a.prompt_capacity());
            sys.push_str(
                "You judge the user's latest message in the context of the conversation.\n",
            );
            if !chunk.is_empty() {
                sys.push_str("For each condition, answer true or false in `conditions`:\n");
                for (i, q) in chunk.iter().enumerate() {
                    push_condition(&mut sys, base + i, &q.condition);
                }
                if chunk.iter().any(|q| q.extract.is_some()) {
                    sys.push_str("For conditions that are true and listed in `extracted`, also extract the value.\n");
                }
            }
            let (min_confidence, guidance) = match &self.a.router {
                crate::codeflow::Router::Detector {
                    min_confidence,
                    prompt,
                    ..
                } => (*min_confidence, prompt.as_deref()),
                crate::codeflow::Router::SchemaIntent { .. } => (None, None),
            };
            if routing {
                sys.push_str("Pick the task the user wants in `flow` (null if none fits):\n");
                for (id, when) in flows {
                    push_all(&mut sys, &["- ", id, ": ", when, "\n"]);
                }
                if let Some(g) = guidance {
                    sys.push_str(g);
                    sys.push('\n');
                }
                if min_confidence.is_some() {
                    sys.push_str(
                        "Give your confidence in that pick, from 0 to 1, in `confidence`.\n",
                    );
                }
            }
            sys.push_str("Answer with JSON only.");
            // The schema depends on the keys, the extraction schemas and the flow ids,
            // never on the condition texts: cache it by those.
            let key = {
                let mut h = FxHasher::default();
                (base, chunk.len(), routing).hash(&mut h);
                for (i, q) in chunk.iter().enumerate() {
                    if q.extract.is_some() {
                        (i, &q.condition).hash(&mut h);
                    }
                }
                if routing {
                    for (id, _) in flows {
                        id.hash(&mut h);
                    }
                    min_confidence.is_some().hash(&mut h);
                }
                (h.finish() & !0xf) | 3
            };
            let schema = self.a.cached_schema(key, || {
                classify_schema(chunk, base, routing, flows, min_confidence.is_some())
            });
            self.a.note_prompt_len(sys.len());
            let mut req = self.request(kind, sys, self.history_messages());
            req.output = Some(OutputSchema {
                name: "classification".into(),
                schema,
            });
            let mut attempts = 0;
            let out = loop {
                let (resp, _) = self.call(&req, None).await?;
                let problem = if resp.finish == FinishReason::Length {
                    CUT_SHORT.to_owned()
                } else {
                    match serde_json::from_str::<ClassifyOut>(strip_fences(&resp.content)) {
                        Ok(out) if out.conditions.is_some() || chunk.is_empty() => break Some(out),
                        Ok(_) => "`conditions` is missing".to_owned(),
                        Err(e) => format!("not valid JSON for the expected object ({e})"),
                    }
                };
                if attempts < self.a.config.repair_attempts {
                    attempts += 1;
                    tracing::warn!(%problem, ?kind, "malformed classifier answer; asking for a repair");
                    ask_for_repair(&mut req, resp.content, &problem);
                    continue;
                }
                if chunk.is_empty() {
                    // A routing answer that cannot be read picks nothing: the router's
                    // fallback applies (conditions, by contrast, are never guessed).
                    tracing::warn!(%problem, "routing answer unreadable; the router's fallback applies");
                    break None;
                }
                return Err(AgentError::MalformedModelOutput {
                    kind,
                    message: problem,
                });
            };
            let Some(out) = out else { continue };
            let conds = out.conditions.unwrap_or_default();
            for (i, q) in chunk.iter().enumerate() {
                self.judged
                    .insert(q.condition.clone(), conds.verdict(base + i));
            }
            if let Some(extracted) = out.extracted {
                for (k, e) in extracted {
                    if let Some(n) = condition_index(&k).and_then(|n| n.checked_sub(base))
                        && n < chunk.len()
                        && !e.is_null()
                    {
                        verdicts.extracted.push((base + n, e));
                    }
                }
            }
            if routing {
                verdicts.flow = out.flow.filter(|f| flows.iter().any(|(id, _)| id == f));
                if let (Some(min), Some(f)) = (min_confidence, &verdicts.flow) {
                    let conf = out.confidence.unwrap_or(0.0);
                    if conf < f64::from(min) {
                        tracing::debug!(flow = %f, confidence = conf, min, "routing pick below the confidence threshold; falling back");
                        verdicts.flow = None;
                    }
                }
            }
        }
        Ok(verdicts)
    }
}

/// Schema of a classifier call: `conditions` (one boolean per key), `extracted` (per key
/// with an extraction schema) and, when routing, `flow`.
fn classify_schema(
    chunk: &[Question],
    base: usize,
    routing: bool,
    flows: &[(&str, &str)],
    confidence: bool,
) -> Value {
    let mut props = Map::new();
    let mut required: Vec<&str> = Vec::new();
    if !chunk.is_empty() {
        let mut cprops = Map::new();
        let mut eprops = Map::new();
        for (i, q) in chunk.iter().enumerate() {
            let key = format!("c{}", base + i);
            cprops.insert(key.clone(), json!({ "type": "boolean" }));
            if let Some(s) = &q.extract {
                eprops.insert(key, s.clone());
            }
        }
        let keys: Vec<Value> = cprops.keys().map(|k| Value::String(k.clone())).collect();
        props.insert(
            "conditions".into(),
            json!({ "type": "object", "properties": cprops, "required": keys, "additionalProperties": false }),
        );
        required.push("conditions");
        if !eprops.is_empty() {
            props.insert(
                "extracted".into(),
                json!({ "type": "object", "properties": eprops }),
            );
        }
    }
    if routing {
        let mut ids: Vec<Value> = flows
            .iter()
            .map(|(id, _)| Value::String((*id).to_owned()))
            .collect();
        ids.push(Value::Null);
        props.insert(
            "flow".into(),
            json!({ "type": ["string", "null"], "enum": ids }),
        );
        required.push("flow");
        if confidence {
            props.insert(
                "confidence".into(),
                json!({ "type": "number", "minimum": 0, "maximum": 1 }),
            );
            required.push("confidence");
        }
    }
    json!({ "type": "object", "properties": props, "required": required, "additionalProperties": false })
}
