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
    if let Some(t) = &def.summary {
        let names: Vec<String> = def
            .args
            .iter()
            .map(|a| crate::diag::name(&a.ident))
            .collect();
        for p in placeholders(&t.value()) {
            if !names.contains(&p) {
                errors.push(
                    t.span(),
                    format!(
                        "`{{{p}}}` in the summary of tool `{}` is not one of its arguments; {}",
                        def.name,
                        crate::diag::suggest(&p, &names, "arguments")
                    ),
                );
            }
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
    let sig = &def.item.sig;
    if let Some(u) = &sig.unsafety {
        errors.push(
            u.span,
            format!("a `#[tool]` cannot be an `unsafe fn`: the model calls `{}` with arguments it chose, and no caller is there to uphold a safety contract; make it a safe fn and keep the `unsafe {{ .. }}` block inside, with its safety argument", def.name),
        );
    }
    if let Some(abi) = &sig.abi {
        errors.push_spanned(
            abi,
            "a `#[tool]` cannot be an `extern` fn: the agent calls it as a Rust fn; remove the ABI",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.push_spanned(
            v,
            "a `#[tool]` cannot be variadic: each argument is named in its schema",
        );
    }
    if !def.item.sig.generics.params.is_empty() {
        errors.push_spanned(
            &def.item.sig.generics,
            "a `#[tool]` fn cannot be generic: its argument schema is sent to the model",
        );
    }
    if let Some((ty, why)) = wrong_return(&def.item.sig.output) {
        errors.push_spanned(ty, why);
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

/// The last path segment's name of `ty` (`String` for `std::string::String`), `str`
/// for a reference to one.
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().map(|s| s.ident.to_string())
        }
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        _ => None,
    }
}

/// A return type that is surely not a tool result (`String`, `Result<String, _>`,
/// `ToolOutput` without the `Result`), with the message naming the fix. Other types
/// (aliases included) are checked by the compiler through `IntoToolResult`.
pub fn wrong_return(output: &syn::ReturnType) -> Option<(&syn::Type, String)> {
    let syn::ReturnType::Type(_, ty) = output else {
        return None;
    };
    let text = ["String", "str", "Cow"];
    let name = type_name(ty)?;
    if text.contains(&name.as_str()) {
        return Some((ty, "a `#[tool]` returns `Result<ToolOutput, ToolError>`, not text: return `Ok(ToolOutput::text(..))`".into()));
    }
    if name == "ToolOutput" {
        return Some((ty, "a `#[tool]` returns `Result<ToolOutput, ToolError>`: write `-> Result<ToolOutput, ToolError>` and return `Ok(..)`".into()));
    }
    if name != "Result" {
        return None;
    }
    let syn::Type::Path(p) = &**ty else {
        return None;
    };
    let syn::PathArguments::AngleBracketed(a) = &p.path.segments.last()?.arguments else {
        return None;
    };
    let Some(syn::GenericArgument::Type(ok)) = a.args.first() else {
        return None;
    };
    let ok_name = type_name(ok)?;
    text.contains(&ok_name.as_str()).then(|| {
        (
            ok,
            "a `#[tool]` returns `Result<ToolOutput, ToolError>`: write `ToolOutput` here and wrap the text, `Ok(ToolOutput::text(..))`".to_owned(),
        )
    })
}

/// The `{name}` placeholders of a summary template (`{{` and `}}` are literal braces).
fn placeholders(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        if let Some(stripped) = after.strip_prefix('{') {
            rest = stripped;
            continue;
        }
        let Some(end) = after.find('}') else { break };
        out.push(after[..end].trim().to_owned());
        rest = &after[end + 1..];
    }
    out
}
