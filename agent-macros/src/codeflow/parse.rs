//! Reads `#[flow(id = "..", title = "..", when = "..", description = "..", data = T,
//! context = T)]` and the fn it sits on.

use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, Lit, Meta, Token};

use crate::diag::Errors;

/// A code flow as written.
pub struct CodeFlowDef {
    /// The fn, kept as written.
    pub item: syn::ItemFn,
    /// Flow id (default: the fn name).
    pub id: String,
    /// Router title.
    pub title: Option<String>,
    /// Router condition.
    pub when: Option<String>,
    /// Router description.
    pub description: Option<String>,
    /// `data = T` (else read from the parameter type).
    pub data: Option<syn::Type>,
    /// `context = T` (else read from the parameter type).
    pub context: Option<syn::Type>,
}

fn string(e: &Expr, key: &str, errors: &mut Errors) -> Option<String> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Str(s) => Some(s.value()),
            other => {
                errors.push_spanned(other, format!("`{key}` takes a string literal"));
                None
            }
        },
        other => {
            errors.push_spanned(other, format!("`{key}` takes a string literal"));
            None
        }
    }
}

fn ty(e: &Expr, key: &str, errors: &mut Errors) -> Option<syn::Type> {
    match e {
        Expr::Path(p) => Some(syn::Type::Path(syn::TypePath {
            qself: p.qself.clone(),
            path: p.path.clone(),
        })),
        Expr::Tuple(t) if t.elems.is_empty() => syn::parse2(quote::quote!(())).ok(),
        other => {
            errors.push_spanned(other, format!("`{key}` takes a type, e.g. `{key} = Notes`"));
            None
        }
    }
}

/// Parse the attribute and keep the fn.
pub fn parse(attr: TokenStream, item: syn::ItemFn, errors: &mut Errors) -> CodeFlowDef {
    let mut def = CodeFlowDef {
        id: crate::diag::name(&item.sig.ident),
        item,
        title: None,
        when: None,
        description: None,
        data: None,
        context: None,
    };
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr) {
        Ok(m) => m,
        Err(e) => {
            errors.add(e);
            return def;
        }
    };
    for meta in metas {
        let Meta::NameValue(nv) = &meta else {
            errors.push_spanned(
                &meta,
                "expected `key = value`; a code flow takes `id`, `title`, `when`, `description`, `data`, `context`",
            );
            continue;
        };
        let key = nv
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "id" => {
                if let Some(s) = string(&nv.value, "id", errors) {
                    def.id = s;
                }
            }
            "title" => def.title = string(&nv.value, "title", errors),
            "when" => def.when = string(&nv.value, "when", errors),
            "description" => def.description = string(&nv.value, "description", errors),
            "data" => def.data = ty(&nv.value, "data", errors),
            "context" => def.context = ty(&nv.value, "context", errors),
            _ => {
                let known: Vec<String> = ["id", "title", "when", "description", "data", "context"]
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                errors.push_spanned(
                    &nv.path,
                    format!(
                        "unknown code flow option `{key}`: {}",
                        crate::diag::suggest(&key, &known, "options")
                    ),
                );
            }
        }
    }
    def
}
