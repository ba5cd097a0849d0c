//! The JSON name of each field, as serde computes it. The engine, the schema (schemars
//! reads the same attributes), patches, `FIELDS`, step `collect` lists and the model all
//! use that name, so `#[data]` must agree with serde: `r#type` is `"type"`,
//! `#[serde(rename = "n")]` is `"n"`, `#[serde(rename_all = "camelCase")]` renames the
//! rest. A serde attribute whose effect the engine cannot follow (`flatten`,
//! `skip_serializing_if`, ...) is an error on a `#[data]` field rather than a silent
//! divergence.

use syn::spanned::Spanned;

use crate::diag::Errors;

/// What the serde attributes of one field say.
#[derive(Default)]
pub struct FieldSerde {
    /// `rename = ".."`.
    pub rename: Option<String>,
    /// `skip`: neither serialized nor deserialized, so not a field the model or the
    /// engine sees.
    pub skip: bool,
}

/// The field-level serde keys `#[data]` supports.
pub const FIELD_KEYS: &[&str] = &["rename", "alias", "skip", "default"];

/// The struct-level serde keys `#[data]` supports.
pub const STRUCT_KEYS: &[&str] = &["rename_all", "default", "deny_unknown_fields"];

fn unsupported(path: &syn::Path, known: &[&str], on: &str) -> syn::Error {
    let key = path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| quote::quote!(#path).to_string());
    let list = known
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    syn::Error::new(
        path.span(),
        format!(
            "`#[serde({key})]` is not supported on a `#[data]` {on}: the engine reads and writes fields by their JSON names, and `{key}` changes them in a way it cannot follow; supported: {list}"
        ),
    )
}

/// One `key = "string"` value; the `(serialize = .., deserialize = ..)` form is refused
/// because the engine reads and writes a field under one name.
fn one_name(meta: &syn::meta::ParseNestedMeta, key: &str) -> syn::Result<syn::LitStr> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse()
    } else {
        Err(meta.error(format!(
            "write `#[serde({key} = \"..\")]`: a `#[data]` field is read and written under one JSON name"
        )))
    }
}

/// Read the serde attributes of a field. `strict`: unsupported keys are errors
/// (`#[data]`), and an attribute with an error is dropped so that serde adds no
/// follow-on errors.
pub fn field(attrs: &mut Vec<syn::Attribute>, strict: bool, errors: &mut Errors) -> FieldSerde {
    let mut out = FieldSerde::default();
    attrs.retain(|a| {
        if !a.path().is_ident("serde") {
            return true;
        }
        let r = a.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                out.rename = Some(one_name(&meta, "rename")?.value());
            } else if meta.path.is_ident("alias") {
                meta.value()?.parse::<syn::LitStr>()?;
            } else if meta.path.is_ident("skip") {
                out.skip = true;
            } else if meta.path.is_ident("default") {
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<syn::LitStr>()?;
                }
            } else if strict {
                return Err(unsupported(&meta.path, FIELD_KEYS, "field"));
            } else {
                skip_value(&meta)?;
            }
            Ok(())
        });
        match r {
            Err(e) if strict => {
                errors.add(e);
                false
            }
            _ => true,
        }
    });
    out
}

/// Skip the value of a key this reader does not interpret (`#[context]` fields).
fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<proc_macro2::TokenStream>()?;
    }
    Ok(())
}

/// serde's `rename_all` rules for field names.
#[derive(Clone, Copy)]
pub enum RenameAll {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

const RULES: &[(&str, RenameAll)] = &[
    ("lowercase", RenameAll::Lower),
    ("UPPERCASE", RenameAll::Upper),
    ("PascalCase", RenameAll::Pascal),
    ("camelCase", RenameAll::Camel),
    ("snake_case", RenameAll::Snake),
    ("SCREAMING_SNAKE_CASE", RenameAll::ScreamingSnake),
    ("kebab-case", RenameAll::Kebab),
    ("SCREAMING-KEBAB-CASE", RenameAll::ScreamingKebab),
];

impl RenameAll {
    /// The field's name under the rule (serde's `RenameRule::apply_to_field`).
    pub fn apply(self, field: &str) -> String {
        match self {
            RenameAll::Lower | RenameAll::Snake => field.to_owned(),
            RenameAll::Upper | RenameAll::ScreamingSnake => field.to_ascii_uppercase(),
            RenameAll::Pascal => {
                let mut out = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        out.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
            RenameAll::Camel => {
                let pascal = RenameAll::Pascal.apply(field);
                let mut cs = pascal.chars();
                match cs.next() {
                    Some(c) => c.to_ascii_lowercase().to_string() + cs.as_str(),
                    None => String::new(),
                }
            }
            RenameAll::Kebab => field.replace('_', "-"),
            RenameAll::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

/// Read the struct-level serde attributes: the `rename_all` rule. `strict`: keys other
/// than [`STRUCT_KEYS`] are errors, and their attributes are dropped.
pub fn container(
    attrs: &mut Vec<syn::Attribute>,
    strict: bool,
    errors: &mut Errors,
) -> Option<RenameAll> {
    let mut rule = None;
    attrs.retain(|a| {
        if !a.path().is_ident("serde") {
            return true;
        }
        let r = a.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                let lit = one_name(&meta, "rename_all")?;
                let v = lit.value();
                match RULES.iter().find(|(n, _)| *n == v) {
                    Some((_, r)) => rule = Some(*r),
                    None => {
                        let known: Vec<String> =
                            RULES.iter().map(|(n, _)| (*n).to_owned()).collect();
                        return Err(syn::Error::new(
                            lit.span(),
                            format!(
                                "unknown `rename_all` rule \"{v}\"; {}",
                                crate::diag::suggest(&v, &known, "rules")
                            ),
                        ));
                    }
                }
            } else if meta.path.is_ident("default") {
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<syn::LitStr>()?;
                }
            } else if strict && !meta.path.is_ident("deny_unknown_fields") {
                return Err(unsupported(&meta.path, STRUCT_KEYS, "struct"));
            } else {
                skip_value(&meta)?;
            }
            Ok(())
        });
        match r {
            Err(e) if strict => {
                errors.add(e);
                false
            }
            _ => true,
        }
    });
    rule
}

#[cfg(test)]
mod tests {
    use super::RenameAll;

    #[test]
    fn rename_all_rules_match_serde() {
        let f = "check_in_date";
        assert_eq!(RenameAll::Camel.apply(f), "checkInDate");
        assert_eq!(RenameAll::Pascal.apply(f), "CheckInDate");
        assert_eq!(RenameAll::ScreamingSnake.apply(f), "CHECK_IN_DATE");
        assert_eq!(RenameAll::Kebab.apply(f), "check-in-date");
        assert_eq!(RenameAll::ScreamingKebab.apply(f), "CHECK-IN-DATE");
        assert_eq!(RenameAll::Lower.apply(f), "check_in_date");
    }
}
