//! `#[field(...)]` on the fields of a `#[data]` struct: value constraints that become
//! JSON-schema keywords of the field's property. The schema is the whole contract: the
//! model's structured output (and a local model's grammar) follows it, and the engine
//! checks every write against it.
//!
//! | key                       | field type            | schema keywords                      |
//! |---------------------------|-----------------------|--------------------------------------|
//! | `range = 1..=12`          | integers, `f32`/`f64` | `minimum`, `maximum`                 |
//! | `len = 1..=80`            | `String`, `Vec<T>`    | `minLength`/`maxLength` (`minItems`/`maxItems` for a `Vec`) |
//! | `pattern = "^[A-Z]{3}$"`  | `String`              | `pattern`                            |
//! | `one_of("a", "b")`        | `String`              | `enum` (with `null`)                 |
//! | `inferred`                | any                   | `"x-inferred": true`                 |
//! | `not_past`                | `Date`, `DateTime`    | `"x-not-past": true`                 |
//! | `validate = path`         | any                   | none: `path` runs on every write     |
//!
//! `validate` names a `fn(T) -> Result<T, String>` (`T` the field's value type): `Ok`
//! with the value to store (unchanged or normalised), `Err` with a message for the user.
//! A function of another shape is a type error on the path.
//!
//! `not_past` refuses a day before today on the agent's clock. The field's type must
//! implement `CalendarValue` (the engine's `Date` and `DateTime`), checked by rustc on
//! the key, so a type alias is accepted and a `String` is not.
//!
//! Ranges are inclusive; either bound may be left out (`..=100`, `1..=`, `1..`).
//!
//! [`parse`] reads the attributes (syntax errors), [`validate`] checks them against the
//! field's type, [`schema_attrs`] emits the `#[schemars(...)]` attributes.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};

use super::parse::FieldDef;
use crate::diag::{Errors, suggest};

/// The keys `#[field(...)]` accepts.
pub const KEYS: &[&str] = &[
    "range", "len", "pattern", "one_of", "inferred", "not_past", "validate",
];

/// A number literal of a bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// An integer literal (sign included).
    Int(i128),
    /// A float literal (sign included), finite.
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            // Bounds are compared, not computed with: the precision of huge ints is moot.
            #[allow(clippy::cast_precision_loss)]
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// The literal emitted into the schema attribute (`12i64`, `-0.5f64`).
    fn tokens(self) -> TokenStream {
        match self {
            Num::Int(i) => {
                let suffix = if i > i128::from(i64::MAX) {
                    "u64"
                } else {
                    "i64"
                };
                let lit =
                    syn::LitInt::new(&format!("{}{suffix}", i.unsigned_abs()), Span::call_site());
                if i < 0 { quote!(-#lit) } else { quote!(#lit) }
            }
            Num::Float(f) => {
                let lit = syn::LitFloat::new(&format!("{:?}f64", f.abs()), Span::call_site());
                if f.is_sign_negative() {
                    quote!(-#lit)
                } else {
                    quote!(#lit)
                }
            }
        }
    }
}

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Num::Int(i) => write!(f, "{i}"),
            Num::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// One bound of a range, with its tokens for error spans.
pub struct Bound {
    /// The value.
    pub num: Num,
    /// The tokens as written (`-`, literal).
    pub tokens: TokenStream,
}

/// An inclusive range with optional ends (`1..=12`, `..=12`, `1..=`, `1..`).
pub struct Bounds {
    /// The lower bound.
    pub min: Option<Bound>,
    /// The upper bound.
    pub max: Option<Bound>,
    /// The range as written.
    pub tokens: TokenStream,
}

/// A key with its value.
pub struct Entry<T> {
    /// The key as written.
    pub key: syn::Ident,
    /// Key and value as written, for errors about the whole entry.
    pub tokens: TokenStream,
    /// The parsed value.
    pub value: T,
}

/// The constraints of one field (every key at most once).
#[derive(Default)]
pub struct Constraints {
    /// `range = A..=B`.
    pub range: Option<Entry<Bounds>>,
    /// `len = A..=B`.
    pub len: Option<Entry<Bounds>>,
    /// `pattern = "regex"`.
    pub pattern: Option<Entry<syn::LitStr>>,
    /// `one_of("a", ...)`.
    pub one_of: Option<Entry<Vec<syn::LitStr>>>,
    /// `inferred`.
    pub inferred: Option<Entry<()>>,
    /// `not_past`.
    pub not_past: Option<Entry<()>>,
    /// `validate = path`.
    pub validate: Option<Entry<syn::Path>>,
}

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
        "not_past" => "`not_past` is a flag and takes no value: write `not_past`",
        _ => "`inferred` is a flag and takes no value: write `inferred`",
    }
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

/// What a field's value type is, as far as the constraints care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// An integer type: its inclusive range, clamped to what a bound in the schema
    /// holds (`i64::MIN..=u64::MAX`; `usize`/`isize` are taken as 64 bits).
    Int(i128, i128),
    Float,
    String,
    Vec,
    Other,
}

fn shape(ty: &syn::Type) -> Shape {
    let syn::Type::Path(p) = ty else {
        return Shape::Other;
    };
    let Some(last) = p.path.segments.last() else {
        return Shape::Other;
    };
    if p.qself.is_some() {
        return Shape::Other;
    }
    let plain = last.arguments.is_empty();
    let (min64, max64) = (i128::from(i64::MIN), i128::from(u64::MAX));
    match last.ident.to_string().as_str() {
        "u8" if plain => Shape::Int(0, i128::from(u8::MAX)),
        "u16" if plain => Shape::Int(0, i128::from(u16::MAX)),
        "u32" if plain => Shape::Int(0, i128::from(u32::MAX)),
        "u64" | "usize" | "u128" if plain => Shape::Int(0, max64),
        "i8" if plain => Shape::Int(i128::from(i8::MIN), i128::from(i8::MAX)),
        "i16" if plain => Shape::Int(i128::from(i16::MIN), i128::from(i16::MAX)),
        "i32" if plain => Shape::Int(i128::from(i32::MIN), i128::from(i32::MAX)),
        "i64" | "isize" if plain => Shape::Int(min64, i128::from(i64::MAX)),
        "i128" if plain => Shape::Int(min64, max64),
        "f32" | "f64" if plain => Shape::Float,
        "String" if plain => Shape::String,
        "Vec" if !plain => Shape::Vec,
        _ => Shape::Other,
    }
}

/// `Vec<String>`, not `Vec < String >`.
fn type_text(ty: &syn::Type) -> String {
    let mut s = ty.to_token_stream().to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        ("& ", "&"),
    ] {
        s = s.replace(from, to);
    }
    s
}

