//! Parsing `#[flow(..)]` modules and their `#[step(..)]` fns. Errors are collected; an
//! unreadable key is reported and skipped so that the rest of the item is still read.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::Parse;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Token, parenthesized};

use super::model::*;
use crate::diag::{Errors, name, suggest};

const FLOW_KEYS: &[&str] = &[
    "title",
    "description",
    "when",
    "if",
    "data",
    "context",
    "required",
    "optional",
    "on_complete",
    "on_enter",
    "on_exit",
    "on_data_update",
    "on_context_update",
    "on_complete_hook",
    "reentrant",
    "corrections",
    "interrupted",
    "cancel_clears",
    "cancel_after_tool",
    "tools",
    "initial_data",
];

const STEP_KEYS: &[&str] = &[
    "auto",
    "reply",
    "prompt",
    "collect",
    "requires",
    "depends_on",
    "tools",
    "requires_tool",
    "act_on_answer",
    "ask",
    "end",
    "skip",
    "if",
    "when",
    "on_enter",
    "finalize",
    "branches",
    "jump_target",
    "interrupted",
];

fn unknown_key(key: &syn::Ident, known: &[&str], what: &str) -> syn::Error {
    let known: Vec<String> = known.iter().map(|k| (*k).to_string()).collect();
    syn::Error::new(
        key.span(),
        format!(
            "unknown `#[{what}]` key `{key}`; {}",
            suggest(&key.to_string(), &known, "keys")
        ),
    )
}

fn ident_list(input: ParseStream) -> syn::Result<Vec<syn::Ident>> {
    let content;
    parenthesized!(content in input);
    let list = content.parse_terminated(syn::Ident::parse, Token![,])?;
    Ok(list.into_iter().collect())
}

fn expr_list(input: ParseStream) -> syn::Result<Vec<syn::Expr>> {
    let content;
    parenthesized!(content in input);
    let list = content.parse_terminated(syn::Expr::parse, Token![,])?;
    Ok(list.into_iter().collect())
}

fn value<T: syn::parse::Parse>(input: ParseStream) -> syn::Result<T> {
    input.parse::<Token![=]>()?;
    input.parse()
}

/// A branch target: a path (step, flow type, typed cross-flow step) optionally labelled
/// `as "label"`, or a directive expression.
fn target(input: ParseStream) -> syn::Result<(Target, Span, Option<syn::LitStr>)> {
    let span = input.span();
    if input.is_empty() || input.peek(Token![,]) {
        return Err(syn::Error::new(
            span,
            "expected a branch target after `=>`: a step (`confirm`), a flow type (`FeedbackFlow`), a typed step of another flow (`feedback::Step::ask`) or a `Directive`",
        ));
    }
    let fork = input.fork();
    if let Ok(path) = fork.call(syn::Path::parse_mod_style)
        && (fork.is_empty() || fork.peek(Token![,]) || fork.peek(Token![as]))
    {
        use syn::parse::discouraged::Speculative;
        input.advance_to(&fork);
        let label = if input.peek(Token![as]) {
            input.parse::<Token![as]>()?;
            Some(input.parse::<syn::LitStr>()?)
        } else {
            None
        };
        let segs: Vec<String> = path.segments.iter().map(|s| name(&s.ident)).collect();
        if segs.len() == 1 && path.leading_colon.is_none() {
            let id = &path.segments[0].ident;
            if name(id).starts_with(|c: char| c.is_lowercase() || c == '_') {
                return Ok((Target::Step(id.clone()), span, label));
            }
            return Ok((Target::Flow(path), span, label));
        }
        // `Step::confirm` / `self::Step::confirm`: a step of this flow, typed.
        let own = match segs.as_slice() {
            [s, _] => s == "Step",
            [m, s, _] => m == "self" && s == "Step",
            _ => false,
        };
        if own
            && path.leading_colon.is_none()
            && let Some(last) = path.segments.last()
        {
            return Ok((Target::Step(last.ident.clone()), span, label));
        }
        if segs.len() >= 3 && segs[segs.len() - 2] == "Step" {
            return Ok((Target::CrossStep(path), span, label));
        }
        return Ok((Target::Flow(path), span, label));
    }
    let e: syn::Expr = input.parse()?;
    Ok((Target::Directive(e), span, None))
}

