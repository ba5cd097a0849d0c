//! `#[data]` and `#[context]`: typed agent data and context.
//!
//! - [`parse`] reads the struct and its attribute arguments;
//! - [`field`] reads, checks and emits the `#[field(...)]` constraints of data fields;
//! - [`validate`] checks the shape (named fields, no generics) and collects all errors;
//! - [`expand`] emits the runtime struct, the field enum, the patch builder, the view
//!   struct and the callback macro that `#[flow]` uses to learn the fields;
//! - [`callback`] is the second half of that handshake (views and field checks of a flow).

pub mod callback;
pub mod expand;
pub mod field;
pub mod parse;
pub mod serde_names;
pub mod validate;

use proc_macro2::TokenStream;

/// Whether the struct is the agent's data or its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `#[data]`: fields become optional at run time, a view and a callback are generated.
    Data,
    /// `#[context]`: fields stay as written.
    Context,
}

/// Expand `#[data]` / `#[context]`.
pub fn expand(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = crate::diag::Errors::default();
    let parsed = parse::parse(kind, attr, item.clone(), &mut errors);
    let Some(def) = parsed else {
        // Could not even read a struct: keep the item so that rustc adds no noise.
        let ce = errors.to_compile_errors();
        return quote::quote! { #ce #item };
    };
    validate::validate(&def, &mut errors);
    if !def.item.generics.params.is_empty() {
        // Reported: the generated items would all name `Name` without its parameters.
        // Keep the struct as written (minus the attributes only the derives read).
        let bare = expand::bare_struct(&def.item);
        let ce = errors.to_compile_errors();
        return quote::quote! { #ce #bare };
    }
    let out = expand::expand(&def);
    let ce = errors.to_compile_errors();
    quote::quote! { #ce #out }
}
