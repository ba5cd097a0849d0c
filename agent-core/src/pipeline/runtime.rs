//! What a running agent holds (its registry, provider, store, caches and settings),
//! defined here so the pipeline, which reads it every turn, does not import the
//! agent layer above it; [`crate::agent::Agent`] is a shared handle to it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::clock::Clock;
use crate::codeflow::{CodeFlow, ResponseHook, Router};
use crate::config::AgentConfig;
use crate::data::{DataSchema, FieldSet};
use crate::directive::{Directive, Position};
use crate::error::DirectiveError;
use crate::flow::Flow;
use crate::fxhash::FxHashMap;
use crate::hook::PreHook;
use crate::instruction::Instruction;
use crate::provider::Provider;
use crate::session::Session;
use crate::signal::Signal;
use crate::store::SessionStore;
use crate::tool::Tool;

/// A flow whose definition changed under a stored session, as the migration hook
/// sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowVersionChange {
    /// The session's active flow.
    pub flow: String,
    /// Version recorded in the session.
    pub stored: Option<String>,
    /// Version of the registered flow (`None` if it is gone).
    pub current: Option<String>,
    /// Why the session cannot continue as is.
    pub problem: String,
}

/// Upgrades a session whose flow changed incompatibly (move it to an existing step,
/// another flow, or clear the position).
pub type Migration<D, C> =
    Arc<dyn Fn(&mut Session<D, C>, &FlowVersionChange) -> Result<(), String> + Send + Sync>;

/// A session as this process saved it: its bytes, its value, its present fields, and
/// where its history sits in the bytes.
pub(crate) struct Remembered<D, C> {
    pub(crate) bytes: Vec<u8>,
    pub(crate) session: Session<D, C>,
    pub(crate) present: FieldSet,
    pub(crate) span: crate::session::HistorySpan,
}

/// A session loaded for a turn; from the cache, it comes with its presence set and
/// its previous encoding.
pub(crate) struct Loaded<D, C> {
    pub(crate) session: Session<D, C>,
    pub(crate) present: Option<FieldSet>,
    pub(crate) prev: Option<crate::session::PreviousSave>,
}

pub(crate) struct AgentInner<D, C> {
    pub(crate) name: String,
    pub(crate) flows: Vec<Arc<Flow<D, C>>>,
    pub(crate) code_flows: Vec<Arc<CodeFlow<D, C>>>,
    pub(crate) router: Router,
    pub(crate) on_response: Option<ResponseHook<D>>,
    /// Decides once-tool calls whose outcome is unknown.
    pub(crate) on_unknown_outcome: Option<crate::journal::UnknownOutcomeHook>,
    /// Merges reused once-results computed on data that changed since.
    pub(crate) on_stale_once_result: Option<crate::journal::StaleHook>,
    pub(crate) flow_index: HashMap<String, usize>,
    pub(crate) tools: Vec<Arc<dyn Tool<D, C>>>,
    pub(crate) signals: Vec<Signal<D, C>>,
    pub(crate) instructions: Vec<Instruction<D, C>>,
    pub(crate) on_enter: Option<Arc<dyn PreHook<D, C>>>,
    pub(crate) migrate: Option<Migration<D, C>>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) context: C,
    pub(crate) config: AgentConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) schema: Arc<DataSchema>,
    /// What a model-written reply may claim only with the state behind it.
    pub(crate) claim_guards: Vec<crate::claim::ClaimGuard>,
    /// The tools whose outcome a reply may state only in a turn they succeeded.
    pub(crate) outcomes: Vec<crate::claim::OutcomeTool>,
    /// What the agent does when the user asks for a person.
    pub(crate) human_handoff: crate::agent::HumanHandoff,
    /// How the classifier sees each flow and each code flow (built once).
    pub(crate) route_descs: Vec<String>,
    pub(crate) code_route_descs: Vec<String>,
    /// The longest system prompt built so far.
    pub(crate) prompt_len: std::sync::atomic::AtomicUsize,
    /// The present fields of a new session's data.
    pub(crate) fresh_present: FieldSet,
    /// Rendered once at build: persona, goal, agent instructions, glossary, knowledge.
    pub(crate) section: String,
    /// This agent's name in session leases (name, process id, a random part).
    pub(crate) lease_holder: String,
    /// One lock per session id; idle locks are dropped once there are many.
    /// With each, the signal of its lease's release by a turn of this agent (the
    /// next waiter in this process tries at once instead of at its next poll).
    pub(crate) locks: Mutex<FxHashMap<String, SessionSlot>>,
    /// What replies must not read back from the system texts sent lately.
    pub(crate) read_backs: crate::reply::ReadBackCache,
    /// Output schemas are the same for every turn at the same place: built once.
    pub(crate) schema_cache: Mutex<FxHashMap<u64, Arc<Value>>>,
    /// Per flow: the prompt lines offering a switch to the other flows, and their ids.
    pub(crate) switch_sections: Vec<String>,
    pub(crate) switch_ids: Vec<Vec<String>>,
    /// Per flow: the fields its answer's `data` carries for the first step of a flow
    /// it hands over to ([`crate::config::AgentConfig::preview_handoffs`]).
    pub(crate) switch_fields: Vec<Vec<Arc<str>>>,
    /// Sessions as last saved by this process, with their bytes.
    pub(crate) decoded: Mutex<FxHashMap<String, Remembered<D, C>>>,
}

