//! The `Flow::builder(..)` chain inside the generated `flow()`: the flow's own settings
//! and hooks, then one statement per step, so the runtime flow mirrors the attributes.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::rt;
use super::wrappers::{HookKind, hook_wrapper, predicate, strs, target_directive};
use crate::diag::name;
use crate::flow::model::*;

/// The builder calls of the flow's own attributes; hook wrappers go to `hooks`.
pub(super) fn flow_calls(
    def: &FlowDef,
    flow_view: &syn::Ident,
    completed_view: &syn::Ident,
    hooks: &mut Vec<TokenStream>,
) -> Vec<TokenStream> {
    let rt = rt();
    let f = &def.flow;
    let mut builder = Vec::new();
    if let Some(t) = &f.title {
        builder.push(quote!(.title(#t)));
    }
    if let Some(t) = &f.description {
        builder.push(quote!(.description(#t)));
    }
    if let Some(t) = &f.when {
        builder.push(quote!(.when(#t)));
    }
    if let Some(p) = &f.if_ {
        let pred = predicate(p, &quote!(View));
        builder.push(quote!(.if_(#pred)));
    }
    let required = strs(&f.required);
    if !required.is_empty() {
        builder.push(quote!(.required([#(#required),*])));
    }
    let optional = strs(&f.optional);
    if !optional.is_empty() {
        builder.push(quote!(.optional([#(#optional),*])));
    }
    if let Some(e) = &f.initial_data {
        let p = quote_spanned!(e.span()=> #rt::PatchOver::<__D>::patch_over(#e));
        builder.push(quote!(.initial_data(#p)));
    }
    if let Some(c) = &f.corrections {
        let v = if c == "reopen" {
            quote!(Reopen)
        } else {
            quote!(Refuse)
        };
        builder.push(quote!(.corrections(#rt::Corrections::#v)));
    }
    if let Some(i) = &f.interrupted {
        builder.push(interruption(i));
    }
    let clears = strs(&f.cancel_clears);
    if !clears.is_empty() {
        builder.push(quote!(.cancel_clears([#(#clears),*])));
    }
    if let Some(t) = &f.cancel_after_tool {
        builder.push(quote!(.cancel_after_tool(#t)));
    }
    if f.reentrant {
        builder.push(quote!(.reentrant()));
    }
    if let Some(t) = &f.on_complete {
        let span = match t {
            Target::Directive(e) => e.span(),
            _ => Span::call_site(),
        };
        if let Some(d) = target_directive(t, span) {
            builder.push(quote!(.on_complete(#d)));
        }
    }
    let flow_hooks: [(&Option<HookRef>, &str, HookKind, &syn::Ident); 5] = [
        (&f.on_enter, "on_enter", HookKind::Pre, flow_view),
        (&f.on_exit, "on_exit", HookKind::Notify, flow_view),
        (
            &f.on_data_update,
            "on_data_update",
            HookKind::Notify,
            flow_view,
        ),
        (
            &f.on_context_update,
            "on_context_update",
            HookKind::Notify,
            flow_view,
        ),
        (
            &f.on_complete_hook,
            "on_complete_hook",
            HookKind::Post,
            completed_view,
        ),
    ];
    for (h, key, kind, _) in flow_hooks {
        if let Some(h) = h {
            let name = format_ident!("__agent_flow_{}", key);
            let view = if key == "on_complete_hook" {
                quote!(Completed)
            } else {
                quote!(View)
            };
            hooks.push(hook_wrapper(
                &name,
                kind,
                &h.path,
                h.is_async,
                &view,
                &TokenStream::new(),
            ));
            let method = format_ident!("{}", key);
            builder.push(quote!(.#method(#name)));
        }
    }
    for t in &f.tools {
        let t = tool_path(def, t);
        let t = quote_spanned!(t.span()=> #rt::tool_arc::<__D, __C, _>(#t));
        builder.push(quote!(.tool(#t)));
    }
    builder
}

/// A tool as the flow module's code reaches it. A tool named by a single name that a fn
/// of the module also has (`fn book_room()` offering `tools(book_room)`) is the one from
/// outside, `super::book_room`: inside the module the fn shadows the tool's value (a
/// `#[tool]` defined in the module could not share its name with a fn).
fn tool_path(def: &FlowDef, t: &syn::Expr) -> syn::Expr {
    if let syn::Expr::Path(p) = t
        && p.qself.is_none()
        && let Some(id) = p.path.get_ident()
        && def.items.iter().any(|i| {
            matches!(i, syn::Item::Fn(f)
                if name(&f.sig.ident) == name(id)
                    && !f.attrs.iter().any(|a| a.path().segments.last().is_some_and(|s| s.ident == "tool")))
        })
    {
        let mut p = p.clone();
        p.path
            .segments
            .insert(0, syn::PathSegment::from(syn::Ident::new("super", id.span())));
        return syn::Expr::Path(p);
    }
    t.clone()
}

/// `.interrupted(Interruption::..)` for a validated `interrupted = ..` value.
fn interruption(i: &syn::Ident) -> TokenStream {
    let rt = rt();
    let v = match i.to_string().as_str() {
        "end" => quote!(End),
        "restart" => quote!(Restart),
        _ => quote!(Resume),
    };
    quote!(.interrupted(#rt::Interruption::#v))
}

/// A compile-time check for each tool the flow offers by the path of a `#[tool]` fn
/// (the common way to name one), when the flow does not say what a cancel says after
/// a once-tool ran: `#[tool]` gives its type `__AGENT_ONCE`, and any other type reads
/// `false` from the blanket fallback (`build()` checks those at run time).
pub(super) fn once_tool_checks(def: &FlowDef) -> Vec<TokenStream> {
    if def.flow.cancel_after_tool.is_some() {
        return Vec::new();
    }
    let rt = rt();
    let steps = def
        .steps
        .iter()
        .filter_map(|s| s.tools.as_ref())
        .flat_map(|(_, t)| t.iter());
    def.flow
        .tools
        .iter()
        .chain(steps)
        .filter_map(|t| match t {
            syn::Expr::Path(p) if p.qself.is_none() => Some(&p.path),
            _ => None,
        })
        // Named like a fn: a `#[tool]` (types, variants and consts are checked by `build()`).
        .filter(|p| {
            p.segments
                .last()
                .and_then(|s| s.ident.to_string().chars().next())
                .is_some_and(|c| c.is_lowercase() || c == '_')
        })
        .map(|p| {
            let tool = p.segments.last().map(|s| name(&s.ident)).unwrap_or_default();
            let p = tool_path(def, &syn::Expr::Path(syn::ExprPath {
                attrs: Vec::new(),
                qself: None,
                path: p.clone(),
            }));
            let msg = format!(
                "flow `{}` offers the once-tool `{tool}`, whose effect a cancel does not undo: say what a cancel says after it ran with `cancel_after_tool = \"..\"` in `#[flow(..)]` (\"Your room stays booked.\")",
                def.ident
            );
            quote_spanned! {p.span()=>
                const _: () = {
                    #[allow(unused_imports)]
                    use #rt::ToolOnceFallback as _;
                    ::core::assert!(!#p::__AGENT_ONCE, #msg);
                };
            }
        })
        .collect()
}

/// One `let __b = __b.step(..);` statement per step; hook wrappers go to `hooks`.
pub(super) fn step_stmts(
    def: &FlowDef,
    unique: &[&StepDef],
    step_names: &[String],
    hooks: &mut Vec<TokenStream>,
) -> Vec<TokenStream> {
    let rt = rt();
    let f = &def.flow;
    let mut step_stmts = Vec::new();
    for s in unique {
        let n = &s.ident;
        let sid = name(n);
        let cfg = s.cfg_attrs();
        let view = quote!(#n::View);
        let mut sb = Vec::new();
        let ctor = match &s.shape {
            Shape::Model => quote!(#rt::RtStep::<__D, __C>::model(#sid)),
            Shape::Auto(_) => quote!(#rt::RtStep::<__D, __C>::auto(#sid)),
            Shape::Reply(r) => {
                let text = match &f.data {
                    Some(_) => quote!(#rt::reply_template::<__D>(#r)),
                    None => quote!(#r),
                };
                quote!(#rt::RtStep::<__D, __C>::reply(#sid, #text))
            }
        };
        if let Some((_, p)) = &s.prompt {
            sb.push(quote!(.prompt(#p)));
        }
        let c = strs(&s.collect);
        if !c.is_empty() {
            sb.push(quote!(.collect([#(#c),*])));
        }
        let r = strs(&s.requires);
        if !r.is_empty() {
            sb.push(quote!(.requires([#(#r),*])));
        }
        let d = strs(&s.depends_on);
        if !d.is_empty() {
            sb.push(quote!(.depends_on([#(#d),*])));
        }
        if let Some((_, tools)) = &s.tools {
            for t in tools {
                let t = tool_path(def, t);
                let t = quote_spanned!(t.span()=> #rt::tool_arc::<__D, __C, _>(#t));
                sb.push(quote!(.tool(#t)));
            }
        }
        if let Some(i) = &s.interrupted {
            sb.push(interruption(i));
        }
        if let Some(p) = &s.skip {
            let p = predicate(p, &view);
            sb.push(quote!(.skip(#p)));
        }
        if let Some(p) = &s.if_ {
            let p = predicate(p, &view);
            sb.push(quote!(.if_(#p)));
        }
        if let Some(w) = &s.when {
            sb.push(quote!(.when(#w)));
        }
        if let Some(h) = &s.on_enter {
            let name = format_ident!("__agent_on_enter_{}", n);
            hooks.push(hook_wrapper(
                &name,
                HookKind::Pre,
                &h.path,
                h.is_async,
                &view,
                &cfg,
            ));
            sb.push(quote!(.on_enter(#name)));
        }
        if s.prepare {
            let name = format_ident!("__agent_prepare_{}", n);
            let path: syn::Path = n.clone().into();
            hooks.push(hook_wrapper(
                &name,
                HookKind::Pre,
                &path,
                s.func.sig.asyncness.is_some(),
                &view,
                &cfg,
            ));
            sb.push(quote!(.prepare(#name)));
        }
        if let Some(h) = &s.finalize {
            let name = format_ident!("__agent_finalize_{}", n);
            hooks.push(hook_wrapper(
                &name,
                HookKind::Post,
                &h.path,
                h.is_async,
                &view,
                &cfg,
            ));
            sb.push(quote!(.finalize(#name)));
        }
        if let Some(b) = &s.branches {
            let entries = b.entries.iter().filter_map(|e| {
                let base = match &e.target {
                    Target::Step(t) => {
                        let t = name(t);
                        if !step_names.contains(&t) {
                            return None;
                        }
                        quote!(#rt::Branch::<__D, __C>::to_step(#t))
                    }
                    Target::Flow(p) => {
                        let f = super::wrappers::flow_id(p);
                        quote!(#rt::Branch::<__D, __C>::to_flow(#f))
                    }
                    other => {
                        let d = target_directive(other, e.target_span)?;
                        quote!(#rt::Branch::<__D, __C>::to_directive(#d))
                    }
                };
                let conds = e.conds.iter().map(|c| match c {
                    Cond::If(p) => {
                        let p = predicate(p, &view);
                        quote!(.if_(#p))
                    }
                    Cond::When(w) => quote!(.when(#w)),
                });
                let label = e.label.as_ref().map(|l| quote!(.label(#l)));
                Some(quote!(#base #(#conds)* #label))
            });
            sb.push(quote!(.branches(::std::vec::Vec::from([#(#entries),*]))));
        }
        for t in &s.requires_tool {
            let t = tool_path(def, t);
            let t = quote_spanned!(t.span()=> #rt::tool_arc::<__D, __C, _>(#t).name());
            sb.push(quote!(.requires_tool(#t)));
        }
        if let Some(a) = &s.ask {
            let text = match &f.data {
                Some(_) => quote!(#rt::reply_template::<__D>(#a)),
                None => quote!(#a),
            };
            sb.push(quote!(.ask(#text)));
        }
        if let Some(span) = s.act_on_answer {
            // Deprecated: the warning points at the user's `act_on_answer`.
            sb.push(quote_spanned!(span=> .act_on_answer()));
        }
        if s.end {
            sb.push(quote!(.end()));
        }
        // A statement each, so that a step's `#[cfg]` can leave it out.
        step_stmts.push(quote!(#cfg let __b = __b.step(#ctor #(#sb)*);));
    }
    step_stmts
}
