//! Code generation for `#[tool]`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::parse::ToolDef;

/// `(D, C)` of a `ToolCx<D, C>` type.
fn cx_params(ty: &syn::Type) -> Option<(syn::Type, syn::Type)> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    let tys: Vec<&syn::Type> = a
        .args
        .iter()
        .filter_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    match tys.as_slice() {
        [d, c] => Some(((*d).clone(), (*c).clone())),
        _ => None,
    }
}

/// A tool whose signature was reported (a borrowed or `impl Trait` argument, a
/// parameter that is not a plain name, no return type): the struct and a `Tool` impl
/// without the fn's body, so registrations still compile and rustc adds nothing to the
/// report. The impl never runs (the crate does not compile).
fn shell(def: &ToolDef) -> TokenStream {
    let item = &def.item;
    let ident = &item.sig.ident;
    let vis = &item.vis;
    let (attrs, _) = split_attrs(&item.attrs);
    let name = &def.name;
    quote! {
        #(#attrs)*
        #[allow(non_camel_case_types)]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #ident;

        #[::agent_core::__private::async_trait::async_trait]
        impl<__D: ::core::marker::Send + ::core::marker::Sync + 'static, __C: ::core::marker::Send + ::core::marker::Sync + 'static>
            ::agent_core::__private::Tool<__D, __C> for #ident
        {
            fn name(&self) -> &str {
                #name
            }
            fn description(&self) -> &str {
                ""
            }
            fn parameters(&self) -> ::agent_core::__private::serde_json::Value {
                ::agent_core::__private::ToolSchema::default().finish()
            }
            async fn call(
                &self,
                _cx: ::agent_core::__private::ToolCx<__D, __C>,
                _args: ::agent_core::__private::serde_json::Value,
            ) -> ::core::result::Result<::agent_core::__private::RtToolOutput, ::agent_core::__private::ToolError> {
                ::core::result::Result::Err(::agent_core::__private::ToolError::Failed(
                    ::std::string::String::from("the tool did not compile"),
                ))
            }
        }
    }
}

/// The fn's attributes split between the generated unit struct (doc comments, `cfg`,
/// `deprecated`: what describes or gates the tool) and the fn that runs (everything else:
/// `#[tracing::instrument]`, `#[allow(..)]`, `#[cfg_attr(..)]`, ..). `cfg` goes on both.
fn split_attrs(attrs: &[syn::Attribute]) -> (Vec<&syn::Attribute>, Vec<&syn::Attribute>) {
    let on_struct = |a: &syn::Attribute| {
        a.path().is_ident("doc") || a.path().is_ident("cfg") || a.path().is_ident("deprecated")
    };
    let on_fn = |a: &syn::Attribute| !a.path().is_ident("doc") && !a.path().is_ident("deprecated");
    (
        attrs.iter().filter(|a| on_struct(a)).collect(),
        attrs.iter().filter(|a| on_fn(a)).collect(),
    )
}

