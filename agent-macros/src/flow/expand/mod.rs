//! Code generation for `#[flow]`: the orchestration and the names the parts share.
//!
//! [`parent`] emits the items beside the module (flow type, aliases, view markers, the
//! data type's callback), [`module`] the module itself (typed step ids, views, hooks and
//! `flow()`), [`builder`] the `Flow::builder(..)` chain inside `flow()`, and [`wrappers`]
//! the predicate closures, hook wrapper structs and directive targets the chain takes.

mod builder;
mod module;
mod parent;
mod wrappers;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::model::*;
use crate::diag::name;

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

/// The flow type's name for the module name `module`: `booking` → `BookingFlow`.
pub fn flow_type_name(module: &str) -> String {
    format!("{}Flow", camel(module))
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

/// The whole expansion.
pub fn expand(def: &FlowDef, absent: &[crate::flow::validate::AbsentField]) -> TokenStream {
    let module = &def.ident;
    let names = Names {
        // Spanned on `data = ..`: the alias is `<Data as FlowData>::Checked`, and a data
        // type without `#[data]` is then reported at its name wherever the alias is used
        // (rustc shows the error once).
        d: format_ident!(
            "__agent_flow_{}_Data",
            module,
            span = def
                .flow
                .data
                .as_ref()
                .and_then(|p| p.segments.last())
                .map_or_else(proc_macro2::Span::call_site, |s| s.ident.span())
        ),
        c: format_ident!("__agent_flow_{}_Context", module),
        prefix: format_ident!("__agent_flow_{}", module),
    };
    let step_names: Vec<String> = def.steps.iter().map(|s| name(&s.ident)).collect();
    // Steps that survive (duplicates dropped so rustc reports nothing twice).
    let mut unique: Vec<&StepDef> = Vec::new();
    for s in &def.steps {
        // A step with a reserved name is reported; generating it would clash.
        if crate::flow::validate::is_reserved(&name(&s.ident)) {
            continue;
        }
        if !unique
            .iter()
            .any(|u| name(&u.ident) == name(&s.ident) && !u.cfg_alternative(s))
        {
            unique.push(s);
        }
    }

    let parent = parent::parent(def, &names, &unique, absent);
    let module = module::module(def, &names, &unique, &step_names);
    quote! {
        #parent

        #module
    }
}
