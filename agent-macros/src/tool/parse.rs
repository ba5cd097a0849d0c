//! Reading `#[tool(..)]` and its fn.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;

use crate::diag::{Errors, doc_expr};

/// A parameter the model fills.
pub struct Arg {
    /// Parameter name (the JSON key).
    pub ident: syn::Ident,
    /// The pattern as written (`mut hotel`).
    pub pat: syn::Pat,
    /// Its type.
    pub ty: syn::Type,
    /// From the parameter's doc comment.
    pub doc: Option<TokenStream>,
    /// `Option<T>` parameters are not required.
    pub optional: bool,
    /// `#[arg(derived)]`: the model computes it; not checked against the user's words.
    pub derived: bool,
    /// Other attributes on the parameter (kept on the generated fn).
    pub attrs: Vec<syn::Attribute>,
}

/// `#[tool(approval)]` or `#[tool(approval = rule)]`.
pub enum Approval {
    /// Every call.
    Always,
    /// Calls the rule picks.
    Rule(syn::Path),
}

/// A parsed tool.
pub struct ToolDef {
    /// The fn as written.
    pub item: syn::ItemFn,
    /// `name = ".."` or the fn name.
    pub name: String,
    /// Where the name came from (for errors).
    pub name_span: Span,
    /// `description = ".."` or the doc comment.
    pub description: Option<TokenStream>,
    /// `concurrency_safe`.
    pub concurrency_safe: bool,
    /// `timeout_ms = N`: the tool's own time limit per call.
    pub timeout_ms: Option<u64>,
    /// `effect = pure | idempotent | once`, as written (checked in `validate`).
    pub effect: Option<syn::Ident>,
    /// `request_words = ["refund", ..]`: the words by which a user asks for the action.
    pub request_words: Option<Vec<syn::LitStr>>,
    /// `outcome = ["booked", ..]`: the words by which a reply states its outcome.
    pub outcome: Option<Vec<syn::LitStr>>,
    /// `confirm` / `confirm = false`: whether a call waits for the user's yes to a
    /// summary (default: only `effect = once` tools do).
    pub confirm: Option<syn::LitBool>,
    /// `summary = ".."`: the summary shown for that yes, a template over the
    /// arguments (checked against them in `validate`).
    pub summary: Option<syn::LitStr>,
    /// `approval` (every call waits for a person) or `approval = path` (calls whose
    /// arguments the fn `path(&serde_json::Value) -> bool` picks).
    pub approval: Option<Approval>,
    /// The `ToolCx<D, C>` parameter: its pattern and type.
    pub cx: Option<(syn::Pat, syn::Type)>,
    /// The model-filled parameters.
    pub args: Vec<Arg>,
    /// Parameters that are neither (`self`, destructuring patterns): reported.
    pub bad_params: Vec<syn::Error>,
}

impl ToolDef {
    /// Whether the signature has a reported problem the body cannot be compiled with.
    pub fn shell(&self) -> bool {
        let sig = &self.item.sig;
        !self.bad_params.is_empty()
            || matches!(sig.output, syn::ReturnType::Default)
            || sig.unsafety.is_some()
            || sig.abi.is_some()
            || sig.variadic.is_some()
            || super::validate::wrong_return(&sig.output).is_some()
    }
}

/// Why `ty` cannot carry a value decoded from the model's JSON, if it cannot: a borrow
/// (`&str`) or an `impl Trait`, also inside `Option<..>`.
fn unfit_arg_type(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Reference(r) => {
            let owned = match &*r.elem {
                syn::Type::Path(p) if p.path.is_ident("str") => "String".to_owned(),
                syn::Type::Slice(sl) => {
                    let e = &sl.elem;
                    format!("Vec<{}>", quote::quote!(#e))
                }
                other => quote::quote!(#other).to_string(),
            };
            Some(format!(
                "a tool argument is decoded from the model's JSON into an owned value: use `{owned}` instead of a reference"
            ))
        }
        syn::Type::ImplTrait(_) => Some(
            "a tool argument needs a concrete type the model's JSON is decoded into (and described by in the schema): `impl Trait` is not one; take e.g. `String` or a `#[derive(Deserialize, JsonSchema)]` type".to_owned(),
        ),
        syn::Type::Paren(p) => unfit_arg_type(&p.elem),
        _ => crate::data::parse::option_inner(ty).and_then(|t| unfit_arg_type(&t)),
    }
}

/// Whether `ty` is `ToolCx<..>` (by its last path segment).
pub fn is_tool_cx(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "ToolCx"),
        _ => false,
    }
}

