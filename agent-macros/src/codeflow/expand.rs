//! The fn as written, plus its flow type.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::parse::CodeFlowDef;
use super::validate::cx_types;

/// `tutor_intro` → `TutorIntroFlow`.
pub fn type_name(fn_name: &str) -> String {
    let mut out = String::new();
    for part in fn_name.split('_').filter(|p| !p.is_empty()) {
        let mut cs = part.chars();
        if let Some(c) = cs.next() {
            out.extend(c.to_uppercase());
            out.push_str(cs.as_str());
        }
    }
    out.push_str("Flow");
    out
}

/// Expand a code flow.
pub fn expand(def: &CodeFlowDef, valid: bool) -> TokenStream {
    let item = &def.item;
    let vis = &item.vis;
    let fn_name = &item.sig.ident;
    let ty = format_ident!(
        "{}",
        type_name(&crate::diag::name(fn_name)),
        span = fn_name.span()
    );
    let id = &def.id;
    let (data, context) = match (def.data.clone(), def.context.clone(), cx_types(def)) {
        (Some(d), Some(c), _) => (quote!(#d), quote!(#c)),
        (d, c, Some((pd, pc))) => (
            d.map_or_else(|| quote!(#pd), |d| quote!(#d)),
            c.map_or_else(|| quote!(#pc), |c| quote!(#c)),
        ),
        // Reported by validation; keep the output well-formed.
        _ => (quote!(()), quote!(())),
    };
    let mut opts = TokenStream::new();
    if let Some(t) = &def.title {
        opts.extend(quote!(.title(#t)));
    }
    if let Some(w) = &def.when {
        opts.extend(quote!(.when(#w)));
    }
    if let Some(d) = &def.description {
        opts.extend(quote!(.description(#d)));
    }
    let doc = format!(
        "The code flow `{id}` (`#[flow]` on `{fn_name}`): register it with `.code_flow({ty})`, hand off to it with `ctx.handoff::<{ty}>()`."
    );
    let register = valid.then(|| {
        quote! {
            #[diagnostic::do_not_recommend]
            impl ::agent_core::__private::FlowOver<#data> for #ty {}

            impl ::agent_core::__private::OfData for #ty {
                type Data = #data;
            }

            impl ::agent_core::__private::IntoCodeFlow<#data, #context> for #ty {
                fn into_code_flow(self) -> ::agent_core::__private::CodeFlow<#data, #context> {
                    ::agent_core::__private::CodeFlow::new(#id, #fn_name) #opts
                }
            }
        }
    });
    quote! {
        #item

        #[doc = #doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #ty;

        impl ::agent_core::__private::FlowRef for #ty {
            const ID: &'static str = #id;
        }

        #register
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn type_names_are_pascal_case_plus_flow() {
        assert_eq!(super::type_name("tutor"), "TutorFlow");
        assert_eq!(super::type_name("tutor_intro"), "TutorIntroFlow");
    }
}