/// The whole expansion.
pub fn expand(def: &ToolDef) -> TokenStream {
    if def.shell() {
        return shell(def);
    }
    let item = &def.item;
    let ident = &item.sig.ident;
    let vis = &item.vis;
    let (attrs, fn_attrs) = split_attrs(&item.attrs);
    let cfgs: Vec<&&syn::Attribute> = attrs.iter().filter(|a| a.path().is_ident("cfg")).collect();
    let name = &def.name;
    let description = def.description.clone().unwrap_or_else(|| quote!(""));
    let asyncness = &item.sig.asyncness;
    let output = &item.sig.output;
    let block = &item.block;
    let concurrency_safe = def.concurrency_safe;
    let timeout = def.timeout_ms.map(|ms| {
        quote! {
            fn timeout(&self) -> ::core::option::Option<::core::time::Duration> {
                ::core::option::Option::Some(::core::time::Duration::from_millis(#ms))
            }
        }
    });

    // Validated: an unknown word was reported and emits nothing (the default stays).
    let effect = def.effect.as_ref().and_then(|e| {
        let variant = match e.to_string().as_str() {
            "pure" => quote!(Pure),
            "idempotent" => quote!(Idempotent),
            "once" => quote!(Once),
            _ => return None,
        };
        Some(quote! {
            fn effect(&self) -> ::agent_core::__private::Effect {
                ::agent_core::__private::Effect::#variant
            }
        })
    });

    let once = def.effect.as_ref().is_some_and(|e| e == "once");

    let request_words = def.request_words.as_ref().map(|words| {
        quote! {
            fn request_words(&self) -> ::std::vec::Vec<::std::string::String> {
                ::std::vec![#(::std::string::String::from(#words)),*]
            }
        }
    });

    let outcome = def.outcome.as_ref().map(|words| {
        quote! {
            fn outcome_words(&self) -> ::std::vec::Vec<::std::string::String> {
                ::std::vec![#(::std::string::String::from(#words)),*]
            }
        }
    });

    let confirm = def.confirm.as_ref().map(|b| {
        quote! {
            fn needs_agreement(&self) -> bool {
                #b
            }
        }
    });

    let summary = def.summary.as_ref().map(|t| {
        quote! {
            fn summary_template(&self) -> ::core::option::Option<&str> {
                ::core::option::Option::Some(#t)
            }
        }
    });

    let derived: Vec<String> = def
        .args
        .iter()
        .filter(|a| a.derived)
        .map(|a| crate::diag::name(&a.ident))
        .collect();
    let derived_args = (!derived.is_empty()).then(|| {
        quote! {
            fn derived_args(&self) -> ::std::vec::Vec<::std::string::String> {
                ::std::vec![#(::std::string::String::from(#derived)),*]
            }
        }
    });

    let approval = def.approval.as_ref().map(|a| match a {
        super::parse::Approval::Always => quote! {
            fn needs_approval(&self, _args: &::agent_core::__private::serde_json::Value) -> bool {
                true
            }
        },
        // Spanned on the user's path: a rule of the wrong signature is reported there.
        super::parse::Approval::Rule(rule) => {
            let call = quote_spanned! {rule.span()=>
                let __rule: fn(&::agent_core::__private::serde_json::Value) -> bool = #rule;
            };
            quote! {
                fn needs_approval(&self, __args: &::agent_core::__private::serde_json::Value) -> bool {
                    #call
                    __rule(__args)
                }
            }
        }
    });

    let (impl_generics, d_ty, c_ty) = match def.cx.as_ref().and_then(|(_, t)| cx_params(t)) {
        Some((d, c)) => (quote!(), quote!(#d), quote!(#c)),
        None => (
            quote!(<__D: ::core::marker::Send + ::core::marker::Sync + 'static, __C: ::core::marker::Send + ::core::marker::Sync + 'static>),
            quote!(__D),
            quote!(__C),
        ),
    };
    let cx_param = match &def.cx {
        Some((pat, ty)) => quote!(#pat: #ty,),
        None => quote!(),
    };
    let cx_arg = match &def.cx {
        Some(_) => quote!(__cx,),
        None => quote!(),
    };
    let arg_params = def.args.iter().map(|a| {
        let (pat, ty, attrs) = (&a.pat, &a.ty, &a.attrs);
        quote!(#(#attrs)* #pat: #ty)
    });
    let arg_names: Vec<&syn::Ident> = def.args.iter().map(|a| &a.ident).collect();
    let arg_keys: Vec<String> = arg_names.iter().map(|i| crate::diag::name(i)).collect();
    let arg_tys: Vec<&syn::Type> = def.args.iter().map(|a| &a.ty).collect();
    let arg_docs: Vec<TokenStream> = def
        .args
        .iter()
        .map(|a| a.doc.clone().unwrap_or_else(|| quote!("")))
        .collect();
    let arg_required: Vec<bool> = def.args.iter().map(|a| !a.optional).collect();
    let spec_names: Vec<syn::Ident> = (0..def.args.len())
        .map(|i| quote::format_ident!("__AGENT_ARG_{}", i))
        .collect();
    let arg_specs = def.args.iter().zip(&spec_names).map(|(a, n)| {
        let ty = &a.ty;
        // Read through the trait (`<T as ToolArg>::SPEC`): rustc reports a type that is
        // not an argument at the type, in one short error (no note about a helper's
        // bound).
        quote! {
            const #n: ::agent_core::__private::ToolArgSpec<#ty> =
                <#ty as ::agent_core::__private::ToolArg>::SPEC;
        }
    });
    // The user's fn keeps its name (a span `#[tracing::instrument]` opens is named like
    // the tool): a free fn inside the `const _` block, where it shadows the struct's value.
    let call = if asyncness.is_some() {
        quote!(#ident(#cx_arg #(#arg_names),*).await)
    } else {
        quote!(#ident(#cx_arg #(#arg_names),*))
    };
    let ret_span = match output {
        syn::ReturnType::Type(_, t) => t.span(),
        syn::ReturnType::Default => ident.span(),
    };
    let into_result = quote_spanned! {ret_span=>
        ::agent_core::__private::IntoToolResult::into_tool_result(__result)
    };
    let run_cx = if def.cx.is_some() {
        quote!(__cx)
    } else {
        quote!(_cx)
    };
    quote! {
        #(#attrs)*
        #[allow(non_camel_case_types)]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #ident;

        #(#cfgs)*
        const _: () = {
            #(#arg_specs)*

            #[allow(clippy::too_many_arguments, clippy::unused_async)]
            #(#fn_attrs)*
            #asyncness fn #ident(#cx_param #(#arg_params),*) #output #block

            impl #ident {
                /// Whether the tool is a once-tool, as `#[flow]` reads it at compile time.
                #[doc(hidden)]
                #[allow(dead_code)]
                pub const __AGENT_ONCE: bool = #once;

                /// Share the tool (`Arc<dyn Tool<D, C>>`), as the agent builder takes it.
                #[allow(dead_code)]
                pub fn arc<__D2: 'static, __C2: 'static>(self) -> ::std::sync::Arc<dyn ::agent_core::__private::Tool<__D2, __C2>>
                where
                    Self: ::agent_core::__private::Tool<__D2, __C2>,
                {
                    ::std::sync::Arc::new(self)
                }
            }

            #[::agent_core::__private::async_trait::async_trait]
            impl #impl_generics ::agent_core::__private::Tool<#d_ty, #c_ty> for #ident {
                fn name(&self) -> &str {
                    #name
                }
                fn description(&self) -> &str {
                    #description
                }
                fn parameters(&self) -> ::agent_core::__private::serde_json::Value {
                    static SCHEMA: ::std::sync::OnceLock<::agent_core::__private::serde_json::Value> =
                        ::std::sync::OnceLock::new();
                    SCHEMA
                        .get_or_init(|| {
                            ::agent_core::__private::ToolSchema::default()
                                #(.pipe(|s| #spec_names.describe(s, #arg_keys, #arg_docs, #arg_required)))*
                                .finish()
                        })
                        .clone()
                }
                fn concurrency_safe(&self) -> bool {
                    #concurrency_safe
                }
                #timeout
                #effect
                #request_words
                #outcome
                #confirm
                #summary
                #derived_args
                #approval
                async fn call(
                    &self,
                    #run_cx: ::agent_core::__private::ToolCx<#d_ty, #c_ty>,
                    __args: ::agent_core::__private::serde_json::Value,
                ) -> ::core::result::Result<::agent_core::__private::RtToolOutput, ::agent_core::__private::ToolError> {
                    #[allow(unused_variables)]
                    let __obj = ::agent_core::__private::tool_args_object(__args)?;
                    #(
                        let #arg_names: #arg_tys = #spec_names.decode(&__obj, #arg_keys, #arg_required)?;
                    )*
                    let __result = #call;
                    #into_result
                }
            }
        };
    }
}
