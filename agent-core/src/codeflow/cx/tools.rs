//! Tool calls from a code flow: run once through the engine (effects, approvals and
//! limits as for any tool call), recorded with a hash of their arguments so a replay
//! returns the recorded result and notices a call that changed.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

use super::{FlowCx, Request};
use crate::codeflow::ToolFailure;
use crate::codeflow::journal::Entry;
use crate::tool::{IntoTool, Tool};

fn args_hash(v: &Value) -> u64 {
    // A fixed hasher: the hash is stored and compared across processes.
    let mut h = crate::fxhash::FxHasher::default();
    v.to_string().hash(&mut h);
    h.finish()
}
impl<D: Send + Sync + 'static, C: Send + Sync + 'static> FlowCx<D, C> {
    /// Call a tool (a `#[tool]` fn, an `FnTool`, an `Arc<dyn Tool>`). Its result is
    /// recorded: a replay gets the recorded result and does not call the tool again.
    /// Failures (invalid arguments, errors, panics, time limits) come back as
    /// [`ToolFailure`], which the flow may handle or propagate with `?`.
    ///
    /// The call follows the tool's [`Effect`](crate::tool::Effect) like a model's
    /// call: its [`ToolCx::idempotency_key`](crate::tool::ToolCx::idempotency_key) is
    /// the turn's and the call's position among the turn's live tool calls, so a turn
    /// re-run (a save conflict, a redelivered event) gets the same key, and an
    /// `effect = once` tool's journaled result instead of a second run.
    ///
    /// A failed step (the fn returns an error or panics later in the same turn) keeps
    /// none of the turn's records, so the next turn's attempt calls the tool again,
    /// as a new call with a new key (also for `once` tools): tools with side effects
    /// should be idempotent, or the flow should handle the error instead of failing
    /// the step.
    pub async fn tool(
        &self,
        tool: impl IntoTool<D, C>,
        args: impl Serialize,
    ) -> Result<String, ToolFailure> {
        let t = tool.into_tool();
        self.call_tool(t.name().to_owned(), Ok(t), args).await
    }

    /// Call a tool registered on the agent, by name (an unknown name is a
    /// [`ToolFailure`] listing the registered tools).
    pub async fn tool_named(
        &self,
        name: &str,
        args: impl Serialize,
    ) -> Result<String, ToolFailure> {
        let found = self.inner.tools.iter().find(|t| t.name() == name).cloned();
        let t = found.ok_or_else(|| {
            let known: Vec<&str> = self.inner.tools.iter().map(|t| t.name()).collect();
            format!(
                "unknown tool `{name}`; registered tools: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        });
        self.call_tool(name.to_owned(), t, args).await
    }

    async fn call_tool(
        &self,
        name: String,
        tool: Result<Arc<dyn Tool<D, C>>, String>,
        args: impl Serialize,
    ) -> Result<String, ToolFailure> {
        let args = match serde_json::to_value(args) {
            Ok(v) => v,
            Err(e) => Value::String(format!("<unserializable arguments: {e}>")),
        };
        let hash = args_hash(&args);
        let recorded = {
            let mut st = self.lock();
            let pos = st.pos;
            if st.error.is_some() {
                Err(None)
            } else {
                let fits = pos < st.journal.len() || st.room(self.inner.effect_limit);
                match st.journal.get(pos) {
                    None if !fits => Err(None),
                    None => Ok(None),
                    Some(Entry::Tool {
                        name: n,
                        args: a,
                        ok,
                        out,
                    }) if *n == name && *a == hash => {
                        let r = (*ok, out.clone());
                        st.pos += 1;
                        Ok(Some(r))
                    }
                    Some(other) => {
                        Err(Some(self.diverged(pos, other, format!("tool(\"{name}\")"))))
                    }
                }
            }
        };
        let (ok, out) = match recorded {
            Err(e) => return self.halt(e).await,
            Ok(Some(r)) => r,
            Ok(None) => {
                let (reply, rx) = oneshot::channel();
                let _ = self.inner.tx.send(Request::Tool {
                    tool,
                    name: name.clone(),
                    args,
                    reply,
                });
                let Ok((ok, out)) = rx.await else {
                    return self.halt(None).await;
                };
                {
                    let mut st = self.lock();
                    st.journal.push(Entry::Tool {
                        name: name.clone(),
                        args: hash,
                        ok,
                        out: out.clone(),
                    });
                    st.pos += 1;
                }
                self.recorded().await;
                (ok, out)
            }
        };
        if ok {
            Ok(out)
        } else {
            Err(ToolFailure {
                tool: name,
                message: out,
            })
        }
    }
}
