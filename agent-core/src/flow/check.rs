//! Checks across a flow's parts: owned fields, the structural version sessions record,
//! name suggestions for typos, reply templates.

use std::collections::HashSet;
use std::sync::Arc;

use crate::data::{AgentData, Patch};

use super::Flow;

/// Give each flow the fields it owns: those it collects or requires (flow `required`
/// and `optional`, step `collect` and `requires`) that no other registered flow collects
/// or requires, each with its value in `D::default()`. Computed once, at agent build.
pub(crate) fn assign_owned_fields<D: AgentData, C>(flows: &mut [Flow<D, C>]) {
    let fields_of = |f: &Flow<D, C>| -> HashSet<Arc<str>> {
        f.collectable
            .iter()
            .cloned()
            .chain(f.steps.iter().flat_map(|s| s.requires.iter().cloned()))
            .collect()
    };
    let all: Vec<HashSet<Arc<str>>> = flows.iter().map(fields_of).collect();
    let defaults = match serde_json::to_value(D::default()) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => Patch::new(),
    };
    for (i, flow) in flows.iter_mut().enumerate() {
        let mut owned: Vec<&Arc<str>> = all[i]
            .iter()
            .filter(|f| {
                all.iter()
                    .enumerate()
                    .all(|(j, o)| j == i || !o.contains(*f))
            })
            .collect();
        owned.sort();
        flow.owned_reset = owned
            .into_iter()
            .map(|f| {
                let v = defaults.get(f.as_ref()).cloned();
                (f.to_string(), v.unwrap_or(serde_json::Value::Null))
            })
            .collect();
    }
}

/// A stable hash of what a stored session depends on: step ids and order, shapes,
/// collected and required fields, terminal markers and branch targets.
pub(super) fn structural_version<D, C>(flow: &Flow<D, C>) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = crate::fxhash::FxHasher::default();
    flow.id.hash(&mut h);
    for f in flow.required.iter().chain(flow.optional.iter()) {
        f.hash(&mut h);
    }
    for s in &flow.steps {
        s.id.hash(&mut h);
        format!("{:?}", s.kind).hash(&mut h);
        s.end.hash(&mut h);
        for f in s.collect.iter().chain(s.requires.iter()) {
            f.hash(&mut h);
        }
        for b in s.branch_table() {
            format!("{:?}", b.then).hash(&mut h);
        }
    }
    format!("{:016x}", h.finish())
}

/// "did you mean `x`?" plus the list of valid choices.
pub(crate) fn suggest(bad: &str, known: &[String], what: &str) -> String {
    let best = known
        .iter()
        .map(|k| (distance(bad, k), k))
        .filter(|(d, k)| *d <= (k.len().max(bad.len()) / 3).max(2))
        .min_by_key(|(d, _)| *d);
    let list = if known.is_empty() {
        "none".to_string()
    } else {
        known
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match best {
        Some((_, k)) => format!("did you mean `{k}`? known {what}: {list}"),
        None => format!("known {what}: {list}"),
    }
}

fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The problems of a `{field}` template (a `reply` step's text, a step's `ask`): its
/// syntax, and each placeholder a data field present at the step (in its `requires`,
/// collected on every path to it, or in the flow's `required`), as (message, hint)
/// pairs. (`#[flow]` is stricter: the flow's `required` fields are checked only when
/// the flow ends, so it does not count them.)
pub(super) fn template_errors(
    text: &str,
    what: &str,
    requires: &[Arc<str>],
    collected: &[Arc<str>],
    required: &[String],
    known_fields: &[String],
) -> Vec<(String, String)> {
    let names = match crate::template::placeholders(text) {
        Ok(names) => names,
        Err(why) => {
            return vec![(
                format!("the {what} template is malformed: {why}"),
                "placeholders are `{field}`; `{{` and `}}` write braces".into(),
            )];
        }
    };
    let mut out = Vec::new();
    for name in names {
        let present = requires.iter().chain(collected).any(|f| f.as_ref() == name)
            || required.iter().any(|f| f == name);
        if !known_fields.iter().any(|f| f == name) {
            out.push((
                format!("the {what} template names `{{{name}}}`, which is not a data field"),
                suggest(name, known_fields, "fields"),
            ));
        } else if !present {
            out.push((
                format!("the {what} template names `{{{name}}}`, which may be empty at this step"),
                format!("add `{name}` to the step's `requires` or the flow's `required`"),
            ));
        }
    }
    out
}
