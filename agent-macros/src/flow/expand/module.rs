//! The flow's module as `#[flow]` re-emits it: the user's items, the typed step ids and
//! views, the hook wrappers and `flow()`, which builds the runtime flow.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Names, builder, rt, view_alias};
use crate::diag::name;
use crate::flow::model::*;

/// The module with everything the expansion adds inside it.
pub(super) fn module(
    def: &FlowDef,
    names: &Names,
    unique: &[&StepDef],
    step_names: &[String],
) -> TokenStream {
    let rt = rt();
    let module = &def.ident;
    let id = name(module);
    let vis = &def.vis;
    let (alias_d, alias_c) = (&names.d, &names.c);
    // (name, gated by `#[cfg]`) of the step fns kept.
    let mut emitted: Vec<(String, bool)> = Vec::new();
    let items: Vec<TokenStream> = def
        .items
        .iter()
        .filter_map(|item| match item {
            // Named like a generated item (reported): dropped so rustc adds no clash.
            i if crate::flow::validate::item_ident(i)
                .is_some_and(|id| crate::flow::validate::is_reserved(&name(id))) =>
            {
                None
            }
            syn::Item::Fn(f) if step_names.contains(&name(&f.sig.ident)) => {
                let n = name(&f.sig.ident);
                let gated = f.attrs.iter().any(|a| a.path().is_ident("cfg"));
                if emitted.iter().any(|(e, g)| *e == n && !(*g && gated)) {
                    // A duplicate step (reported): dropped so rustc does not report it again.
                    return None;
                }
                emitted.push((n, gated));
                Some(quote!(#[allow(dead_code)] #f))
            }
            other => Some(quote!(#other)),
        })
        .collect();
    let step_idents: Vec<&syn::Ident> = unique.iter().map(|s| &s.ident).collect();
    let step_cfgs: Vec<TokenStream> = unique.iter().map(|s| s.cfg_attrs()).collect();
    // With `#[cfg]` steps the count is the compiler's.
    let n_steps = if unique.iter().any(|s| !s.cfg.is_empty()) {
        quote!({
            let __steps: &[()] = &[#(#step_cfgs ()),*];
            __steps.len()
        })
    } else {
        let n = unique.len();
        quote!(#n)
    };
    let step_strs: Vec<String> = step_idents.iter().map(|i| name(i)).collect();
    let view_mods = unique.iter().map(|s| {
        let n = &s.ident;
        let cfg = s.cfg_attrs();
        let alias = view_alias(names, &name(n));
        let doc = format!(
            "The typed view of step `{}`: the fields it `requires` are plain values, the others `Unrequired` (read with `.get()`).",
            name(n)
        );
        let mod_doc = format!("Step `{}`.", name(n));
        quote! {
            #cfg
            #[doc = #mod_doc]
            #[allow(non_snake_case)]
            pub mod #n {
                #[doc = #doc]
                #[allow(dead_code)]
                pub type View<'a> = super::#alias<'a>;
            }
        }
    });
    let flow_view = view_alias(names, "__flow");
    let completed_view = view_alias(names, "__completed");
    // The module reaches the parent's generated items through one `use`, so a module
    // that cannot see them (declared in a fn body) is one error, not one per item.
    let (plain, gated): (Vec<&&StepDef>, Vec<&&StepDef>) =
        unique.iter().partition(|s| s.cfg.is_empty());
    let plain_views = plain.iter().map(|s| view_alias(names, &name(&s.ident)));
    let gated_views = gated.iter().map(|s| {
        let cfg = s.cfg_attrs();
        let alias = view_alias(names, &name(&s.ident));
        quote!(#cfg #[allow(unused_imports)] use super::#alias;)
    });

    let mut hooks = Vec::new();
    let f = &def.flow;
    // The data type's `#[field(validate = ..)]` checks travel with the flow.
    let checks = f
        .data
        .as_ref()
        .map(|_| quote!(.checks(<__D as #rt::DataType>::field_checks())));
    // Fields are written as in Rust; the runtime flow takes their JSON names.
    let field_fn = match &f.data {
        Some(_) => quote!(|__f: &'static str| -> &'static str {
            <__D as #rt::DataType>::json_name(__f).unwrap_or(__f)
        }),
        None => quote!(|__f: &'static str| __f),
    };
    let builder = builder::flow_calls(def, &flow_view, &completed_view, &mut hooks);
    let step_stmts = builder::step_stmts(def, unique, step_names, &mut hooks);
    hooks.extend(builder::once_tool_checks(def));

    let flow_body = quote! {
        #[allow(unused_variables)]
        let __field = #field_fn;
        let __b = #rt::Flow::<__D, __C>::builder(#id)
            #(#builder)*;
        #(#step_stmts)*
        __b #checks .build()
    };
    // `__D` is `<Data as FlowData>::Checked`: spanned on `data = ..` here too, a data type
    // without `#[data]` is reported once, at its name (the alias's other uses are).
    let data_span = f
        .data
        .as_ref()
        .and_then(|p| p.segments.last())
        .map_or_else(proc_macro2::Span::call_site, |s| s.ident.span());
    let flow_body = respan_call_site(respan_ident(flow_body, "__D", data_span), data_span);

    // Spanned on `data = ..` (see `respan_ident`).
    let step_impls = quote::quote_spanned! {data_span=>
        impl #rt::StepId for Step {
            type Data = __D;
            const FLOW_ID: &'static str = #id;
            fn id(self) -> &'static str {
                Step::id(self)
            }
        }

        #[diagnostic::do_not_recommend]
        impl #rt::StepOver<__D> for Step {}
    };

    // The return type is checked (`Flow<D, C>` wants `D: DataType`) at its own span:
    // spanned on `data = ..` as a whole, a data type without `#[data]` is reported once.
    let flow_ret = respan_all(
        quote!(::core::result::Result<#rt::Flow<__D, __C>, #rt::ConfigErrors>),
        data_span,
    );
    let diagram = crate::flow::diagram::consts(def);
    let mod_attrs = &def.attrs;
    let step_docs = unique.iter().map(|s| {
        let shape = match &s.shape {
            Shape::Model => "A model step.".to_string(),
            Shape::Auto(_) => "An `auto` step (no model call).".to_string(),
            Shape::Reply(r) => format!("A `reply` step: \"{}\"", r.value()),
        };
        let prompt = s
            .prompt
            .as_ref()
            .map(|(_, p)| format!(" {}", p.value()))
            .unwrap_or_default();
        format!("{shape}{prompt}")
    });
    quote! {

        #(#mod_attrs)*
        #vis mod #module {
            #[allow(unused_imports)]
            use super::*;

            #(#items)*

            #[allow(unused_imports)]
            use super::{#alias_d as __D, #alias_c as __C, #flow_view, #completed_view #(, #plain_views)*};
            #(#gated_views)*

            /// The steps of this flow (typed step ids).
            #[allow(non_camel_case_types, dead_code)]
            #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash)]
            pub enum Step {
                #(#[doc = #step_docs] #step_cfgs #step_idents,)*
            }

            #[allow(dead_code)]
            impl Step {
                /// Every step, in declaration order.
                pub const ALL: [Step; #n_steps] = [#(#step_cfgs Step::#step_idents),*];
                /// The step id.
                pub const fn id(self) -> &'static str {
                    match self {
                        #(#step_cfgs Step::#step_idents => #step_strs,)*
                    }
                }
            }

            #step_impls

            #(#view_mods)*

            /// The flow-level view (no field required): flow hooks and `if` see it.
            #[allow(dead_code)]
            pub type View<'a> = #flow_view<'a>;
            /// The view of `on_complete_hook`: the flow's `required` fields are plain values.
            #[allow(dead_code)]
            pub type Completed<'a> = #completed_view<'a>;

            /// The flow id.
            #[allow(dead_code)]
            pub const ID: &str = #id;
            #diagram

            /// The Mermaid diagram of the flow.
            #[allow(dead_code)]
            pub fn diagram() -> &'static str {
                DIAGRAM
            }

            #(#hooks)*

            /// Build the runtime flow (the runtime validates it again).
            #[allow(dead_code)]
            pub fn flow() -> #flow_ret {
                #flow_body
            }
        }
    }
}

/// `tokens` with every token spanned at `span`.
fn respan_all(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    tokens
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), respan_all(g.stream(), span));
                n.set_span(span);
                TokenTree::Group(n)
            }
            mut t => {
                t.set_span(span);
                t
            }
        })
        .collect()
}

/// `tokens` with every identifier `name` spanned at `span`.
fn respan_ident(tokens: TokenStream, name: &str, span: proc_macro2::Span) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    tokens
        .into_iter()
        .map(|t| match t {
            TokenTree::Ident(mut i) if i == name => {
                i.set_span(span);
                TokenTree::Ident(i)
            }
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), respan_ident(g.stream(), name, span));
                n.set_span(g.span());
                TokenTree::Group(n)
            }
            t => t,
        })
        .collect()
}

