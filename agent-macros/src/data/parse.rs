//! Reading a `#[data]` / `#[context]` struct.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;

use super::Kind;
use crate::diag::Errors;

/// One field.
pub struct FieldDef {
    /// Field name.
    pub ident: syn::Ident,
    /// Attributes (doc comments included) as written.
    pub attrs: Vec<syn::Attribute>,
    /// Visibility as written.
    pub vis: syn::Visibility,
    /// The type as written.
    pub ty: syn::Type,
    /// `T` for a field written `Option<T>`.
    pub inner: Option<syn::Type>,
    /// The `#[field(...)]` attributes (not in `attrs`: they are not emitted).
    pub field_attrs: Vec<syn::Attribute>,
    /// What they say (empty for `#[context]`, where they are an error).
    pub constraints: super::field::Constraints,
    /// The JSON name (serde's: `r#` stripped, `rename`, `rename_all`).
    pub json: String,
    /// `#[serde(skip)]`: not a field the model or the engine sees (no patch setter, not
    /// in `FIELDS`, the field enum or step views).
    pub skip: bool,
}

impl FieldDef {
    /// The value type: `T` for `Option<T>` fields, else the type as written.
    pub fn value_ty(&self) -> &syn::Type {
        self.inner.as_ref().unwrap_or(&self.ty)
    }
}

/// A parsed struct.
pub struct DataDef {
    /// Data or context.
    pub kind: Kind,
    /// The struct as written.
    pub item: syn::ItemStruct,
    /// Its named fields.
    pub fields: Vec<FieldDef>,
}

/// `T` when `ty` is `Option<T>`.
pub fn option_inner(ty: &syn::Type) -> Option<syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    if args.args.len() != 1 {
        return None;
    }
    match args.args.first() {
        Some(syn::GenericArgument::Type(t)) => Some(t.clone()),
        _ => None,
    }
}

/// Parse the attribute arguments (none are accepted) and the struct.
pub fn parse(
    kind: Kind,
    attr: TokenStream,
    item: TokenStream,
    errors: &mut Errors,
) -> Option<DataDef> {
    let name = match kind {
        Kind::Data => "data",
        Kind::Context => "context",
    };
    if !attr.is_empty() {
        let r = syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated
            .parse2(attr.clone());
        let span = match &r {
            Ok(list) => list
                .first()
                .map(syn::spanned::Spanned::span)
                .unwrap_or_else(Span::call_site),
            Err(e) => e.span(),
        };
        errors.push(
            span,
            format!("`#[{name}]` takes no arguments; write `#[{name}]` on the struct"),
        );
    }
    let mut item: syn::ItemStruct = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => {
            errors.push(
                e.span(),
                format!("`#[{name}]` goes on a struct with named fields"),
            );
            return None;
        }
    };
    let strict = kind == Kind::Data;
    let rule = super::serde_names::container(&mut item.attrs, strict, errors);
    let mut fields = Vec::new();
    if let syn::Fields::Named(named) = &item.fields {
        for f in &named.named {
            let Some(ident) = f.ident.clone() else {
                continue;
            };
            let inner = match kind {
                Kind::Data => option_inner(&f.ty),
                Kind::Context => None,
            };
            let (field_attrs, mut attrs): (Vec<_>, Vec<_>) = f
                .attrs
                .iter()
                .cloned()
                .partition(|a| a.path().is_ident("field"));
            let constraints = match kind {
                Kind::Data => super::field::parse(&field_attrs, errors),
                Kind::Context => super::field::Constraints::default(),
            };
            let mut serde = super::serde_names::field(&mut attrs, strict, errors);
            let json = serde.rename.unwrap_or_else(|| {
                let n = crate::diag::name(&ident);
                rule.map_or_else(|| n.clone(), |r| r.apply(&n))
            });
            if let Some(other) = fields
                .iter()
                .find(|o: &&FieldDef| !o.skip && !serde.skip && o.json == json)
            {
                errors.push_spanned(
                    &ident,
                    format!(
                        "`{}` and `{ident}` have the same JSON name \"{json}\": every field needs its own key",
                        other.ident
                    ),
                );
                // Keep serde from seeing the clash too.
                attrs.retain(|a| !a.path().is_ident("serde"));
                serde.skip = true;
            }
            fields.push(FieldDef {
                json,
                skip: serde.skip,
                ident,
                attrs,
                field_attrs,
                constraints,
                vis: f.vis.clone(),
                ty: f.ty.clone(),
                inner,
            });
        }
    }
    Some(DataDef { kind, item, fields })
}
