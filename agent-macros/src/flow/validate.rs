//! Checks a flow can make because it sees the whole module: step names, shapes, branch
//! tables, and the graph (unreachable steps, `auto` cycles with no exit). Every problem
//! is recorded; nothing stops at the first.

use super::graph;
use super::model::*;
use crate::diag::{Errors, suggest};

/// Record every problem of the flow.
pub fn validate(def: &FlowDef, errors: &mut Errors) {
    if def.flow.data.is_none() {
        errors.push(
            proc_macro2::Span::call_site(),
            "`#[flow]` needs the agent's data type: `#[flow(data = Booking, ..)]` with `Booking` a `#[data]` struct",
        );
    }
    if def.steps.is_empty() {
        errors.push(
            def.ident.span(),
            format!(
                "flow `{}` has no steps: add at least one `#[step(..)] fn name() {{}}` to the module",
                def.ident
            ),
        );
    }
    duplicate_tools(&def.flow.tools, "the flow", errors);
    if let Some(c) = &def.flow.corrections
        && c != "refuse"
        && c != "reopen"
    {
        let known = vec!["refuse".to_owned(), "reopen".to_owned()];
        errors.push(
            c.span(),
            format!(
                "`corrections = {c}`: a correction after completion is refused with a reply (`refuse`, the default) or reopens the flow (`reopen`); {}",
                crate::diag::suggest(&c.to_string(), &known, "values")
            ),
        );
    }
    let names: Vec<String> = def.steps.iter().map(|s| s.ident.to_string()).collect();
    for (i, s) in def.steps.iter().enumerate() {
        if names[..i].contains(&names[i]) {
            errors.push(
                s.ident.span(),
                format!(
                    "duplicate step `{}` in flow `{}`: step ids must be unique within a flow",
                    s.ident, def.ident
                ),
            );
        }
        if s.ident == "View" || s.ident == "Step" {
            errors.push(
                s.ident.span(),
                "`Step` and `View` are generated names; rename the step",
            );
        }
        if let Some((_, tools)) = &s.tools {
            duplicate_tools(tools, &format!("step `{}`", s.ident), errors);
        }
        step_shape(s, errors);
        if let (Some(key), None) = (s.depends_on.key, s.collect.key) {
            errors.push(
                key,
                format!("`depends_on` clears what a step collects when the user corrects a field it names; `{}` collects nothing: add `collect(..)` or remove `depends_on`", s.ident),
            );
        }
        reply_template(s, &def.flow.required.idents, errors);
        hook_shape(s, errors);
        if let Some(b) = &s.branches {
            branch_table(s, b, &names, errors);
        }
    }
    if errors.is_empty() {
        graph::check(def, errors);
    }
}

fn step_shape(s: &StepDef, errors: &mut Errors) {
    let conflicts: [(&str, Option<proc_macro2::Span>); 4] = [
        ("prompt", s.prompt.as_ref().map(|p| p.0)),
        ("collect", s.collect.key),
        ("tools", s.tools.as_ref().map(|t| t.0)),
        (
            "requires_tool",
            s.requires_tool.first().map(syn::spanned::Spanned::span),
        ),
    ];
    match &s.shape {
        Shape::Auto(_) => {
            for (what, span) in conflicts {
                if let Some(span) = span {
                    errors.push(
                        span,
                        format!("an `auto` step cannot have `{what}`: auto steps make no model call; remove `auto` to make `{}` a model step", s.ident),
                    );
                }
            }
            if let Some(b) = &s.branches {
                for e in &b.entries {
                    for c in &e.conds {
                        if let Cond::When(w) = c {
                            errors.push(
                                w.span(),
                                format!("an `auto` step cannot have `when` branches: `{}` makes no model call to judge them; use an `if` predicate", s.ident),
                            );
                        }
                    }
                }
            }
        }
        Shape::Reply(_) => {
            for (what, span) in conflicts {
                if let Some(span) = span {
                    errors.push(
                        span,
                        format!("a `reply` step cannot have `{what}`: it sends a fixed message without a model call"),
                    );
                }
            }
        }
        Shape::Model => {}
    }
}

