//! Shape checks of a `#[data]` / `#[context]` struct.

use super::Kind;
use super::parse::DataDef;
use crate::diag::Errors;

/// Record every problem of the struct.
pub fn validate(def: &DataDef, errors: &mut Errors) {
    let name = match def.kind {
        Kind::Data => "data",
        Kind::Context => "context",
    };
    match &def.item.fields {
        syn::Fields::Named(_) => {}
        syn::Fields::Unnamed(u) => errors.push_spanned(
            u,
            format!(
                "`#[{name}]` needs named fields: the field names are the JSON keys the model writes"
            ),
        ),
        syn::Fields::Unit => errors.push_spanned(
            &def.item.ident,
            format!("`#[{name}]` needs a struct with named fields, found a unit struct"),
        ),
    }
    if !def.item.generics.params.is_empty() {
        errors.push_spanned(
            &def.item.generics,
            format!("`#[{name}]` structs cannot be generic: the agent's {name} type is one concrete type"),
        );
    }
    for f in &def.fields {
        if f.skip
            && let Some(a) = f.field_attrs.first()
        {
            errors.push_spanned(
                a,
                format!("`{}` is `#[serde(skip)]`: the model never writes it, so `#[field(..)]` constraints have nothing to check", f.ident),
            );
        }
        if crate::diag::name(&f.ident).starts_with("__") {
            errors.push_spanned(
                &f.ident,
                "field names starting with `__` are reserved for generated code",
            );
        }
        match def.kind {
            Kind::Data => super::field::validate(f, errors),
            Kind::Context => {
                for a in &f.field_attrs {
                    errors.push_spanned(
                        a,
                        "`#[field(...)]` constraints are only for `#[data]` fields: the model writes data, code writes the context",
                    );
                }
            }
        }
    }
}
