//! Prompt composition. Static sections (agent persona and rules, flow and step text)
//! are rendered once at build time; per turn only the dynamic parts are added:
//! conditional instructions, collected data, transition context, `append_prompt`.

use std::fmt::Write as _;

use crate::data::DataSchema;
use crate::flow::Flow;
use crate::hook::Cx;
use crate::instruction::Instruction;
use crate::step::{Step, StepKind};

pub(crate) fn render_agent_section<D, C>(
    name: &str,
    persona: Option<&str>,
    goal: Option<&str>,
    instructions: &[Instruction<D, C>],
    glossary: &[(String, String)],
    knowledge: &[String],
) -> String {
    let mut s = format!("You are {name}.");
    if let Some(p) = persona {
        s.push(' ');
        s.push_str(p);
    }
    s.push('\n');
    if let Some(g) = goal {
        let _ = writeln!(s, "Goal: {g}");
    }
    render_static_instructions(&mut s, "Rules", instructions);
    if !glossary.is_empty() {
        s.push_str("Glossary:\n");
        for (t, d) in glossary {
            let _ = writeln!(s, "- {t}: {d}");
        }
    }
    if !knowledge.is_empty() {
        s.push_str("Knowledge:\n");
        for k in knowledge {
            let _ = writeln!(s, "- {k}");
        }
    }
    s
}

fn render_static_instructions<D, C>(out: &mut String, title: &str, list: &[Instruction<D, C>]) {
    let mut first = true;
    for i in list.iter().filter(|i| i.is_static()) {
        if first {
            let _ = writeln!(out, "{title}:");
            first = false;
        }
        i.render(out);
    }
}

