//! Code generation for `#[flow]`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::model::*;
use crate::diag::name;

const RT: &str = "::agent_core::__private";

fn rt() -> TokenStream {
    // `::agent_core::__private`
    quote!(::agent_core::__private)
}

fn camel(s: &str) -> String {
    s.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// The flow type's name: `mod booking` → `BookingFlow`.
pub fn flow_type_ident(module: &syn::Ident) -> syn::Ident {
    format_ident!("{}Flow", camel(&name(module)), span = module.span())
}

struct Names {
    d: syn::Ident,
    c: syn::Ident,
    prefix: syn::Ident,
}

fn view_alias(n: &Names, view: &str) -> syn::Ident {
    format_ident!("{}_view_{}", n.prefix, view)
}

/// A predicate closure over the view `view` (a path to a `View` type).
fn predicate(e: &syn::Expr, view: &TokenStream) -> TokenStream {
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
enum HookKind {
    Pre,
    Post,
    Notify,
}

/// A wrapper struct implementing the runtime hook trait by calling `f` with the view.
fn hook_wrapper(
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

fn target_directive(t: &Target, span: Span) -> Option<TokenStream> {
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
fn strs(l: &FieldList) -> Vec<TokenStream> {
    l.idents
        .iter()
        .map(|i| {
            let n = name(i);
            quote!(__field(#n))
        })
        .collect()
}

/// The whole expansion.
pub fn expand(def: &FlowDef) -> TokenStream {
    let rt = rt();
    let _ = RT;
    let module = &def.ident;
    let id = name(module);
    let vis = &def.vis;
    let flow_ty = flow_type_ident(module);
    let names = Names {
        d: format_ident!("__agent_flow_{}_Data", module),
        c: format_ident!("__agent_flow_{}_Context", module),
        prefix: format_ident!("__agent_flow_{}", module),
    };
    let (alias_d, alias_c) = (&names.d, &names.c);
    let step_names: Vec<String> = def.steps.iter().map(|s| name(&s.ident)).collect();
    // Steps that survive (duplicates dropped so rustc reports nothing twice).
    let mut unique: Vec<&StepDef> = Vec::new();
    for s in &def.steps {
        if !unique
            .iter()
            .any(|u| name(&u.ident) == name(&s.ident) && !u.cfg_alternative(s))
        {
            unique.push(s);
        }
    }

    // ---- parent level ------------------------------------------------------------------
    let data_alias = match &def.flow.data {
        Some(p) => quote!(#vis type #alias_d = #p;),
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
            let mut view_path = p.clone();
            if let Some(last) = view_path.segments.last_mut() {
                last.ident = format_ident!("{}View", last.ident, span = last.ident.span());
            }
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
            quote! {
                #p! {
                    data_name = #data_name;
                    view = #view_path;
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
                    }
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
        let alias = view_alias(&names, v);
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
    let parent = quote! {
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

        impl #rt::FlowOver<#alias_d> for #flow_ty {}

        #[allow(dead_code)]
        impl #flow_ty {
            /// The flow id (`FlowDef::ID`; inherent, so `BookingFlow::ID` is not ambiguous
            /// between the traits that carry it).
            pub const ID: &'static str = #id;
        }

        impl #rt::FlowDef for #flow_ty {
            const ID: &'static str = #id;
            type Data = #alias_d;
            type Context = #alias_c;
            fn flow() -> ::core::result::Result<#rt::Flow<#alias_d, #alias_c>, #rt::ConfigErrors> {
                #module::flow()
            }
            fn diagram() -> &'static str {
                #module::DIAGRAM
            }
        }

        #callback
    };

    // ---- module level ------------------------------------------------------------------
    // (name, gated by `#[cfg]`) of the step fns kept.
    let mut emitted: Vec<(String, bool)> = Vec::new();
    let items: Vec<TokenStream> = def
        .items
        .iter()
        .filter_map(|item| match item {
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
        let alias = view_alias(&names, &name(n));
        let doc = format!(
            "The typed view of step `{}`: the fields it `requires` are plain values, the others `Option`s.",
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
                pub type View<'a> = super::super::#alias<'a>;
            }
        }
    });
    let flow_view = view_alias(&names, "__flow");
    let completed_view = view_alias(&names, "__completed");

    let mut hooks = Vec::new();
    let mut builder = Vec::new();
    let f = &def.flow;
    // The data type's `#[field(validate = ..)]` checks travel with the flow.
    let checks = f
        .data
        .as_ref()
        .map(|_| quote!(.checks(<__D as #rt::DataType>::field_checks())));
    // Fields are written as in Rust; the runtime flow takes their JSON names.
    let field_fn = match &f.data {
        // The same bound as `checks` above, so a data type without `#[data]` gets one error.
        Some(_) => quote!(|__f: &'static str| -> &'static str {
            <__D as #rt::DataType>::json_name(__f).unwrap_or(__f)
        }),
        None => quote!(|__f: &'static str| __f),
    };
    if let Some(t) = &f.title {
        builder.push(quote!(.title(#t)));
    }
    if let Some(t) = &f.description {
        builder.push(quote!(.description(#t)));
    }
    if let Some(t) = &f.when {
        builder.push(quote!(.when(#t)));
    }
    if let Some(p) = &f.if_ {
        let pred = predicate(p, &quote!(View));
        builder.push(quote!(.if_(#pred)));
    }
    let required = strs(&f.required);
    if !required.is_empty() {
        builder.push(quote!(.required([#(#required),*])));
    }
    let optional = strs(&f.optional);
    if !optional.is_empty() {
        builder.push(quote!(.optional([#(#optional),*])));
    }
    if let Some(e) = &f.initial_data {
        let p = quote_spanned!(e.span()=> #rt::data_patch(#e));
        builder.push(quote!(.initial_data(#p)));
    }
    if let Some(c) = &f.corrections {
        let v = if c == "reopen" {
            quote!(Reopen)
        } else {
            quote!(Refuse)
        };
        builder.push(quote!(.corrections(#rt::Corrections::#v)));
    }
    if f.reentrant {
        builder.push(quote!(.reentrant()));
    }
    if let Some(t) = &f.on_complete {
        let span = match t {
            Target::Directive(e) => e.span(),
            _ => Span::call_site(),
        };
        if let Some(d) = target_directive(t, span) {
            builder.push(quote!(.on_complete(#d)));
        }
    }
    let flow_hooks: [(&Option<HookRef>, &str, HookKind, &syn::Ident); 5] = [
        (&f.on_enter, "on_enter", HookKind::Pre, &flow_view),
        (&f.on_exit, "on_exit", HookKind::Notify, &flow_view),
        (
            &f.on_data_update,
            "on_data_update",
            HookKind::Notify,
            &flow_view,
        ),
        (
            &f.on_context_update,
            "on_context_update",
            HookKind::Notify,
            &flow_view,
        ),
        (
            &f.on_complete_hook,
            "on_complete_hook",
            HookKind::Post,
            &completed_view,
        ),
    ];
    for (h, key, kind, _) in flow_hooks {
        if let Some(h) = h {
            let name = format_ident!("__agent_flow_{}", key);
            let view = if key == "on_complete_hook" {
                quote!(Completed)
            } else {
                quote!(View)
            };
            hooks.push(hook_wrapper(
                &name,
                kind,
                &h.path,
                h.is_async,
                &view,
                &TokenStream::new(),
            ));
            let method = format_ident!("{}", key);
            builder.push(quote!(.#method(#name)));
        }
    }
    for t in &f.tools {
        let t = quote_spanned!(t.span()=> #rt::tool_arc::<__D, __C, _>(#t));
        builder.push(quote!(.tool(#t)));
    }

    let mut step_stmts = Vec::new();
    for s in &unique {
        let n = &s.ident;
        let sid = name(n);
        let cfg = s.cfg_attrs();
        let view = quote!(#n::View);
        let mut sb = Vec::new();
        let ctor = match &s.shape {
            Shape::Model => quote!(#rt::RtStep::<__D, __C>::model(#sid)),
            Shape::Auto(_) => quote!(#rt::RtStep::<__D, __C>::auto(#sid)),
            Shape::Reply(r) => {
                let text = match &f.data {
                    Some(_) => quote!(#rt::reply_template::<__D>(#r)),
                    None => quote!(#r),
                };
                quote!(#rt::RtStep::<__D, __C>::reply(#sid, #text))
            }
        };
        if let Some((_, p)) = &s.prompt {
            sb.push(quote!(.prompt(#p)));
        }
        let c = strs(&s.collect);
        if !c.is_empty() {
            sb.push(quote!(.collect([#(#c),*])));
        }
        let r = strs(&s.requires);
        if !r.is_empty() {
            sb.push(quote!(.requires([#(#r),*])));
        }
        let d = strs(&s.depends_on);
        if !d.is_empty() {
            sb.push(quote!(.depends_on([#(#d),*])));
        }
        if let Some((_, tools)) = &s.tools {
            for t in tools {
                let t = quote_spanned!(t.span()=> #rt::tool_arc::<__D, __C, _>(#t));
                sb.push(quote!(.tool(#t)));
            }
        }
        if let Some(p) = &s.skip {
            let p = predicate(p, &view);
            sb.push(quote!(.skip(#p)));
        }
        if let Some(p) = &s.if_ {
            let p = predicate(p, &view);
            sb.push(quote!(.if_(#p)));
        }
        if let Some(w) = &s.when {
            sb.push(quote!(.when(#w)));
        }
        if let Some(h) = &s.on_enter {
            let name = format_ident!("__agent_on_enter_{}", n);
            hooks.push(hook_wrapper(
                &name,
                HookKind::Pre,
                &h.path,
                h.is_async,
                &view,
                &cfg,
            ));
            sb.push(quote!(.on_enter(#name)));
        }
        if s.prepare {
            let name = format_ident!("__agent_prepare_{}", n);
            let path: syn::Path = n.clone().into();
            hooks.push(hook_wrapper(
                &name,
                HookKind::Pre,
                &path,
                s.func.sig.asyncness.is_some(),
                &view,
                &cfg,
            ));
            sb.push(quote!(.prepare(#name)));
        }
        if let Some(h) = &s.finalize {
            let name = format_ident!("__agent_finalize_{}", n);
            hooks.push(hook_wrapper(
                &name,
                HookKind::Post,
                &h.path,
                h.is_async,
                &view,
                &cfg,
            ));
            sb.push(quote!(.finalize(#name)));
        }
        if let Some(b) = &s.branches {
            let entries = b.entries.iter().filter_map(|e| {
                let base = match &e.target {
                    Target::Step(t) => {
                        let t = name(t);
                        if !step_names.contains(&t) {
                            return None;
                        }
                        quote!(#rt::Branch::<__D, __C>::to_step(#t))
                    }
                    Target::Flow(p) => {
                        let f = quote_spanned!(p.span()=> #rt::flow_id_over::<__D, #p>());
                        quote!(#rt::Branch::<__D, __C>::to_flow(#f))
                    }
                    other => {
                        let d = target_directive(other, e.target_span)?;
                        quote!(#rt::Branch::<__D, __C>::to_directive(#d))
                    }
                };
                let conds = e.conds.iter().map(|c| match c {
                    Cond::If(p) => {
                        let p = predicate(p, &view);
                        quote!(.if_(#p))
                    }
                    Cond::When(w) => quote!(.when(#w)),
                });
                let label = e.label.as_ref().map(|l| quote!(.label(#l)));
                Some(quote!(#base #(#conds)* #label))
            });
            sb.push(quote!(.branches(::std::vec::Vec::from([#(#entries),*]))));
        }
        for t in &s.requires_tool {
            let t = quote_spanned!(t.span()=> #rt::tool_arc::<__D, __C, _>(#t).name());
            sb.push(quote!(.requires_tool(#t)));
        }
        if let Some(a) = &s.ask {
            let text = match &f.data {
                Some(_) => quote!(#rt::reply_template::<__D>(#a)),
                None => quote!(#a),
            };
            sb.push(quote!(.ask(#text)));
        }
        if s.act_on_answer.is_some() {
            sb.push(quote!(.act_on_answer()));
        }
        if s.end {
            sb.push(quote!(.end()));
        }
        // A statement each, so that a step's `#[cfg]` can leave it out.
        step_stmts.push(quote!(#cfg let __b = __b.step(#ctor #(#sb)*);));
    }

    let diagram = super::diagram::consts(def);
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
        #parent

        #(#mod_attrs)*
        #vis mod #module {
            #[allow(unused_imports)]
            use super::*;

            #(#items)*

            #[doc(hidden)]
            type __D = super::#alias_d;
            #[doc(hidden)]
            type __C = super::#alias_c;

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

            impl #rt::StepId for Step {
                const FLOW_ID: &'static str = #id;
                fn id(self) -> &'static str {
                    Step::id(self)
                }
            }

            impl #rt::StepOver<__D> for Step {}

            #(#view_mods)*

            /// The flow-level view (every field an `Option`): flow hooks and `if` see it.
            #[allow(dead_code)]
            pub type View<'a> = super::#flow_view<'a>;
            /// The view of `on_complete_hook`: the flow's `required` fields are plain values.
            #[allow(dead_code)]
            pub type Completed<'a> = super::#completed_view<'a>;

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
            pub fn flow() -> ::core::result::Result<#rt::Flow<__D, __C>, #rt::ConfigErrors> {
                #[allow(unused_variables)]
                let __field = #field_fn;
                let __b = #rt::Flow::<__D, __C>::builder(#id)
                    #(#builder)*;
                #(#step_stmts)*
                __b #checks .build()
            }
        }
    }
}
