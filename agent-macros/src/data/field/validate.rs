//! Checking the `#[field(...)]` constraints against the field's type, so that a range on
//! a `String` or an out-of-range bound is a compile error, not a schema the model breaks.

use proc_macro2::TokenStream;
use quote::ToTokens;

use super::{Bounds, Constraints, Num, SynonymOf};
use crate::data::parse::FieldDef;
use crate::diag::Errors;

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
    check_synonyms(c, shape, field, &text, errors);
}

/// Each synonym stands for a value the field can hold: a number of its type and
/// `range` for a numeric field, a string (in its `one_of`) otherwise.
fn check_synonyms(
    c: &Constraints,
    shape: Shape,
    field: &syn::Ident,
    text: &str,
    errors: &mut Errors,
) {
    let Some(e) = &c.synonyms else { return };
    if e.value.is_empty() {
        errors.push_spanned(
            &e.tokens,
            "`synonyms` needs at least one value, like `synonyms(1 = [\"just me\"])`",
        );
    }
    let numeric = matches!(shape, Shape::Int(..) | Shape::Float);
    let mut seen: Vec<String> = Vec::new();
    for g in &e.value {
        match &g.of {
            SynonymOf::Num(b) if !numeric => errors.push_spanned(
                &b.tokens,
                format!("`{field}` is a `{text}`: a synonym stands for one of its values, written as a string, like `\"double\" = [\"two beds\"]`"),
            ),
            SynonymOf::Text(s) if numeric => errors.push_spanned(
                s,
                format!("`{field}` is a `{text}`: a synonym stands for a number, like `1 = [\"just me\"]`"),
            ),
            SynonymOf::Num(b) => {
                let outside = match (shape, b.num) {
                    (Shape::Int(..), Num::Float(x)) => Some(format!(
                        "`{field}` is a `{text}`: write an integer, found `{x:?}`"
                    )),
                    (Shape::Int(lo, hi), Num::Int(i)) if i < lo || i > hi => Some(format!(
                        "`{i}` is out of range for `{field}: {text}` ({lo}..={hi})"
                    )),
                    _ => None,
                };
                let outside = outside.or_else(|| {
                    let r = &c.range.as_ref()?.value;
                    let x = b.num.as_f64();
                    let below = r.min.as_ref().is_some_and(|m| x < m.num.as_f64());
                    let above = r.max.as_ref().is_some_and(|m| x > m.num.as_f64());
                    (below || above).then(|| {
                        format!("`{}` is outside the field's `range`: the engine would refuse it", b.num)
                    })
                });
                if let Some(msg) = outside {
                    errors.push_spanned(&b.tokens, msg);
                }
            }
            SynonymOf::Text(s) => {
                if let Some(one_of) = &c.one_of
                    && !one_of.value.iter().any(|v| v.value() == s.value())
                {
                    errors.push_spanned(
                        s,
                        format!("`{:?}` is not one of the field's `one_of` values", s.value()),
                    );
                }
            }
        }
        let key = g.of.key();
        if seen.contains(&key) {
            errors.push_spanned(
                &g.tokens,
                format!("synonyms for `{key}` are given twice: list them together"),
            );
        }
        seen.push(key);
        if g.phrases.is_empty() {
            errors.push_spanned(
                &g.tokens,
                "list at least one phrase, like `1 = [\"just me\"]`",
            );
        }
        for p in &g.phrases {
            if p.value().trim().is_empty() {
                errors.push_spanned(p, "a synonym is a phrase users say: this one is empty");
            }
        }
    }
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