/// A field's declared synonyms for the field list (` ("just me" = 1)`): the model
/// reads them as the values they stand for.
fn said_as(prop: Option<&serde_json::Value>) -> String {
    let Some(serde_json::Value::Object(map)) = prop.and_then(|p| p.get("x-synonyms")) else {
        return String::new();
    };
    let parts: Vec<String> = map
        .iter()
        .filter_map(|(value, phrases)| {
            let phrases: Vec<String> = phrases
                .as_array()?
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(|p| format!("\"{p}\""))
                .collect();
            (!phrases.is_empty()).then(|| format!("{} = {value}", phrases.join("/")))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

pub(crate) fn render_flow_sections<D, C>(flow: &mut Flow<D, C>, schema: &crate::data::DataSchema) {
    let mut x = if flow.collectable.is_empty() {
        String::new()
    } else {
        String::from("Fields of `data` (details the user gives for this task):\n")
    };
    for field in &flow.collectable {
        let prop = schema.property(field);
        let desc = field_desc(schema, field);
        // The schema sent to the model leaves the engine's `x-` rules out; this one
        // the model can follow, so the field list says it.
        let not_past =
            prop.and_then(|p| p.get("x-not-past")) == Some(&serde_json::Value::Bool(true));
        let _ = writeln!(
            x,
            "- {field}{}{desc}{}{}",
            if desc.is_empty() { "" } else { ": " },
            if not_past { " (today or later)" } else { "" },
            said_as(prop)
        );
    }
    flow.extract_section = x;
    let mut s = format!("Current task: {}.", flow.title);
    if !flow.description.is_empty() {
        s.push(' ');
        s.push_str(&flow.description);
    }
    s.push('\n');
    render_static_instructions(&mut s, "Task rules", &flow.instructions);
    flow.section = s;
    flow.reply_labels = reply_labels(&flow.steps);
    for step in &mut flow.steps {
        let mut s = String::new();
        match &step.kind {
            StepKind::Model => {
                let prompt = step_task(step);
                // No "(collects: ..)" after a written prompt: the field list and `data`
                // already say what to fill, and small models read the annotation
                // out to the user.
                let _ = writeln!(s, "Step `{}`: {prompt}", step.id);
            }
            StepKind::Auto | StepKind::Reply(_) => {}
        }
        render_static_instructions(&mut s, "Step rules", &step.instructions);
        step.section = s;
    }
}

/// Per step, the label a reply gives for what it asks (`reply_asks_for`): the fields
/// a model step collects ("city", "check_in and guests"), or its id when it collects
/// nothing or another step has the same fields; `None` for steps the model does not
/// render. Static per flow, so the schema (and a provider's cached prefix) is the same
/// every call. Measured on Qwen2.5 1.5B over 15 speculative calls: a yes/no "did you
/// re-ask" written after the message followed the instruction's wording (all true or
/// all false), a label for the message written after it matched the message in 13
/// (the two misses were copies of the previous reply), a label written before the
/// message in 7.
pub(crate) fn reply_labels<D, C>(steps: &[Step<D, C>]) -> Vec<Option<std::sync::Arc<str>>> {
    let by_fields: Vec<Option<String>> = steps
        .iter()
        .map(|s| {
            (matches!(s.kind, StepKind::Model) && !s.collect.is_empty()).then(|| {
                s.collect
                    .iter()
                    .map(|f| f.as_ref())
                    .collect::<Vec<_>>()
                    .join(" and ")
            })
        })
        .collect();
    steps
        .iter()
        .zip(&by_fields)
        .map(|(s, label)| {
            if !matches!(s.kind, StepKind::Model) {
                return None;
            }
            let unique = label.as_ref().filter(|l| {
                by_fields.iter().filter(|o| o.as_ref() == Some(l)).count() == 1
                    && !steps.iter().any(|t| t.id.as_ref() == l.as_str())
            });
            Some(match unique {
                Some(l) => std::sync::Arc::from(l.as_str()),
                None => s.id.clone(),
            })
        })
        .collect()
}

/// What a model step asks the model to do: its prompt, else a question for what it
/// collects.
pub(crate) fn step_task<D, C>(step: &Step<D, C>) -> String {
    match (&step.prompt, step.collect.is_empty()) {
        (Some(p), _) => p.clone(),
        (None, false) => format!(
            "Ask the user for: {}.",
            step.collect
                .iter()
                .map(|f| f.as_ref())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (None, true) => "Continue the conversation.".to_owned(),
    }
}

/// The step a hand-over to `flow` lands on, when another flow's reply may be written
/// for it ([`crate::config::AgentConfig::preview_handoffs`]): the entry step, if the
/// model speaks there and nothing runs first (no `on_enter` or `prepare` hook, whose
/// output belongs in the prompt; no tool waiting for the user's yes, which its
/// question summarises).
pub(crate) fn opening_step<D, C>(flow: &Flow<D, C>) -> Option<usize> {
    let j = flow.entry();
    let step = flow.steps.get(j)?;
    (matches!(step.kind, StepKind::Model)
        && step.on_enter.is_none()
        && step.prepare.is_none()
        && !step.offers_agreed_tool()
        && flow.hooks.on_enter.is_none())
    .then_some(j)
}

/// A field's description (its doc comment) for a field list, on one line.
pub(crate) fn field_desc(schema: &DataSchema, field: &str) -> String {
    one_line(
        schema
            .property(field)
            .and_then(|p| p.get("description"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or(""),
    )
}

/// `text` on one line: a list item in the prompt is one line, and a doc comment
/// wrapped over several (schemars keeps its line breaks) would break the list.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Per flow: the lines offering the model a hand-over to each other flow that says
/// `when` it applies (empty when there is none), and the ids it may name, in the order
/// listed. A flow without `when` is reached by code only (a directive, a branch,
/// `on_complete`): offered by its title, a small model handed users to it for anything.
///
/// With `preview`, each flow handed to is listed with its first step, and the fields
/// that step's flow collects join this flow's `data`: a reply that hands over is
/// written for the flow handed to (one call per hand-over instead of two).
///
/// One yes/no per flow, judged before the reply is written (`handoff` sorts before
/// `message`): measured on Qwen2.5 1.5B over 14 help-desk openings × 4 seeds, a single
/// id-or-null enum written after the message routed 48 % right (a small model names
/// the first id listed), one boolean per flow before the message 86 %.
pub(crate) fn render_switch_sections<D, C>(
    flows: &[Flow<D, C>],
    schema: &DataSchema,
    preview: bool,
) -> Switches {
    let mut out = Switches::default();
    for f in flows {
        let others: Vec<(&Flow<D, C>, &str)> = flows
            .iter()
            .filter(|g| g.id != f.id)
            .filter_map(|g| Some((g, g.when.as_deref()?)))
            .collect();
        if others.is_empty() {
            out.sections.push(String::new());
            out.ids.push(Vec::new());
            out.fields.push(Vec::new());
            continue;
        }
        let mut s = String::new();
        let mut fields: Vec<(std::sync::Arc<str>, &str)> = Vec::new();
        let openings: Vec<Option<usize>> = others
            .iter()
            .map(|(g, _)| preview.then(|| opening_step(g)).flatten())
            .collect();
        if preview {
            for ((g, _), j) in others.iter().zip(&openings) {
                if j.is_none() {
                    continue;
                }
                for c in &g.collectable {
                    if !f.collectable.contains(c) && !fields.iter().any(|(x, _)| x == c) {
                        fields.push((c.clone(), g.id.as_ref()));
                    }
                }
            }
        }
        if !fields.is_empty() {
            s.push_str("Fields of `data` for the other tasks (null unless the user states it):\n");
            for (field, owner) in &fields {
                let desc = field_desc(schema, field);
                let _ = writeln!(
                    s,
                    "- {field} ({owner}){}{desc}",
                    if desc.is_empty() { "" } else { ": " }
                );
            }
        }
        s.push_str("Other tasks: judge whether each holds for the user's latest message, true or false, in `handoff`");
        if openings.iter().any(Option::is_some) {
            s.push_str(". If one holds, your message starts that task: do its first step");
        }
        s.push_str(":\n");
        for ((g, w), j) in others.iter().zip(&openings) {
            match j {
                Some(j) => {
                    let _ = writeln!(
                        s,
                        "- {}: {w}. First step: {}",
                        g.id,
                        step_task(&g.steps[*j])
                    );
                }
                None => {
                    let _ = writeln!(s, "- {}: {w}", g.id);
                }
            }
        }
        out.sections.push(s);
        out.ids
            .push(others.iter().map(|(g, _)| g.id.to_string()).collect());
        out.fields
            .push(fields.into_iter().map(|(c, _)| c).collect());
    }
    out
}

/// Per flow (by index), what [`render_switch_sections`] made.
#[derive(Default)]
pub(crate) struct Switches {
    /// The hand-over lines of the system prompt.
    pub(crate) sections: Vec<String>,
    /// The flows it may hand over to, in the order listed.
    pub(crate) ids: Vec<Vec<String>>,
    /// Fields the answer's `data` carries for a hand-over's first step (collected by
    /// a flow handed to, not by this one).
    pub(crate) fields: Vec<Vec<std::sync::Arc<str>>>,
}

/// How the classifier sees a flow it may route to: `title (when …): description`.
pub(crate) fn route_description(title: &str, when: Option<&str>, description: &str) -> String {
    let mut desc = title.to_owned();
    if let Some(w) = when {
        desc.push_str(" (when ");
        desc.push_str(w);
        desc.push(')');
    }
    if !description.is_empty() {
        desc.push_str(": ");
        desc.push_str(description);
    }
    desc
}

/// Append the `if` instructions that hold this turn.
pub(crate) fn render_dynamic_instructions<D, C>(
    out: &mut String,
    list: &[Instruction<D, C>],
    cx: &Cx<'_, D, C>,
) {
    for i in list {
        if let Some(p) = &i.if_
            && crate::guard::test(p, cx, || "`if` predicate of an instruction".into())
        {
            i.render(out);
        }
    }
}

/// Rough token estimate (4 characters per token) for history budgeting.
pub(crate) fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}
