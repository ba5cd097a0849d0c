//! The second half of the `#[data]`/`#[flow]` handshake.
//!
//! `#[flow]` cannot see the fields of its data type, so it invokes the macro that
//! `#[data]` generated next to the type (same name, macro namespace). That macro calls
//! [`expand`] with the field list followed by the flow's request:
//!
//! ```text
//! [city check_in guests] [cache]    // from #[data]: fields, `#[serde(skip)]` fields
//! data_name = "Booking";            // from #[flow] ...
//! data = Booking;                 // the data type's path in the flow
//! context = Concierge;
//! prefix = __agent_flow_booking;
//! vis = (pub(crate));
//! views { confirm [city guests] __flow [] }
//! checks { collect [city] requires [citty] template [city] }
//! absent { done [guests] }      // template fields that may be empty at a step
//! ```
//!
//! It implements `StepView` for the marker of each entry of `views`, a spanned error for
//! every name in `checks` that is not a field, and one for every field in `absent` (a
//! name there that is not a field is already reported by the `template` check).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};

use crate::diag::{Errors, suggest};

struct Entry {
    /// `#[cfg(..)]` of a step that may be compiled out.
    attrs: Vec<syn::Attribute>,
    name: syn::Ident,
    idents: Vec<syn::Ident>,
}

fn entries(input: ParseStream) -> syn::Result<Vec<Entry>> {
    let content;
    syn::braced!(content in input);
    let mut out = Vec::new();
    while !content.is_empty() {
        let attrs = content.call(syn::Attribute::parse_outer)?;
        let name: syn::Ident = content.parse()?;
        let list;
        syn::bracketed!(list in content);
        let mut idents = Vec::new();
        while !list.is_empty() {
            idents.push(list.call(syn::ext::IdentExt::parse_any)?);
        }
        out.push(Entry {
            attrs,
            name,
            idents,
        });
    }
    Ok(out)
}

struct Request {
    fields: Vec<syn::Ident>,
    /// `#[serde(skip)]` fields: in the struct, not data the engine sees.
    skipped: Vec<syn::Ident>,
    data_name: syn::LitStr,
    /// The data type's path as the flow wrote it (an import under another name works).
    data: syn::Path,
    context: syn::Type,
    prefix: syn::Ident,
    vis: syn::Visibility,
    views: Vec<Entry>,
    checks: Vec<Entry>,
    /// Per step, template fields that may be empty there (reported if they are fields;
    /// a name that is not one is reported by the `template` check).
    absent: Vec<Entry>,
}

fn key(input: ParseStream, name: &str) -> syn::Result<()> {
    let k: syn::Ident = input.parse()?;
    if k != name {
        return Err(syn::Error::new(k.span(), format!("expected `{name}`")));
    }
    Ok(())
}

impl Parse for Request {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let list;
        syn::bracketed!(list in input);
        let mut fields = Vec::new();
        while !list.is_empty() {
            fields.push(list.parse()?);
        }
        let list;
        syn::bracketed!(list in input);
        let mut skipped = Vec::new();
        while !list.is_empty() {
            skipped.push(list.parse()?);
        }
        key(input, "data_name")?;
        input.parse::<syn::Token![=]>()?;
        let data_name = input.parse()?;
        input.parse::<syn::Token![;]>()?;
        key(input, "data")?;
        input.parse::<syn::Token![=]>()?;
        let data = input.parse()?;
        input.parse::<syn::Token![;]>()?;
        key(input, "context")?;
        input.parse::<syn::Token![=]>()?;
        let context = input.parse()?;
        input.parse::<syn::Token![;]>()?;
        key(input, "prefix")?;
        input.parse::<syn::Token![=]>()?;
        let prefix = input.parse()?;
        input.parse::<syn::Token![;]>()?;
        key(input, "vis")?;
        input.parse::<syn::Token![=]>()?;
        let v;
        syn::parenthesized!(v in input);
        let vis = v.parse()?;
        input.parse::<syn::Token![;]>()?;
        key(input, "views")?;
        let views = entries(input)?;
        key(input, "checks")?;
        let checks = entries(input)?;
        key(input, "absent")?;
        let absent = entries(input)?;
        Ok(Request {
            fields,
            skipped,
            data_name,
            data,
            context,
            prefix,
            vis,
            views,
            checks,
            absent,
        })
    }
}

/// Expand a callback invocation.
pub fn expand(input: TokenStream) -> TokenStream {
    let req: Request = match syn::parse2(input) {
        Ok(r) => r,
        Err(e) => return e.to_compile_error(),
    };
    let known: Vec<String> = req.fields.iter().map(crate::diag::name).collect();
    let mut errors = Errors::default();
    let data_name = req.data_name.value();
    for check in &req.checks {
        for id in &check.idents {
            let s = crate::diag::name(id);
            if req.skipped.iter().any(|k| crate::diag::name(k) == s) {
                errors.push(
                    id.span(),
                    format!(
                        "`{}` names `{s}`, which is `#[serde(skip)]` in `{data_name}`: the model and the engine never see it; remove the skip or the name",
                        check.name
                    ),
                );
            } else if !known.contains(&s) {
                let what = if check.name == "template" {
                    format!("the template names `{{{s}}}`")
                } else {
                    format!("`{}` names `{s}`", check.name)
                };
                errors.push(
                    id.span(),
                    format!(
                        "{what}, which is not a field of `{data_name}`; {}",
                        suggest(&s, &known, "fields")
                    ),
                );
            }
        }
    }
    let mut gated = Vec::new();
    for entry in &req.absent {
        let step = crate::diag::name(&entry.name);
        for id in &entry.idents {
            let f = crate::diag::name(id);
            if !known.contains(&f) {
                continue;
            }
            let e = syn::Error::new(
                id.span(),
                format!(
                    "the template of step `{step}` names `{{{f}}}`, which may be empty there: not every path to `{step}` collects `{f}`; add `requires({f})` to the step"
                ),
            )
            .to_compile_error();
            let attrs = &entry.attrs;
            gated.push(quote!(#(#attrs)* #e));
        }
    }
    let data = &req.data;
    let ctx = &req.context;
    let vis = &req.vis;
    let _ = vis;
    let impls = req.views.iter().map(|v| {
        let marker = format_ident!("{}_step_{}", req.prefix, v.name);
        let modes = req.fields.iter().map(|f| {
            if v.idents
                .iter()
                .any(|r| crate::diag::name(r) == crate::diag::name(f))
            {
                quote!(::agent_core::__private::Req)
            } else {
                quote!(::agent_core::__private::Opt)
            }
        });
        let attrs = &v.attrs;
        quote! {
            #(#attrs)*
            impl<'a> ::agent_core::__private::StepView<'a> for #marker {
                type View = <#data as ::agent_core::__private::ViewOf<'a, #ctx, (#(#modes,)*)>>::View;
            }
        }
    });
    let ce = errors.to_compile_errors();
    quote! { #ce #(#gated)* #(#impls)* }
}