/// A `reply` text's `{field}` placeholders must be present at the step: in its
/// `requires` or the flow's `required` (both already checked against the data type).
/// The syntax is the runtime's (`agent_core::template`), which this crate cannot import.
fn reply_template(s: &StepDef, required: &[syn::Ident], errors: &mut Errors) {
    let Shape::Reply(lit) = &s.shape else { return };
    let text = lit.value();
    let mut rest = text.as_str();
    while let Some(i) = rest.find(['{', '}']) {
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("{{").or_else(|| tail.strip_prefix("}}")) {
            rest = t;
            continue;
        }
        let Some(end) = tail.find('}').filter(|_| tail.starts_with('{')) else {
            errors.push(
                lit.span(),
                "malformed reply template: a brace without its pair; placeholders are `{field}`, and `{{` / `}}` write braces",
            );
            return;
        };
        let name = tail[1..end].trim();
        rest = &tail[end + 1..];
        let present = s.requires.idents.iter().chain(required).any(|f| f == name);
        if !present {
            let known: Vec<String> = s
                .requires
                .idents
                .iter()
                .chain(required)
                .map(ToString::to_string)
                .collect();
            errors.push(
                lit.span(),
                format!(
                    "the reply names `{{{name}}}`, which may be empty at step `{}`: add `{name}` to the step's `requires(..)` or the flow's `required(..)`{}",
                    s.ident,
                    if known.is_empty() {
                        String::new()
                    } else {
                        format!(" (present here: {})", known.join(", "))
                    }
                ),
            );
        }
    }
}

fn hook_shape(s: &StepDef, errors: &mut Errors) {
    let f = &s.func;
    if !s.prepare {
        if !f.sig.inputs.is_empty() {
            errors.push_spanned(
                &f.sig.inputs,
                format!("step `{}` takes a view but returns nothing: a step fn with a body is its `prepare` hook and returns `PreDirective<D, C>`; leave `fn {}() {{}}` empty for a step without hook", s.ident, s.ident),
            );
        } else if !f.block.stmts.is_empty() {
            errors.push_spanned(
                &f.block,
                format!("the body of step `{}` is its `prepare` hook: give it a view parameter and a `PreDirective<D, C>` return type, or leave it empty", s.ident),
            );
        }
    } else if f.sig.inputs.len() > 1 {
        errors.push_spanned(
            &f.sig.inputs,
            format!(
                "a `prepare` hook takes one parameter, the step's view: `fn {}(v: {}::View<'_>)`",
                s.ident, s.ident
            ),
        );
    }
    if !f.sig.generics.params.is_empty() {
        errors.push_spanned(&f.sig.generics, "step fns cannot be generic");
    }
}

fn branch_table(s: &StepDef, b: &Branches, names: &[String], errors: &mut Errors) {
    if b.entries.is_empty() {
        errors.push(
            b.span,
            format!("empty branch table on step `{}`: add at least one entry (`if .. => step`, `when \"..\" => step`, `else => step`) or remove `branches`", s.ident),
        );
    }
    let n = b.entries.len();
    for (i, e) in b.entries.iter().enumerate() {
        if e.conds.is_empty() && i + 1 < n {
            let span = e.else_span.unwrap_or(e.span);
            errors.push(
                span,
                format!(
                    "unconditional branch entry is not last: the {} after it can never be reached; move `else` to the end",
                    if n - i - 1 == 1 { "entry".to_string() } else { format!("{} entries", n - i - 1) }
                ),
            );
        }
        if let Target::Step(t) = &e.target {
            let name = t.to_string();
            if !names.contains(&name) {
                errors.push(
                    t.span(),
                    format!(
                        "branch of step `{}` targets `{name}`, which is not a step of this flow; {} (a step of another flow is written `other_flow::Step::{name}`, a flow by its type, e.g. `FeedbackFlow`)",
                        s.ident,
                        suggest(&name, names, "steps")
                    ),
                );
            }
        }
    }
}

fn duplicate_tools(tools: &[syn::Expr], owner: &str, errors: &mut Errors) {
    let mut seen: Vec<String> = Vec::new();
    for t in tools {
        let key = quote::ToTokens::to_token_stream(t).to_string();
        if seen.contains(&key) {
            errors.push_spanned(
                t,
                format!("`{key}` is offered twice in {owner}: tool names must be unique"),
            );
        }
        seen.push(key);
    }
}