impl<D, C> AgentInner<D, C> {
    pub(crate) fn flow(&self, id: &str) -> Option<&Arc<Flow<D, C>>> {
        if self.flows.len() <= 8 {
            // A few string compares beat hashing the id.
            return self.flows.iter().find(|f| f.id.as_ref() == id);
        }
        self.flow_index.get(id).map(|&i| &self.flows[i])
    }
    pub(crate) fn flow_ids(&self) -> Vec<String> {
        self.flows
            .iter()
            .map(|f| f.id.to_string())
            .chain(self.code_flows.iter().map(|f| f.id.to_string()))
            .collect()
    }
    pub(crate) fn code_flow(&self, id: &str) -> Option<&Arc<CodeFlow<D, C>>> {
        self.code_flows.iter().find(|f| f.id.as_ref() == id)
    }
    /// Declarative and code flows together.
    pub(crate) fn flow_count(&self) -> usize {
        self.flows.len() + self.code_flows.len()
    }

    /// Room for a system prompt: the longest built so far (prompts of one agent are
    /// alike), so building one does not reallocate.
    pub(crate) fn prompt_capacity(&self) -> usize {
        self.prompt_len
            .load(std::sync::atomic::Ordering::Relaxed)
            .max(512)
    }

    pub(crate) fn note_prompt_len(&self, len: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        // Read first: a write on every turn would bounce the cache line between cores.
        if len > self.prompt_len.load(Relaxed) {
            self.prompt_len.fetch_max(len, Relaxed);
        }
    }

    /// The cached schema for `key`, built by `make` on first use.
    pub(crate) fn cached_schema(&self, key: u64, make: impl FnOnce() -> Value) -> Arc<Value> {
        let mut cache = self.schema_cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = cache.get(&key) {
            return s.clone();
        }
        if cache.len() > 4096 {
            cache.clear();
        }
        let s = Arc::new(make());
        cache.insert(key, s.clone());
        s
    }

    /// Remember a session just saved (bytes and value).
    pub(crate) fn remember(&self, entry: Remembered<D, C>) {
        let cap = self.config.session_cache;
        if cap == 0 {
            return;
        }
        let mut map = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= cap && !map.contains_key(&entry.session.id) {
            // Evict an arbitrary entry: the cache is a shortcut, never the truth.
            if let Some(k) = map.keys().next().cloned() {
                map.remove(&k);
            }
        }
        map.insert(entry.session.id.clone(), entry);
    }

    pub(crate) fn forget(&self, id: &str) {
        let mut map = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(id);
    }

    /// The remembered session if the store still holds exactly the bytes we saved,
    /// taken out of the cache: the turn owns it (no copy), and a turn that fails puts
    /// nothing back, so the next one decodes what the store holds.
    pub(crate) fn recall(&self, stored: &crate::store::StoredSession) -> Option<Loaded<D, C>> {
        let hit = {
            let mut map = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
            map.remove(&stored.id)
        }?;
        if hit.bytes != stored.bytes {
            return None;
        }
        let Remembered {
            bytes,
            mut session,
            present,
            span,
        } = hit;
        session.version = stored.version;
        let prev = crate::session::PreviousSave {
            first: session.history.first().map(|m| m.content.clone()),
            last: session.history.last().map(|m| m.content.clone()),
            bytes,
            span,
        };
        Some(Loaded {
            session,
            present: Some(present),
            prev: Some(prev),
        })
    }

    pub(crate) fn session_lock(&self, id: &str) -> SessionSlot {
        let mut map = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = map.get(id) {
            return l.clone();
        }
        if map.len() >= 1024 {
            // Only the map holds an idle slot.
            map.retain(|_, l| Arc::strong_count(&l.lock) > 1 || Arc::strong_count(&l.released) > 1);
        }
        let l = SessionSlot {
            lock: Arc::new(tokio::sync::Mutex::new(())),
            released: Arc::new(tokio::sync::Notify::new()),
        };
        map.insert(id.to_owned(), l.clone());
        l
    }

    /// Check that a directive's targets exist (the structural rules are checked by
    /// `Directive::validate`).
    pub(crate) fn check_targets(
        &self,
        d: &Directive,
        current_flow: Option<&str>,
    ) -> Result<(), DirectiveError> {
        d.validate()?;
        let unknown_flow = |f: &str| DirectiveError::UnknownFlow {
            flow: f.to_owned(),
            known: self.flow_ids(),
        };
        match &d.position {
            Some(Position::GoTo(g)) if self.code_flow(&g.flow).is_none() => {
                self.flow(&g.flow).ok_or_else(|| unknown_flow(&g.flow))?;
            }
            Some(Position::GoToStep(g)) => {
                let fid = match (&g.flow, current_flow) {
                    (Some(f), _) => f.as_str(),
                    (None, Some(f)) => f,
                    (None, None) => return Err(DirectiveError::NoActiveFlow { field: "goToStep" }),
                };
                let flow = self.flow(fid).ok_or_else(|| unknown_flow(fid))?;
                if flow.step(&g.step).is_none() {
                    return Err(DirectiveError::UnknownStep {
                        flow: fid.to_owned(),
                        step: g.step.clone(),
                        known: flow.step_ids(),
                    });
                }
            }
            Some(Position::Complete(c)) => {
                if let Some(n) = &c.next {
                    self.check_targets(n, None)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// A session's in-process lock, and the signal of its lease's release.
#[derive(Clone)]
pub(crate) struct SessionSlot {
    pub(crate) lock: Arc<tokio::sync::Mutex<()>>,
    pub(crate) released: Arc<tokio::sync::Notify>,
}
