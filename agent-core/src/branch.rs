//! Branch tables: explicit forks at a step. Entries are read top to bottom; `if` runs
//! before `when` (an entry whose `if` fails never costs a model call); the first entry
//! whose conditions all pass wins; an entry with no condition is the fallback and must
//! be last.

use std::fmt;
use std::sync::Arc;

use crate::directive::Directive;
use crate::hook::{Cx, Predicate};

/// Where a matched branch goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A step of this flow.
    Step(String),
    /// Another flow (sugar for `Directive::go_to`).
    Flow(String),
    /// A full directive (cross-flow steps, data writes, completion, replies).
    Directive(Directive),
    /// A bare id: a step of this flow if it has one, otherwise a flow id (the spec's
    /// string form). Resolved at `build()`.
    Id(String),
}

/// One branch entry.
pub struct Branch<D, C> {
    pub(crate) when: Vec<String>,
    pub(crate) if_: Vec<Predicate<D, C>>,
    pub(crate) then: Target,
    pub(crate) label: Option<String>,
}

impl<D, C> Clone for Branch<D, C> {
    fn clone(&self) -> Self {
        Self {
            when: self.when.clone(),
            if_: self.if_.clone(),
            then: self.then.clone(),
            label: self.label.clone(),
        }
    }
}

impl<D, C> fmt::Debug for Branch<D, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Branch")
            .field("when", &self.when)
            .field("if", &self.if_.len())
            .field("then", &self.then)
            .field("label", &self.label)
            .finish()
    }
}

impl<D, C> Branch<D, C> {
    /// A branch to `target` (no condition yet: a fallback until one is added).
    pub fn to(target: Target) -> Self {
        Self {
            when: Vec::new(),
            if_: Vec::new(),
            then: target,
            label: None,
        }
    }
    /// To a step of this flow.
    pub fn to_step(step: impl Into<String>) -> Self {
        Self::to(Target::Step(step.into()))
    }
    /// To another flow.
    pub fn to_flow(flow: impl Into<String>) -> Self {
        Self::to(Target::Flow(flow.into()))
    }
    /// Apply a directive.
    pub fn to_directive(d: Directive) -> Self {
        Self::to(Target::Directive(d))
    }
    /// To a bare id (local step first, else flow).
    pub fn to_id(id: impl Into<String>) -> Self {
        Self::to(Target::Id(id.into()))
    }
    /// Add a model-judged condition (several are ANDed).
    pub fn when(mut self, condition: impl Into<String>) -> Self {
        self.when.push(condition.into());
        self
    }
    /// Add a code predicate (several are ANDed; all run before any `when`).
    pub fn if_(mut self, p: impl Fn(&Cx<'_, D, C>) -> bool + Send + Sync + 'static) -> Self {
        self.if_.push(Arc::new(p));
        self
    }
    /// A label for traces and diagrams.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
    /// Whether the entry has no condition.
    pub fn is_unconditional(&self) -> bool {
        self.when.is_empty() && self.if_.is_empty()
    }
    /// The target.
    pub fn target(&self) -> &Target {
        &self.then
    }
    /// The label.
    pub fn label_text(&self) -> Option<&str> {
        self.label.as_deref()
    }
    /// The `when` conditions.
    pub fn conditions(&self) -> &[String] {
        &self.when
    }
}
