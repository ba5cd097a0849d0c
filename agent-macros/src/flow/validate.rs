//! Checks a flow can make because it sees the whole module: step names, shapes, branch
//! tables, and the graph (unreachable steps, `auto` cycles with no exit). Every problem
//! is recorded; nothing stops at the first.

use proc_macro2::TokenStream;
use syn::ext::IdentExt;

use super::graph;
use super::model::*;
use crate::diag::{Errors, name, suggest};

/// A template field that may be empty at its step, under the cfg predicate (`None`:
/// always), for the data type's callback to report (see `graph::Absent`).
pub struct AbsentField {
    /// Holds only when this cfg predicate does.
    pub cfg: Option<TokenStream>,
    /// The step, by index.
    pub step: usize,
    /// The field, spanned on the template.
    pub field: syn::Ident,
}

/// Record every problem of the flow; the template fields that may be empty are returned
/// for the data type's callback to report.
pub fn validate(def: &FlowDef, errors: &mut Errors) -> Vec<AbsentField> {
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
    if let (Some(_), Some(h)) = (&def.flow.on_complete, &def.flow.on_complete_hook) {
        errors.push_spanned(
            &h.path,
            "`on_complete` and `on_complete_hook` both say what follows the flow's completion: keep one (the hook can return the directive, e.g. `Directive::go_to::<FeedbackFlow>()`)",
        );
    }
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
    if let Some(i) = &def.flow.interrupted {
        interruption(i, "a flow another one interrupts", errors);
    }
    if let Some(t) = &def.flow.cancel_after_tool {
        let text = t.value();
        if text.trim().is_empty() {
            errors.push(
                t.span(),
                "`cancel_after_tool` is empty: say what stays done after a cancel, e.g. \"Your room stays booked.\"",
            );
        } else if text.contains(['{', '}']) {
            errors.push(
                t.span(),
                "`cancel_after_tool` is plain text: the cancel clears the flow's values, so it has no `{field}` placeholders",
            );
        }
    }
    reserved_names(def, errors);
    let names: Vec<String> = def.steps.iter().map(|s| name(&s.ident)).collect();
    for (i, s) in def.steps.iter().enumerate() {
        if def.steps[..i]
            .iter()
            .any(|o| name(&o.ident) == names[i] && !o.cfg_alternative(s))
        {
            errors.push(
                s.ident.span(),
                format!(
                    "duplicate step `{}` in flow `{}`: step ids must be unique within a flow",
                    s.ident, def.ident
                ),
            );
        }

        if let Some((_, tools)) = &s.tools {
            duplicate_tools(tools, &format!("step `{}`", s.ident), errors);
        }
        step_shape(s, errors);
        if let Some(i) = &s.interrupted {
            if s.is_auto() || matches!(s.shape, Shape::Reply(_)) {
                errors.push(
                    i.span(),
                    format!("`interrupted` on step `{}`, which never waits for the user: only a model step waits for an answer, so only there can another flow interrupt the flow; set `interrupted` on the flow or on a model step", s.ident),
                );
            } else {
                interruption(i, "a flow interrupted at this step", errors);
            }
        }
        if let (Some(key), None) = (s.depends_on.key, s.collect.key) {
            errors.push(
                key,
                format!("`depends_on` clears what a step collects when the user corrects a field it names; `{}` collects nothing: add `collect(..)` or remove `depends_on`", s.ident),
            );
        }
        if let Shape::Reply(lit) = &s.shape {
            template(lit, "reply", errors);
        }
        if let (Some(lit), Shape::Model) = (&s.ask, &s.shape) {
            template(lit, "ask", errors);
        }
        hook_shape(s, errors);
        if let Some(b) = &s.branches {
            branch_table(s, b, &names, errors);
        }
    }
    // The graph's shape is checked on a flow without other errors (a misspelled branch
    // target would add "unreachable" noise); the templates' fields always.
    let shape = errors.is_empty();
    // Directive chains in hook bodies need no look here: a typed `PreDirective`'s type
    // records its position and reply, so the compiler rejects them in any form.
    graph_per_cfg(def, shape, errors)
}

