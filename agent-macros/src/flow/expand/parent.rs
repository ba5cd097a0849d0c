//! The items `#[flow]` emits beside the module: they name the flow from outside it (the
//! flow type, the data/context aliases, the per-step view markers) and ask the data type's
//! callback macro for the views and field checks.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use super::{Names, flow_type_ident, rt, view_alias};
use crate::diag::name;
use crate::flow::model::*;

/// Everything the expansion emits outside the flow's module.
pub(super) fn parent(
    def: &FlowDef,
    names: &Names,
    unique: &[&StepDef],
    absent: &[crate::flow::validate::AbsentField],
) -> TokenStream {
    let rt = rt();
    let module = &def.ident;
    let id = name(module);
    let vis = &def.vis;
    let flow_ty = flow_type_ident(module);
    let (alias_d, alias_c) = (&names.d, &names.c);
    let data_alias = match &def.flow.data {
        // `<Data as FlowData>::Checked` is the data type once it is a `#[data]` type:
        // one without `#[data]` is reported once, at its name, and the code over it
        // stays quiet.
        Some(p) => {
            let span = p
                .segments
                .last()
                .map_or_else(proc_macro2::Span::call_site, |s| s.ident.span());
            let checked = quote_spanned!(span=> <#p as ::agent_core::__private::FlowData>::Checked);
            quote!(#vis type #alias_d = #checked;)
        }
        None => quote!(#vis type #alias_d = ();),
    };
    let ctx_alias = match &def.flow.context {
        Some(t) => quote!(#vis type #alias_c = #t;),
        None => quote!(#vis type #alias_c = ();),
    };
    let callback = match &def.flow.data {
        Some(p) => {
            let data_name = p
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            let prefix = &names.prefix;
            let views = unique.iter().map(|s| {
                let n = &s.ident;
                let r = &s.requires.idents;
                let cfg = s.cfg_attrs();
                quote!(#cfg #n [#(#r)*])
            });
            let req = &def.flow.required.idents;
            let collect = def.steps.iter().flat_map(|s| s.collect.idents.iter());
            let requires = def.steps.iter().flat_map(|s| s.requires.idents.iter());
            let depends_on = def.steps.iter().flat_map(|s| s.depends_on.idents.iter());
            let optional = &def.flow.optional.idents;
            let cancel_clears = &def.flow.cancel_clears.idents;
            // The fields templates name, checked like the lists.
            let template = def.steps.iter().flat_map(|s| {
                let lit = match (&s.shape, &s.ask) {
                    (Shape::Reply(l), _) | (Shape::Model, Some(l)) => l,
                    _ => return Vec::new(),
                };
                crate::flow::validate::placeholders(&lit.value())
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|n| crate::flow::validate::template_ident(n, lit.span()))
                    .collect()
            });
            let absent = absent.iter().map(|a| {
                let step = &def.steps[a.step].ident;
                let field = &a.field;
                let cfg = a.cfg.as_ref().map(|c| quote!(#[cfg(#c)]));
                quote!(#cfg #step [#field])
            });
            quote! {
                #p! {
                    data_name = #data_name;
                    data = #p;
                    context = #alias_c;
                    prefix = #prefix;
                    vis = (#vis);
                    views { #(#views)* __flow [] __completed [#(#req)*] }
                    checks {
                        collect [#(#collect)*]
                        requires [#(#requires)*]
                        depends_on [#(#depends_on)*]
                        required [#(#req)*]
                        optional [#(#optional)*]
                        cancel_clears [#(#cancel_clears)*]
                        template [#(#template)*]
                    }
                    absent { #(#absent)* }
                }
            }
        }
        None => quote!(),
    };
    let title = def
        .flow
        .title
        .as_ref()
        .map(syn::LitStr::value)
        .unwrap_or_else(|| id.clone());
    let flow_doc = format!(
        "The `{id}` flow ({title}): name it in branch targets, `on_complete` and `Directive::go_to::<{flow_ty}>()`."
    );
    // Spanned on `data = ..`, like the alias they name: a data type without `#[data]`
    // is reported once, at its name.
    let data_span = def
        .flow
        .data
        .as_ref()
        .and_then(|p| p.segments.last())
        .map_or_else(proc_macro2::Span::call_site, |s| s.ident.span());
    let mut flow_ty_at_data = flow_ty.clone();
    flow_ty_at_data.set_span(data_span);
    let data_impls = quote_spanned! {data_span=>
        // Not listed in errors: the trait's message says what a target must be.
        #[diagnostic::do_not_recommend]
        impl #rt::FlowOver<#alias_d> for #flow_ty_at_data {}

        impl #rt::OfData for #flow_ty_at_data {
            type Data = #alias_d;
        }
    };
    // Spanned on `data = ..` too, the impl's header included (its self type here): rustc
    // checks `type Data` against `DataType` at the header, and a data type without
    // `#[data]` is then reported once, at its name.
    let mut module_at_data = module.clone();
    module_at_data.set_span(data_span);
    let flow_def = quote_spanned! {data_span=>
        impl #rt::FlowDef for #flow_ty_at_data {
            const ID: &'static str = #id;
            type Data = #alias_d;
            type Context = #alias_c;
            fn flow() -> ::core::result::Result<#rt::Flow<#alias_d, #alias_c>, #rt::ConfigErrors> {
                #module_at_data::flow()
            }
            fn diagram() -> &'static str {
                #module_at_data::DIAGRAM
            }
        }
    };
    let view_names: Vec<(String, TokenStream)> = unique
        .iter()
        .map(|s| (name(&s.ident), s.cfg_attrs()))
        .chain([
            ("__flow".to_string(), TokenStream::new()),
            ("__completed".to_string(), TokenStream::new()),
        ])
        .collect();
    let markers = view_names.iter().map(|(v, cfg)| {
        let marker = format_ident!("{}_step_{}", names.prefix, v);
        let alias = view_alias(names, v);
        let target = if def.flow.data.is_some() {
            quote!(<#marker as #rt::StepView<'a>>::View)
        } else {
            // No data type: nothing to view (the missing `data` is reported).
            quote!(::core::marker::PhantomData<&'a ()>)
        };
        quote! {
            #cfg
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code)]
            #vis struct #marker;
            #cfg
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code)]
            #vis type #alias<'a> = #target;
        }
    });
    quote! {
        #(#markers)*

        #[doc = #flow_doc]
        #[allow(dead_code)]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #flow_ty;

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #data_alias
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #ctx_alias

        #data_impls
        #flow_def

        #[allow(dead_code)]
        impl #flow_ty {
            /// The flow id (`FlowDef::ID`; inherent, so `BookingFlow::ID` is not ambiguous
            /// between the traits that carry it).
            pub const ID: &'static str = #id;
        }

        #callback
    }
}
