//! Flow diagrams: a flow as a Mermaid `flowchart`, for documentation pages and for UIs
//! that show where a conversation is.
//!
//! One node per step, shaped by kind: a rectangle for a model step, a hexagon for an
//! `auto` step, a stadium for a `reply` step; `end` steps carry the `terminal` class.
//! Edges follow the engine's rules: the linear successor of a step that is not `end` is
//! the run of conditional steps after it (labelled with their `when` text, or `if` for a
//! code predicate) up to the first unconditional one; branch entries are labelled with
//! their label, else their conditions (`else` for the fallback of a table). Branch
//! targets that are other flows or directives become nodes of their own.
//!
//! Node ids are derived from step ids (`s_<id>` for identifier-like ids, `s<index>`
//! otherwise), so a UI can highlight the current step with
//! [`Flow::mermaid_node_id`] or [`Flow::mermaid_with_current`]. Labels are quoted and
//! escaped with Mermaid entity codes, so any text is safe.
//!
//! ```
//! use agent_core::prelude::*;
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Order { item: Option<String> }
//!
//! let flow: Flow<Order, ()> = Flow::builder("order")
//!     .step(Step::model("ask_item").collect(["item"]))
//!     .step(Step::reply("thanks", "Thank you!").end())
//!     .build()
//!     .unwrap();
//! assert_eq!(
//!     flow.mermaid(),
//!     "flowchart TD\n    s_ask_item[\"ask_item\"]\n    s_thanks([\"thanks\"])\n    \
//!      s_ask_item --> s_thanks\n    classDef terminal stroke-width:3px\n    \
//!      class s_thanks terminal\n"
//! );
//! ```

use std::fmt::Write as _;

use crate::branch::Target;
use crate::directive::{Directive, Position};
use crate::flow::Flow;
use crate::flow::edges::fallback_moves;
use crate::step::{Step, StepKind};

/// Style of the highlighted node added by [`Flow::mermaid_with_current`].
const CURRENT_STYLE: &str = "fill:#ffe08a,stroke:#b8860b,stroke-width:3px";

impl<D, C> Flow<D, C> {
    /// The flow as a Mermaid `flowchart TD` (see the [module docs](crate::graph)).
    pub fn mermaid(&self) -> String {
        render(self, None)
    }

    /// [`Flow::mermaid`] with the given step (if it is one of this flow's steps) in the
    /// `current` class, styled to stand out.
    pub fn mermaid_with_current(&self, step: Option<&str>) -> String {
        render(self, step.and_then(|s| self.step_pos(s)))
    }

    /// The Mermaid node id of a step of this flow.
    pub fn mermaid_node_id(&self, step: &str) -> Option<String> {
        self.step_pos(step).map(|i| step_node(self, i))
    }
}

