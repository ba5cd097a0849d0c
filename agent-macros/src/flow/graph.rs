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

/// Whether a branch entry surely moves the position (so the walk does not fall through
/// to the linear successor).
fn moves(e: &BranchEntry) -> bool {
    match e.target {
        Target::Step(_) | Target::Flow(_) | Target::CrossStep(_) => true,
        Target::Directive(_) => e.plain_jump,
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
                    // A directive lands on a step of this flow it names, or leaves (a
                    // directive built elsewhere may do anything: named steps are roots).
                    let named = e.named_steps.iter().filter_map(|n| {
                        (0..def.steps.len())
                            .find(|&j| present[j] && name(&def.steps[j].ident) == *n)
                    });
                    out.extend(named.map(Node::Step));
                    if !e.plain_jump {
                        out.push(Node::Exit);
                    }
                }
                Target::Flow(_) | Target::CrossStep(_) => out.push(Node::Exit),
            }
            if e.conds.is_empty() && moves(e) {
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
/// A template field that may be empty at its step: reported by the data type's callback,
/// which knows whether it is a field at all (a name that is not one is reported as such,
/// once).
pub struct Absent {
    /// The step, by index.
    pub step: usize,
    /// The field, spanned on the template.
    pub field: syn::Ident,
}

pub fn check(
    def: &FlowDef,
    present: &[bool],
    shape: bool,
    errors: &mut Errors,
    absent: &mut Vec<Absent>,
) {
    let n = def.steps.len();
    let Some(entry) = present.iter().position(|p| *p) else {
        return;
    };
    templates(def, present, entry, errors, absent);
    if !shape {
        return;
    }
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

/// Steps the walk may enter from outside the graph: the entry step, `jump_target`s and
/// steps named in the module's code (a hook's or tool's directive may jump there).
fn roots(def: &FlowDef, present: &[bool], entry: usize) -> Vec<usize> {
    let mut out = vec![entry];
    for (i, s) in def.steps.iter().enumerate() {
        if present[i] && i != entry && (s.jump_target || def.mentioned.contains(&name(&s.ident))) {
            out.push(i);
        }
    }
    out
}

/// The fields present on entering each step whatever static path led there (`None`: no
/// path does). A model step is left only once what it `collect`s and `requires` is
/// present (the walk stays on it until then), unless its `skip` predicate passes it by;
/// `auto` and `reply` steps move on regardless. A step entered from outside the graph
/// (see [`roots`]) has nothing for sure. The flow's `required` fields are not present
/// before the step that collects them.
pub fn fields_on_entry(
    def: &FlowDef,
    present: &[bool],
    entry: usize,
) -> Vec<Option<BTreeSet<String>>> {
    let n = def.steps.len();
    let initial = initial_fields(def);
    let mut on_entry: Vec<Option<BTreeSet<String>>> = vec![None; n];
    let mut work: Vec<usize> = Vec::new();
    for r in roots(def, present, entry) {
        on_entry[r] = Some(initial.clone());
        work.push(r);
    }
    while let Some(i) = work.pop() {
        let Some(mut out) = on_entry[i].clone() else {
            continue;
        };
        let s = &def.steps[i];
        if matches!(s.shape, Shape::Model) && s.skip.is_none() {
            out.extend(s.collect.idents.iter().map(name));
            out.extend(s.requires.idents.iter().map(name));
        }
        for e in edges(def, i, present) {
            let Node::Step(j) = e else { continue };
            let next = match &on_entry[j] {
                None => out.clone(),
                Some(cur) => cur.intersection(&out).cloned().collect(),
            };
            if on_entry[j].as_ref() != Some(&next) {
                on_entry[j] = Some(next);
                work.push(j);
            }
        }
    }
    on_entry
}

/// The fields `initial_data` sets, when it is written as a patch chain
/// (`Booking::patch().city("Lisbon")`): there from the flow's start. Another expression
/// sets fields the macro cannot see (none are counted).
fn initial_fields(def: &FlowDef) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(mut e) = def.flow.initial_data.as_ref() else {
        return out;
    };
    let mut fields = Vec::new();
    loop {
        match e {
            syn::Expr::MethodCall(m) => {
                fields.push(name(&m.method));
                e = &m.receiver;
            }
            syn::Expr::Call(c) => {
                let patch = matches!(&*c.func, syn::Expr::Path(p)
                    if p.path.segments.last().is_some_and(|s| s.ident == "patch"));
                if patch {
                    out.extend(fields.into_iter().filter(|f| f != "into_patch"));
                }
                return out;
            }
            syn::Expr::Paren(p) => e = &p.expr,
            _ => return out,
        }
    }
}

/// Every `{field}` of a step's template (`reply`, `ask`) is present when the step
/// speaks: the step `requires` it, or it is collected on every path to the step.
fn templates(
    def: &FlowDef,
    present: &[bool],
    entry: usize,
    errors: &mut Errors,
    absent: &mut Vec<Absent>,
) {
    let with_templates = def.steps.iter().zip(present).any(|(s, p)| {
        *p && (matches!(s.shape, Shape::Reply(_))
            || (s.ask.is_some() && matches!(s.shape, Shape::Model)))
    });
    if !with_templates {
        return;
    }
    let on_entry = fields_on_entry(def, present, entry);
    for (i, s) in def.steps.iter().enumerate().filter(|(i, _)| present[*i]) {
        let (lit, what) = match (&s.shape, &s.ask) {
            (Shape::Reply(l), _) => (l, "reply"),
            (Shape::Model, Some(l)) => (l, "ask"),
            _ => continue,
        };
        // Unreachable steps are reported as such.
        let Some(have) = &on_entry[i] else { continue };
        let Ok(names) = super::validate::placeholders(&lit.value()) else {
            continue;
        };
        let mut reported: Vec<&str> = Vec::new();
        for f in &names {
            let required = s.requires.idents.iter().any(|r| name(r) == *f);
            if required || have.contains(f) || reported.contains(&f.as_str()) {
                continue;
            }
            reported.push(f);
            let step = name(&s.ident);
            if s.collect.idents.iter().any(|c| name(c) == *f) {
                errors.push(
                    lit.span(),
                    format!(
                        "the {what} of step `{step}` names `{{{f}}}`, which `{step}` itself collects: it is empty while the step asks for it; leave it out of the {what}"
                    ),
                );
            } else if let Some(field) = super::validate::template_ident(f, lit.span()) {
                absent.push(Absent { step: i, field });
            }
        }
    }
}
