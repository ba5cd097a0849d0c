//! The Mermaid diagram of a flow, rendered at compile time.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

use super::graph::{Node, successors};
use super::model::*;
use super::validate::{MAX_CFG_STEPS, cfg_combination, combine};

fn esc(s: &str) -> String {
    s.replace('"', "#quot;").replace('\n', " ")
}

fn tokens_text(t: &impl ToTokens) -> String {
    t.to_token_stream()
        .to_string()
        .replace(" . ", ".")
        .replace(" :: ", "::")
        .replace(" (", "(")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" ,", ",")
}

/// A predicate as written: `|b| b.guests > 8`.
fn expr_text(e: &syn::Expr) -> String {
    if let syn::Expr::Closure(c) = e {
        let params: Vec<String> = c.inputs.iter().map(tokens_text).collect();
        return format!("|{}| {}", params.join(", "), tokens_text(&c.body));
    }
    tokens_text(e)
}

fn cond_text(c: &Cond) -> String {
    match c {
        Cond::If(e) => format!("if {}", expr_text(e)),
        Cond::When(w) => w.value(),
    }
}

fn path_text(p: &syn::Path) -> String {
    p.segments
        .iter()
        .map(|s| crate::diag::name(&s.ident))
        .collect::<Vec<_>>()
        .join("::")
}

