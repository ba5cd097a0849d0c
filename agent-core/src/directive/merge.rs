//! Algorithm 4: the one merge function for every directive bus.

use super::seam::{CarriedTool, carried_name};
use super::{Directive, PreDirective};
use crate::data::Patch;

/// Merge `b` (emitted later) into `a`.
///
/// - Position: highest tier wins (`abort > complete > go_to = go_to_step > reset`);
///   within a tier the later emission wins.
/// - `reply`: later wins.
/// - `data` / `context`: shallow merge in emit order (later keys overwrite).
pub fn merge(a: Directive, b: Directive) -> Directive {
    let position = match (a.position, b.position) {
        (None, p) | (p, None) => p,
        (Some(x), Some(y)) => {
            if y.tier() >= x.tier() {
                Some(y)
            } else {
                Some(x)
            }
        }
    };
    Directive {
        position,
        reply: b.reply.or(a.reply),
        data: merge_patch(a.data, b.data),
        context: merge_patch(a.context, b.context),
    }
}

fn merge_patch(a: Option<Patch>, b: Option<Patch>) -> Option<Patch> {
    match (a, b) {
        (None, p) | (p, None) => p,
        (Some(mut x), Some(y)) => {
            x.extend(y);
            Some(x)
        }
    }
}

/// Merge two pre-directives: the base by [`merge`], `append_prompt` concatenated (no
/// dedupe), `inject_tools` concatenated then deduped by tool name (a tool keeps the
/// position where it first appeared and takes its latest definition), `halt` as OR.
pub fn merge_pre<D, C>(a: PreDirective<D, C>, b: PreDirective<D, C>) -> PreDirective<D, C> {
    let mut append_prompt = a.append_prompt;
    append_prompt.extend(b.append_prompt);
    let mut tools: Vec<_> = Vec::with_capacity(a.inject_tools.len() + b.inject_tools.len());
    for t in a.inject_tools.into_iter().chain(b.inject_tools) {
        add_tool(&mut tools, t);
    }
    PreDirective {
        base: merge(a.base, b.base),
        append_prompt,
        inject_tools: tools,
        halt: a.halt || b.halt,
    }
}

/// Add an injected tool to a list deduped by name: a tool already there keeps its
/// position (the order the model sees stays stable) and takes the later definition.
pub(crate) fn add_tool<D, C>(tools: &mut Vec<CarriedTool<D, C>>, t: CarriedTool<D, C>) {
    match tools
        .iter_mut()
        .find(|e| carried_name(e) == carried_name(&t))
    {
        Some(slot) => *slot = t,
        None => tools.push(t),
    }
}
