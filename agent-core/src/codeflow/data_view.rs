//! What `ctx.data()` shows while a code flow runs: the session's data as the turn in
//! which that part of the fn first ran began. A replay rebuilds it from the recorded
//! changes ([`DataDelta`]), so a flow that says `format!("count was {:?}", ..)` says
//! the same thing on every replay, however the data changed since (its own tools'
//! writes included). The data is not journaled per read: a view changes only where a
//! turn goes live, and only the fields that changed are kept.

use serde_json::{Map, Value};

use super::journal::{CodeState, DataDelta, Entry};
use crate::data::AgentData;

/// The views of one run: from which journal position each applies, in order.
pub(crate) struct DataViews<D> {
    pub(crate) views: Vec<(usize, D)>,
    /// Answering the open question this turn makes the turn's data the view from the
    /// next position.
    pub(crate) live: Live,
}

/// Where the turn's data becomes the view if the open question is answered, and the
/// fields that change.
pub(crate) struct Live(Option<(usize, Map<String, Value>)>);

/// The fields of `to` that differ from `from` (`null` for one `to` lacks). Data that
/// is not a JSON object (`()`) never changes.
fn diff(from: &Value, to: &Value) -> Map<String, Value> {
    let (Value::Object(from), Value::Object(to)) = (from, to) else {
        return Map::new();
    };
    let mut out: Map<String, Value> = to
        .iter()
        .filter(|(k, v)| from.get(k.as_str()) != Some(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for k in from.keys().filter(|k| !to.contains_key(k.as_str())) {
        out.insert(k.clone(), Value::Null);
    }
    out
}

fn merged(mut base: Value, fields: &Map<String, Value>) -> Value {
    if let Value::Object(o) = &mut base {
        for (k, v) in fields {
            o.insert(k.clone(), v.clone());
        }
    }
    base
}

/// Record the data a fresh run starts with (the flow's first turn).
pub(crate) fn start<D: AgentData>(state: &mut CodeState, now: &D) {
    if !state.journal.is_empty() || state.data.is_none() {
        return;
    }
    let fields = diff(&to_value(&D::default()), &to_value(now));
    state.data = Some(if fields.is_empty() {
        Vec::new()
    } else {
        vec![DataDelta { at: 0, fields }]
    });
}

fn to_value<D: AgentData>(d: &D) -> Value {
    serde_json::to_value(d).unwrap_or(Value::Null)
}

impl<D: AgentData> DataViews<D> {
    /// The views for a run of `state` in a turn that began with `now`.
    pub(crate) fn build(state: &CodeState, now: &D) -> Self {
        let Some(deltas) = &state.data else {
            // A session saved before views were recorded: the data as the turn began.
            return Self {
                views: vec![(0, now.clone())],
                live: Live(None),
            };
        };
        let now_v = to_value(now);
        let mut values: Vec<(usize, Value)> = vec![(0, to_value(&D::default()))];
        for d in deltas {
            let prev = values.last().map(|(_, v)| v.clone()).unwrap_or(Value::Null);
            let next = merged(prev, &d.fields);
            match values.last_mut() {
                Some(last) if last.0 == d.at => last.1 = next,
                _ => values.push((d.at, next)),
            }
        }
        let live = match state.journal.last() {
            Some(Entry::Ask { answer: None, .. }) => {
                let last = values.last().map(|(_, v)| v).unwrap_or(&Value::Null);
                let fields = diff(last, &now_v);
                (!fields.is_empty()).then_some((state.journal.len(), fields))
            }
            _ => None,
        };
        if let Some((at, _)) = &live {
            values.push((*at, now_v.clone()));
        }
        let views = values
            .into_iter()
            .map(|(at, v)| {
                if v == now_v {
                    return (at, now.clone());
                }
                match serde_json::from_value::<D>(v) {
                    Ok(d) => (at, d),
                    Err(e) => {
                        tracing::warn!(flow = %state.flow, error = %e, "recorded data no longer fits the data type; the flow sees the current data");
                        (at, now.clone())
                    }
                }
            })
            .collect();
        Self {
            views,
            live: Live(live),
        }
    }
}

impl Live {
    /// After a run: when it answered the open question, keep the change it saw.
    pub(crate) fn record(self, state: &mut CodeState) {
        let Some((at, fields)) = self.0 else {
            return;
        };
        let answered = matches!(
            at.checked_sub(1).and_then(|i| state.journal.get(i)),
            Some(Entry::Ask {
                answer: Some(_),
                ..
            })
        );
        if answered && let Some(deltas) = state.data.as_mut() {
            deltas.push(DataDelta { at, fields });
        }
    }
}

/// The view at journal position `pos`.
pub(crate) fn at<D>(views: &[(usize, D)], pos: usize) -> Option<&D> {
    views
        .iter()
        .rev()
        .find(|(from, _)| *from <= pos)
        .map(|(_, d)| d)
}
