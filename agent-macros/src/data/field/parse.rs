//! Reading `#[field(...)]` by hand from its tokens, so that each malformed key gets an
//! error on its own span with the usage of that key.

use proc_macro2::{Delimiter, TokenStream, TokenTree};

use super::{Bound, Bounds, Constraints, Entry, KEYS, Num, SynonymOf, Synonyms};
use crate::diag::{Errors, suggest};

fn known_keys() -> String {
    KEYS.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn is_punct(t: &TokenTree, c: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == c)
}

/// Split `a = 1, b(..)` at the top-level commas.
fn split_commas(ts: TokenStream) -> Vec<Vec<TokenTree>> {
    let mut out = vec![Vec::new()];
    for t in ts {
        if is_punct(&t, ',') {
            out.push(Vec::new());
        } else if let Some(last) = out.last_mut() {
            last.push(t);
        }
    }
    out.retain(|item| !item.is_empty());
    out
}

/// `-`? literal.
fn bound(tts: &[TokenTree]) -> Option<Bound> {
    let (neg, lit) = match tts {
        [TokenTree::Literal(l)] => (false, l),
        [minus, TokenTree::Literal(l)] if is_punct(minus, '-') => (true, l),
        _ => return None,
    };
    let num = match syn::Lit::new(lit.clone()) {
        syn::Lit::Int(i) => Num::Int(i.base10_parse::<i128>().ok()?),
        syn::Lit::Float(f) => {
            let x = f.base10_parse::<f64>().ok()?;
            if !x.is_finite() {
                return None;
            }
            Num::Float(x)
        }
        _ => return None,
    };
    let num = match (neg, num) {
        (true, Num::Int(i)) => Num::Int(-i),
        (true, Num::Float(x)) => Num::Float(-x),
        (false, n) => n,
    };
    Some(Bound {
        num,
        tokens: tts.iter().cloned().collect(),
    })
}

/// `A..=B`, `..=B`, `A..=`, `A..`. `Err(None)` for a malformed range, `Err(Some(msg))`
/// for a specific mistake.
fn bounds(tts: &[TokenTree], key: &str) -> Result<Bounds, Option<String>> {
    let dots = tts
        .windows(2)
        .position(|w| is_punct(&w[0], '.') && is_punct(&w[1], '.'))
        .ok_or(None)?;
    let (lo, rest) = tts.split_at(dots);
    let rest = &rest[2..];
    let (inclusive, hi) = match rest.split_first() {
        Some((eq, hi)) if is_punct(eq, '=') => (true, hi),
        _ => (false, rest),
    };
    let min = if lo.is_empty() {
        None
    } else {
        Some(bound(lo).ok_or(None)?)
    };
    let max = if hi.is_empty() {
        None
    } else {
        Some(bound(hi).ok_or(None)?)
    };
    if let Some(m) = &max
        && !inclusive
    {
        let lo = min.as_ref().map(|b| b.num.to_string()).unwrap_or_default();
        return Err(Some(format!(
            "`{key}` bounds are inclusive: write `{lo}..={}` (an exclusive end, `{lo}..{}`, is not supported)",
            m.num, m.num
        )));
    }
    if min.is_none() && max.is_none() {
        return Err(Some(format!(
            "`{key}` needs at least one bound, like `{key} = 1..=12`, `{key} = ..=12` or `{key} = 1..=`"
        )));
    }
    Ok(Bounds {
        min,
        max,
        tokens: tts.iter().cloned().collect(),
    })
}

/// How each key is written, for the "malformed value" errors.
fn usage(key: &str) -> &'static str {
    match key {
        "range" => {
            "`range` takes an inclusive range of number literals: `range = 1..=12`, `range = ..=100`, `range = -0.5..=`"
        }
        "len" => {
            "`len` takes an inclusive range of lengths: `len = 1..=80`, `len = ..=80`, `len = 3..=`"
        }
        "pattern" => "`pattern` takes a regex as a string literal: `pattern = \"^[A-Z]{3}$\"`",
        "one_of" => {
            "`one_of` takes the allowed values as string literals: `one_of(\"standard\", \"suite\")`"
        }
        "validate" => {
            "`validate` takes the path of a `fn(T) -> Result<T, String>`: `validate = crate::check_city`"
        }
        "synonyms" => {
            "`synonyms` takes, per value, the phrases users say for it: `synonyms(1 = [\"just me\", \"only me\"], 2 = [\"a couple\"])`, `synonyms(\"double\" = [\"two beds\"])`"
        }
        "not_past" => "`not_past` is a flag and takes no value: write `not_past`",
        _ => "`inferred` is a flag and takes no value: write `inferred`",
    }
}