/// Parse the attribute and the fn.
pub fn parse(attr: TokenStream, item: TokenStream, errors: &mut Errors) -> Option<ToolDef> {
    let item: syn::ItemFn = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => {
            errors.push(e.span(), "`#[tool]` goes on a fn (`async fn name(cx: ToolCx<D, C>, arg: T) -> Result<ToolOutput, ToolError>`)");
            return None;
        }
    };
    let mut name = crate::diag::name(&item.sig.ident);
    let mut name_span = item.sig.ident.span();
    let mut description = doc_expr(&item.attrs);
    let mut concurrency_safe = false;
    let mut timeout_ms = None;
    let mut effect = None;
    let mut request_words = None;
    let mut outcome = None;
    let mut confirm = None;
    let mut summary = None;
    let mut approval = None;
    let mut seen: Vec<String> = Vec::new();
    let mut later: Vec<syn::Error> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        // A key given twice is an error (as in `#[flow]` and `#[step]`), not "last wins";
        // the rest of the list is still read.
        if let Some(key) = meta.path.get_ident().map(ToString::to_string) {
            if seen.contains(&key) {
                later.push(meta.error(format!(
                    "duplicate key `{key}`: give each `#[tool]` key once"
                )));
            }
            seen.push(key);
        }
        if meta.path.is_ident("name") {
            let s: syn::LitStr = meta.value()?.parse()?;
            name = s.value();
            name_span = s.span();
            Ok(())
        } else if meta.path.is_ident("description") {
            let s: syn::LitStr = meta.value()?.parse()?;
            description = (!s.value().trim().is_empty()).then(|| quote::quote!(#s));
            Ok(())
        } else if meta.path.is_ident("concurrency_safe") {
            concurrency_safe = true;
            Ok(())
        } else if meta.path.is_ident("timeout_ms") {
            let n: syn::LitInt = meta.value()?.parse()?;
            match n.base10_parse::<u64>() {
                // Recorded, and the rest of the list still read.
                Ok(0) | Err(_) => later.push(syn::Error::new(
                    n.span(),
                    "`timeout_ms` is a whole number of milliseconds above 0",
                )),
                Ok(ms) => timeout_ms = Some(ms),
            }
            Ok(())
        } else if meta.path.is_ident("effect") {
            let value = meta.value()?;
            let id: syn::Ident = value.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`effect` takes one of `pure`, `idempotent`, `once` (a bare word)",
                )
            })?;
            effect = Some(id);
            Ok(())
        } else if meta.path.is_ident("request_words") {
            request_words = Some(string_list(
                &meta,
                "`request_words` takes a list of string literals: `request_words = [\"refund\", \"reembols\"]`",
            )?);
            Ok(())
        } else if meta.path.is_ident("outcome") {
            outcome = Some(string_list(
                &meta,
                "`outcome` takes a list of string literals, the words by which a reply states it: `outcome = [\"booked\", \"reserved\"]`",
            )?);
            Ok(())
        } else if meta.path.is_ident("confirm") {
            if meta.input.peek(syn::Token![=]) {
                let b: syn::LitBool = meta.value()?.parse().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "`confirm` takes `true` or `false`, or stands alone",
                    )
                })?;
                confirm = Some(b);
            } else {
                confirm = Some(syn::LitBool::new(
                    true,
                    syn::spanned::Spanned::span(&meta.path),
                ));
            }
            Ok(())
        } else if meta.path.is_ident("summary") {
            let s: syn::LitStr = meta.value()?.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`summary` takes a string literal over the arguments: `summary = \"Refund {invoice}\"`",
                )
            })?;
            summary = Some(s);
            Ok(())
        } else if meta.path.is_ident("approval") {
            if meta.input.peek(syn::Token![=]) {
                let rule: syn::Path = meta.value()?.parse().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "`approval = ..` takes the path of a fn `(&serde_json::Value) -> bool` that picks the calls needing approval",
                    )
                })?;
                approval = Some(Approval::Rule(rule));
            } else {
                approval = Some(Approval::Always);
            }
            Ok(())
        } else {
            Err(meta.error(format!(
                "unknown `#[tool]` key `{}`; known keys: `name`, `description`, `concurrency_safe`, `timeout_ms`, `effect`, `request_words`, `outcome`, `confirm`, `summary`, `approval`",
                meta.path
                    .get_ident()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            )))
        }
    });
    if let Err(e) = parser.parse2(attr) {
        errors.add(e);
    }
    for e in later {
        errors.add(e);
    }
    let mut cx = None;
    let mut args = Vec::new();
    let mut bad_params = Vec::new();
    for input in &item.sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => bad_params.push(syn::Error::new_spanned(
                r,
                "a `#[tool]` is a free fn; it cannot take `self`",
            )),
            syn::FnArg::Typed(pt) => {
                if is_tool_cx(&pt.ty) {
                    if let Some(a) = pt.attrs.iter().find(|a| a.path().is_ident("arg")) {
                        bad_params.push(syn::Error::new_spanned(
                            a,
                            "`#[arg(..)]` describes a parameter the model fills; the `ToolCx` parameter is not one",
                        ));
                    }
                    if cx.is_some() {
                        bad_params.push(syn::Error::new_spanned(
                            &pt.ty,
                            "a tool takes at most one `ToolCx` parameter",
                        ));
                    } else {
                        cx = Some(((*pt.pat).clone(), (*pt.ty).clone()));
                    }
                    continue;
                }
                let ident = match &*pt.pat {
                    syn::Pat::Ident(pi) if pi.subpat.is_none() => pi.ident.clone(),
                    other => {
                        bad_params.push(syn::Error::new_spanned(
                            other,
                            "tool parameters must be plain names: the name is the JSON key the model fills",
                        ));
                        continue;
                    }
                };
                if let Some(why) = unfit_arg_type(&pt.ty) {
                    bad_params.push(syn::Error::new_spanned(&pt.ty, why));
                    continue;
                }
                let attrs = pt
                    .attrs
                    .iter()
                    .filter(|a| !a.path().is_ident("doc") && !a.path().is_ident("arg"))
                    .cloned()
                    .collect();
                let mut derived = false;
                for a in pt.attrs.iter().filter(|a| a.path().is_ident("arg")) {
                    let read = a.parse_nested_meta(|meta| {
                        if meta.path.is_ident("derived") {
                            if derived {
                                return Err(meta.error(
                                    "duplicate option `derived`: give it once",
                                ));
                            }
                            derived = true;
                            Ok(())
                        } else {
                            Err(meta.error(format!(
                                "unknown `#[arg]` option `{}`; known options: `derived` (the model computes the value, the user need not give it)",
                                meta.path
                                    .get_ident()
                                    .map(ToString::to_string)
                                    .unwrap_or_default()
                            )))
                        }
                    });
                    if let Err(e) = read {
                        bad_params.push(e);
                    }
                }
                args.push(Arg {
                    ident,
                    pat: (*pt.pat).clone(),
                    ty: (*pt.ty).clone(),
                    doc: doc_expr(&pt.attrs),
                    optional: crate::data::parse::option_inner(&pt.ty).is_some(),
                    derived,
                    attrs,
                });
            }
        }
    }
    Some(ToolDef {
        item,
        name,
        name_span,
        description,
        concurrency_safe,
        timeout_ms,
        effect,
        request_words,
        outcome,
        confirm,
        summary,
        approval,
        cx,
        args,
        bad_params,
    })
}

/// A `key = ["..", ..]` list of non-empty string literals; `what` says the form.
fn string_list(meta: &syn::meta::ParseNestedMeta<'_>, what: &str) -> syn::Result<Vec<syn::LitStr>> {
    let list: syn::ExprArray = meta
        .value()?
        .parse()
        .map_err(|e| syn::Error::new(e.span(), what))?;
    let mut words = Vec::with_capacity(list.elems.len());
    for e in &list.elems {
        match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) if !s.value().trim().is_empty() => words.push(s.clone()),
            other => return Err(syn::Error::new_spanned(other, what)),
        }
    }
    Ok(words)
}