/// Why `p` is not a valid regular expression (the `regex` crate's own syntax, which
/// the engine compiles at run time), if it is not.
pub fn pattern_error(p: &str) -> Option<String> {
    regex_syntax::Parser::new().parse(p).err().map(|e| {
        let text = e.to_string();
        let last = text.lines().last().unwrap_or_default().trim();
        last.strip_prefix("error: ").unwrap_or(last).to_owned()
    })
}

/// Check the bounds of a range or length against the field's type.
fn check_bounds(
    b: &Bounds,
    key: &str,
    field: &syn::Ident,
    ty: &str,
    limits: Option<(i128, i128)>,
    errors: &mut Errors,
) {
    for bound in b.min.iter().chain(&b.max) {
        match (bound.num, limits) {
            (Num::Int(i), Some((lo, hi))) if i < lo || i > hi => errors.push_spanned(
                &bound.tokens,
                if key == "len" {
                    format!("`{i}` is not a length: `len` bounds are integers from 0")
                } else {
                    format!("`{i}` is out of range for `{field}: {ty}` ({lo}..={hi})")
                },
            ),
            (Num::Float(x), Some(_)) => errors.push_spanned(
                &bound.tokens,
                if key == "len" {
                    format!("`{x:?}` is not a length: `len` bounds are integers from 0")
                } else {
                    format!("`{field}` is a `{ty}`: write integer bounds, found `{x:?}`")
                },
            ),
            _ => {}
        }
    }
    if let (Some(min), Some(max)) = (&b.min, &b.max)
        && min.num.as_f64() > max.num.as_f64()
    {
        errors.push_spanned(
            &b.tokens,
            format!(
                "empty `{key}`: the minimum `{}` is greater than the maximum `{}`",
                min.num, max.num
            ),
        );
    }
}

/// Check the constraints of a `#[data]` field against its type.
pub fn validate(f: &FieldDef, errors: &mut Errors) {
    let c = &f.constraints;
    let ty = f.value_ty();
    let shape = shape(ty);
    let text = type_text(ty);
    let field = &f.ident;
    let mismatch = |errors: &mut Errors, tokens: &TokenStream, key: &syn::Ident, what: &str| {
        errors.push_spanned(
            tokens,
            format!("`{key}` applies to {what}; `{field}` is a `{text}`"),
        );
    };
    if let Some(e) = &c.range {
        match shape {
            Shape::Int(lo, hi) => {
                check_bounds(&e.value, "range", field, &text, Some((lo, hi)), errors)
            }
            Shape::Float => check_bounds(&e.value, "range", field, &text, None, errors),
            _ => mismatch(
                errors,
                &e.tokens,
                &e.key,
                "numeric fields (integers, `f32`, `f64`)",
            ),
        }
    }
    if let Some(e) = &c.len {
        if matches!(shape, Shape::String | Shape::Vec) {
            check_bounds(
                &e.value,
                "len",
                field,
                &text,
                Some((0, i128::from(u64::MAX))),
                errors,
            );
        } else {
            mismatch(errors, &e.tokens, &e.key, "`String` and `Vec` fields");
        }
    }
    if let Some(e) = &c.pattern {
        if shape != Shape::String {
            mismatch(errors, &e.tokens, &e.key, "`String` fields");
        } else if let Some(why) = pattern_error(&e.value.value()) {
            errors.push_spanned(&e.value, format!("invalid `pattern`: {why}"));
        }
    }
    if let Some(e) = &c.one_of {
        if shape != Shape::String {
            mismatch(errors, &e.tokens, &e.key, "`String` fields");
        } else if e.value.is_empty() {
            errors.push_spanned(
                &e.tokens,
                "`one_of` needs at least one value, like `one_of(\"standard\", \"suite\")`",
            );
        }
        let mut seen: Vec<String> = Vec::new();
        for v in &e.value {
            if seen.contains(&v.value()) {
                errors.push_spanned(v, format!("`{:?}` is listed twice in `one_of`", v.value()));
            }
            seen.push(v.value());
        }
    }
}