/// `value = ["phrase", ...]` or `value = "phrase"`.
fn synonym_group(item: &[TokenTree]) -> Option<Synonyms> {
    let eq = item.iter().position(|t| is_punct(t, '='))?;
    let (value, rest) = item.split_at(eq);
    let of = match value {
        [TokenTree::Literal(l)] => match syn::Lit::new(l.clone()) {
            syn::Lit::Str(s) => SynonymOf::Text(s),
            _ => SynonymOf::Num(bound(value)?),
        },
        _ => SynonymOf::Num(bound(value)?),
    };
    let lit_str = |t: &TokenTree| match t {
        TokenTree::Literal(l) => match syn::Lit::new(l.clone()) {
            syn::Lit::Str(s) => Some(s),
            _ => None,
        },
        _ => None,
    };
    let phrases = match &rest[1..] {
        [TokenTree::Group(g)] if g.delimiter() == Delimiter::Bracket => split_commas(g.stream())
            .iter()
            .map(|p| match p.as_slice() {
                [t] => lit_str(t),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?,
        [t] => vec![lit_str(t)?],
        _ => return None,
    };
    Some(Synonyms {
        of,
        phrases,
        tokens: item.iter().cloned().collect(),
    })
}

fn entry<T>(key: &syn::Ident, tokens: &TokenStream, value: T) -> Entry<T> {
    Entry {
        key: key.clone(),
        tokens: tokens.clone(),
        value,
    }
}

fn set<T>(slot: &mut Option<Entry<T>>, entry: Entry<T>, errors: &mut Errors) {
    if slot.is_some() {
        errors.push(
            entry.key.span(),
            format!("`{}` is given twice for this field", entry.key),
        );
    } else {
        *slot = Some(entry);
    }
}

/// One `key = value` / `key(...)` / `key` entry.
fn parse_entry(item: &[TokenTree], c: &mut Constraints, errors: &mut Errors) {
    let tokens: TokenStream = item.iter().cloned().collect();
    let Some((TokenTree::Ident(key), rest)) = item.split_first() else {
        errors.push_spanned(
            &tokens,
            format!("expected a `#[field]` key; known keys: {}", known_keys()),
        );
        return;
    };
    let key = key.clone();
    let name = key.to_string();
    if !KEYS.contains(&name.as_str()) {
        let known: Vec<String> = KEYS.iter().map(|k| (*k).to_string()).collect();
        errors.push(
            key.span(),
            format!(
                "unknown `#[field]` key `{name}`; {}",
                suggest(&name, &known, "keys")
            ),
        );
        return;
    }
    let rest_tokens: TokenStream = rest.iter().cloned().collect();
    // Malformed values are reported on the value, or on the key when there is none.
    let malformed = |errors: &mut Errors, msg: String| {
        if rest.is_empty() {
            errors.push(key.span(), msg);
        } else {
            errors.push_spanned(&rest_tokens, msg);
        }
    };
    match name.as_str() {
        "range" | "len" => {
            let value = match rest.split_first() {
                Some((eq, v)) if is_punct(eq, '=') && !v.is_empty() => v,
                _ => return malformed(errors, usage(&name).to_string()),
            };
            match bounds(value, &name) {
                Ok(b) if name == "range" => set(&mut c.range, entry(&key, &tokens, b), errors),
                Ok(b) => set(&mut c.len, entry(&key, &tokens, b), errors),
                Err(msg) => {
                    let msg = msg.unwrap_or_else(|| usage(&name).to_string());
                    errors.push_spanned(value.iter().cloned().collect::<TokenStream>(), msg);
                }
            }
        }
        "pattern" => match rest {
            [eq, TokenTree::Literal(l)] if is_punct(eq, '=') => match syn::Lit::new(l.clone()) {
                syn::Lit::Str(s) => set(&mut c.pattern, entry(&key, &tokens, s), errors),
                _ => malformed(errors, usage(&name).to_string()),
            },
            _ => malformed(errors, usage(&name).to_string()),
        },
        "one_of" => {
            let values = match rest {
                [TokenTree::Group(g)] if g.delimiter() == Delimiter::Parenthesis => {
                    split_commas(g.stream())
                        .into_iter()
                        .map(|v| match v.as_slice() {
                            [TokenTree::Literal(l)] => match syn::Lit::new(l.clone()) {
                                syn::Lit::Str(s) => Some(s),
                                _ => None,
                            },
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>()
                }
                _ => None,
            };
            match values {
                Some(v) => set(&mut c.one_of, entry(&key, &tokens, v), errors),
                None => malformed(errors, usage(&name).to_string()),
            }
        }
        "synonyms" => match rest {
            [TokenTree::Group(g)] if g.delimiter() == Delimiter::Parenthesis => {
                match split_commas(g.stream())
                    .iter()
                    .map(|item| synonym_group(item))
                    .collect::<Option<Vec<_>>>()
                {
                    Some(groups) => set(&mut c.synonyms, entry(&key, &tokens, groups), errors),
                    None => malformed(errors, usage(&name).to_string()),
                }
            }
            _ => malformed(errors, usage(&name).to_string()),
        },
        "validate" => match rest.split_first() {
            Some((eq, v)) if is_punct(eq, '=') && !v.is_empty() => {
                match syn::parse2::<syn::Path>(v.iter().cloned().collect()) {
                    Ok(path) => set(&mut c.validate, entry(&key, &tokens, path), errors),
                    Err(_) => errors.push_spanned(
                        v.iter().cloned().collect::<TokenStream>(),
                        usage(&name).to_string(),
                    ),
                }
            }
            _ => malformed(errors, usage(&name).to_string()),
        },
        flag => {
            let slot = if flag == "not_past" {
                &mut c.not_past
            } else {
                &mut c.inferred
            };
            if rest.is_empty() {
                set(slot, entry(&key, &tokens, ()), errors);
            } else {
                malformed(errors, usage(&name).to_string());
            }
        }
    }
}

/// Read the `#[field(...)]` attributes of one field (syntax errors go to `errors`).
pub fn parse(attrs: &[syn::Attribute], errors: &mut Errors) -> Constraints {
    let mut c = Constraints::default();
    for attr in attrs {
        match &attr.meta {
            syn::Meta::List(list) => {
                for item in split_commas(list.tokens.clone()) {
                    parse_entry(&item, &mut c, errors);
                }
            }
            other => errors.push_spanned(
                other,
                format!(
                    "write the constraints in parentheses, like `#[field(range = 1..=12)]`; known keys: {}",
                    known_keys()
                ),
            ),
        }
    }
    c
}