fn branch_entry(input: ParseStream) -> syn::Result<BranchEntry> {
    let span = input.span();
    let mut conds = Vec::new();
    let mut else_span = None;
    if input.peek(Token![else]) {
        let e: Token![else] = input.parse()?;
        else_span = Some(e.span);
    } else {
        loop {
            if input.peek(Token![if]) {
                input.parse::<Token![if]>()?;
                conds.push(Cond::If(input.parse()?));
            } else if input.peek(syn::Ident) && input.fork().parse::<syn::Ident>()? == "when" {
                input.parse::<syn::Ident>()?;
                conds.push(Cond::When(input.parse()?));
            } else {
                break;
            }
        }
        if conds.is_empty() {
            return Err(syn::Error::new(
                span,
                "expected a branch entry: `if |view| .. => target`, `when \"..\" => target` or `else => target`",
            ));
        }
    }
    input.parse::<Token![=>]>()?;
    let (target, target_span, label) = target(input)?;
    if !input.is_empty() {
        input.parse::<Token![,]>()?;
    }
    Ok(BranchEntry {
        conds,
        else_span,
        span,
        target,
        target_span,
        label,
    })
}

fn branches(input: ParseStream, span: Span) -> syn::Result<Branches> {
    let content;
    parenthesized!(content in input);
    let mut entries = Vec::new();
    while !content.is_empty() {
        entries.push(branch_entry(&content)?);
    }
    Ok(Branches { span, entries })
}

/// A flow-level target: a flow type path or a directive expression.
fn flow_target(e: syn::Expr) -> Target {
    if let syn::Expr::Path(p) = &e
        && p.qself.is_none()
        && p.path.segments.iter().all(|s| s.arguments.is_none())
        && p.path
            .segments
            .last()
            .is_some_and(|s| name(&s.ident).starts_with(char::is_uppercase))
    {
        return Target::Flow(p.path.clone());
    }
    Target::Directive(e)
}

/// The keys written `key(..)` and `key = ..`: one written otherwise (`branches` alone,
/// `prompt` without its value) is an error on the key, saying how to write it.
const LIST_KEYS: &[&str] = &[
    "required",
    "optional",
    "tools",
    "collect",
    "requires",
    "depends_on",
    "requires_tool",
    "branches",
    "cancel_clears",
];
const VALUE_KEYS: &[&str] = &[
    "title",
    "description",
    "when",
    "if",
    "data",
    "context",
    "on_complete",
    "on_enter",
    "on_exit",
    "on_data_update",
    "on_context_update",
    "on_complete_hook",
    "corrections",
    "interrupted",
    "cancel_after_tool",
    "initial_data",
    "reply",
    "ask",
    "prompt",
    "skip",
    "finalize",
];

fn key_shape(key: &syn::Ident, input: ParseStream) -> syn::Result<()> {
    let k = key.to_string();
    if LIST_KEYS.contains(&k.as_str()) && !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(
            key.span(),
            format!("`{k}` takes a list: `{k}(..)`"),
        ));
    }
    if VALUE_KEYS.contains(&k.as_str()) && !input.peek(Token![=]) {
        return Err(syn::Error::new(
            key.span(),
            format!("`{k}` takes a value: `{k} = ..`"),
        ));
    }
    Ok(())
}

