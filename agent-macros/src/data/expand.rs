//! Code generation for `#[data]` / `#[context]`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::Kind;
use super::parse::{DataDef, FieldDef};

/// Derives the runtime needs, minus the ones the user already wrote.
fn derives(def: &DataDef) -> (Vec<TokenStream>, Vec<syn::Attribute>) {
    let mut have: Vec<String> = Vec::new();
    for a in &def.item.attrs {
        if a.path().is_ident("derive") {
            let _ = a.parse_nested_meta(|m| {
                if let Some(last) = m.path.segments.last() {
                    have.push(last.ident.to_string());
                }
                Ok(())
            });
        }
    }
    let mut wanted: Vec<(&str, TokenStream)> = vec![
        ("Debug", quote!(::core::fmt::Debug)),
        ("Clone", quote!(::core::clone::Clone)),
        ("Default", quote!(::core::default::Default)),
        (
            "Serialize",
            quote!(::agent_core::__private::serde::Serialize),
        ),
        (
            "Deserialize",
            quote!(::agent_core::__private::serde::Deserialize),
        ),
    ];
    if def.kind == Kind::Data {
        wanted.push((
            "JsonSchema",
            quote!(::agent_core::__private::schemars::JsonSchema),
        ));
    }
    let out = wanted
        .into_iter()
        .filter(|(n, _)| !have.iter().any(|h| h == n))
        .map(|(_, p)| p)
        .collect();
    (out, def.item.attrs.clone())
}

fn is_string(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("String"))
}