/// Whether an id can be used in a node id as is.
fn is_plain(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `s_<id>` for identifier-like ids, else `s<index>` (never equal to an `s_` id).
fn step_node<D, C>(flow: &Flow<D, C>, idx: usize) -> String {
    let id = flow.steps[idx].id();
    if is_plain(id) {
        format!("s_{id}")
    } else {
        format!("s{idx}")
    }
}

/// A label as a quoted Mermaid string: quotes, entity starts, markup and pipes become
/// entity codes; line breaks become spaces.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '|' => out.push_str("#124;"),
            '`' => out.push_str("#96;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A condition label: `if` for code predicates, then the `when` texts, joined by `and`.
fn condition_label(code: bool, whens: &[String]) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    if code {
        parts.push("if");
    }
    parts.extend(whens.iter().map(String::as_str));
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// One line describing a directive.
fn describe(d: &Directive) -> String {
    let mut parts: Vec<String> = Vec::new();
    match &d.position {
        Some(Position::GoTo(g)) => parts.push(format!("go to flow {}", g.flow)),
        Some(Position::GoToStep(g)) => match &g.flow {
            Some(f) => parts.push(format!("go to step {f}.{}", g.step)),
            None => parts.push(format!("go to step {}", g.step)),
        },
        Some(Position::Complete(c)) => match &c.next {
            Some(next) => parts.push(format!("complete, then {}", describe(next))),
            None => parts.push("complete".into()),
        },
        Some(Position::Abort(a)) => match &a.reason {
            Some(r) => parts.push(format!("abort: {r}")),
            None => parts.push("abort".into()),
        },
        Some(Position::Reset(r)) => parts.push(
            if r.clear_data {
                "reset, clear data"
            } else {
                "reset"
            }
            .into(),
        ),
        None => {}
    }
    if d.reply.is_some() {
        parts.push("reply".into());
    }
    if let Some(p) = &d.data {
        let keys: Vec<&str> = p.keys().map(String::as_str).collect();
        parts.push(format!("data: {}", keys.join(", ")));
    }
    if let Some(p) = &d.context {
        let keys: Vec<&str> = p.keys().map(String::as_str).collect();
        parts.push(format!("context: {}", keys.join(", ")));
    }
    if parts.is_empty() {
        "no effect".into()
    } else {
        parts.join(", ")
    }
}

/// Where a directive finally leads inside the diagram: a local step or a flow.
enum Lead {
    Step(usize),
    Flow(String),
}

fn lead<D, C>(flow: &Flow<D, C>, d: &Directive) -> Option<Lead> {
    match &d.position {
        Some(Position::GoTo(g)) => Some(Lead::Flow(g.flow.clone())),
        Some(Position::GoToStep(g)) => match &g.flow {
            Some(f) if f.as_str() != flow.id() => Some(Lead::Flow(f.clone())),
            _ => flow.step_pos(&g.step).map(Lead::Step),
        },
        Some(Position::Complete(c)) => c.next.as_deref().and_then(|n| lead(flow, n)),
        _ => None,
    }
}

/// Nodes for targets outside the flow's steps, in order of first use.
#[derive(Default)]
struct Extra {
    /// (flow id, node id)
    flows: Vec<(String, String)>,
    /// (node id, label)
    directives: Vec<(String, String)>,
}

impl Extra {
    fn flow_node(&mut self, id: &str) -> String {
        if let Some((_, n)) = self.flows.iter().find(|(f, _)| f == id) {
            return n.clone();
        }
        let node = if is_plain(id) {
            format!("f_{id}")
        } else {
            format!("f{}", self.flows.len())
        };
        self.flows.push((id.to_owned(), node.clone()));
        node
    }
    fn directive_node(&mut self, label: String) -> String {
        let node = format!("d{}", self.directives.len());
        self.directives.push((node.clone(), label));
        node
    }
}

fn node_line<D, C>(out: &mut String, node: &str, step: &Step<D, C>) {
    let label = quoted(step.id());
    let _ = match step.kind() {
        StepKind::Model => writeln!(out, "    {node}[{label}]"),
        StepKind::Auto => writeln!(out, "    {node}{{{{{label}}}}}"),
        StepKind::Reply(_) => writeln!(out, "    {node}([{label}])"),
    };
}

fn edge(out: &mut String, from: &str, arrow: &str, label: Option<&str>, to: &str) {
    let _ = match label {
        Some(l) => writeln!(out, "    {from} {arrow}|{}| {to}", quoted(l)),
        None => writeln!(out, "    {from} {arrow} {to}"),
    };
}

fn render<D, C>(flow: &Flow<D, C>, current: Option<usize>) -> String {
    let mut nodes = String::from("flowchart TD\n");
    let mut edges = String::new();
    let mut extra = Extra::default();
    let ids: Vec<String> = (0..flow.steps.len()).map(|i| step_node(flow, i)).collect();
    for (i, step) in flow.steps.iter().enumerate() {
        node_line(&mut nodes, &ids[i], step);
    }
    for (i, step) in flow.steps.iter().enumerate() {
        let from = &ids[i];
        let table = step.branch_table();
        for b in table {
            let label = b
                .label_text()
                .map(str::to_owned)
                .or_else(|| condition_label(!b.if_.is_empty(), b.conditions()))
                .or_else(|| (table.len() > 1).then(|| "else".to_owned()));
            let label = label.as_deref();
            match b.target() {
                Target::Step(s) => match flow.step_pos(s) {
                    Some(j) => edge(&mut edges, from, "-->", label, &ids[j]),
                    None => {
                        let to = extra.directive_node(format!("go to step {s}"));
                        edge(&mut edges, from, "-->", label, &to);
                    }
                },
                Target::Id(t) => match flow.step_pos(t) {
                    Some(j) => edge(&mut edges, from, "-->", label, &ids[j]),
                    None => {
                        let to = extra.flow_node(t);
                        edge(&mut edges, from, "-->", label, &to);
                    }
                },
                Target::Flow(f) => {
                    let to = extra.flow_node(f);
                    edge(&mut edges, from, "-->", label, &to);
                }
                Target::Directive(d) => {
                    let to = extra.directive_node(describe(d));
                    edge(&mut edges, from, "-->", label, &to);
                    match lead(flow, d) {
                        Some(Lead::Step(j)) => edge(&mut edges, &to, "-.->", None, &ids[j]),
                        Some(Lead::Flow(f)) => {
                            let target = extra.flow_node(&f);
                            edge(&mut edges, &to, "-.->", None, &target);
                        }
                        None => {}
                    }
                }
            }
        }
        if fallback_moves(table) {
            continue;
        }
        for j in flow.successors(i) {
            let s = &flow.steps[j];
            let label = condition_label(s.if_.is_some(), s.when.as_slice());
            edge(&mut edges, from, "-->", label.as_deref(), &ids[j]);
        }
    }
    for (f, node) in &extra.flows {
        let _ = writeln!(nodes, "    {node}[[{}]]", quoted(&format!("flow {f}")));
    }
    for (node, label) in &extra.directives {
        let _ = writeln!(nodes, "    {node}>{}]", quoted(label));
    }
    nodes.push_str(&edges);
    let terminal: Vec<&str> = flow
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_end())
        .map(|(i, _)| ids[i].as_str())
        .collect();
    if !terminal.is_empty() {
        nodes.push_str("    classDef terminal stroke-width:3px\n");
        let _ = writeln!(nodes, "    class {} terminal", terminal.join(","));
    }
    if let Some(i) = current {
        let _ = writeln!(nodes, "    classDef current {CURRENT_STYLE}");
        let _ = writeln!(nodes, "    class {} current", ids[i]);
    }
    nodes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::branch::Branch;
    use crate::directive::Directive;
    use crate::hook::Cx;

    #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Booking {
        city: Option<String>,
        guests: Option<u8>,
        booking_id: Option<String>,
    }

    fn booking() -> Flow<Booking, ()> {
        Flow::builder("booking")
            .step(Step::model("ask_city").collect(["city"]))
            .step(Step::model("ask_guests").collect(["guests"]))
            .step(
                Step::auto("route")
                    .branch(
                        Branch::to_step("large_group")
                            .if_(|cx: &Cx<'_, Booking, ()>| cx.data().guests > Some(8))
                            .label("more than 8 guests"),
                    )
                    .branch(Branch::to_step("confirm")),
            )
            .step(
                Step::model("confirm")
                    .branch(Branch::to_flow("pets").when("the user asks about \"pets\""))
                    .branch(Branch::to_step("ask_city").when("the user wants another city"))
                    .branch(
                        Branch::to_directive(Directive::complete_then(Directive::go_to(
                            "feedback",
                        )))
                        .when("the user is done"),
                    )
                    .end(),
            )
            .step(Step::reply("large_group", "A specialist will call you.").end())
            .build()
            .unwrap()
    }

    #[test]
    fn a_flow_with_branches_renders_nodes_by_kind_and_labelled_edges() {
        let want = r##"flowchart TD
    s_ask_city["ask_city"]
    s_ask_guests["ask_guests"]
    s_route{{"route"}}
    s_confirm["confirm"]
    s_large_group(["large_group"])
    f_pets[["flow pets"]]
    f_feedback[["flow feedback"]]
    d0>"complete, then go to flow feedback"]
    s_ask_city --> s_ask_guests
    s_ask_guests --> s_route
    s_route -->|"more than 8 guests"| s_large_group
    s_route -->|"else"| s_confirm
    s_confirm -->|"the user asks about #quot;pets#quot;"| f_pets
    s_confirm -->|"the user wants another city"| s_ask_city
    s_confirm -->|"the user is done"| d0
    d0 -.-> f_feedback
    classDef terminal stroke-width:3px
    class s_confirm,s_large_group terminal
"##;
        assert_eq!(booking().mermaid(), want);
    }

    #[test]
    fn the_current_step_is_highlighted_by_class() {
        let flow = booking();
        let text = flow.mermaid_with_current(Some("confirm"));
        assert!(text.starts_with(&flow.mermaid()));
        assert!(text.ends_with(&format!(
            "    classDef current {CURRENT_STYLE}\n    class s_confirm current\n"
        )));
        assert_eq!(flow.mermaid_with_current(Some("nope")), flow.mermaid());
        assert_eq!(flow.mermaid_with_current(None), flow.mermaid());
        assert_eq!(flow.mermaid_node_id("route").as_deref(), Some("s_route"));
        assert_eq!(flow.mermaid_node_id("nope"), None);
    }

    #[test]
    fn conditional_steps_fork_the_linear_successor_and_odd_ids_are_escaped() {
        let flow: Flow<Booking, ()> = Flow::builder("odd")
            .step(Step::model("first step").collect(["city"]))
            .step(Step::model("vip").when("the user is a <VIP> | #1"))
            .step(Step::model("kids").if_(|_: &Cx<'_, Booking, ()>| true))
            .step(Step::model("last"))
            .step(
                Step::model("after")
                    .branch(
                        Branch::to_directive(Directive::say("Bye").data(
                            crate::data::patch_of(&serde_json::json!({"booking_id": "x"})).unwrap(),
                        ))
                        .when("the user says bye"),
                    )
                    .branch(Branch::to_id("other flow")),
            )
            .build()
            .unwrap();
        let want = r##"flowchart TD
    s0["first step"]
    s_vip["vip"]
    s_kids["kids"]
    s_last["last"]
    s_after["after"]
    f0[["flow other flow"]]
    d0>"reply, data: booking_id"]
    s0 -->|"the user is a #lt;VIP#gt; #124; #35;1"| s_vip
    s0 -->|"if"| s_kids
    s0 --> s_last
    s_vip -->|"if"| s_kids
    s_vip --> s_last
    s_kids --> s_last
    s_last --> s_after
    s_after -->|"the user says bye"| d0
    s_after -->|"else"| f0
"##;
        assert_eq!(flow.mermaid(), want);
    }
}
