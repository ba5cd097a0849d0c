//! Checks of a `#[tool]`: name, description, signature.

use super::parse::ToolDef;
use crate::diag::Errors;

/// Whether a tool name is valid for every vendor API (`[A-Za-z0-9_-]{1,64}`).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The effect classes `#[tool(effect = ..)]` accepts (`agent_core::tool::Effect`).
pub const EFFECTS: [&str; 3] = ["pure", "idempotent", "once"];

/// Record every problem of the tool.
pub fn validate(def: &ToolDef, errors: &mut Errors) {
    if let Some(e) = &def.effect {
        let word = e.to_string();
        if !EFFECTS.contains(&word.as_str()) {
            let known: Vec<String> = EFFECTS.iter().map(|s| (*s).to_owned()).collect();
            errors.push(
                e.span(),
                format!(
                    "unknown tool effect `{word}`; {}",
                    crate::diag::suggest(&word, &known, "effects")
                ),
            );
        }
    }
    if !valid_name(&def.name) {
        errors.push(
            def.name_span,
            format!(
                "invalid tool name `{}`: model APIs accept 1 to 64 ASCII letters, digits, `_` and `-`",
                def.name
            ),
        );
    }
    if def.description.is_none() {
        errors.push(
            def.item.sig.ident.span(),
            format!(
                "tool `{}` has no description: add a doc comment (`/// What it does.`) or `#[tool(description = \"..\")]`; the model reads it to decide when to call the tool",
                def.name
            ),
        );
    }
    for e in &def.bad_params {
        errors.add(e.clone());
    }
    if !def.item.sig.generics.params.is_empty() {
        errors.push_spanned(
            &def.item.sig.generics,
            "a `#[tool]` fn cannot be generic: its argument schema is sent to the model",
        );
    }
    if matches!(def.item.sig.output, syn::ReturnType::Default) {
        errors.push(
            def.item.sig.ident.span(),
            "a `#[tool]` returns `Result<ToolOutput, ToolError>`",
        );
    }
    crate::chains::check_block(&def.item.block, errors);
    let mut seen: Vec<String> = Vec::new();
    for a in &def.args {
        let s = crate::diag::name(&a.ident);
        if seen.contains(&s) {
            errors.push(a.ident.span(), format!("duplicate tool parameter `{s}`"));
        }
        seen.push(s);
    }
}
