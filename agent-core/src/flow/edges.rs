//! Where each step can lead: what the build-time loop check and the diagrams both read.

use crate::branch::{Branch, Target};
use crate::step::{Step, StepKind};

/// A branch table whose fallback always moves the position: the linear successor can
/// never be taken.
pub(crate) fn fallback_moves<D, C>(table: &[Branch<D, C>]) -> bool {
    table.iter().any(|b| {
        b.is_unconditional()
            && match &b.then {
                Target::Step(_) | Target::Flow(_) | Target::Id(_) => true,
                Target::Directive(d) => d.position.is_some(),
            }
    })
}

/// Where a step can go next as the engine walks `auto` steps: step indices, or `None`
/// for a way out (the flow ends, another flow, a directive that may land anywhere).
/// With `flow` (this flow's id), a directive target that only jumps to a step of this
/// flow (`go_to_step`) leads to that step.
fn walk_edges<D, C>(
    steps: &[Step<D, C>],
    index: &crate::fxhash::FxHashMap<std::sync::Arc<str>, usize>,
    i: usize,
    flow: Option<&str>,
) -> Vec<Option<usize>> {
    let s = &steps[i];
    let mut out = Vec::new();
    let mut falls_through = true;
    if let Some(table) = &s.branches {
        for b in table {
            match &b.then {
                Target::Step(t) | Target::Id(t) => out.push(index.get(t.as_str()).copied()),
                Target::Directive(d) => out.push(flow.and_then(|f| own_jump(d, f, index))),
                Target::Flow(_) => out.push(None),
            }
        }
        falls_through = !fallback_moves(table);
    }
    if falls_through {
        if s.end {
            out.push(None);
            return out;
        }
        for (j, next) in steps.iter().enumerate().skip(i + 1) {
            out.push(Some(j));
            if next.if_.is_none() && next.when.is_none() {
                return out;
            }
        }
        out.push(None);
    }
    out
}

/// The step of the flow `flow` a directive target jumps to, when that is all its
/// position does (`go_to_step` to a step of this flow); `None` for any other position.
fn own_jump(
    d: &crate::directive::Directive,
    flow: &str,
    index: &crate::fxhash::FxHashMap<std::sync::Arc<str>, usize>,
) -> Option<usize> {
    match &d.position {
        Some(crate::directive::Position::GoToStep(g))
            if g.flow.as_deref().is_none_or(|f| f == flow) =>
        {
            index.get(g.step.as_str()).copied()
        }
        _ => None,
    }
}

/// `auto` steps that only lead to each other: a turn entering them loops until the
/// auto-step cap. Each group is listed once, in step order. A step with a model call,
/// a `reply`, or a hook that may move the position (`on_enter`, `prepare`) is a way
/// out; a directive target that jumps to a step of this flow (`flow`) is not. The same
/// check `#[flow]` makes at compile time, for flows built at run time.
pub(crate) fn auto_cycles<D, C>(
    steps: &[Step<D, C>],
    index: &crate::fxhash::FxHashMap<std::sync::Arc<str>, usize>,
    flow: &str,
) -> Vec<Vec<String>> {
    let n = steps.len();
    let closed = |s: &Step<D, C>| {
        matches!(s.kind, StepKind::Auto) && s.on_enter.is_none() && s.prepare.is_none()
    };
    let mut reported = vec![false; n];
    let mut out = Vec::new();
    for i in 0..n {
        if !closed(&steps[i]) || reported[i] {
            continue;
        }
        let mut visited = vec![false; n];
        let mut stack = vec![i];
        let mut exits = false;
        while let Some(k) = stack.pop() {
            if std::mem::replace(&mut visited[k], true) {
                continue;
            }
            for e in walk_edges(steps, index, k, Some(flow)) {
                match e {
                    Some(j) if closed(&steps[j]) => stack.push(j),
                    _ => exits = true,
                }
            }
        }
        if !exits {
            let group: Vec<usize> = (0..n).filter(|&k| visited[k]).collect();
            for &k in &group {
                reported[k] = true;
            }
            out.push(group.iter().map(|&k| steps[k].id.to_string()).collect());
        }
    }
    out
}

/// The fields present on entering each step whatever path of the graph led there
/// (`None`: no path from the entry step does). A model step is left only once what it
/// `collect`s and `requires` is present, unless its `skip` predicate passes it by;
/// `auto` and `reply` steps move on regardless; the flow's `initial` data is there from
/// the start. The rule `#[flow]` checks templates with at compile time (which also
/// counts the steps a directive jumps to as entered with only the initial data).
pub(crate) fn collected_on_entry<D, C>(
    steps: &[Step<D, C>],
    index: &crate::fxhash::FxHashMap<std::sync::Arc<str>, usize>,
    initial: &[std::sync::Arc<str>],
) -> Vec<Option<Vec<std::sync::Arc<str>>>> {
    use std::collections::BTreeSet;
    use std::sync::Arc;
    let n = steps.len();
    let mut on_entry: Vec<Option<BTreeSet<Arc<str>>>> = vec![None; n];
    if n == 0 {
        return Vec::new();
    }
    on_entry[0] = Some(initial.iter().cloned().collect());
    let mut work = vec![0];
    while let Some(i) = work.pop() {
        let Some(mut out) = on_entry[i].clone() else {
            continue;
        };
        let s = &steps[i];
        if matches!(s.kind, StepKind::Model) && s.skip.is_none() {
            out.extend(s.collect.iter().cloned());
            out.extend(s.requires.iter().cloned());
        }
        for j in walk_edges(steps, index, i, None).into_iter().flatten() {
            let next: BTreeSet<Arc<str>> = match &on_entry[j] {
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
        .into_iter()
        .map(|s| s.map(|s| s.into_iter().collect()))
        .collect()
}
