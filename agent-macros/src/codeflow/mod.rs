//! `#[flow]` on an `async fn`: a code flow (see `agent_core::codeflow`).
//!
//! [`parse`] reads the attribute and the fn signature, [`validate`] checks the shape
//! (async, one `FlowCx<Data, Context>` parameter, no generics), [`expand`] keeps the
//! fn and adds the flow type (`tutor` → `TutorFlow`) that the agent builder registers
//! and `ctx.handoff::<TutorFlow>()` names.

pub mod expand;
pub mod parse;
pub mod validate;

use proc_macro2::TokenStream;

/// Expand `#[flow]` on a fn.
pub fn expand(attr: TokenStream, item: syn::ItemFn) -> TokenStream {
    let mut errors = crate::diag::Errors::default();
    let def = parse::parse(attr, item, &mut errors);
    validate::validate(&def, &mut errors);
    // With shape errors the fn cannot become a flow: emit it and the type only, so the
    // errors above are all the user sees.
    let out = expand::expand(&def, errors.is_empty());
    let ce = errors.to_compile_errors();
    quote::quote! { #ce #out }
}
