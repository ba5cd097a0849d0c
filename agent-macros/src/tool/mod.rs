//! `#[tool]`: an async (or sync) fn becomes a value implementing the runtime `Tool`
//! trait.
//!
//! [`parse`] reads the attribute and the fn, [`validate`] checks the name, description
//! and parameters (all errors at once), [`expand`] emits the unit struct named like the
//! fn, its argument schema and the `Tool` impl.

pub mod expand;
pub mod parse;
pub mod validate;

use proc_macro2::TokenStream;

/// Expand `#[tool]`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = crate::diag::Errors::default();
    let Some(def) = parse::parse(attr, item.clone(), &mut errors) else {
        let ce = errors.to_compile_errors();
        return quote::quote! { #ce #item };
    };
    validate::validate(&def, &mut errors);
    let out = expand::expand(&def);
    let ce = errors.to_compile_errors();
    quote::quote! { #ce #out }
}
