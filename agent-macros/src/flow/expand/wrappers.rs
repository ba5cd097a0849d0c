//! The small pieces the flow builder chain takes: predicate closures over a typed view,
//! wrapper structs that adapt user hook fns to the runtime hook traits, and directive
//! targets, each spanned so rustc's errors land on the user's tokens.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
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
            quote_spanned!(path.span()=> #rt::into_directive(#call)),
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

/// `head(args)` spanned from the first to the last token of `over`, so that an error on
/// the call underlines all of `over` (`notes::Step::ask`), not its first token.
fn call_spanning(over: &impl ToTokens, head: TokenStream, args: TokenStream) -> TokenStream {
    fn respan(ts: TokenStream, span: Span) -> TokenStream {
        ts.into_iter()
            .map(|t| match t {
                proc_macro2::TokenTree::Group(g) => {
                    let mut n = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                    n.set_span(span);
                    proc_macro2::TokenTree::Group(n)
                }
                mut other => {
                    other.set_span(span);
                    other
                }
            })
            .collect()
    }
    let mut toks = over.to_token_stream().into_iter();
    let first = toks.next().map_or_else(Span::call_site, |t| t.span());
    let last = toks.last().map_or(first, |t| t.span());
    let head = respan(head, first);
    let args = quote_spanned!(last=> (#args));
    quote!(#head #args)
}

pub(super) fn target_directive(t: &Target, span: Span) -> Option<TokenStream> {
    let rt = rt();
    Some(match t {
        Target::Step(id) => {
            let s = name(id);
            quote!(#rt::RtDirective::go_to_step(#s))
        }
        Target::Flow(p) => {
            let f = quote_spanned!(p.span()=> #rt::flow_id_over::<__D, #p>());
            quote!(#rt::RtDirective::go_to(#f))
        }
        Target::CrossStep(p) => {
            call_spanning(p, quote!(#rt::step_directive_over::<__D, _>), quote!(#p))
        }
        Target::Directive(e) => quote_spanned!(span=> #rt::into_directive(#e)),
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
