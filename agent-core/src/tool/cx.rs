//! What a tool call sees of the session, and the parts shared by one tool round.

use std::sync::Arc;

use serde_json::Value;

use crate::directive::Directive;
use crate::hook::Dispatcher;

/// What a tool sees: an owned snapshot of the session (so tool futures are `'static`)
/// and a dispatcher into the post-LLM bus.
pub struct ToolCx<D, C> {
    pub(crate) session_id: Arc<str>,
    pub(crate) flow: Option<Arc<str>>,
    pub(crate) step: Option<Arc<str>>,
    pub(crate) data: Arc<D>,
    pub(crate) context: Arc<C>,
    pub(crate) dispatcher: Dispatcher,
    pub(crate) key: Arc<str>,
}

impl<D, C> Clone for ToolCx<D, C> {
    fn clone(&self) -> Self {
        Self {
            session_id: self.session_id.clone(),
            flow: self.flow.clone(),
            step: self.step.clone(),
            data: self.data.clone(),
            context: self.context.clone(),
            dispatcher: self.dispatcher.clone(),
            key: self.key.clone(),
        }
    }
}

impl<D, C> ToolCx<D, C> {
    /// A context for calling a tool outside a turn (tests, scripts). Its
    /// idempotency key is `detached-<session id>`.
    pub fn detached(session_id: &str, data: D, context: C) -> Self {
        Self {
            session_id: Arc::from(session_id),
            flow: None,
            step: None,
            data: Arc::new(data),
            context: Arc::new(context),
            dispatcher: Dispatcher::default(),
            key: Arc::from(format!("detached-{session_id}")),
        }
    }
    /// This call's idempotency key: the same on every run of the same call (a turn
    /// retried after a save conflict or a crash, an inbound event delivered again),
    /// different for any other call. Derived from the session, the turn (its inbound
    /// event id, else the session's turn number and the message), the call's position
    /// in the turn, its tool name and its arguments; at most 70 ASCII characters
    /// (`[0-9a-f-]`), so payment and email APIs accept it as is. Pass it to whatever
    /// the tool changes to make an [`Effect::Idempotent`](super::Effect::Idempotent) tool safe to re-run.
    pub fn idempotency_key(&self) -> &str {
        &self.key
    }
    /// The id of the session whose turn called the tool.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
    /// The id of the flow the conversation is in, `None` outside any flow.
    pub fn flow_id(&self) -> Option<&str> {
        self.flow.as_deref()
    }
    /// The id of the step the conversation is at, `None` outside any flow.
    pub fn step_id(&self) -> Option<&str> {
        self.step.as_deref()
    }
    /// Collected data at the time of the call.
    pub fn data(&self) -> &D {
        &self.data
    }
    /// Session context at the time of the call.
    pub fn context(&self) -> &C {
        &self.context
    }
    /// Queue a directive into the post-LLM bus.
    pub fn dispatch(&self, directive: Directive) {
        self.dispatcher.dispatch(directive);
    }
}

/// Shared parts of the contexts of one tool round (each call gets its own dispatcher
/// and key).
pub(crate) struct ToolCxParts<D, C> {
    /// The turn's identity ([`super::key::turn_tag`]).
    pub(crate) turn: Arc<str>,
    pub(crate) session_id: Arc<str>,
    pub(crate) flow: Option<Arc<str>>,
    pub(crate) step: Option<Arc<str>>,
    pub(crate) data: Arc<D>,
    pub(crate) context: Arc<C>,
}

impl<D, C> ToolCxParts<D, C> {
    /// The context of the call at position `index` of the turn.
    pub(crate) fn cx(&self, index: usize, name: &str, args: &Value) -> ToolCx<D, C> {
        self.keyed(self.key(index, name, args))
    }

    /// The idempotency key of the call at position `index` of the turn.
    pub(crate) fn key(&self, index: usize, name: &str, args: &Value) -> String {
        super::key::call_key(&self.session_id, &self.turn, index, name, args)
    }

    /// The context of a call whose key was fixed earlier (a call held for approval).
    pub(crate) fn keyed(&self, key: String) -> ToolCx<D, C> {
        ToolCx {
            key: Arc::from(key),
            session_id: self.session_id.clone(),
            flow: self.flow.clone(),
            step: self.step.clone(),
            data: self.data.clone(),
            context: self.context.clone(),
            dispatcher: Dispatcher::default(),
        }
    }
}
