//! `#[flow]` on a module and the `#[step]` fns inside it.
//!
//! [`parse`] reads the module into a [`model::FlowDef`] (collecting syntax errors),
//! [`validate`] checks names, shapes, branch tables and the graph ([`graph`]), and
//! [`expand`] emits the runtime flow constructor, the typed step ids and views, the hook
//! wrappers and the Mermaid diagram ([`diagram`]). Errors are reported together; the
//! expansion still emits the module and its generated names so that rustc adds no
//! follow-on errors.

pub mod diagram;
pub mod expand;
pub mod graph;
pub mod model;
pub mod parse;
pub mod validate;

use proc_macro2::TokenStream;

/// Expand `#[flow]`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = crate::diag::Errors::default();
    let Some(def) = parse::parse(attr, item.clone(), &mut errors) else {
        let ce = errors.to_compile_errors();
        return quote::quote! { #ce #item };
    };
    let absent = validate::validate(&def, &mut errors);
    let out = expand::expand(&def, &absent);
    let ce = errors.to_compile_errors();
    quote::quote! { #ce #out }
}

/// `#[step]` outside a `#[flow]` module.
pub fn stray_step(item: TokenStream) -> TokenStream {
    let e = syn::Error::new(
        proc_macro2::Span::call_site(),
        "`#[step]` only works on fns inside a `#[flow(..)]` module: the flow reads its steps",
    )
    .to_compile_error();
    quote::quote! { #e #item }
}