/// An `interrupted = ..` value: `resume`, `restart` or `end`.
fn interruption(i: &syn::Ident, what: &str, errors: &mut Errors) {
    const KNOWN: [&str; 3] = ["resume", "restart", "end"];
    if !KNOWN.iter().any(|k| i == k) {
        let known: Vec<String> = KNOWN.iter().map(|k| (*k).to_owned()).collect();
        errors.push(
            i.span(),
            format!(
                "`interrupted = {i}`: {what} waits and resumes at its step (`resume`, the default), waits and starts over (`restart`) or ends (`end`); {}",
                crate::diag::suggest(&i.to_string(), &known, "values")
            ),
        );
    }
}

/// Most `#[cfg]`-gated steps whose on/off combinations are checked (and drawn) one by
/// one.
pub(crate) const MAX_CFG_STEPS: usize = 6;

/// The graph checks for every combination of the `#[cfg]`-gated steps being on or off:
/// an error of every combination is reported as is, one of some combinations behind a
/// `#[cfg(..)]` of those (the macro cannot evaluate cfg predicates; the compiler does).
fn graph_per_cfg(def: &FlowDef, shape: bool, errors: &mut Errors) -> Vec<AbsentField> {
    let gated: Vec<usize> = (0..def.steps.len())
        .filter(|&i| !def.steps[i].cfg.is_empty())
        .collect();
    if gated.is_empty() || gated.len() > MAX_CFG_STEPS {
        let mut absent = Vec::new();
        graph::check(
            def,
            &vec![true; def.steps.len()],
            shape,
            errors,
            &mut absent,
        );
        return absent
            .into_iter()
            .map(|a| AbsentField {
                cfg: None,
                step: a.step,
                field: a.field,
            })
            .collect();
    }
    let combos = 1usize << gated.len();
    // (error, the combinations it holds in), in order of first appearance.
    let mut found: Vec<(syn::Error, Vec<usize>)> = Vec::new();
    // The same for the template fields that may be empty.
    let mut found_absent: Vec<(graph::Absent, Vec<usize>)> = Vec::new();
    for c in 0..combos {
        let mut present = vec![true; def.steps.len()];
        for (bit, &i) in gated.iter().enumerate() {
            present[i] = c & (1 << bit) != 0;
        }
        let mut errs = Errors::default();
        if shape && present.iter().all(|p| !p) {
            errs.push(
                def.ident.span(),
                format!(
                    "flow `{}` has no steps when the `#[cfg(..)]`s of its steps are all off: add a step that is always compiled in",
                    name(&def.ident)
                ),
            );
        }
        let mut absent = Vec::new();
        graph::check(def, &present, shape, &mut errs, &mut absent);
        for a in absent {
            match found_absent
                .iter_mut()
                .find(|(f, _)| f.step == a.step && f.field == a.field)
            {
                Some((_, cs)) => cs.push(c),
                None => found_absent.push((a, vec![c])),
            }
        }
        for e in errs.into_vec() {
            let key = (e.to_string(), format!("{:?}", e.span()));
            match found
                .iter_mut()
                .find(|(f, _)| (f.to_string(), format!("{:?}", f.span())) == key)
            {
                Some((_, cs)) => cs.push(c),
                None => found.push((e, vec![c])),
            }
        }
    }
    for (e, cs) in found {
        if cs.len() == combos {
            errors.add(e);
            continue;
        }
        let preds: Vec<TokenStream> = cs
            .iter()
            .map(|&c| cfg_combination(def, &gated, c))
            .collect();
        errors.push_gated(combine("any", &preds), e);
    }
    found_absent
        .into_iter()
        .map(|(a, cs)| AbsentField {
            cfg: (cs.len() != combos).then(|| {
                let preds: Vec<TokenStream> = cs
                    .iter()
                    .map(|&c| cfg_combination(def, &gated, c))
                    .collect();
                combine("any", &preds)
            }),
            step: a.step,
            field: a.field,
        })
        .collect()
}