/// `tokens` with every token the macro wrote (spanned at the call site: not the user's)
/// spanned at `span`. The builder's calls are checked against the data type (`build()`
/// wants `D: DataType`) at their own spans: spanned on `data = ..`, a data type without
/// `#[data]` is reported once, there, not again at the flow attribute. A call whose
/// arguments hold the user's tokens keeps its path at the call site, so that rustc's
/// "required by a bound introduced by this call" stays on one line. (A span has no `Eq`;
/// its `Debug` names its place in the source.)
fn respan_call_site(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    use proc_macro2::Span;
    let here = format!("{:?}", Span::call_site());
    respan_ours(tokens, span, &|s: Span| format!("{s:?}") == here)
}

fn respan_ours(
    tokens: TokenStream,
    span: proc_macro2::Span,
    ours: &dyn Fn(proc_macro2::Span) -> bool,
) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    fn has_users(ts: &TokenStream, ours: &dyn Fn(proc_macro2::Span) -> bool) -> bool {
        ts.clone().into_iter().any(|t| match t {
            TokenTree::Group(g) => has_users(&g.stream(), ours),
            t => !ours(t.span()),
        })
    }
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let mut keep = vec![false; tts.len()];
    for (k, t) in tts.iter().enumerate() {
        if let TokenTree::Group(g) = t
            && has_users(&g.stream(), ours)
        {
            // The path of the call (or method) that takes these arguments.
            let mut j = k;
            while j > 0 {
                let prev = &tts[j - 1];
                let stop = matches!(prev, TokenTree::Group(_))
                    || matches!(prev, TokenTree::Punct(p) if matches!(p.as_char(), '.' | ',' | ';' | '='));
                if stop {
                    break;
                }
                j -= 1;
                keep[j] = true;
            }
        }
    }
    tts.into_iter()
        .zip(keep)
        .map(|(t, keep)| match t {
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), respan_ours(g.stream(), span, ours));
                n.set_span(if ours(g.span()) && !keep {
                    span
                } else {
                    g.span()
                });
                TokenTree::Group(n)
            }
            mut t => {
                if ours(t.span()) && !keep {
                    t.set_span(span);
                }
                t
            }
        })
        .collect()
}