/// The field's custom check, as a `FieldCheck` expression for `DataType::field_checks`:
/// the path is coerced to `fn(T) -> Result<T, String>` with its own span, so a function
/// of another shape is reported on the user's path.
pub fn check_expr(f: &FieldDef) -> Option<TokenStream> {
    let e = f.constraints.validate.as_ref()?;
    let path = &e.value;
    let ty = f.value_ty();
    let key = &f.json;
    let span = syn::spanned::Spanned::span(path);
    let check = quote::quote_spanned! {span=>
        {
            let __check: fn(#ty) -> ::core::result::Result<#ty, ::std::string::String> = #path;
            __check
        }
    };
    Some(quote! {
        ::agent_core::__private::FieldCheck::typed::<#ty, _>(#key, #check)
    })
}

/// For `not_past`: a check that the field's type is a calendar value, spanned on the
/// key so rustc's "not implemented" error points at it.
pub fn calendar_assert(f: &FieldDef) -> Option<TokenStream> {
    let e = f.constraints.not_past.as_ref()?;
    let ty = f.value_ty();
    let span = e.key.span();
    Some(quote::quote_spanned! {span=>
        ::agent_core::__private::calendar_field::<#ty>();
    })
}

/// The `#[schemars(...)]` attributes that put the constraints into the field's schema.
pub fn schema_attrs(c: &Constraints) -> TokenStream {
    // A bound beyond 64 bits has been reported; leaving it out keeps rustc quiet.
    let fits = |b: &&Bound| match b.num {
        Num::Int(i) => i >= i128::from(i64::MIN) && i <= i128::from(u64::MAX),
        Num::Float(_) => true,
    };
    let mut out = TokenStream::new();
    for (e, kw) in [(&c.range, quote!(range)), (&c.len, quote!(length))] {
        if let Some(e) = e {
            let min = e.value.min.as_ref().filter(fits).map(|b| {
                let n = b.num.tokens();
                quote!(min = #n)
            });
            let max = e.value.max.as_ref().filter(fits).map(|b| {
                let n = b.num.tokens();
                quote!(max = #n)
            });
            let args = min.into_iter().chain(max);
            out.extend(quote!(#[schemars(#kw(#(#args),*))]));
        }
    }
    if let Some(e) = &c.pattern {
        let p = &e.value;
        out.extend(quote!(#[schemars(regex(pattern = #p))]));
    }
    if let Some(e) = &c.one_of {
        let values = &e.value;
        out.extend(quote!(#[schemars(extend("enum" = [#(#values,)* null]))]));
    }
    if c.inferred.is_some() {
        out.extend(quote!(#[schemars(extend("x-inferred" = true))]));
    }
    if c.not_past.is_some() {
        out.extend(quote!(#[schemars(extend("x-not-past" = true))]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_check_rejects_only_surely_invalid_regexes() {
        for ok in [
            "^[A-Z]{3}$",
            r"^\d{4}-\d{2}-\d{2}$",
            "(?i)abc",
            "(?:a|b)+?",
            "[]a]",
            "[^]a]*",
            r"[\]]",
            "a|",
            "(?P<x>a)",
            "",
        ] {
            assert_eq!(pattern_error(ok), None, "{ok}");
        }
        for (bad, why) in [
            ("(ab", "unclosed group"),
            ("ab)", "unopened group"),
            ("[a-z", "unclosed character class"),
            ("*a", "repetition operator missing expression"),
            (
                "ab\\",
                "incomplete escape sequence, reached end of pattern prematurely",
            ),
            (
                "(?<=a)b",
                "look-around, including look-ahead and look-behind, is not supported",
            ),
        ] {
            assert_eq!(pattern_error(bad).as_deref(), Some(why), "{bad}");
        }
    }

    #[test]
    fn types_are_classified_through_paths() {
        let t = |s: &str| shape(&syn::parse_str(s).unwrap());
        assert_eq!(t("u8"), Shape::Int(0, 255));
        assert_eq!(t("i8"), Shape::Int(-128, 127));
        assert_eq!(t("u128"), Shape::Int(0, i128::from(u64::MAX)));
        assert_eq!(
            t("i128"),
            Shape::Int(i128::from(i64::MIN), i128::from(u64::MAX))
        );
        assert_eq!(t("std::string::String"), Shape::String);
        assert_eq!(t("Vec<u8>"), Shape::Vec);
        assert_eq!(t("f32"), Shape::Float);
        assert_eq!(t("Option<u8>"), Shape::Other);
        assert_eq!(
            type_text(&syn::parse_str("Vec<std::string::String>").unwrap()),
            "Vec<std::string::String>"
        );
    }
}
