//! The flow graph as the engine walks it: branch targets first, then the implicit fork
//! (the run of conditional steps after a step, up to the first unconditional one).
//!
//! Every function takes the set of steps `present`: a step whose `#[cfg(..)]` is off is
//! not a step, so [`check`] runs once per combination of those (see `validate`).

use std::collections::BTreeSet;

use super::model::*;
use crate::diag::{Errors, name};

/// Where an edge goes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Node {
    /// A step, by index.
    Step(usize),
    /// The flow ends, or the conversation leaves it (another flow, a directive).
    Exit,
}

/// Whether a branch entry with this target surely moves the position (so the walk does
/// not fall through to the linear successor).
fn moves(t: &Target) -> bool {
    match t {
        Target::Step(_) | Target::Flow(_) | Target::CrossStep(_) => true,
        Target::Directive(_) => false,
    }
}

/// Outgoing edges of step `i` (a branch to a step that is not present goes nowhere:
/// [`check`] reports it).
pub fn edges(def: &FlowDef, i: usize, present: &[bool]) -> Vec<Node> {
    let s = &def.steps[i];
    // A name may have `#[cfg]` alternatives: the present one.
    let index = |id: &syn::Ident| {
        (0..def.steps.len()).find(|&j| present[j] && name(&def.steps[j].ident) == name(id))
    };
    let mut out = Vec::new();
    let mut falls_through = true;
    if let Some(b) = &s.branches {
        for e in &b.entries {
            match &e.target {
                Target::Step(t) => {
                    if let Some(j) = index(t) {
                        out.push(Node::Step(j));
                    }
                }
                Target::Directive(_) => {
                    // A directive may land anywhere (named steps are roots) or nowhere.
                    out.push(Node::Exit);
                }
                Target::Flow(_) | Target::CrossStep(_) => out.push(Node::Exit),
            }
            if e.conds.is_empty() && moves(&e.target) {
                falls_through = false;
            }
        }
    }
    if falls_through {
        out.extend(successors(def, i, present));
    }
    out
}

/// The implicit fork after step `i`.
pub fn successors(def: &FlowDef, i: usize, present: &[bool]) -> Vec<Node> {
    let mut out = Vec::new();
    if def.steps[i].end {
        out.push(Node::Exit);
        return out;
    }
    for (j, s) in def.steps.iter().enumerate().skip(i + 1) {
        if !present[j] {
            continue;
        }
        out.push(Node::Step(j));
        if !s.is_conditional() {
            return out;
        }
    }
    out.push(Node::Exit);
    out
}

/// Unreachable steps, branches to steps that are not present, and `auto` cycles with
/// no way out, among the `present` steps.
pub fn check(def: &FlowDef, present: &[bool], errors: &mut Errors) {
    let n = def.steps.len();
    let Some(entry) = present.iter().position(|p| *p) else {
        return;
    };
    for (i, s) in def.steps.iter().enumerate().filter(|(i, _)| present[*i]) {
        for e in s.branches.iter().flat_map(|b| &b.entries) {
            // A step of that name exists, but none of its definitions is compiled in.
            let left_out = |t: &syn::Ident| {
                let of = |j: &usize| name(&def.steps[*j].ident) == name(t);
                (0..n).any(|j| of(&j)) && !(0..n).filter(of).any(|j| present[j])
            };
            if let Target::Step(t) = &e.target
                && left_out(t)
            {
                errors.push(
                    t.span(),
                    format!(
                        "branch of step `{}` targets `{}`, which its `#[cfg(..)]` leaves out of this build; gate the branch's step the same way, or branch elsewhere",
                        name(&def.steps[i].ident),
                        name(t)
                    ),
                );
            }
        }
    }
    // Reachability from the entry step and from every step named in code.
    let mut seen = vec![false; n];
    let mut stack = vec![entry];
    for (i, s) in def.steps.iter().enumerate() {
        if present[i] && (s.jump_target || def.mentioned.contains(&name(&s.ident))) {
            stack.push(i);
        }
    }
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        for e in edges(def, i, present) {
            if let Node::Step(j) = e {
                stack.push(j);
            }
        }
    }
    for (i, s) in def.steps.iter().enumerate() {
        if present[i] && !seen[i] {
            errors.push(
                s.ident.span(),
                format!(
                    "step `{}` is unreachable: no branch or linear successor of flow `{}` leads to it (the step before it is `end` or always branches away); branch to it, or mark it `#[step(jump_target, ..)]` if a directive from elsewhere jumps to it",
                    s.ident, def.ident
                ),
            );
        }
    }
    // Auto steps from which the walk can never leave the auto steps. A hook that may
    // move the position (`on_enter`, the `prepare` body) is a way out.
    let closed = |s: &StepDef| s.is_auto() && !s.prepare && s.on_enter.is_none();
    let mut reported: BTreeSet<usize> = BTreeSet::new();
    for i in 0..n {
        if !present[i] || !closed(&def.steps[i]) || reported.contains(&i) {
            continue;
        }
        let mut visited = vec![false; n];
        let mut stack = vec![i];
        let mut exits = false;
        while let Some(k) = stack.pop() {
            if std::mem::replace(&mut visited[k], true) {
                continue;
            }
            for e in edges(def, k, present) {
                match e {
                    Node::Exit => exits = true,
                    Node::Step(j) if !closed(&def.steps[j]) => exits = true,
                    Node::Step(j) => stack.push(j),
                }
            }
        }
        if !exits {
            let cycle: Vec<usize> = (0..n).filter(|&k| visited[k]).collect();
            let names: Vec<String> = cycle
                .iter()
                .map(|&k| format!("`{}`", def.steps[k].ident))
                .collect();
            errors.push(
                def.steps[i].ident.span(),
                format!(
                    "`auto` cycle with no exit: {} only lead to each other, so a turn entering them loops until the auto-step cap; add a branch to a model step, another flow, or mark one `end`",
                    names.join(" → ")
                ),
            );
            reported.extend(cycle);
        }
    }
}