/// The `DIAGRAM` const of the flow module. With `#[cfg]`-gated steps, one definition
/// per distinct diagram, each behind the `#[cfg(..)]` of the on/off combinations of
/// those steps that draw it (the macro cannot evaluate cfg predicates; exactly one of
/// the combinations holds in a build). Past [`MAX_CFG_STEPS`] gated steps, one diagram
/// shows every step.
pub fn consts(def: &FlowDef) -> TokenStream {
    let doc = quote! {
        /// The Mermaid diagram of the flow (steps, branch labels, cross-flow edges).
        #[allow(dead_code)]
    };
    let gated: Vec<usize> = (0..def.steps.len())
        .filter(|&i| !def.steps[i].cfg.is_empty())
        .collect();
    if gated.is_empty() || gated.len() > MAX_CFG_STEPS {
        let d = render(def, &vec![true; def.steps.len()]);
        return quote!(#doc pub const DIAGRAM: &str = #d;);
    }
    // (diagram, the combinations that draw it), in order of first appearance.
    let mut found: Vec<(String, Vec<usize>)> = Vec::new();
    for c in 0..1usize << gated.len() {
        let mut present = vec![true; def.steps.len()];
        for (bit, &i) in gated.iter().enumerate() {
            present[i] = c & (1 << bit) != 0;
        }
        let d = render(def, &present);
        match found.iter_mut().find(|(f, _)| *f == d) {
            Some((_, cs)) => cs.push(c),
            None => found.push((d, vec![c])),
        }
    }
    if let [(d, _)] = found.as_slice() {
        return quote!(#doc pub const DIAGRAM: &str = #d;);
    }
    let defs = found.iter().map(|(d, cs)| {
        let preds: Vec<TokenStream> = cs
            .iter()
            .map(|&c| cfg_combination(def, &gated, c))
            .collect();
        let pred = combine("any", &preds);
        quote! {
            #[cfg(#pred)]
            #doc
            pub const DIAGRAM: &str = #d;
        }
    });
    quote!(#(#defs)*)
}

/// The node id of a step. Every node id has a prefix by kind (`s_` steps, `f_` flows,
/// `c_` steps of other flows, `d_` directives, `e_` the end and what follows it), so no
/// step name can clash with another node or with a Mermaid keyword (`end`).
fn step_node(name: &str) -> String {
    format!("s_{name}")
}

/// `flowchart TD` source for the flow with the steps in `present` (a step whose
/// `#[cfg(..)]` is off is not drawn, and the steps after it follow in its place).
pub fn render(def: &FlowDef, present: &[bool]) -> String {
    let mut out = String::from("flowchart TD\n");
    let title = def
        .flow
        .title
        .as_ref()
        .map(syn::LitStr::value)
        .unwrap_or_else(|| crate::diag::name(&def.ident));
    out.push_str(&format!(
        "    %% flow `{}`: {}\n",
        crate::diag::name(&def.ident),
        esc(&title)
    ));
    for s in def
        .steps
        .iter()
        .zip(present)
        .filter(|(_, p)| **p)
        .map(|(s, _)| s)
    {
        let id = crate::diag::name(&s.ident);
        let mut label = id.clone();
        let id = step_node(&id);
        if !s.collect.idents.is_empty() {
            let f: Vec<String> = s.collect.idents.iter().map(crate::diag::name).collect();
            label.push_str(&format!(" · collect {}", f.join(", ")));
        }
        let node = match &s.shape {
            Shape::Model => format!("    {id}[\"{}\"]\n", esc(&label)),
            Shape::Auto(_) => format!("    {id}{{{{\"{} (auto)\"}}}}\n", esc(&label)),
            Shape::Reply(r) => format!("    {id}>\"{}: {}\"]\n", esc(&label), esc(&r.value())),
        };
        out.push_str(&node);
    }
    let mut extra = Vec::new();
    let mut uses_end = false;
    let mut directive_n = 0;
    // A step of that name exists, but none of its definitions is in this build.
    let left_out = |t: &syn::Ident| {
        let mut of = def
            .steps
            .iter()
            .zip(present)
            .filter(|(s, _)| crate::diag::name(&s.ident) == crate::diag::name(t));
        of.clone().next().is_some() && !of.any(|(_, p)| *p)
    };
    for (i, s) in def.steps.iter().enumerate().filter(|(i, _)| present[*i]) {
        let from = step_node(&crate::diag::name(&s.ident));
        let mut falls_through = true;
        if let Some(b) = &s.branches {
            for e in &b.entries {
                let label = match &e.label {
                    Some(l) => l.value(),
                    None if e.conds.is_empty() => "else".to_string(),
                    None => e
                        .conds
                        .iter()
                        .map(cond_text)
                        .collect::<Vec<_>>()
                        .join(" and "),
                };
                let to = match &e.target {
                    // A branch to a step this build leaves out goes nowhere (it is a
                    // compile error behind the same `#[cfg]`).
                    Target::Step(t) if left_out(t) => {
                        if e.conds.is_empty() {
                            falls_through = false;
                        }
                        continue;
                    }
                    Target::Step(t) => step_node(&crate::diag::name(t)),
                    Target::Flow(p) => {
                        let name = path_text(p);
                        let id = format!("f_{}", name.replace("::", "_"));
                        extra.push(format!("    {id}[[\"{}\"]]\n", esc(&name)));
                        id
                    }
                    Target::CrossStep(p) => {
                        let name = path_text(p);
                        let id = format!("c_{}", name.replace("::", "_"));
                        extra.push(format!("    {id}[[\"{}\"]]\n", esc(&name)));
                        id
                    }
                    Target::Directive(d) => {
                        directive_n += 1;
                        let id = format!("d_{directive_n}");
                        extra.push(format!("    {id}([\"{}\"])\n", esc(&tokens_text(d))));
                        id
                    }
                };
                out.push_str(&format!("    {from} -->|\"{}\"| {to}\n", esc(&label)));
                if e.conds.is_empty() && !matches!(e.target, Target::Directive(_)) {
                    falls_through = false;
                }
            }
        }
        if falls_through {
            for n in successors(def, i, present) {
                match n {
                    Node::Step(j) => {
                        let t = &def.steps[j];
                        let cond: Vec<String> = t
                            .if_
                            .iter()
                            .map(|e| format!("if {}", expr_text(e)))
                            .chain(t.when.iter().map(syn::LitStr::value))
                            .collect();
                        if cond.is_empty() {
                            out.push_str(&format!(
                                "    {from} --> {}\n",
                                step_node(&crate::diag::name(&t.ident))
                            ));
                        } else {
                            out.push_str(&format!(
                                "    {from} -->|\"{}\"| {}\n",
                                esc(&cond.join(" and ")),
                                step_node(&crate::diag::name(&t.ident))
                            ));
                        }
                    }
                    Node::Exit => {
                        uses_end = true;
                        out.push_str(&format!("    {from} --> e_end\n"));
                    }
                }
            }
        }
    }
    if let Some(t) = &def.flow.on_complete {
        let name = match t {
            Target::Flow(p) | Target::CrossStep(p) => path_text(p),
            Target::Step(i) => crate::diag::name(i),
            Target::Directive(d) => tokens_text(d),
        };
        uses_end = true;
        extra.push(format!(
            "    e_on_complete[[\"{}\"]]\n    e_end -.->|on_complete| e_on_complete\n",
            esc(&name)
        ));
    }
    extra.dedup();
    for e in extra {
        out.push_str(&e);
    }
    if uses_end {
        out.push_str("    e_end(((end)))\n");
    }
    out
}