/// The cfg predicate of combination `c` of the `gated` steps (bit `n` of `c`: whether
/// `gated[n]` is compiled in).
pub(crate) fn cfg_combination(def: &FlowDef, gated: &[usize], c: usize) -> TokenStream {
    let parts: Vec<TokenStream> = gated
        .iter()
        .enumerate()
        .map(|(bit, &i)| {
            let on = combine("all", &def.steps[i].cfg);
            if c & (1 << bit) != 0 {
                on
            } else {
                quote::quote!(not(#on))
            }
        })
        .collect();
    combine("all", &parts)
}

/// `all(a, b)` / `any(a, b)`, or just `a` for one predicate.
pub(crate) fn combine(op: &str, preds: &[TokenStream]) -> TokenStream {
    match preds {
        [one] => one.clone(),
        _ => {
            let op = proc_macro2::Ident::new(op, proc_macro2::Span::call_site());
            quote::quote!(#op(#(#preds),*))
        }
    }
}

fn step_shape(s: &StepDef, errors: &mut Errors) {
    let conflicts: [(&str, Option<proc_macro2::Span>); 6] = [
        ("prompt", s.prompt.as_ref().map(|p| p.0)),
        ("ask", s.ask.as_ref().map(syn::LitStr::span)),
        ("collect", s.collect.key),
        ("tools", s.tools.as_ref().map(|t| t.0)),
        (
            "requires_tool",
            s.requires_tool.first().map(syn::spanned::Spanned::span),
        ),
        ("act_on_answer", s.act_on_answer),
    ];
    match &s.shape {
        Shape::Auto(_) => {
            if let Some(h) = &s.finalize {
                errors.push_spanned(
                    &h.path,
                    format!("an `auto` step cannot have `finalize`: it runs after the step's model call, and `{}` makes none; do the work in the step's `prepare` body or `on_enter`", s.ident),
                );
            }
            for (what, span) in conflicts {
                if let Some(span) = span {
                    errors.push(
                        span,
                        format!("an `auto` step cannot have `{what}`: auto steps make no model call; remove `auto` to make `{}` a model step", s.ident),
                    );
                }
            }
            when_branches(s, "an `auto` step", "makes no model call", errors);
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
            when_branches(
                s,
                "a `reply` step",
                "sends a fixed message, with no model call",
                errors,
            );
        }
        Shape::Model => {
            if let (Some(span), None) = (s.act_on_answer, &s.tools) {
                errors.push(
                    span,
                    format!("`act_on_answer` holds back a step's own tools until the user answers it, and `{}` has none; add `tools(..)` or remove `act_on_answer`", s.ident),
                );
            }
        }
    }
}

/// `when` branches are judged by the step's model call: a step without one cannot have them.
fn when_branches(s: &StepDef, kind: &str, why: &str, errors: &mut Errors) {
    let Some(b) = &s.branches else { return };
    for e in &b.entries {
        for c in &e.conds {
            if let Cond::When(w) = c {
                errors.push(
                    w.span(),
                    format!("{kind} cannot have `when` branches: `{}` {why} to judge them; use an `if` predicate", s.ident),
                );
            }
        }
    }
}

/// The `{field}` placeholders of a template (`reply`, `ask`), or why it is malformed.
/// The syntax is the runtime's (`agent_core::template`), which this crate cannot import;
/// here a placeholder is a field's Rust name (the expansion maps it to the JSON name).
pub fn placeholders(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("{{").or_else(|| tail.strip_prefix("}}")) {
            rest = t;
            continue;
        }
        let Some(end) = tail.find('}').filter(|_| tail.starts_with('{')) else {
            return Err("a brace without its pair; placeholders are `{field}`, and `{{` / `}}` write braces".into());
        };
        let name = tail[1..end].trim();
        if name.contains('{') || name.is_empty() {
            return Err("a brace without its pair, or `{}`; placeholders are `{field}`, and `{{` / `}}` write braces".into());
        }
        out.push(name.to_owned());
        rest = &tail[end + 1..];
    }
    Ok(out)
}

/// The placeholder `n` as an identifier (keywords included: `{type}` is `r#type`), if
/// it is one.
pub fn template_ident(n: &str, span: proc_macro2::Span) -> Option<syn::Ident> {
    let mut id: syn::Ident = syn::parse::Parser::parse_str(syn::Ident::parse_any, n).ok()?;
    id.set_span(span);
    Some(id)
}

/// A template's (`reply`, `ask`) syntax, and that each placeholder is a field's Rust
/// name. Whether the field is present at the step is a graph question
/// (`graph::templates`); whether it is a field of the data type, the data type's
/// callback's.
fn template(lit: &syn::LitStr, what: &str, errors: &mut Errors) {
    let names = match placeholders(&lit.value()) {
        Ok(n) => n,
        Err(why) => {
            errors.push(lit.span(), format!("malformed {what} template: {why}"));
            return;
        }
    };
    for n in names {
        if template_ident(&n, lit.span()).is_none() {
            let rust: String = n
                .chars()
                .map(|c| if c.is_alphanumeric() { c } else { '_' })
                .collect();
            errors.push(
                lit.span(),
                format!("the {what} names `{{{n}}}`, which is not a field name: placeholders name a field as Rust code does (`{{{rust}}}`), even when serde renames it"),
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
    // Lifetimes are fine (`fn confirm<'a>(v: confirm::View<'a>)`); the engine calls the
    // fn with its one view type, so there is nothing to pick a type or const for.
    let generic: Vec<&syn::GenericParam> = f
        .sig
        .generics
        .params
        .iter()
        .filter(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
        .collect();
    for p in generic {
        errors.push_spanned(
            p,
            format!("step fns cannot have type or const parameters: the engine calls `{}` with its view, `{}::View<'_>`", s.ident, s.ident),
        );
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
        if let Target::Directive(d) = &e.target
            && s.is_auto()
            && let Some(u) = super::parse::unreadable_directive(d)
        {
            errors.push_spanned(
                u,
                format!(
                    "`auto` step `{}` branches to a directive `#[flow]` cannot read, so it cannot check that `auto` steps do not loop: write the target in the attribute (`=> step_name`, `=> Directive::go_to_step(Step::x)`), or drop `auto`",
                    name(&s.ident)
                ),
            );
        }
        if let Target::Step(t) = &e.target {
            let name = name(t);
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

/// The names `#[flow]` generates inside the module (`booking::flow()`, `booking::Step`,
/// ..): a step or another item of the module cannot have one of them.
pub const RESERVED: &[&str] = &[
    "flow",
    "diagram",
    "Step",
    "View",
    "Completed",
    "ID",
    "DIAGRAM",
];

/// Whether `n` is a name the expansion uses inside the module.
pub fn is_reserved(n: &str) -> bool {
    RESERVED.contains(&n) || n == "__D" || n == "__C" || n.starts_with("__agent_")
}

/// The name an item of the module declares, if it has one.
pub fn item_ident(item: &syn::Item) -> Option<&syn::Ident> {
    match item {
        syn::Item::Fn(x) => Some(&x.sig.ident),
        syn::Item::Const(x) => Some(&x.ident),
        syn::Item::Static(x) => Some(&x.ident),
        syn::Item::Struct(x) => Some(&x.ident),
        syn::Item::Enum(x) => Some(&x.ident),
        syn::Item::Union(x) => Some(&x.ident),
        syn::Item::Type(x) => Some(&x.ident),
        syn::Item::Mod(x) => Some(&x.ident),
        syn::Item::Trait(x) => Some(&x.ident),
        _ => None,
    }
}

/// A step, or another item of the module, named like something `#[flow]` generates there.
fn reserved_names(def: &FlowDef, errors: &mut Errors) {
    for item in &def.items {
        let Some(id) = item_ident(item) else { continue };
        let n = name(id);
        if !is_reserved(&n) {
            continue;
        }
        let what = if def.steps.iter().any(|s| s.ident == *id) {
            "step"
        } else {
            "item"
        };
        errors.push(
            id.span(),
            format!(
                "`{n}` is a name `#[flow]` generates in the flow module (`{}::{n}`); rename the {what} (reserved: {}, and names starting with `__agent_`)",
                def.ident,
                RESERVED
                    .iter()
                    .map(|r| format!("`{r}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
}
