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

/// A name written as a string (`"city"`): the error, naming the fix.
fn quoted(lit: &syn::LitStr, what: &str) -> syn::Error {
    let v = lit.value();
    let bare = if v.chars().all(|c| c.is_alphanumeric() || c == '_') && !v.is_empty() {
        format!(": write `{v}`")
    } else {
        String::new()
    };
    syn::Error::new(lit.span(), format!("{what} is named without quotes{bare}"))
}

fn ident_list(input: ParseStream) -> syn::Result<Vec<syn::Ident>> {
    let content;
    parenthesized!(content in input);
    let list = content.parse_terminated(
        |input: ParseStream| {
            if input.peek(syn::LitStr) {
                let lit: syn::LitStr = input.parse()?;
                return Err(quoted(&lit, "a field"));
            }
            syn::Ident::parse(input)
        },
        Token![,],
    )?;
    Ok(list.into_iter().collect())
}

/// `tools(..)`, `requires_tool(..)`: tool values (`book_room`), not their names.
fn tool_list(input: ParseStream) -> syn::Result<Vec<syn::Expr>> {
    let list = expr_list(input)?;
    for e in &list {
        if let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = e
        {
            return Err(quoted(
                s,
                "a tool (the `#[tool]` fn, or a value implementing `Tool`)",
            ));
        }
    }
    Ok(list)
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

/// `key = path` (a type, a hook fn): a string there is an error naming the fix.
fn path_value<T: syn::parse::Parse>(input: ParseStream, what: &str) -> syn::Result<T> {
    input.parse::<Token![=]>()?;
    if input.peek(syn::LitStr) {
        let lit: syn::LitStr = input.parse()?;
        return Err(quoted(&lit, what));
    }
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
    if input.peek(syn::LitStr) {
        let fork = input.fork();
        let lit: syn::LitStr = fork.parse()?;
        if fork.is_empty() || fork.peek(Token![,]) || fork.peek(Token![as]) {
            return Err(quoted(
                &lit,
                "a branch target (a step of this flow, a flow type, `other::Step::x`)",
            ));
        }
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
        named_steps: Vec::new(),
        plain_jump: false,
    })
}

