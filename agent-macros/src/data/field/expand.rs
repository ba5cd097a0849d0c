//! Emitting the `#[field(...)]` constraints: schema attributes for the model's contract,
//! and the check and type-assert expressions the engine and rustc enforce.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Bound, Constraints, Num};
use crate::data::parse::FieldDef;

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
        let () = <#ty as ::agent_core::__private::CalendarValue>::CALENDAR;
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
    if let Some(e) = &c.synonyms {
        let keys = e.value.iter().map(|g| g.of.key());
        let phrases = e.value.iter().map(|g| &g.phrases);
        out.extend(quote!(#[schemars(extend("x-synonyms" = { #(#keys: [#(#phrases),*]),* }))]));
    }
    out
}