fn setter(f: &FieldDef, kind: Kind) -> TokenStream {
    let ident = &f.ident;
    let key = &f.json;
    let clear = format_ident!("clear_{}", ident);
    let doc = format!("Set `{key}`.");
    let (ty, conv) = match kind {
        Kind::Data => (f.value_ty(), true),
        Kind::Context => (&f.ty, true),
    };
    let _ = conv;
    let setter = if is_string(ty) {
        quote! {
            #[doc = #doc]
            pub fn #ident(mut self, value: impl ::core::convert::Into<::std::string::String>) -> Self {
                let value: ::std::string::String = value.into();
                self.map.insert(#key.into(), ::agent_core::__private::to_json(&value));
                self
            }
        }
    } else {
        quote! {
            #[doc = #doc]
            pub fn #ident(mut self, value: #ty) -> Self {
                self.map.insert(#key.into(), ::agent_core::__private::to_json(&value));
                self
            }
        }
    };
    let clear_doc = format!("Clear `{key}` (write `null`).");
    let clear = if kind == Kind::Data {
        quote! {
            #[doc = #clear_doc]
            pub fn #clear(mut self) -> Self {
                self.map.insert(#key.into(), ::agent_core::__private::serde_json::Value::Null);
                self
            }
        }
    } else {
        quote! {}
    };
    quote! { #setter #clear }
}

/// The struct as written without the helper attributes of `#[data]` and the derives it
/// adds (`field`, `serde`, `schemars`), for a struct that cannot be expanded.
pub fn bare_struct(item: &syn::ItemStruct) -> syn::ItemStruct {
    let helper = |a: &syn::Attribute| {
        ["field", "serde", "schemars"]
            .iter()
            .any(|h| a.path().is_ident(h))
    };
    let mut item = item.clone();
    item.attrs.retain(|a| !helper(a));
    for f in item.fields.iter_mut() {
        f.attrs.retain(|a| !helper(a));
    }
    item
}

/// The whole expansion.
pub fn expand(def: &DataDef) -> TokenStream {
    let item = &def.item;
    let name = &item.ident;
    let vis = &item.vis;
    let kind = def.kind;
    let (derive_paths, attrs) = derives(def);
    let field_decls = def.fields.iter().map(|f| {
        let FieldDef {
            ident, attrs, vis, ..
        } = f;
        let (ty, constraints) = match kind {
            Kind::Data => {
                let v = f.value_ty();
                (
                    quote!(::core::option::Option<#v>),
                    super::field::schema_attrs(&f.constraints),
                )
            }
            Kind::Context => {
                let t = &f.ty;
                (quote!(#t), quote!())
            }
        };
        quote! { #(#attrs)* #constraints #vis #ident: #ty }
    });
    let schemars_attr = if kind == Kind::Data {
        quote!(#[schemars(crate = "::agent_core::__private::schemars")])
    } else {
        quote!()
    };
    let generics = &item.generics;
    // The derives first: the user's `#[serde(..)]` attributes are their helpers.
    let strukt = quote! {
        #[derive(#(#derive_paths),*)]
        #[serde(crate = "::agent_core::__private::serde")]
        #schemars_attr
        #(#attrs)*
        #vis struct #name #generics {
            #(#field_decls,)*
        }
    };

    let field_enum = format_ident!("{}Field", name);
    let patch = format_ident!("{}Patch", name);
    // A `#[serde(skip)]` field is not data the engine sees: only the struct keeps it.
    let seen: Vec<&FieldDef> = def.fields.iter().filter(|f| !f.skip).collect();
    let idents: Vec<&syn::Ident> = seen.iter().map(|f| &f.ident).collect();
    let keys: Vec<&str> = seen.iter().map(|f| f.json.as_str()).collect();
    let rust_names: Vec<String> = idents.iter().map(|i| crate::diag::name(i)).collect();
    let field_docs = seen.iter().map(|f| {
        crate::diag::doc_text(&f.attrs)
            .unwrap_or_else(|| format!("The `{}` field.", crate::diag::name(&f.ident)))
    });
    let what = match kind {
        Kind::Data => "data",
        Kind::Context => "context",
    };
    let enum_doc = format!("The fields of the {what} type [`{name}`].");
    let patch_doc =
        format!("A typed write to [`{name}`]: every field optional, set with the fluent methods.");
    let setters = seen.iter().map(|f| setter(f, kind));
    let (patch_trait, patch_fn, type_trait) = match kind {
        Kind::Data => (
            quote!(IntoDataPatch),
            quote!(into_data_patch),
            quote!(DataType),
        ),
        Kind::Context => (
            quote!(IntoContextPatch),
            quote!(into_context_patch),
            quote!(ContextType),
        ),
    };
    let schema_fn = if kind == Kind::Data {
        quote! {
            /// The JSON schema of the data (field doc comments are the descriptions).
            pub fn json_schema() -> ::agent_core::__private::serde_json::Value {
                ::agent_core::__private::schemars::schema_for!(#name).to_value()
            }
        }
    } else {
        quote!()
    };
    let n = seen.len();
    let checks: Vec<TokenStream> = match kind {
        Kind::Data => seen
            .iter()
            .copied()
            .filter_map(super::field::check_expr)
            .collect(),
        Kind::Context => Vec::new(),
    };
    let calendar_asserts: Vec<TokenStream> = seen
        .iter()
        .copied()
        .filter_map(super::field::calendar_assert)
        .collect();
    let calendar_asserts = if calendar_asserts.is_empty() {
        quote!()
    } else {
        quote! {
            const _: fn() = || { #(#calendar_asserts)* };
        }
    };
    let field_checks = if checks.is_empty() {
        quote!()
    } else {
        quote! {
            fn field_checks() -> ::std::vec::Vec<::agent_core::__private::FieldCheck> {
                ::std::vec![#(#checks),*]
            }
        }
    };
    // `#[flow]` names fields as written in Rust; the runtime flow takes JSON names.
    let json_name = if kind == Kind::Data {
        quote! {
            fn json_name(field: &str) -> ::core::option::Option<&'static str> {
                match field {
                    #(#rust_names => ::core::option::Option::Some(#keys),)*
                    _ => ::core::option::Option::None,
                }
            }
        }
    } else {
        quote!()
    };
    // A data patch names its data type, so a typed directive over another one is a
    // compile error.
    let patch_of = if kind == Kind::Data {
        quote! {
            // Not listed as "the trait is implemented for .." under an error about
            // another type: our message names the fix.
            #[diagnostic::do_not_recommend]
            impl ::agent_core::__private::DataPatch for #patch {
                type Data = #name;
            }
        }
    } else {
        quote!()
    };
    let common = quote! {
        #patch_of

        #calendar_asserts

        #[doc = #enum_doc]
        #[allow(non_camel_case_types, dead_code)]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash)]
        #vis enum #field_enum {
            #(#[doc = #field_docs] #idents,)*
        }

        #[allow(dead_code)]
        impl #field_enum {
            /// Every field, in declaration order.
            pub const ALL: [Self; #n] = [#(Self::#idents),*];
            /// The field's name (its JSON key).
            pub const fn name(self) -> &'static str {
                match self {
                    #(Self::#idents => #keys,)*
                }
            }
        }

        #[doc = #patch_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::default::Default, ::core::cmp::PartialEq)]
        #[must_use]
        #[allow(dead_code)]
        #vis struct #patch {
            map: ::agent_core::__private::Patch,
        }

        #[allow(dead_code)]
        impl #patch {
            #(#setters)*
            /// Whether nothing is set.
            pub fn is_empty(&self) -> bool {
                self.map.is_empty()
            }
            /// The JSON object.
            pub fn into_patch(self) -> ::agent_core::__private::Patch {
                self.map
            }
        }

        impl ::core::convert::From<#patch> for ::agent_core::__private::Patch {
            fn from(p: #patch) -> Self {
                p.map
            }
        }

        // Not listed as "the trait is implemented for .." under an error about
        // another type: our message names the fix.
        #[diagnostic::do_not_recommend]
        impl ::agent_core::__private::#patch_trait for #patch {
            fn #patch_fn(self) -> ::agent_core::__private::Patch {
                self.map
            }
        }

        #[allow(dead_code)]
        impl #name {
            /// Start a typed write.
            pub fn patch() -> #patch {
                #patch::default()
            }
            /// Field names in declaration order.
            pub const FIELDS: &'static [&'static str] = &[#(#keys),*];
            #schema_fn
        }

        // Not listed as "the trait is implemented for .." under an error about
        // another type: our message names the fix.
        #[diagnostic::do_not_recommend]
        impl ::agent_core::__private::#type_trait for #name {
            type Field = #field_enum;
            type Patch = #patch;
            const FIELDS: &'static [&'static str] = &[#(#keys),*];
            #field_checks
            #json_name
        }
    };
    let data_only = if kind == Kind::Data {
        let view_and_callback = data_view_and_callback(def);
        quote! {
            // What `#[flow]` builds over (see `FlowData`): a type without `#[data]`
            // has no impl, so the flow reports it once and its builder stays quiet.
            #[diagnostic::do_not_recommend]
            impl ::agent_core::__private::FlowData for #name {
                type Checked = Self;
            }
            #view_and_callback
        }
    } else {
        quote!()
    };
    quote! { #strukt #common #data_only }
}

