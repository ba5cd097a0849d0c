//! The small pieces the flow builder chain takes: predicate closures over a typed view,
//! wrapper structs that adapt user hook fns to the runtime hook traits, and directive
//! targets, each spanned so rustc's errors land on the user's tokens.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::rt;
use crate::diag::name;
use crate::flow::model::*;

/// A predicate closure over the view `view` (a path to a `View` type).
pub(super) fn predicate(e: &syn::Expr, view: &TokenStream) -> TokenStream {
    let rt = rt();
    let user = quote_spanned!(e.span()=> &#e);
    quote! {
        |__cx: &#rt::Cx<'_, __D, __C>| -> bool {
            let __p: #rt::ViewPredicate<'_, #view<'_>> = #user;
            match <#view<'_>>::__new(__cx) {
                ::core::option::Option::Some(__v) => __p(&__v),
                ::core::option::Option::None => false,
            }
        }
    }
}

#[derive(Clone, Copy)]
pub(super) enum HookKind {
    Pre,
    Post,
    Notify,
}

/// A wrapper struct implementing the runtime hook trait by calling `f` with the view.
pub(super) fn hook_wrapper(
    name: &syn::Ident,
    kind: HookKind,
    path: &syn::Path,
    is_async: bool,
    view: &TokenStream,
    cfg: &TokenStream,
) -> TokenStream {
    let rt = rt();
    let call = if is_async {
        quote_spanned!(path.span()=> #path(__v).await)
    } else {
        quote_spanned!(path.span()=> #path(__v))
    };
    let (tr, out, conv, none) = match kind {
        HookKind::Pre => (
            quote!(PreHook),
            quote!(#rt::RtPreDirective<__D, __C>),
            quote_spanned!(path.span()=> #rt::pre_hook_result(__cx, #call)),
            quote!(::core::default::Default::default()),
        ),
        HookKind::Post => (
            quote!(PostHook),
            quote!(#rt::RtDirective),
            quote_spanned!(path.span()=> #rt::IntoDirective::<__D>::into_directive(#call)),
            quote!(::core::default::Default::default()),
        ),
        HookKind::Notify => (
            quote!(NotifyHook),
            quote!(()),
            quote_spanned!(path.span()=> #rt::notified(#call)),
            quote!(()),
        ),
    };
    quote! {
        #cfg
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        struct #name;
        #cfg
        #[#rt::async_trait::async_trait]
        impl #rt::#tr<__D, __C> for #name {
            async fn call(&self, __cx: &#rt::Cx<'_, __D, __C>) -> #out {
                match <#view<'_>>::__new(__cx) {
                    ::core::option::Option::Some(__v) => #conv,
                    ::core::option::Option::None => #none,
                }
            }
        }
    }
}

/// The id of the flow type `p`, checked to be a flow over the flow's data type at `p`.
pub(super) fn flow_id(p: &syn::Path) -> TokenStream {
    let rt = rt();
    quote_spanned!(p.span()=> <#p as #rt::FlowTarget<__D>>::flow_id())
}

pub(super) fn target_directive(t: &Target, span: Span) -> Option<TokenStream> {
    let rt = rt();
    Some(match t {
        Target::Step(id) => {
            let s = name(id);
            quote!(#rt::RtDirective::go_to_step(#s))
        }
        Target::Flow(p) => {
            let f = flow_id(p);
            quote!(#rt::RtDirective::go_to(#f))
        }
        Target::CrossStep(p) => {
            // `<other::Step as StepOver<D>>::__go_to(other::Step::x)`: a step of a flow
            // over another data type is reported at `other::Step`.
            let mut ty = p.clone();
            ty.segments.pop();
            ty.segments.pop_punct();
            let f = quote_spanned!(ty.span()=> <#ty as #rt::StepTarget<__D>>::go_to);
            quote!(#f(#p))
        }
        // The trait's fn (not a helper with a bound): rustc reports a value that is no
        // post-LLM directive at the value, without a note about the helper.
        Target::Directive(e) => {
            quote_spanned!(span=> #rt::IntoDirective::<__D>::into_directive(#e))
        }
    })
}

/// The fields of a list as the runtime names them: `__field("guests")`, the JSON name
/// (see the `__field` binding in `flow()`).
pub(super) fn strs(l: &FieldList) -> Vec<TokenStream> {
    l.idents
        .iter()
        .map(|i| {
            let n = name(i);
            quote!(__field(#n))
        })
        .collect()
}
