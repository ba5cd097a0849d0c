//! Error collection and "did you mean" suggestions.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// All errors of one item, reported together.
#[derive(Default)]
pub struct Errors {
    list: Vec<syn::Error>,
    /// Errors that hold only under a `cfg` predicate (emitted `#[cfg(..)]`-gated).
    gated: Vec<(TokenStream, syn::Error)>,
}

impl Errors {
    /// Record an error at `span`.
    pub fn push(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.list.push(syn::Error::new(span, msg));
    }
    /// Record an error spanning `tokens`.
    pub fn push_spanned(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.list.push(syn::Error::new_spanned(tokens, msg));
    }
    /// Record a syn error.
    pub fn add(&mut self, e: syn::Error) {
        self.list.extend(e);
    }
    /// Record an error that holds only when the `cfg` predicate `pred` does.
    pub fn push_gated(&mut self, pred: TokenStream, e: syn::Error) {
        self.gated.push((pred, e));
    }
    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && self.gated.is_empty()
    }
    /// The errors.
    pub fn into_vec(self) -> Vec<syn::Error> {
        self.list
    }
    /// `compile_error!` invocations for every error.
    pub fn to_compile_errors(&self) -> TokenStream {
        let mut out: TokenStream = self.list.iter().map(syn::Error::to_compile_error).collect();
        for (pred, e) in &self.gated {
            let ce = e.to_compile_error();
            out.extend(quote::quote!(#[cfg(#pred)] #ce));
        }
        out
    }
}

/// The name an identifier stands for: `r#loop` is `loop` (step, flow, field and tool
/// ids, JSON keys and generated names all use it; only emitted idents keep the `r#`).
pub fn name(id: &syn::Ident) -> String {
    syn::ext::IdentExt::unraw(id).to_string()
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest known name, if it is close enough to be a likely typo.
pub fn closest<'a>(bad: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (distance(bad, k), k))
        .filter(|(d, k)| *d <= (k.len().max(bad.len()) / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// "did you mean `x`? known steps: `a`, `b`" (or just the list).
pub fn suggest(bad: &str, known: &[String], what: &str) -> String {
    let list = if known.is_empty() {
        "none".to_string()
    } else {
        known
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match closest(bad, known) {
        Some(k) => format!("did you mean `{k}`? known {what}: {list}"),
        None => format!("known {what}: {list}"),
    }
}

/// The text of `///` doc comments among `attrs`, lines joined with spaces, trimmed.
pub fn doc_text(attrs: &[syn::Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for a in attrs {
        if !a.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &a.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            lines.push(s.value().trim().to_string());
        }
    }
    let text = lines
        .into_iter()
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if text.is_empty() { None } else { Some(text) }
}

/// The doc text of `attrs` as a `&'static str` expression: the literal of [`doc_text`],
/// or `concat!(..)` of the lines when one of them is a macro (`#[doc = concat!(..)]`,
/// `#[doc = include_str!(..)]`), which only the compiler can expand. `None` without
/// any doc text.
pub fn doc_expr(attrs: &[syn::Attribute]) -> Option<TokenStream> {
    let mut pieces: Vec<TokenStream> = Vec::new();
    let mut computed = false;
    for a in attrs {
        if !a.path().is_ident("doc") {
            continue;
        }
        let syn::Meta::NameValue(nv) = &a.meta else {
            continue;
        };
        match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => {
                let line = s.value().trim().to_string();
                if !line.is_empty() {
                    pieces.push(quote::quote!(#line));
                }
            }
            other => {
                computed = true;
                pieces.push(other.to_token_stream());
            }
        }
    }
    if !computed {
        return doc_text(attrs).map(|t| quote::quote!(#t));
    }
    let mut joined: Vec<TokenStream> = Vec::new();
    for (i, p) in pieces.into_iter().enumerate() {
        if i > 0 {
            joined.push(quote::quote!(" "));
        }
        joined.push(p);
    }
    Some(quote::quote!(::core::concat!(#(#joined),*)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_closest_name_and_lists_all() {
        let known = vec!["confirm".to_string(), "ask_city".to_string()];
        assert_eq!(
            suggest("confrim", &known, "steps"),
            "did you mean `confirm`? known steps: `confirm`, `ask_city`"
        );
        assert_eq!(
            suggest("zzz", &known, "steps"),
            "known steps: `confirm`, `ask_city`"
        );
    }
}