/// Parse `key = value, key(list), flag, ...`, dispatching each key to `f`; errors on a
/// key are recorded and the rest of the list still read.
fn keyed(
    input: ParseStream,
    errors: &mut Errors,
    mut f: impl FnMut(&syn::Ident, ParseStream) -> syn::Result<()>,
) -> syn::Result<()> {
    let mut seen: Vec<String> = Vec::new();
    while !input.is_empty() {
        let key = syn::Ident::parse_any(input)?;
        let k = key.to_string();
        if seen.contains(&k) {
            errors.push(key.span(), format!("duplicate key `{k}`"));
        }
        seen.push(k);
        if let Err(e) = key_shape(&key, input).and_then(|()| f(&key, input)) {
            errors.add(e);
            // Skip to the next top-level comma.
            while !input.is_empty() && !input.peek(Token![,]) {
                input.parse::<TokenTree>()?;
            }
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(())
}

fn hook(path: syn::Path, fns: &[(String, bool)]) -> HookRef {
    let is_async = path
        .get_ident()
        .and_then(|i| fns.iter().find(|(n, _)| name(i) == *n))
        .is_some_and(|(_, a)| *a);
    HookRef { path, is_async }
}

/// Parse the `#[flow(..)]` arguments.
pub fn flow_attrs(attr: TokenStream, fns: &[(String, bool)], errors: &mut Errors) -> FlowAttrs {
    let mut a = FlowAttrs::default();
    let mut inner = Errors::default();
    let parser = |input: ParseStream| {
        keyed(input, &mut inner, |key, input| {
            match key.to_string().as_str() {
                "title" => a.title = Some(value(input)?),
                "description" => a.description = Some(value(input)?),
                "when" => a.when = Some(value(input)?),
                "if" => a.if_ = Some(value(input)?),
                "data" => a.data = Some(value(input)?),
                "context" => a.context = Some(value(input)?),
                "required" => {
                    a.required = FieldList {
                        key: Some(key.span()),
                        idents: ident_list(input)?,
                    }
                }
                "optional" => {
                    a.optional = FieldList {
                        key: Some(key.span()),
                        idents: ident_list(input)?,
                    }
                }
                "on_complete" => a.on_complete = Some(flow_target(value(input)?)),
                "on_enter" => a.on_enter = Some(hook(value(input)?, fns)),
                "on_exit" => a.on_exit = Some(hook(value(input)?, fns)),
                "on_data_update" => a.on_data_update = Some(hook(value(input)?, fns)),
                "on_context_update" => a.on_context_update = Some(hook(value(input)?, fns)),
                "on_complete_hook" => a.on_complete_hook = Some(hook(value(input)?, fns)),
                "reentrant" => a.reentrant = true,
                "corrections" => a.corrections = Some(value(input)?),
                "interrupted" => a.interrupted = Some(value(input)?),
                "cancel_clears" => {
                    a.cancel_clears = FieldList {
                        key: Some(key.span()),
                        idents: ident_list(input)?,
                    }
                }
                "cancel_after_tool" => a.cancel_after_tool = Some(value(input)?),
                "tools" => a.tools = expr_list(input)?,
                "initial_data" => a.initial_data = Some(value(input)?),
                _ => return Err(unknown_key(key, FLOW_KEYS, "flow")),
            }
            Ok(())
        })
    };
    if let Err(e) = parser.parse2(attr) {
        errors.add(e);
    }
    for e in inner.into_vec() {
        errors.add(e);
    }
    a
}

/// Parse one `#[step(..)]` on `func`.
fn step(
    attr: &syn::Attribute,
    func: syn::ItemFn,
    fns: &[(String, bool)],
    errors: &mut Errors,
) -> StepDef {
    let cfg = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .filter_map(|a| match &a.meta {
            syn::Meta::List(l) => Some(l.tokens.clone()),
            _ => None,
        })
        .collect();
    let mut s = StepDef {
        cfg,
        ident: func.sig.ident.clone(),
        prepare: !matches!(func.sig.output, syn::ReturnType::Default),
        func,
        shape: Shape::Model,
        prompt: None,
        collect: FieldList::default(),
        requires: FieldList::default(),
        depends_on: FieldList::default(),
        tools: None,
        requires_tool: Vec::new(),
        act_on_answer: None,
        ask: None,
        end: false,
        interrupted: None,
        skip: None,
        if_: None,
        when: None,
        on_enter: None,
        finalize: None,
        branches: None,
        jump_target: false,
    };
    let tokens = match &attr.meta {
        syn::Meta::Path(_) => TokenStream::new(),
        syn::Meta::List(l) => l.tokens.clone(),
        syn::Meta::NameValue(nv) => {
            errors.push_spanned(nv, "write `#[step(key = value, ..)]`");
            TokenStream::new()
        }
    };
    let mut inner = Errors::default();
    let mut reply_and_auto: Option<Span> = None;
    let parser = |input: ParseStream| {
        keyed(input, &mut inner, |key, input| {
            match key.to_string().as_str() {
                "auto" => {
                    if let Shape::Reply(_) = s.shape {
                        reply_and_auto = Some(key.span());
                    } else {
                        s.shape = Shape::Auto(key.span());
                    }
                }
                "reply" => {
                    let text: syn::LitStr = value(input)?;
                    if let Shape::Auto(sp) = s.shape {
                        reply_and_auto = Some(sp);
                    }
                    s.shape = Shape::Reply(text);
                }
                "prompt" => s.prompt = Some((key.span(), value(input)?)),
                "collect" => {
                    s.collect = FieldList {
                        key: Some(key.span()),
                        idents: ident_list(input)?,
                    }
                }
                "requires" => {
                    s.requires = FieldList {
                        key: Some(key.span()),
                        idents: ident_list(input)?,
                    }
                }
                "depends_on" => {
                    s.depends_on = FieldList {
                        key: Some(key.span()),
                        idents: ident_list(input)?,
                    }
                }
                "tools" => s.tools = Some((key.span(), expr_list(input)?)),
                "requires_tool" => s.requires_tool.extend(expr_list(input)?),
                "act_on_answer" => s.act_on_answer = Some(key.span()),
                "ask" => s.ask = Some(value(input)?),
                "end" => s.end = true,
                "skip" => s.skip = Some(value(input)?),
                "if" => s.if_ = Some(value(input)?),
                "when" => s.when = Some(value(input)?),
                "on_enter" => s.on_enter = Some(hook(value(input)?, fns)),
                "finalize" => s.finalize = Some(hook(value(input)?, fns)),
                "branches" => s.branches = Some(branches(input, key.span())?),
                "jump_target" => s.jump_target = true,
                "interrupted" => s.interrupted = Some(value(input)?),
                _ => return Err(unknown_key(key, STEP_KEYS, "step")),
            }
            Ok(())
        })
    };
    if let Err(e) = parser.parse2(tokens) {
        errors.add(e);
    }
    for e in inner.into_vec() {
        errors.add(e);
    }
    if let Some(sp) = reply_and_auto {
        errors.push(
            sp,
            "a `reply` step cannot be `auto`: it sends a fixed message; keep one of the two",
        );
    }
    s
}

fn is_step_attr(a: &syn::Attribute) -> bool {
    a.path().segments.last().is_some_and(|s| s.ident == "step")
}

/// `Step :: name` sequences in `ts`.
fn mentions(ts: TokenStream, out: &mut Vec<String>) {
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    for (i, t) in tts.iter().enumerate() {
        match t {
            TokenTree::Group(g) => mentions(g.stream(), out),
            TokenTree::Ident(id) if id == "Step" => {
                if let (
                    Some(TokenTree::Punct(a)),
                    Some(TokenTree::Punct(b)),
                    Some(TokenTree::Ident(n)),
                ) = (tts.get(i + 1), tts.get(i + 2), tts.get(i + 3))
                    && a.as_char() == ':'
                    && b.as_char() == ':'
                {
                    out.push(name(n));
                }
            }
            _ => {}
        }
    }
}

/// Parse the whole flow module.
pub fn parse(attr: TokenStream, item: TokenStream, errors: &mut Errors) -> Option<FlowDef> {
    let module: syn::ItemMod = match syn::parse2(item) {
        Ok(m) => m,
        Err(e) => {
            errors.push(
                e.span(),
                "`#[flow]` goes on an inline module: `mod booking { #[step(..)] fn ask() {} .. }`",
            );
            return None;
        }
    };
    let Some((_, content)) = module.content else {
        errors.push(
            module.ident.span(),
            "`#[flow]` needs the module's steps inline: `mod booking { .. }`",
        );
        return None;
    };
    let fns: Vec<(String, bool)> = content
        .iter()
        .filter_map(|i| match i {
            syn::Item::Fn(f) => Some((name(&f.sig.ident), f.sig.asyncness.is_some())),
            _ => None,
        })
        .collect();
    let flow = flow_attrs(attr, &fns, errors);
    let mut steps = Vec::new();
    let mut items = Vec::new();
    let mut mentioned = Vec::new();
    for item in content {
        match item {
            syn::Item::Fn(mut f) => {
                let pos = f.attrs.iter().position(is_step_attr);
                if let Some(pos) = pos {
                    let attr = f.attrs.remove(pos);
                    if let Some(dup) = f.attrs.iter().find(|a| is_step_attr(a)) {
                        errors.push_spanned(dup, "a fn can carry one `#[step]`");
                    }
                    f.attrs.retain(|a| !is_step_attr(a));
                    mentions(f.block.to_token_stream(), &mut mentioned);
                    let s = step(&attr, f.clone(), &fns, errors);
                    steps.push(s);
                } else {
                    mentions(f.to_token_stream(), &mut mentioned);
                }
                items.push(syn::Item::Fn(f));
            }
            other => {
                let stray = match &other {
                    syn::Item::Struct(x) => {
                        x.attrs.iter().find(|a| is_step_attr(a)).map(Spanned::span)
                    }
                    syn::Item::Mod(x) => {
                        x.attrs.iter().find(|a| is_step_attr(a)).map(Spanned::span)
                    }
                    syn::Item::Const(x) => {
                        x.attrs.iter().find(|a| is_step_attr(a)).map(Spanned::span)
                    }
                    _ => None,
                };
                if let Some(sp) = stray {
                    errors.push(sp, "`#[step]` goes on a fn of the flow module");
                }
                mentions(other.to_token_stream(), &mut mentioned);
                items.push(other);
            }
        }
    }
    own_step_targets(&mut steps);
    Some(FlowDef {
        ident: module.ident,
        vis: module.vis,
        attrs: module.attrs,
        flow,
        steps,
        items,
        mentioned,
    })
}

/// A capitalised single name (`=> Confirm`) reads as a flow type, unless the flow has a
/// step of that name: then it is that step.
fn own_step_targets(steps: &mut [StepDef]) {
    let names: Vec<String> = steps.iter().map(|s| name(&s.ident)).collect();
    for s in steps.iter_mut() {
        let Some(b) = &mut s.branches else { continue };
        for e in &mut b.entries {
            if let Target::Flow(p) = &e.target
                && p.leading_colon.is_none()
                && let Some(id) = p.get_ident()
                && names.contains(&name(id))
            {
                e.target = Target::Step(id.clone());
            }
        }
    }
}