fn data_view_and_callback(def: &DataDef) -> TokenStream {
    let name = &def.item.ident;
    let vis = &def.item.vis;
    let view = format_ident!("{}View", name);
    let seen: Vec<&FieldDef> = def.fields.iter().filter(|f| !f.skip).collect();
    let modes: Vec<syn::Ident> = (0..seen.len()).map(|i| format_ident!("M{}", i)).collect();
    let idents: Vec<&syn::Ident> = seen.iter().map(|f| &f.ident).collect();
    let tys: Vec<&syn::Type> = seen.iter().map(|f| f.value_ty()).collect();
    let fvis: Vec<&syn::Visibility> = seen.iter().map(|f| &f.vis).collect();
    let docs = seen.iter().map(|f| {
        let d = crate::diag::doc_text(&f.attrs).unwrap_or_default();
        format!("{d} (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))")
    });
    let view_doc = format!(
        "What hooks and predicates of a step see of [`{name}`]: the fields the step `requires` are plain values, the others [`Unrequired`](::agent_core::typed::Unrequired) (read as an `Option<&T>`: `.get()`). Derefs to the turn's `Cx` (`context()`, `message()`, ...). Flows name each step's view `flow::step::View<'_>`."
    );
    // A `pub` type's macro is exported, so that a flow of another crate reaches it through
    // the type's path; exported macros share the crate root, hence a name unique to this
    // definition. Re-exported from where it is defined, not by a `crate::` path (rustc
    // rejects absolute paths to macro-expanded exports).
    let exported = matches!(vis, syn::Visibility::Public(_));
    let mac = if exported {
        format_ident!("__agent_data_{}_{:016x}", name, definition_site(name))
    } else {
        format_ident!("__agent_data_{}", name)
    };
    let (export, reexport) = if exported {
        (quote!(#[macro_export]), quote!(pub))
    } else {
        (quote!(), quote!(pub(crate)))
    };
    let keys: Vec<syn::Ident> = idents.iter().map(|i| (*i).clone()).collect();
    let skipped = def.fields.iter().filter(|f| f.skip).map(|f| &f.ident);
    // One marker type per field, named as the field: an `Unrequired` field names it in
    // the message of a `Display`/`Debug` use (`add `requires(city)``).
    let markers = format_ident!("__agent_fields_{}", name);
    let _ = Span::call_site();
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, dead_code, missing_docs)]
        #vis mod #markers {
            #(pub enum #idents {})*
        }

        #[doc = #view_doc]
        #[allow(dead_code)]
        #vis struct #view<'a, C, #(#modes: ::agent_core::__private::Mode = ::agent_core::__private::Opt),*> {
            #(#[doc = #docs] #fvis #idents: <#modes as ::agent_core::__private::Mode>::Of<'a, #tys, #markers::#idents>,)*
            __cx: &'a ::agent_core::__private::Cx<'a, #name, C>,
        }

        #[allow(dead_code)]
        impl<'a, C, #(#modes: ::agent_core::__private::Mode),*> #view<'a, C, #(#modes),*> {
            /// The view of the turn, or `None` when a field the step requires is missing.
            #[doc(hidden)]
            pub fn __new(cx: &'a ::agent_core::__private::Cx<'a, #name, C>) -> ::core::option::Option<Self> {
                let data = cx.data();
                ::core::option::Option::Some(Self {
                    #(#idents: <#modes as ::agent_core::__private::Mode>::get::<_, #markers::#idents>(&data.#idents)?,)*
                    __cx: cx,
                })
            }
            /// The turn's view (data, context, message, history, dispatch).
            pub fn cx(&self) -> &'a ::agent_core::__private::Cx<'a, #name, C> {
                self.__cx
            }
        }

        impl<'a, C, #(#modes: ::agent_core::__private::Mode),*> ::core::ops::Deref for #view<'a, C, #(#modes),*> {
            type Target = ::agent_core::__private::Cx<'a, #name, C>;
            fn deref(&self) -> &Self::Target {
                self.__cx
            }
        }

        #[doc(hidden)]
        impl<'a, C: 'a, #(#modes: ::agent_core::__private::Mode),*> ::agent_core::__private::ViewOf<'a, C, (#(#modes,)*)> for #name {
            type View = #view<'a, C, #(#modes),*>;
        }

        #[doc(hidden)]
        #[allow(unused_macros)]
        #export
        macro_rules! #mac {
            ($($t:tt)*) => {
                ::agent_core::__private::data_callback! { [#(#keys)*] [#(#skipped)*] $($t)* }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        #reexport use #mac as #name;
    }
}

/// A number for this `#[data]` in this compilation: where it is written (file, line,
/// column of the attribute, the type's name) and how many came before it (one file
/// included twice has one site). 0 outside a compiler run (the expansion snapshots).
fn definition_site(name: &syn::Ident) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static EXPANDED: AtomicU64 = AtomicU64::new(0);
    if !proc_macro::is_available() {
        return 0;
    }
    let mut h = std::hash::DefaultHasher::new();
    name.to_string().hash(&mut h);
    let site = proc_macro::Span::call_site();
    site.file().hash(&mut h);
    site.line().hash(&mut h);
    site.column().hash(&mut h);
    EXPANDED.fetch_add(1, Ordering::Relaxed).hash(&mut h);
    h.finish()
}
