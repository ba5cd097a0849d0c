//! Instructions (must / should / never) at agent, flow and step scope.
//!
//! An instruction with `when` is rendered as a conditional rule that the model judges
//! in context (no extra model call); one with `if` is included only when its code
//! predicate holds this turn. Unconditional and `when` instructions are rendered once
//! into the cached static prompt sections.

use std::fmt;
use std::sync::Arc;

use crate::hook::{Cx, Predicate};

/// How binding an instruction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strength {
    /// Rendered as `MUST`: a rule the model has to follow.
    Must,
    /// Rendered as `SHOULD`: a preference the model follows when it can.
    Should,
    /// Rendered as `NEVER`: something the model must not do.
    Never,
}

impl Strength {
    fn label(self) -> &'static str {
        match self {
            Strength::Must => "MUST",
            Strength::Should => "SHOULD",
            Strength::Never => "NEVER",
        }
    }
}

/// A rule for the model with a strength (must / should / never), optionally conditional:
/// on a condition the model judges in context ([`Instruction::when`], no extra call) or
/// on a code predicate checked each turn ([`Instruction::if_`]). Attach it to the agent,
/// a flow or a step, where it is rendered into that scope's prompt.
pub struct Instruction<D, C> {
    pub(crate) strength: Strength,
    pub(crate) text: String,
    pub(crate) when: Option<String>,
    pub(crate) if_: Option<Predicate<D, C>>,
}

impl<D, C> Clone for Instruction<D, C> {
    fn clone(&self) -> Self {
        Self {
            strength: self.strength,
            text: self.text.clone(),
            when: self.when.clone(),
            if_: self.if_.clone(),
        }
    }
}

impl<D, C> fmt::Debug for Instruction<D, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instruction")
            .field("strength", &self.strength)
            .field("text", &self.text)
            .field("when", &self.when)
            .field("if", &self.if_.is_some())
            .finish()
    }
}

impl<D, C> Instruction<D, C> {
    fn new(strength: Strength, text: impl Into<String>) -> Self {
        Self {
            strength,
            text: text.into(),
            when: None,
            if_: None,
        }
    }
    /// A hard rule the model must follow, rendered as `MUST: text` (for instance "answer in
    /// the user's language"). Code-enforced guarantees belong in validators and guards; this
    /// only tells the model.
    pub fn must(text: impl Into<String>) -> Self {
        Self::new(Strength::Must, text)
    }
    /// A preference the model should follow when it can, rendered as `SHOULD: text` (tone,
    /// length, style).
    pub fn should(text: impl Into<String>) -> Self {
        Self::new(Strength::Should, text)
    }
    /// Something the model must never do, rendered as `NEVER: text` (for instance "invent
    /// prices").
    pub fn never(text: impl Into<String>) -> Self {
        Self::new(Strength::Never, text)
    }
    /// Applies when the model judges the condition true.
    pub fn when(mut self, condition: impl Into<String>) -> Self {
        self.when = Some(condition.into());
        self
    }
    /// Applies only when the predicate holds this turn.
    pub fn if_(mut self, p: impl Fn(&Cx<'_, D, C>) -> bool + Send + Sync + 'static) -> Self {
        self.if_ = Some(Arc::new(p));
        self
    }

    /// Whether it can be rendered once at build time.
    pub(crate) fn is_static(&self) -> bool {
        self.if_.is_none()
    }

    pub(crate) fn render(&self, out: &mut String) {
        out.push_str("- ");
        if let Some(w) = &self.when {
            out.push_str("When ");
            out.push_str(w);
            out.push_str(": ");
        }
        out.push_str(self.strength.label());
        out.push(' ');
        out.push_str(&self.text);
        out.push('\n');
    }
}