fn branches(input: ParseStream, span: Span) -> syn::Result<Branches> {
    let content;
    parenthesized!(content in input);
    let mut entries = Vec::new();
    while !content.is_empty() {
        match branch_entry(&content) {
            Ok(e) => entries.push(e),
            Err(e) => {
                // The rest of the table is not read: consumed, so that syn does not add
                // an "unexpected token" error of its own.
                content.parse::<TokenStream>()?;
                return Err(e);
            }
        }
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

fn hook(input: ParseStream, fns: &[(String, bool)]) -> syn::Result<HookRef> {
    let path: syn::Path = path_value(input, "a hook (the fn's path)")?;
    Ok(hook_ref(path, fns))
}

fn hook_ref(path: syn::Path, fns: &[(String, bool)]) -> HookRef {
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
                "data" => a.data = Some(path_value(input, "the data type")?),
                "context" => a.context = Some(path_value(input, "the context type")?),
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
                "on_complete" => {
                    let e: syn::Expr = value(input)?;
                    if let syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) = &e
                    {
                        let v = s.value();
                        let ty = crate::flow::expand::flow_type_name(&v);
                        return Err(syn::Error::new(
                            s.span(),
                            format!(
                                "`on_complete` names a flow by its type, without quotes: `on_complete = {ty}` for `mod {v}` (or takes a directive)"
                            ),
                        ));
                    }
                    a.on_complete = Some(flow_target(e));
                }
                "on_enter" => a.on_enter = Some(hook(input, fns)?),
                "on_exit" => a.on_exit = Some(hook(input, fns)?),
                "on_data_update" => a.on_data_update = Some(hook(input, fns)?),
                "on_context_update" => a.on_context_update = Some(hook(input, fns)?),
                "on_complete_hook" => a.on_complete_hook = Some(hook(input, fns)?),
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
                "tools" => a.tools = tool_list(input)?,
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
                "tools" => s.tools = Some((key.span(), tool_list(input)?)),
                "requires_tool" => s.requires_tool.extend(tool_list(input)?),
                "act_on_answer" => s.act_on_answer = Some(key.span()),
                "ask" => s.ask = Some(value(input)?),
                "end" => s.end = true,
                "skip" => s.skip = Some(value(input)?),
                "if" => s.if_ = Some(value(input)?),
                "when" => s.when = Some(value(input)?),
                "on_enter" => s.on_enter = Some(hook(input, fns)?),
                "finalize" => s.finalize = Some(hook(input, fns)?),
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
    is_step_meta(&a.meta)
}

fn is_step_meta(m: &syn::Meta) -> bool {
    m.path().segments.last().is_some_and(|s| s.ident == "step")
}

/// A `cfg_attr(pred, .., step(..), ..)` (nested `cfg_attr`s too): the predicates that
/// must all hold for the `step(..)`, the `step(..)`, and the `cfg_attr` left without it
/// (`None` when nothing is left).
fn split_cfg_attr(meta: &syn::Meta) -> Option<(Vec<TokenStream>, syn::Meta, Option<syn::Meta>)> {
    let syn::Meta::List(l) = meta else {
        return None;
    };
    if !l.path.is_ident("cfg_attr") {
        return None;
    }
    let items = syn::punctuated::Punctuated::<syn::Meta, Token![,]>::parse_terminated
        .parse2(l.tokens.clone())
        .ok()?;
    let mut items: Vec<syn::Meta> = items.into_iter().collect();
    if items.len() < 2 {
        return None;
    }
    let pred = items.remove(0);
    let (k, preds, step, rest) = items.iter().enumerate().find_map(|(k, m)| {
        if is_step_meta(m) {
            Some((k, Vec::new(), m.clone(), None))
        } else {
            let (p, s, r) = split_cfg_attr(m)?;
            Some((k, p, s, r))
        }
    })?;
    match rest {
        Some(r) => items[k] = r,
        None => {
            items.remove(k);
        }
    }
    let rest = (!items.is_empty()).then(|| {
        let path = &l.path;
        syn::Meta::List(syn::MetaList {
            path: path.clone(),
            delimiter: l.delimiter.clone(),
            tokens: quote::quote!(#pred, #(#items),*),
        })
    });
    let mut preds = preds;
    preds.insert(0, pred.to_token_stream());
    Some((preds, step, rest))
}

/// `#[meta]`, an outer attribute like `like`.
fn meta_attr(meta: &syn::Meta, like: &syn::Attribute) -> Option<syn::Attribute> {
    Some(syn::Attribute {
        pound_token: like.pound_token,
        style: like.style,
        bracket_token: like.bracket_token,
        meta: meta.clone(),
    })
}

/// The steps of the flow `module` that `ts` names: `Step::name`, `self::Step::name` or
/// `..module::Step::name`. A path through another module (`other::Step::name`) names a
/// step of another flow, not of this one.
pub(crate) fn mentions(ts: TokenStream, module: &str, out: &mut Vec<String>) {
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    let colons = |i: usize| {
        matches!(
            (tts.get(i), tts.get(i + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && b.as_char() == ':'
        )
    };
    for (i, t) in tts.iter().enumerate() {
        match t {
            TokenTree::Group(g) => mentions(g.stream(), module, out),
            TokenTree::Ident(id) if id == "Step" => {
                let Some(TokenTree::Ident(n)) = tts.get(i + 3) else {
                    continue;
                };
                if !colons(i + 1) {
                    continue;
                }
                // What comes before `Step`: nothing path-like, or `self ::`/`module ::`.
                let own = i < 2
                    || !colons(i - 2)
                    || matches!(tts.get(i.wrapping_sub(3)), Some(TokenTree::Ident(m))
                        if *m == "self" || name(m) == module);
                if own {
                    out.push(name(n));
                }
            }
            _ => {}
        }
    }
}

/// Whether `e` is a plain jump to a step: `Directive::go_to_step(..)` or
/// `Directive::new().go_to_step(..)`, nothing else in the chain.
fn plain_jump(e: &syn::Expr) -> bool {
    let is_directive = |p: &syn::ExprPath, last: &str| {
        let segs: Vec<String> = p.path.segments.iter().map(|s| name(&s.ident)).collect();
        segs.len() >= 2 && segs[segs.len() - 2] == "Directive" && segs[segs.len() - 1] == last
    };
    match e {
        syn::Expr::Call(c) if c.args.len() == 1 => {
            matches!(&*c.func, syn::Expr::Path(p) if is_directive(p, "go_to_step"))
        }
        syn::Expr::MethodCall(m) if m.method == "go_to_step" && m.args.len() == 1 => {
            matches!(&*m.receiver, syn::Expr::Call(c)
                if c.args.is_empty()
                    && matches!(&*c.func, syn::Expr::Path(p) if is_directive(p, "new")))
        }
        syn::Expr::Paren(p) => plain_jump(&p.expr),
        _ => false,
    }
}

/// The part of a directive target whose destination the macro cannot read, if any: the
/// target must be a `Directive::..` chain (`Directive::go_to_step(Step::b).reply(..)`),
/// each step it goes to written as a path and each directive it wraps
/// (`Directive::complete_then(..)`) readable the same way. A call of a helper fn, a
/// variable, a block or a closure may go anywhere: `auto` cycles through it cannot be
/// checked.
pub fn unreadable_directive(e: &syn::Expr) -> Option<&syn::Expr> {
    let is_directive = |p: &syn::ExprPath| {
        p.qself.is_none()
            && p.path.segments.len() >= 2
            && name(&p.path.segments[p.path.segments.len() - 2].ident) == "Directive"
    };
    // Arguments that give where the directive goes.
    let position_arg = |method: &str, arg: &'_ syn::Expr| -> Option<()> {
        match method {
            // `Step::b`, `self::Step::b`, `other::Step::x`: not a variable.
            "go_to_step" => match arg {
                syn::Expr::Path(p)
                    if p.qself.is_none()
                        && p.path.segments.len() >= 2
                        && name(&p.path.segments[p.path.segments.len() - 2].ident) == "Step" =>
                {
                    None
                }
                _ => Some(()),
            },
            "complete_then" => unreadable_directive(arg).map(|_| ()),
            _ => None,
        }
    };
    match e {
        syn::Expr::Paren(p) => unreadable_directive(&p.expr),
        syn::Expr::Group(g) => unreadable_directive(&g.expr),
        syn::Expr::Call(c) => {
            let syn::Expr::Path(p) = &*c.func else {
                return Some(e);
            };
            if !is_directive(p) {
                return Some(e);
            }
            let method = p
                .path
                .segments
                .last()
                .map(|s| name(&s.ident))
                .unwrap_or_default();
            c.args.iter().find_map(|a| {
                position_arg(&method, a)?;
                match method.as_str() {
                    "complete_then" => unreadable_directive(a),
                    _ => Some(a),
                }
            })
        }
        syn::Expr::MethodCall(m) => {
            let method = name(&m.method);
            let arg = m.args.iter().find_map(|a| {
                position_arg(&method, a)?;
                match method.as_str() {
                    "complete_then" => unreadable_directive(a),
                    _ => Some(a),
                }
            });
            arg.or_else(|| unreadable_directive(&m.receiver))
        }
        _ => Some(e),
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
    let module_name = name(&module.ident);
    let flow = flow_attrs(attr, &fns, errors);
    let mut steps = Vec::new();
    let mut items = Vec::new();
    let mut mentioned = Vec::new();
    for item in content {
        match item {
            syn::Item::Fn(mut f) => {
                let pos = f.attrs.iter().position(is_step_attr);
                // `#[cfg_attr(pred, step(..))]`: a step when `pred` holds.
                let mut step_cfg = Vec::new();
                let attr = match pos {
                    Some(pos) => Some(f.attrs.remove(pos)),
                    None => f
                        .attrs
                        .iter()
                        .enumerate()
                        .find_map(|(k, a)| {
                            let (preds, step, rest) = split_cfg_attr(&a.meta)?;
                            Some((k, preds, step, rest))
                        })
                        .and_then(|(k, preds, step, rest)| {
                            let step = meta_attr(&step, &f.attrs[k])?;
                            match rest.and_then(|r| meta_attr(&r, &f.attrs[k])) {
                                Some(r) => f.attrs[k] = r,
                                None => {
                                    f.attrs.remove(k);
                                }
                            }
                            step_cfg = preds;
                            Some(step)
                        }),
                };
                if let Some(attr) = attr {
                    if let Some(dup) = f.attrs.iter().find(|a| is_step_attr(a)) {
                        errors.push_spanned(dup, "a fn can carry one `#[step]`");
                    }
                    f.attrs.retain(|a| !is_step_attr(a));
                    mentions(f.block.to_token_stream(), &module_name, &mut mentioned);
                    let mut s = step(&attr, f.clone(), &fns, errors);
                    s.cfg.extend(step_cfg);
                    steps.push(s);
                } else {
                    mentions(f.to_token_stream(), &module_name, &mut mentioned);
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
                mentions(other.to_token_stream(), &module_name, &mut mentioned);
                items.push(other);
            }
        }
    }
    own_step_targets(&mut steps);
    directive_targets(&mut steps, &module_name);
    // A directive that completes the flow may name a step to go on at.
    if let Some(Target::Directive(e)) = &flow.on_complete {
        mentions(e.to_token_stream(), &module_name, &mut mentioned);
    }
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

/// The steps of this flow each directive target names (`=> Directive::go_to_step(Step::x)`
/// reaches `x`), and whether it is a plain jump to one of them.
fn directive_targets(steps: &mut [StepDef], module: &str) {
    for s in steps.iter_mut() {
        let Some(b) = &mut s.branches else { continue };
        for e in &mut b.entries {
            if let Target::Directive(d) = &e.target {
                mentions(d.to_token_stream(), module, &mut e.named_steps);
                e.plain_jump = e.named_steps.len() == 1 && plain_jump(d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(ts: TokenStream) -> Vec<String> {
        let mut out = Vec::new();
        mentions(ts, "booking", &mut out);
        out
    }

    #[test]
    fn only_paths_to_this_flows_steps_name_its_steps() {
        assert_eq!(named(quote::quote!(Directive::go_to_step(Step::a))), ["a"]);
        assert_eq!(named(quote::quote!(self::Step::b)), ["b"]);
        assert_eq!(named(quote::quote!(crate::booking::Step::c)), ["c"]);
        assert!(named(quote::quote!(other::Step::d)).is_empty());
        assert!(named(quote::quote!(super::other::Step::e)).is_empty());
    }

    #[test]
    fn a_plain_jump_is_go_to_step_alone() {
        let e = |ts: TokenStream| syn::parse2::<syn::Expr>(ts).map(|e| plain_jump(&e));
        assert!(matches!(
            e(quote::quote!(Directive::go_to_step(Step::b))),
            Ok(true)
        ));
        assert!(matches!(
            e(quote::quote!(Directive::new().go_to_step(Step::b))),
            Ok(true)
        ));
        assert!(matches!(
            e(quote::quote!(Directive::go_to_step(Step::b).reply("x"))),
            Ok(false)
        ));
        assert!(matches!(e(quote::quote!(helper())), Ok(false)));
    }

    #[test]
    fn a_readable_directive_is_a_directive_chain_with_written_steps() {
        let e = |ts: TokenStream| -> Option<String> {
            let e = syn::parse2::<syn::Expr>(ts).ok()?;
            unreadable_directive(&e).map(|u| quote::quote!(#u).to_string())
        };
        assert_eq!(e(quote::quote!(Directive::go_to_step(Step::b))), None);
        assert_eq!(e(quote::quote!(Directive::complete().reply(text()))), None);
        assert_eq!(
            e(quote::quote!(Directive::go_to::<Other>().reply("x"))),
            None
        );
        assert_eq!(
            e(quote::quote!(Directive::complete_then(
                Directive::go_to_step(other::Step::x)
            ))),
            None
        );
        assert_eq!(e(quote::quote!(helper())).as_deref(), Some("helper ()"));
        assert_eq!(e(quote::quote!(next)).as_deref(), Some("next"));
        assert_eq!(
            e(quote::quote!(Directive::go_to_step(pick()))).as_deref(),
            Some("pick ()")
        );
        assert_eq!(
            e(quote::quote!(Directive::new().go_to_step(s).reply("x"))).as_deref(),
            Some("s")
        );
        assert_eq!(
            e(quote::quote!(Directive::complete_then(helper()))).as_deref(),
            Some("helper ()")
        );
        assert_eq!(
            e(quote::quote!(helper().reply("x"))).as_deref(),
            Some("helper ()")
        );
    }

    #[test]
    fn cfg_attr_steps_are_split_from_the_other_attributes() {
        let a: syn::Attribute =
            syn::parse_quote!(#[cfg_attr(all(feature = "x", test), step(end), allow(dead_code))]);
        let Some((preds, step, rest)) = split_cfg_attr(&a.meta) else {
            panic!("a step");
        };
        assert_eq!(preds.len(), 1);
        assert_eq!(quote::quote!(#step).to_string(), "step (end)");
        let rest = rest.map(|r| quote::quote!(#r).to_string());
        assert_eq!(
            rest.as_deref(),
            Some("cfg_attr (all (feature = \"x\" , test) , allow (dead_code))")
        );
        let nested: syn::Attribute = syn::parse_quote!(#[cfg_attr(a, cfg_attr(b, step))]);
        let Some((preds, _, rest)) = split_cfg_attr(&nested.meta) else {
            panic!("a nested step");
        };
        assert_eq!(preds.len(), 2);
        assert!(rest.is_none());
    }
}
