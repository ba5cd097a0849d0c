//! Registry checks `build()` makes that are not a flow's own: settings that cannot
//! work, once-tools without a journal; and the agent's lease holder name.

use std::sync::Arc;
use std::time::Duration;

use crate::error::FlowConfigurationError;
use crate::flow::Flow;
use crate::tool::Tool;

use crate::config::AgentConfig;

/// Engine settings that cannot work, found at `build()` rather than mid-conversation.
pub(super) fn check_config(c: &AgentConfig) -> Vec<FlowConfigurationError> {
    let problem = |problem: &str, help: &str| FlowConfigurationError {
        flow: String::new(),
        step: None,
        problem: problem.into(),
        help: help.into(),
    };
    let mut errs = Vec::new();
    if c.classifier_batch_size == 0 {
        errs.push(problem(
            "`classifier_batch_size` is 0: no condition could ever be judged",
            "use at least 1 (default 32)",
        ));
    }
    if c.conflict_backoff.base > c.conflict_backoff.max {
        errs.push(problem(
            "`conflict_backoff.base` is longer than `conflict_backoff.max`",
            "make `max` at least `base` (default 20 ms and 500 ms)",
        ));
    }
    if let Some(l) = &c.lease {
        if l.ttl < Duration::from_millis(10) {
            errs.push(problem(
                "`lease.ttl` is under 10 ms: a lease would expire before a turn could renew it",
                "use a ttl of at least 10 ms (default 30 s), or `lease: None` to run without leases",
            ));
        }
        if l.poll.base > l.poll.max {
            errs.push(problem(
                "`lease.poll.base` is longer than `lease.poll.max`",
                "make `max` at least `base` (default 2 ms and 100 ms)",
            ));
        }
    }
    errs
}

/// A holder name unique to this agent value: its name, the process id and a random
/// part (two agents in one process hold leases apart).
pub(super) fn lease_holder(name: &str) -> String {
    use std::hash::BuildHasher;
    let nonce = std::hash::RandomState::new().hash_one((name, std::process::id()));
    format!("{name}/pid{}/{:08x}", std::process::id(), nonce as u32)
}

/// `effect = once` tools registered on an agent whose store keeps no journal: their
/// calls could only fail, so `build()` says so (tools added at run time, by hooks or
/// code flows, fail at the call).
pub(super) fn check_journal<D, C>(
    tools: &[Arc<dyn Tool<D, C>>],
    flows: &[Flow<D, C>],
) -> Vec<FlowConfigurationError> {
    let once = |t: &&Arc<dyn Tool<D, C>>| t.effect() == crate::tool::Effect::Once;
    let agent = tools.iter().filter(once).map(|t| (String::new(), t));
    let flow = flows.iter().flat_map(|f| {
        let steps = f.steps.iter().flat_map(|s| s.tools.iter());
        f.tools
            .iter()
            .chain(steps)
            .filter(once)
            .map(|t| (f.id.to_string(), t))
    });
    agent
        .chain(flow)
        .map(|(flow, t)| FlowConfigurationError {
            flow,
            step: None,
            problem: format!(
                "tool `{}` runs at most once (`effect = once`) but the session store keeps no tool journal",
                t.name()
            ),
            help: "use a store of agent_core::store (they all keep one), implement `SessionStore::journal_begin`/`journal_finish`/`supports_journal`, or declare the tool `effect = idempotent`".into(),
        })
        .collect()
}
