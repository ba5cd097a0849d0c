//! Prompt composition. Static sections (agent persona and rules, flow and step text)
//! are rendered once at build time; per turn only the dynamic parts are added:
//! conditional instructions, collected data, transition context, `append_prompt`.

use std::fmt::Write as _;

use crate::flow::Flow;
use crate::hook::Cx;
use crate::instruction::Instruction;
use crate::step::StepKind;

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

pub(crate) fn render_flow_sections<D, C>(flow: &mut Flow<D, C>, schema: &crate::data::DataSchema) {
    let mut x = if flow.collectable.is_empty() {
        String::new()
    } else {
        String::from("Fields of `data` (details the user gives for this task):\n")
    };
    for field in &flow.collectable {
        let prop = schema.property(field);
        let desc = prop
            .and_then(|p| p.get("description"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        // The schema sent to the model leaves the engine's `x-` rules out; this one
        // the model can follow, so the field list says it.
        let not_past =
            prop.and_then(|p| p.get("x-not-past")) == Some(&serde_json::Value::Bool(true));
        let _ = writeln!(
            x,
            "- {field}{}{desc}{}",
            if desc.is_empty() { "" } else { ": " },
            if not_past { " (today or later)" } else { "" }
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
    for step in &mut flow.steps {
        let mut s = String::new();
        match &step.kind {
            StepKind::Model => {
                let prompt = match (&step.prompt, step.collect.is_empty()) {
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
                };
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

/// Per flow: the lines offering the model a hand-over to each other flow that says
/// `when` it applies (empty when there is none), and the ids it may name, in the order
/// listed. A flow without `when` is reached by code only (a directive, a branch,
/// `on_complete`): offered by its title, a small model handed users to it for anything.
///
/// One yes/no per flow, judged before the reply is written (`handoff` sorts before
/// `message`): measured on Qwen2.5 1.5B over 14 help-desk openings × 4 seeds, a single
/// id-or-null enum written after the message routed 48 % right (a small model names
/// the first id listed), one boolean per flow before the message 86 %.
pub(crate) fn render_switch_sections<D, C>(
    flows: &[Flow<D, C>],
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut sections = Vec::with_capacity(flows.len());
    let mut ids = Vec::with_capacity(flows.len());
    for f in flows {
        let others: Vec<(&Flow<D, C>, &str)> = flows
            .iter()
            .filter(|g| g.id != f.id)
            .filter_map(|g| Some((g, g.when.as_deref()?)))
            .collect();
        if others.is_empty() {
            sections.push(String::new());
            ids.push(Vec::new());
            continue;
        }
        let mut s = String::from(
            "Other tasks: judge whether each holds for the user's latest message, true or false, in `handoff`:\n",
        );
        for (g, w) in &others {
            let _ = writeln!(s, "- {}: {w}", g.id);
        }
        sections.push(s);
        ids.push(others.iter().map(|(g, _)| g.id.to_string()).collect());
    }
    (sections, ids)
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
