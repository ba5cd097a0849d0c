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

/// One entry of a step's branch table: a target (step, flow or directive) and its
/// conditions, code predicates ([`Branch::if_`], run first) and model-judged ones
/// ([`Branch::when`], judged in the turn's one classifier call). The first entry whose
/// conditions hold is taken; an entry without conditions is the fallback and must be last.
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
    /// A branch that leaves this flow for the flow `flow` (registered on the agent; `build()`
    /// checks it).
    pub fn to_flow(flow: impl Into<String>) -> Self {
        Self::to(Target::Flow(flow.into()))
    }
    /// A branch whose effect is the directive `d` (complete, abort, a reply, a data write, …)
    /// rather than a jump to a step or flow.
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
    /// Where the branch leads when its conditions hold (as built, before `build()` resolves a
    /// bare id).
    pub fn target(&self) -> &Target {
        &self.then
    }
    /// The label given with [`Branch::label`], if any: how traces, the directive chain and
    /// diagrams name the branch.
    pub fn label_text(&self) -> Option<&str> {
        self.label.as_deref()
    }
    /// The model-judged conditions of this entry, in the order added (all must hold).
    pub fn conditions(&self) -> &[String] {
        &self.when
    }
}
