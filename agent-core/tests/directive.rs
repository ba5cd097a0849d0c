//! Tests of `agent_core::directive` against the directives spec and Algorithm 4:
//!
//! - the merge (`merge`, `merge_pre`): position precedence
//!   `abort > complete > goTo = goToStep > reset` with last-wins inside a tier, `reply`
//!   last-wins, shallow state merges, `appendPrompt` concatenation, `injectTools`
//!   dedupe by name (later wins) and `halt` as OR;
//! - the flat JSON shape (`Directive::from_json` and serde): shorthand and object forms,
//!   every structural rejection, and lossless round trips;
//! - `Directive::validate` on builder-made directives;
//! - the persistence rule: only a `PreDirective`'s base `Directive` can be persisted.
//!
//! One file over 600 lines: the directives spec and Algorithm 4 case by case, including the pairwise merge table, which reads best in one place.

use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;
use std::sync::Arc;

use agent_core::data::Patch;
use agent_core::directive::{
    Abort, Complete, Directive, GoTo, GoToStep, Position, PreDirective, Reset, merge, merge_pre,
};
use agent_core::error::DirectiveError;
use agent_core::tool::{FnTool, Tool, ToolOutput};
use proptest::collection::{btree_map, btree_set, vec};
use proptest::option;
use proptest::prelude::*;
use serde_json::{Value, json};

type Pre = PreDirective<(), ()>;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A patch from a `json!({...})` literal.
fn patch(v: Value) -> Patch {
    assert!(
        v.is_object(),
        "test bug: patch literal must be an object, got {v}"
    );
    v.as_object().cloned().unwrap_or_default()
}

/// A tool whose description identifies which definition it is.
fn tool(name: &str, description: &str) -> Arc<dyn Tool<(), ()>> {
    FnTool::<(), ()>::raw(
        name,
        description,
        json!({"type": "object"}),
        |_cx, _args| async { Ok(ToolOutput::text("ok")) },
    )
    .into_arc()
}

/// `(name, description)` of the injected tools, in order.
fn tools_of(pre: &Pre) -> Vec<(String, String)> {
    pre.inject_tools
        .iter()
        .map(|t| (t.name().to_owned(), t.description().to_owned()))
        .collect()
}

/// Fold a bus of directives in emit order, as the pipeline does.
fn fold(ds: impl IntoIterator<Item = Directive>) -> Directive {
    ds.into_iter().fold(Directive::new(), merge)
}

/// Fold a bus of pre-directives in emit order.
fn fold_pre(ds: impl IntoIterator<Item = Pre>) -> Pre {
    ds.into_iter().fold(Pre::new(), merge_pre)
}

/// The five position kinds, named independently of the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    GoTo,
    GoToStep,
    Complete,
    Abort,
    Reset,
}

const KINDS: [Kind; 5] = [
    Kind::GoTo,
    Kind::GoToStep,
    Kind::Complete,
    Kind::Abort,
    Kind::Reset,
];

/// The spec's precedence table, written out here (not taken from `Position::tier`).
fn spec_tier(k: Kind) -> u8 {
    match k {
        Kind::Abort => 4,
        Kind::Complete => 3,
        Kind::GoTo | Kind::GoToStep => 2,
        Kind::Reset => 1,
    }
}

fn kind_of(p: &Position) -> Kind {
    match p {
        Position::GoTo(_) => Kind::GoTo,
        Position::GoToStep(_) => Kind::GoToStep,
        Position::Complete(_) => Kind::Complete,
        Position::Abort(_) => Kind::Abort,
        Position::Reset(_) => Kind::Reset,
    }
}

fn reason_of(p: &Position) -> Option<&str> {
    match p {
        Position::GoTo(g) => g.reason.as_deref(),
        Position::GoToStep(g) => g.reason.as_deref(),
        Position::Complete(c) => c.reason.as_deref(),
        Position::Abort(a) => a.reason.as_deref(),
        Position::Reset(r) => r.reason.as_deref(),
    }
}

/// A directive of the given kind whose reason is `tag`, so the winner can be told apart.
fn tagged(kind: Kind, tag: &str) -> Directive {
    let d = match kind {
        Kind::GoTo => Directive::go_to("Flow"),
        Kind::GoToStep => Directive::go_to_step("step"),
        Kind::Complete => Directive::complete(),
        Kind::Abort => Directive::abort("abort"),
        Kind::Reset => Directive::reset(),
    };
    d.because(tag)
}

/// `(kind, reason)` of a directive's position.
fn winner(d: &Directive) -> Option<(Kind, String)> {
    d.position
        .as_ref()
        .map(|p| (kind_of(p), reason_of(p).unwrap_or_default().to_owned()))
}

/// Reject through serde; returns serde's message (the `DirectiveError` display) and
/// asserts `from_json` rejects too.
fn rejected(v: Value) -> String {
    let typed = Directive::from_json(v.clone());
    assert!(typed.is_err(), "from_json accepted {v}: {typed:?}");
    let via_serde = serde_json::from_value::<Directive>(v.clone());
    assert!(via_serde.is_err(), "serde accepted {v}: {via_serde:?}");
    via_serde.err().map(|e| e.to_string()).unwrap_or_default()
}

/// Parse through `from_json`, failing the test with the error when rejected.
fn parsed(v: Value) -> Directive {
    let d = Directive::from_json(v.clone());
    assert!(d.is_ok(), "{v} should parse, got {d:?}");
    d.unwrap_or_default()
}

/// Whether a type implements `Serialize`, decided at compile time (an inherent method
/// with a bound shadows the blanket trait method only when the bound holds).
struct Probe<T>(PhantomData<T>);
trait NotSerializable {
    fn serializable(&self) -> bool {
        false
    }
}
impl<T> NotSerializable for Probe<T> {}
impl<T: serde::Serialize> Probe<T> {
    fn serializable(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------

/// Non-blank ids (may contain inner spaces and punctuation).
fn id() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_ .-]{0,6}[A-Za-z0-9_]"
}

/// Free text, including quotes, backslashes and non-ASCII.
fn text() -> impl Strategy<Value = String> {
    "\\PC{0,12}"
}

/// JSON values without floats (they would only test serde_json's float printing).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..3).prop_map(Value::Array),
            btree_map("[a-c]", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Patches over a small key set, so collisions are common.
fn patch_strategy() -> impl Strategy<Value = Patch> {
    btree_map("[a-e]", json_value(), 0..4).prop_map(|m| m.into_iter().collect())
}

/// Any position except a `complete` with a `next`.
fn flat_position() -> BoxedStrategy<Position> {
    prop_oneof![
        (id(), option::of(patch_strategy()), option::of(text()))
            .prop_map(|(flow, data, reason)| Position::GoTo(GoTo { flow, data, reason })),
        (
            id(),
            option::of(id()),
            option::of(patch_strategy()),
            option::of(text())
        )
            .prop_map(|(step, flow, data, reason)| Position::GoToStep(GoToStep {
                step,
                flow,
                data,
                reason
            })),
        option::of(text()).prop_map(|reason| Position::Complete(Complete { next: None, reason })),
        (option::of(text()), any::<bool>()).prop_map(|(reason, clear_session)| {
            Position::Abort(Abort {
                reason,
                clear_session,
            })
        }),
        (any::<bool>(), option::of(text()))
            .prop_map(|(clear_data, reason)| Position::Reset(Reset { clear_data, reason })),
    ]
    .boxed()
}

/// Whether a position aborts, directly or at the end of a `complete.next` chain.
fn ends_in_abort(p: Option<&Position>) -> bool {
    match p {
        Some(Position::Abort(_)) => true,
        Some(Position::Complete(Complete { next: Some(n), .. })) => {
            ends_in_abort(n.position.as_ref())
        }
        _ => false,
    }
}

/// A directive around a position strategy; never `reply` with `abort` (also at the end
/// of a `complete.next` chain), so it is valid.
fn directive_with(position: BoxedStrategy<Option<Position>>) -> BoxedStrategy<Directive> {
    (
        position,
        option::of(text()),
        option::of(patch_strategy()),
        option::of(patch_strategy()),
    )
        .prop_map(|(position, reply, data, context)| {
            let reply = if ends_in_abort(position.as_ref()) {
                None
            } else {
                reply
            };
            Directive {
                position,
                reply,
                data,
                context,
            }
        })
        .boxed()
}

/// Valid directives, including chains of `complete.next`.
fn valid_directive() -> BoxedStrategy<Directive> {
    directive_with(option::of(flat_position()).boxed())
        .prop_recursive(3, 8, 1, |inner| {
            directive_with(
                (inner, option::of(text()))
                    .prop_map(|(next, reason)| {
                        Some(Position::Complete(Complete {
                            next: Some(Box::new(next)),
                            reason,
                        }))
                    })
                    .boxed(),
            )
        })
        .boxed()
}

fn kind() -> impl Strategy<Value = Kind> {
    prop::sample::select(KINDS.to_vec())
}

// ---------------------------------------------------------------------------------------
// Merge: position precedence
// ---------------------------------------------------------------------------------------

#[test]
fn position_tiers_follow_abort_complete_goto_reset() {
    let tier = |d: Directive| d.position.map(|p| p.tier()).unwrap_or_default();
    let abort = tier(Directive::abort("x"));
    let complete = tier(Directive::complete());
    let go_to = tier(Directive::go_to("f"));
    let go_to_step = tier(Directive::go_to_step("s"));
    let reset = tier(Directive::reset());
    assert!(abort > complete, "abort must outrank complete");
    assert!(complete > go_to, "complete must outrank goTo");
    assert_eq!(go_to, go_to_step, "goTo and goToStep share a tier");
    assert!(go_to > reset, "goTo must outrank reset");
}

#[test]
fn position_field_names_are_the_flat_json_keys() {
    let cases = [
        (Directive::go_to("f"), "goTo"),
        (Directive::go_to_step("s"), "goToStep"),
        (Directive::complete(), "complete"),
        (Directive::abort("x"), "abort"),
        (Directive::reset(), "reset"),
    ];
    for (d, name) in cases {
        let json = d.to_json();
        let p = d.position.as_ref().map(Position::field_name);
        assert_eq!(p, Some(name));
        assert!(json.get(name).is_some(), "{json} lacks `{name}`");
    }
}

#[test]
fn abort_beats_every_other_position_regardless_of_order() {
    for other in KINDS {
        let early = merge(tagged(Kind::Abort, "abort"), tagged(other, "other"));
        let late = merge(tagged(other, "other"), tagged(Kind::Abort, "abort"));
        let expect = if other == Kind::Abort {
            // Same tier: the later one wins.
            ((Kind::Abort, "other"), (Kind::Abort, "abort"))
        } else {
            ((Kind::Abort, "abort"), (Kind::Abort, "abort"))
        };
        assert_eq!(
            winner(&early),
            Some((expect.0.0, expect.0.1.to_owned())),
            "abort then {other:?}"
        );
        assert_eq!(
            winner(&late),
            Some((expect.1.0, expect.1.1.to_owned())),
            "{other:?} then abort"
        );
    }
}

#[test]
fn complete_beats_go_to_go_to_step_and_reset_regardless_of_order() {
    for other in [Kind::GoTo, Kind::GoToStep, Kind::Reset] {
        for d in [
            merge(tagged(Kind::Complete, "c"), tagged(other, "o")),
            merge(tagged(other, "o"), tagged(Kind::Complete, "c")),
        ] {
            assert_eq!(
                winner(&d),
                Some((Kind::Complete, "c".to_owned())),
                "vs {other:?}"
            );
        }
    }
}

#[test]
fn go_to_and_go_to_step_share_a_tier_so_the_later_emission_wins() {
    let d = merge(
        tagged(Kind::GoTo, "first"),
        tagged(Kind::GoToStep, "second"),
    );
    assert_eq!(winner(&d), Some((Kind::GoToStep, "second".to_owned())));
    let d = merge(
        tagged(Kind::GoToStep, "first"),
        tagged(Kind::GoTo, "second"),
    );
    assert_eq!(winner(&d), Some((Kind::GoTo, "second".to_owned())));
}

#[test]
fn reset_loses_to_every_other_position_regardless_of_order() {
    for other in [Kind::GoTo, Kind::GoToStep, Kind::Complete, Kind::Abort] {
        for d in [
            merge(tagged(Kind::Reset, "r"), tagged(other, "o")),
            merge(tagged(other, "o"), tagged(Kind::Reset, "r")),
        ] {
            assert_eq!(winner(&d), Some((other, "o".to_owned())), "vs {other:?}");
        }
    }
}

#[test]
fn same_kind_positions_resolve_to_the_later_emission() {
    for k in KINDS {
        let d = merge(tagged(k, "first"), tagged(k, "second"));
        assert_eq!(winner(&d), Some((k, "second".to_owned())), "{k:?}");
    }
}

#[test]
fn a_directive_without_position_never_clears_an_earlier_or_later_position() {
    let jump = Directive::go_to("Billing");
    let talk = Directive::say("One moment.").data(patch(json!({"a": 1})));
    assert_eq!(
        merge(jump.clone(), talk.clone()).position,
        jump.position.clone()
    );
    assert_eq!(merge(talk, jump.clone()).position, jump.position);
}

#[test]
fn complete_winner_keeps_its_whole_next_chain_and_is_not_merged_with_the_loser() {
    let chained = Directive::complete_then(Directive::go_to("Survey"));
    let d = merge(chained.clone(), Directive::go_to("Elsewhere"));
    assert_eq!(d.position, chained.position);
    let d = merge(Directive::go_to("Elsewhere"), chained.clone());
    assert_eq!(d.position, chained.position);
}

proptest! {
    #[test]
    fn any_pair_of_positions_resolves_by_tier_then_emit_order(
        a in flat_position(),
        b in flat_position(),
    ) {
        let merged = merge(
            Directive { position: Some(a.clone()), ..Directive::default() },
            Directive { position: Some(b.clone()), ..Directive::default() },
        );
        let expect = if spec_tier(kind_of(&b)) >= spec_tier(kind_of(&a)) { b } else { a };
        prop_assert_eq!(merged.position, Some(expect));
    }

    #[test]
    fn folding_a_bus_keeps_the_highest_tier_and_within_it_the_last_emitted(
        kinds in vec(option::of(kind()), 0..12),
    ) {
        let bus: Vec<Directive> = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| match k {
                Some(k) => tagged(*k, &i.to_string()),
                // A state-only emission in between must not disturb the position.
                None => Directive::new().data(patch(json!({"i": i}))),
            })
            .collect();
        let top = kinds.iter().flatten().map(|k| spec_tier(*k)).max();
        let expect = top.and_then(|top| {
            kinds
                .iter()
                .enumerate()
                .filter_map(|(i, k)| k.map(|k| (i, k)))
                .rfind(|(_, k)| spec_tier(*k) == top)
                .map(|(i, k)| (k, i.to_string()))
        });
        prop_assert_eq!(winner(&fold(bus)), expect);
    }

    #[test]
    fn merge_is_associative_so_grouping_of_the_bus_does_not_matter(
        a in valid_directive(),
        b in valid_directive(),
        c in valid_directive(),
    ) {
        let left = merge(merge(a.clone(), b.clone()), c.clone());
        let right = merge(a, merge(b, c));
        prop_assert_eq!(left, right);
    }

    #[test]
    fn merging_with_an_empty_directive_changes_nothing(d in valid_directive()) {
        prop_assert_eq!(merge(Directive::new(), d.clone()), d.clone());
        prop_assert_eq!(merge(d.clone(), Directive::new()), d);
    }
}

// ---------------------------------------------------------------------------------------
// Merge: reply and state writes
// ---------------------------------------------------------------------------------------

#[test]
fn reply_is_last_wins_and_a_later_directive_without_reply_keeps_it() {
    let d = fold([
        Directive::say("first"),
        Directive::say("second"),
        Directive::go_to("Elsewhere"),
    ]);
    assert_eq!(d.reply.as_deref(), Some("second"));
}

#[test]
fn nested_objects_in_state_writes_are_replaced_not_deep_merged() {
    let a = Directive::new()
        .data(patch(
            json!({"address": {"city": "Lisbon", "zip": "1000"}, "tier": "vip"}),
        ))
        .context(patch(json!({"prefs": {"lang": "pt", "tz": "WET"}})));
    let b = Directive::new()
        .data(patch(json!({"address": {"city": "Porto"}})))
        .context(patch(json!({"prefs": {"lang": "en"}})));
    let d = merge(a, b);
    assert_eq!(
        d.data,
        Some(patch(json!({"address": {"city": "Porto"}, "tier": "vip"})))
    );
    assert_eq!(d.context, Some(patch(json!({"prefs": {"lang": "en"}}))));
}

#[test]
fn state_writes_from_losing_position_emitters_are_still_merged() {
    let d = fold([
        Directive::abort("ineligible").data(patch(json!({"reason": "expired"}))),
        Directive::go_to("Booking")
            .data(patch(json!({"bookingId": 7})))
            .context(patch(json!({"seen": true}))),
    ]);
    assert_eq!(winner(&d).map(|w| w.0), Some(Kind::Abort));
    assert_eq!(
        d.data,
        Some(patch(json!({"reason": "expired", "bookingId": 7})))
    );
    assert_eq!(d.context, Some(patch(json!({"seen": true}))));
}

#[test]
fn a_later_reply_merged_onto_abort_yields_a_directive_that_validation_rejects() {
    // The merge itself does not validate; the combination is rejected at apply time.
    let d = merge(Directive::abort("stop"), Directive::say("bye"));
    assert_eq!(d.validate(), Err(DirectiveError::ReplyWithAbort));
}

#[test]
fn builder_data_and_context_calls_shallow_merge_like_the_bus() {
    let d = Directive::new()
        .data(patch(json!({"a": 1, "b": {"x": 1}})))
        .data(patch(json!({"b": {"y": 2}, "c": 3})))
        .context(patch(json!({"k": "old"})))
        .context(patch(json!({"k": "new"})));
    assert_eq!(d.data, Some(patch(json!({"a": 1, "b": {"y": 2}, "c": 3}))));
    assert_eq!(d.context, Some(patch(json!({"k": "new"}))));
}

/// Shallow merge of optional patches in order (`Object.assign`), `None` if all absent.
fn assign_all<'a>(patches: impl IntoIterator<Item = &'a Option<Patch>>) -> Option<Patch> {
    let mut acc: Option<Patch> = None;
    for p in patches.into_iter().flatten() {
        let m = acc.get_or_insert_with(Patch::new);
        for (k, v) in p {
            m.insert(k.clone(), v.clone());
        }
    }
    acc
}

proptest! {
    #[test]
    fn reply_is_last_wins_across_a_bus(replies in vec(option::of(text()), 0..8)) {
        let bus = replies.iter().map(|r| Directive { reply: r.clone(), ..Directive::default() });
        let expect = replies.iter().rev().flatten().next().cloned();
        prop_assert_eq!(fold(bus).reply, expect);
    }

    #[test]
    fn data_and_context_shallow_merge_in_emit_order(
        writes in vec((option::of(patch_strategy()), option::of(patch_strategy())), 0..6),
    ) {
        let bus = writes.iter().map(|(d, c)| Directive {
            data: d.clone(),
            context: c.clone(),
            ..Directive::default()
        });
        let merged = fold(bus);
        prop_assert_eq!(merged.data, assign_all(writes.iter().map(|w| &w.0)));
        prop_assert_eq!(merged.context, assign_all(writes.iter().map(|w| &w.1)));
    }

    #[test]
    fn pairwise_state_merge_keeps_keys_of_both_and_the_later_value_on_collision(
        a in patch_strategy(),
        b in patch_strategy(),
    ) {
        let d = merge(Directive::new().data(a.clone()), Directive::new().data(b.clone()));
        let data = d.data.unwrap_or_default();
        let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        prop_assert_eq!(data.keys().collect::<BTreeSet<_>>(), keys);
        for (k, v) in &data {
            let expect = b.get(k).or_else(|| a.get(k));
            prop_assert_eq!(Some(v), expect, "key {}", k);
        }
    }
}

// ---------------------------------------------------------------------------------------
// merge_pre: the pre-LLM augmentations
// ---------------------------------------------------------------------------------------

#[test]
fn append_prompt_keeps_duplicate_sentences_from_different_emitters() {
    let flow = Pre::new()
        .append_prompt("Be polite.")
        .append_prompt("VIP caller.");
    let step = Pre::new().append_prompt("Be polite.");
    let merged = merge_pre(flow, step);
    assert_eq!(
        merged.append_prompt,
        vec!["Be polite.", "VIP caller.", "Be polite."]
    );
}

#[test]
fn a_later_injected_tool_with_the_same_name_overrides_the_earlier_one() {
    let flow_level = Pre::new()
        .inject_tool(tool("lookup_account", "flow default"))
        .inject_tool(tool("escalate", "flow escalate"));
    let step_level = Pre::new().inject_tool(tool("lookup_account", "step override"));

    let merged = merge_pre(flow_level.clone(), step_level.clone());
    let mut got = tools_of(&merged);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("escalate".to_owned(), "flow escalate".to_owned()),
            ("lookup_account".to_owned(), "step override".to_owned()),
        ]
    );

    // Reversed emit order: the flow-level definition is now the later one.
    let merged = merge_pre(step_level, flow_level);
    let mut got = tools_of(&merged);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("escalate".to_owned(), "flow escalate".to_owned()),
            ("lookup_account".to_owned(), "flow default".to_owned()),
        ]
    );
}

#[test]
fn a_redefined_tool_keeps_its_first_position_and_takes_the_latest_definition() {
    let earlier = Pre::new()
        .inject_tool(tool("t", "old"))
        .inject_tool(tool("u", "u"));
    let later = Pre::new().inject_tool(tool("t", "new"));
    assert_eq!(
        tools_of(&merge_pre(earlier, later)),
        vec![
            ("t".to_owned(), "new".to_owned()),
            ("u".to_owned(), "u".to_owned())
        ]
    );
}

#[test]
fn merge_pre_dedupes_same_named_tools_already_inside_the_first_operand() {
    // "Concatenated, then deduped by name, later definition wins" must hold for the
    // concatenation as a whole, not only for names shared across the two operands.
    let a = Pre::new()
        .inject_tool(tool("lookup", "v1"))
        .inject_tool(tool("lookup", "v2"));
    let merged = merge_pre(a, Pre::new());
    assert_eq!(
        tools_of(&merged),
        vec![("lookup".to_owned(), "v2".to_owned())]
    );
}

#[test]
fn halt_is_logical_or() {
    for (a, b) in [(false, false), (false, true), (true, false), (true, true)] {
        let pa = if a { Pre::new().halt() } else { Pre::new() };
        let pb = if b { Pre::new().halt() } else { Pre::new() };
        assert_eq!(merge_pre(pa, pb).halt, a || b, "{a} || {b}");
    }
}

#[test]
fn pre_directive_builder_merges_added_directives_by_precedence() {
    let pre = Pre::new()
        .directive(Directive::abort("blocked"))
        .directive(Directive::go_to("Booking"));
    assert_eq!(pre.base.position, Directive::abort("blocked").position);
}

proptest! {
    #[test]
    fn append_prompt_is_concatenated_in_order_without_dedupe(
        prompts in vec(vec("(Be polite\\.|Be brief\\.|VIP\\.)", 0..4), 0..6),
    ) {
        let bus = prompts.iter().map(|ps| {
            ps.iter().fold(Pre::new(), |p, s| p.append_prompt(s.clone()))
        });
        let expect: Vec<String> = prompts.iter().flatten().cloned().collect();
        prop_assert_eq!(fold_pre(bus).append_prompt, expect);
    }

    #[test]
    fn inject_tools_are_deduped_by_name_and_the_later_definition_wins(
        emitters in vec(btree_set("t[0-3]", 0..4), 0..6),
    ) {
        let described: Vec<Vec<(String, String)>> = emitters
            .iter()
            .enumerate()
            .map(|(e, names)| {
                names.iter().map(|n| (n.clone(), format!("{n} from emitter {e}"))).collect()
            })
            .collect();
        let bus = described.iter().map(|tools| {
            tools.iter().fold(Pre::new(), |p, (n, d)| p.inject_tool(tool(n, d)))
        });
        let mut last: BTreeMap<String, String> = BTreeMap::new();
        for (n, d) in described.iter().flatten() {
            last.insert(n.clone(), d.clone());
        }
        let merged = fold_pre(bus);
        let got = tools_of(&merged);
        let names: BTreeSet<&String> = got.iter().map(|t| &t.0).collect();
        prop_assert_eq!(names.len(), got.len(), "duplicate names in {:?}", got);
        let got: BTreeMap<String, String> = got.into_iter().collect();
        prop_assert_eq!(got, last);
    }

    #[test]
    fn inject_tools_keep_the_order_in_which_names_first_appear(
        emitters in vec(vec("t[0-3]", 0..4), 0..6),
    ) {
        let bus = emitters.iter().map(|names| {
            names.iter().fold(Pre::new(), |p, n| p.inject_tool(tool(n, "d")))
        });
        let mut first: Vec<String> = Vec::new();
        for n in emitters.iter().flatten() {
            if !first.contains(n) {
                first.push(n.clone());
            }
        }
        let got: Vec<String> = tools_of(&fold_pre(bus)).into_iter().map(|t| t.0).collect();
        prop_assert_eq!(got, first);
    }

    #[test]
    fn pairwise_inject_tools_merge_keeps_every_name_once_with_the_later_definition(
        a in btree_set("t[0-3]", 0..4),
        b in btree_set("t[0-3]", 0..4),
    ) {
        let pa = a.iter().fold(Pre::new(), |p, n| p.inject_tool(tool(n, "a")));
        let pb = b.iter().fold(Pre::new(), |p, n| p.inject_tool(tool(n, "b")));
        let mut got = tools_of(&merge_pre(pa, pb));
        got.sort();
        let mut expect: Vec<(String, String)> = a
            .iter()
            .filter(|n| !b.contains(*n))
            .map(|n| (n.clone(), "a".to_owned()))
            .chain(b.iter().map(|n| (n.clone(), "b".to_owned())))
            .collect();
        expect.sort();
        prop_assert_eq!(got, expect);
    }

    #[test]
    fn halt_is_logical_or_across_a_bus(halts in vec(any::<bool>(), 0..8)) {
        let bus = halts.iter().map(|h| if *h { Pre::new().halt() } else { Pre::new() });
        prop_assert_eq!(fold_pre(bus).halt, halts.iter().any(|h| *h));
    }

    #[test]
    fn merge_pre_merges_the_base_exactly_like_merge(
        a in valid_directive(),
        b in valid_directive(),
        ha in any::<bool>(),
        hb in any::<bool>(),
    ) {
        let pa = Pre { halt: ha, ..Pre::from(a.clone()) }.append_prompt("a");
        let pb = Pre { halt: hb, ..Pre::from(b.clone()) }.append_prompt("b");
        prop_assert_eq!(merge_pre(pa, pb).base, merge(a, b));
    }
}

// ---------------------------------------------------------------------------------------
// JSON: accepted shapes
// ---------------------------------------------------------------------------------------

#[test]
fn go_to_shorthand_string_names_the_target_flow() {
    assert_eq!(
        parsed(json!({"goTo": "Booking"})),
        Directive::go_to("Booking")
    );
}

#[test]
fn go_to_object_form_carries_flow_data_and_reason() {
    let d =
        parsed(json!({"goTo": {"flow": "Booking", "data": {"city": "Lisbon"}, "reason": "asked"}}));
    assert_eq!(
        d.position,
        Some(Position::GoTo(GoTo {
            flow: "Booking".into(),
            data: Some(patch(json!({"city": "Lisbon"}))),
            reason: Some("asked".into()),
        }))
    );
    assert_eq!(
        parsed(json!({"goTo": {"flow": "Booking"}})),
        Directive::go_to("Booking")
    );
}

#[test]
fn go_to_step_shorthand_targets_a_step_of_the_current_flow() {
    let d = parsed(json!({"goToStep": "confirm"}));
    assert_eq!(d, Directive::go_to_step("confirm"));
    assert!(matches!(
        d.position,
        Some(Position::GoToStep(GoToStep { flow: None, .. }))
    ));
}

#[test]
fn go_to_step_object_form_can_name_another_flow_data_and_reason() {
    let d = parsed(
        json!({"goToStep": {"step": "pay", "flow": "Checkout", "data": {"n": 2}, "reason": "r"}}),
    );
    assert_eq!(
        d.position,
        Some(Position::GoToStep(GoToStep {
            step: "pay".into(),
            flow: Some("Checkout".into()),
            data: Some(patch(json!({"n": 2}))),
            reason: Some("r".into()),
        }))
    );
    assert_eq!(
        parsed(json!({"goToStep": {"step": "pay", "flow": "Checkout"}})),
        Directive::go_to_step_in("Checkout", "pay")
    );
}

#[test]
fn complete_true_completes_without_a_follow_up() {
    assert_eq!(parsed(json!({"complete": true})), Directive::complete());
}

#[test]
fn complete_object_form_chains_next_and_reason() {
    let d = parsed(json!({"complete": {"next": {"goTo": "Survey"}, "reason": "booked"}}));
    assert_eq!(
        d,
        Directive::complete_then(Directive::go_to("Survey")).because("booked")
    );
    // A chained next may itself carry state writes and a reply.
    let d =
        parsed(json!({"complete": {"next": {"reply": "Thanks!", "dataUpdate": {"done": true}}}}));
    assert_eq!(
        d,
        Directive::complete_then(Directive::say("Thanks!").data(patch(json!({"done": true}))))
    );
}

#[test]
fn complete_false_means_no_position() {
    let d = parsed(json!({"complete": false}));
    assert_eq!(d.position, None);
    assert!(d.is_empty());
    // So it does not count as a second position field either.
    assert_eq!(
        parsed(json!({"complete": false, "goTo": "Booking"})),
        Directive::go_to("Booking")
    );
    assert_eq!(
        parsed(json!({"complete": false, "dataUpdate": {"a": 1}})),
        Directive::new().data(patch(json!({"a": 1})))
    );
}

#[test]
fn abort_accepts_true_a_reason_string_and_an_object_form() {
    assert_eq!(
        parsed(json!({"abort": true})).position,
        Some(Position::Abort(Abort {
            reason: None,
            clear_session: false
        }))
    );
    assert_eq!(
        parsed(json!({"abort": "denied"})),
        Directive::abort("denied")
    );
    assert_eq!(
        parsed(json!({"abort": {"reason": "fraud", "clearSession": true}})),
        Directive::abort_and_clear("fraud")
    );
    assert_eq!(
        parsed(json!({"abort": {"reason": "fraud"}})),
        Directive::abort("fraud")
    );
}

#[test]
fn reset_accepts_true_and_an_object_form_with_clear_data() {
    assert_eq!(parsed(json!({"reset": true})), Directive::reset());
    assert_eq!(
        parsed(json!({"reset": {"clearData": true}})),
        Directive::reset_clearing_data()
    );
    assert_eq!(
        parsed(json!({"reset": {"clearData": false, "reason": "restart"}})),
        Directive::reset().because("restart")
    );
}

#[test]
fn reply_and_state_writes_use_the_flat_spec_keys_alongside_a_position() {
    let v = json!({
        "goTo": "Denial",
        "reply": "Sorry, you don't qualify.",
        "dataUpdate": {"reason": "expired"},
        "contextUpdate": {"flagged": true},
    });
    let expect = Directive::go_to("Denial")
        .reply("Sorry, you don't qualify.")
        .data(patch(json!({"reason": "expired"})))
        .context(patch(json!({"flagged": true})));
    assert_eq!(parsed(v), expect);
    let out = expect.to_json();
    assert_eq!(out["reply"], json!("Sorry, you don't qualify."));
    assert_eq!(out["dataUpdate"], json!({"reason": "expired"}));
    assert_eq!(out["contextUpdate"], json!({"flagged": true}));
}

#[test]
fn reply_alongside_complete_is_accepted() {
    assert_eq!(
        parsed(json!({"complete": true, "reply": "Booking confirmed."})),
        Directive::complete().reply("Booking confirmed.")
    );
}

#[test]
fn an_empty_object_is_the_empty_directive() {
    let d = parsed(json!({}));
    assert!(d.is_empty());
    assert_eq!(d, Directive::new());
    assert_eq!(Directive::new().to_json(), json!({}));
}

// ---------------------------------------------------------------------------------------
// JSON: rejected shapes
// ---------------------------------------------------------------------------------------

#[test]
fn two_position_fields_are_rejected_naming_both() {
    let shorthand = |k: Kind| -> (&'static str, Value) {
        match k {
            Kind::GoTo => ("goTo", json!("Flow")),
            Kind::GoToStep => ("goToStep", json!("step")),
            Kind::Complete => ("complete", json!(true)),
            Kind::Abort => ("abort", json!("why")),
            Kind::Reset => ("reset", json!(true)),
        }
    };
    for (i, a) in KINDS.iter().enumerate() {
        for b in &KINDS[i + 1..] {
            let (ka, va) = shorthand(*a);
            let (kb, vb) = shorthand(*b);
            let mut o = serde_json::Map::new();
            o.insert(ka.into(), va);
            o.insert(kb.into(), vb);
            let msg = rejected(Value::Object(o));
            assert!(
                msg.contains("one position field"),
                "{ka}+{kb}: not a multiple-positions error: {msg}"
            );
            for k in [ka, kb] {
                assert!(msg.contains(k), "{ka}+{kb}: `{k}` not named in: {msg}");
            }
        }
    }
}

#[test]
fn three_position_fields_name_all_three() {
    let msg = rejected(json!({"goTo": "A", "complete": true, "reset": true}));
    assert!(msg.contains("one position field"), "{msg}");
    for k in ["goTo", "complete", "reset"] {
        assert!(msg.contains(k), "`{k}` not named in: {msg}");
    }
}

#[test]
fn an_empty_go_to_object_is_rejected_as_an_empty_target() {
    let go_to = DirectiveError::EmptyTarget {
        field: "goTo",
        what: "flow id",
    };
    for v in [
        json!({"goTo": {}}),
        json!({"goTo": ""}),
        json!({"goTo": "   "}),
        json!({"goTo": {"flow": ""}}),
        json!({"goTo": {"reason": "no target"}}),
    ] {
        assert_eq!(rejected(v.clone()), go_to.to_string(), "{v}");
    }
    let go_to_step = DirectiveError::EmptyTarget {
        field: "goToStep",
        what: "step id",
    };
    for v in [
        json!({"goToStep": {}}),
        json!({"goToStep": ""}),
        json!({"goToStep": {"flow": "Other"}}),
    ] {
        assert_eq!(rejected(v.clone()), go_to_step.to_string(), "{v}");
    }
    let step_flow = DirectiveError::EmptyTarget {
        field: "goToStep.flow",
        what: "flow id",
    };
    assert_eq!(
        rejected(json!({"goToStep": {"step": "s", "flow": " "}})),
        step_flow.to_string()
    );
}

#[test]
fn reply_with_abort_is_rejected_in_every_abort_form() {
    for abort in [
        json!(true),
        json!("denied"),
        json!({"reason": "denied"}),
        json!({"clearSession": true}),
    ] {
        let v = json!({"abort": abort, "reply": "Goodbye."});
        assert_eq!(
            rejected(v.clone()),
            DirectiveError::ReplyWithAbort.to_string(),
            "{v}"
        );
    }
}

#[test]
fn reply_with_abort_inside_complete_next_is_rejected() {
    let msg = rejected(json!({"complete": {"next": {"abort": "x", "reply": "bye"}}}));
    assert!(
        msg.contains(&DirectiveError::ReplyWithAbort.to_string()),
        "not a reply-with-abort error: {msg}"
    );
}

#[test]
fn unknown_top_level_keys_are_rejected_naming_the_key() {
    for key in [
        "goto",
        "go_to",
        "data",
        "type",
        "appendPrompt",
        "injectTools",
        "halt",
        "stopOtherSignals",
    ] {
        let mut o = serde_json::Map::new();
        o.insert(key.into(), json!(true));
        let msg = rejected(Value::Object(o));
        assert!(
            msg.contains(&format!("`{key}`")),
            "`{key}` not named in: {msg}"
        );
    }
}

#[test]
fn unknown_keys_inside_object_forms_are_rejected_listing_the_allowed_keys() {
    let cases = [
        (
            json!({"goTo": {"flow": "A", "step": "s"}}),
            "goTo",
            "step",
            &["flow", "data", "reason"][..],
        ),
        (
            json!({"goToStep": {"stepId": "s"}}),
            "goToStep",
            "stepId",
            &["step", "flow", "data", "reason"][..],
        ),
        (
            json!({"complete": {"goTo": "A"}}),
            "complete",
            "goTo",
            &["next", "reason"][..],
        ),
        (
            json!({"abort": {"clear_session": true}}),
            "abort",
            "clear_session",
            &["reason", "clearSession"][..],
        ),
        (
            json!({"reset": {"clearData": true, "clear": true}}),
            "reset",
            "clear",
            &["clearData", "reason"][..],
        ),
    ];
    for (v, field, key, allowed) in cases {
        let msg = rejected(v.clone());
        let head = format!("directive field `{field}` has unknown key `{key}`");
        assert!(msg.starts_with(&head), "{v}: {msg}");
        for a in allowed {
            assert!(
                msg.contains(a),
                "{v}: allowed key `{a}` not listed in {msg}"
            );
        }
    }
}

#[test]
fn position_fields_of_the_wrong_json_type_are_shape_errors() {
    let cases = [
        (json!({"goTo": 5}), "goTo", "a number"),
        (json!({"goTo": ["A"]}), "goTo", "an array"),
        (json!({"goTo": true}), "goTo", "a boolean"),
        (json!({"goToStep": 1}), "goToStep", "a number"),
        (json!({"complete": "yes"}), "complete", "a string"),
        (json!({"complete": 1}), "complete", "a number"),
        (json!({"abort": 3}), "abort", "a number"),
        (json!({"abort": []}), "abort", "an array"),
        (json!({"reset": "now"}), "reset", "a string"),
        (
            json!({"goTo": {"flow": "A", "data": [1]}}),
            "goTo",
            "an array",
        ),
        (
            json!({"goToStep": {"step": "s", "data": "x"}}),
            "goToStep",
            "a string",
        ),
    ];
    for (v, field, found) in cases {
        let msg = rejected(v.clone());
        assert!(
            msg.starts_with(&format!("directive field `{field}` must be ")),
            "{v}: {msg}"
        );
        assert!(msg.ends_with(&format!("found {found}")), "{v}: {msg}");
    }
}

#[test]
fn reply_and_state_writes_of_the_wrong_json_type_are_rejected() {
    for v in [
        json!({"reply": 5}),
        json!({"reply": {"text": "hi"}}),
        json!({"dataUpdate": [1, 2]}),
        json!({"dataUpdate": "city=Lisbon"}),
        json!({"contextUpdate": 1}),
    ] {
        let _ = rejected(v);
    }
}

#[test]
fn wrong_typed_values_inside_object_forms_are_rejected_not_silently_ignored() {
    // `clearSession: "true"` silently read as `false` would keep a session the caller
    // asked to delete; a typed flag or reason of the wrong type must be refused.
    let mut accepted = Vec::new();
    for v in [
        json!({"abort": {"reason": "x", "clearSession": "true"}}),
        json!({"reset": {"clearData": 1}}),
        json!({"goTo": {"flow": "A", "reason": 5}}),
        json!({"goToStep": {"step": "s", "flow": 7}}),
        json!({"complete": {"reason": ["r"]}}),
    ] {
        if let Ok(d) = Directive::from_json(v.clone()) {
            accepted.push(format!("{v} -> {d:?}"));
        }
    }
    assert!(
        accepted.is_empty(),
        "accepted wrong-typed values: {accepted:#?}"
    );
}

#[test]
fn non_object_scalars_are_malformed() {
    for v in [json!(null), json!("goTo"), json!(42), json!(true)] {
        let got = Directive::from_json(v.clone());
        assert!(
            matches!(got, Err(DirectiveError::Malformed(_))),
            "{v}: {got:?}"
        );
    }
}

#[test]
fn json_arrays_are_not_accepted_as_positional_directives() {
    // serde's derived struct visitor also takes sequences (fields by position); an array
    // is still not the spec's flat directive object, whatever its elements.
    let mut accepted = Vec::new();
    for v in [
        json!([]),
        json!(["Booking"]),
        json!([null, "confirm"]),
        json!([null, null, true]),
    ] {
        if let Ok(d) = Directive::from_json(v.clone()) {
            accepted.push(format!("{v} -> {d:?}"));
        }
    }
    assert!(
        accepted.is_empty(),
        "arrays accepted as directives: {accepted:#?}"
    );
    assert!(Directive::from_json(json!(["goTo", "A"])).is_err());
}

#[test]
fn from_json_reports_the_specific_directive_error_not_a_malformed_wrapper() {
    type Check = fn(&DirectiveError) -> bool;
    let cases: Vec<(Value, &str, Check)> = vec![
        (
            json!({"goTo": "A", "complete": true}),
            "MultiplePositions [goTo, complete]",
            |e| {
                let DirectiveError::MultiplePositions { fields } = e else {
                    return false;
                };
                let mut f = fields.clone();
                f.sort();
                f == ["complete", "goTo"]
            },
        ),
        (json!({"goTo": {}}), "EmptyTarget goTo", |e| {
            matches!(e, DirectiveError::EmptyTarget { field: "goTo", .. })
        }),
        (
            json!({"abort": "x", "reply": "hi"}),
            "ReplyWithAbort",
            |e| *e == DirectiveError::ReplyWithAbort,
        ),
        (
            json!({"complete": {"next": {"abort": "x", "reply": "hi"}}}),
            "ReplyWithAbort (in complete.next)",
            |e| *e == DirectiveError::ReplyWithAbort,
        ),
        (
            json!({"goTo": {"flow": "A", "step": "s"}}),
            "UnknownKey goTo.step",
            |e| matches!(e, DirectiveError::UnknownKey { field: "goTo", key, .. } if key == "step"),
        ),
        (json!({"goTo": 5}), "Shape goTo", |e| {
            matches!(
                e,
                DirectiveError::Shape {
                    field: "goTo",
                    found: "a number",
                    ..
                }
            )
        }),
    ];
    let mut wrong = Vec::new();
    for (v, want, check) in cases {
        match Directive::from_json(v.clone()) {
            Err(e) if check(&e) => {}
            other => wrong.push(format!("{v}: wanted {want}, got {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

// ---------------------------------------------------------------------------------------
// JSON: round trip
// ---------------------------------------------------------------------------------------

#[test]
fn a_chained_directive_round_trips_through_persisted_text() {
    let d = Directive::complete_then(
        Directive::go_to_with("Survey", patch(json!({"score": null})))
            .because("follow-up")
            .context(patch(json!({"from": "booking"}))),
    )
    .because("booked")
    .reply("Done \"for real\" ✓")
    .data(patch(json!({"bookingId": 42, "tags": ["a", "b"]})));
    let text = serde_json::to_string(&d).unwrap_or_default();
    let back: Directive = serde_json::from_str(&text).unwrap_or_default();
    assert_eq!(back, d, "{text}");
}

proptest! {
    #[test]
    fn serialize_then_deserialize_gives_an_equal_directive(d in valid_directive()) {
        let value = serde_json::to_value(&d);
        prop_assert!(value.is_ok());
        let value = value.unwrap_or_default();
        let back = serde_json::from_value::<Directive>(value.clone());
        prop_assert_eq!(back.as_ref().ok(), Some(&d), "{} -> {:?}", value, back);

        let text = serde_json::to_string(&d).unwrap_or_default();
        let back = serde_json::from_str::<Directive>(&text);
        prop_assert_eq!(back.as_ref().ok(), Some(&d), "{} -> {:?}", text, back);

        let back = Directive::from_json(d.to_json());
        prop_assert_eq!(back, Ok(d));
    }

    #[test]
    fn serialized_form_is_flat_with_spec_keys_and_at_most_one_position(d in valid_directive()) {
        let v = d.to_json();
        let obj = v.as_object();
        prop_assert!(obj.is_some(), "{} is not an object", v);
        let keys: Vec<&str> = obj.map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        const POSITIONS: [&str; 5] = ["goTo", "goToStep", "complete", "abort", "reset"];
        const STATE: [&str; 3] = ["reply", "dataUpdate", "contextUpdate"];
        for k in &keys {
            prop_assert!(POSITIONS.contains(k) || STATE.contains(k), "unexpected key {}", k);
        }
        let positions: Vec<&&str> = keys.iter().filter(|k| POSITIONS.contains(k)).collect();
        prop_assert_eq!(
            positions.iter().map(|k| **k).collect::<Vec<_>>(),
            d.position.as_ref().map(Position::field_name).into_iter().collect::<Vec<_>>()
        );
    }

    #[test]
    fn generated_valid_directives_pass_validation(d in valid_directive()) {
        prop_assert_eq!(d.validate(), Ok(()));
    }
}

// ---------------------------------------------------------------------------------------
// validate on builder-made directives
// ---------------------------------------------------------------------------------------

#[test]
fn abort_with_reply_fails_validation_with_reply_with_abort() {
    assert_eq!(
        Directive::abort("x").reply("hi").validate(),
        Err(DirectiveError::ReplyWithAbort)
    );
    assert_eq!(
        Directive::abort_and_clear("x").reply("").validate(),
        Err(DirectiveError::ReplyWithAbort)
    );
}

#[test]
fn reply_alongside_every_non_abort_position_is_valid() {
    for d in [
        Directive::go_to("A"),
        Directive::go_to_step("s"),
        Directive::go_to_step_in("A", "s"),
        Directive::complete(),
        Directive::reset(),
        Directive::new(),
    ] {
        let d = d.reply("hello");
        assert_eq!(d.validate(), Ok(()), "{d:?}");
    }
}

#[test]
fn empty_or_blank_flow_and_step_ids_fail_validation() {
    let go_to = Err(DirectiveError::EmptyTarget {
        field: "goTo",
        what: "flow id",
    });
    let step = Err(DirectiveError::EmptyTarget {
        field: "goToStep",
        what: "step id",
    });
    let step_flow = Err(DirectiveError::EmptyTarget {
        field: "goToStep.flow",
        what: "flow id",
    });
    assert_eq!(Directive::go_to("").validate(), go_to);
    assert_eq!(Directive::go_to(" \t").validate(), go_to);
    assert_eq!(
        Directive::go_to_with("", patch(json!({"a": 1}))).validate(),
        go_to
    );
    assert_eq!(Directive::go_to_step("").validate(), step);
    assert_eq!(Directive::go_to_step_in("Flow", "  ").validate(), step);
    assert_eq!(Directive::go_to_step_in("", "s").validate(), step_flow);
}

#[test]
fn validation_recurses_into_complete_next_chains() {
    assert_eq!(
        Directive::complete_then(Directive::abort("x").reply("y")).validate(),
        Err(DirectiveError::ReplyWithAbort)
    );
    assert_eq!(
        Directive::complete_then(Directive::complete_then(Directive::go_to(""))).validate(),
        Err(DirectiveError::EmptyTarget {
            field: "goTo",
            what: "flow id"
        })
    );
    assert_eq!(
        Directive::complete_then(Directive::go_to("Survey")).validate(),
        Ok(())
    );
}

#[test]
fn validation_does_not_check_that_targets_exist() {
    // Existence is checked when the directive is applied, against the registry.
    assert_eq!(Directive::go_to("NoSuchFlow").validate(), Ok(()));
    assert_eq!(
        Directive::go_to_step_in("NoSuchFlow", "nope").validate(),
        Ok(())
    );
}

#[test]
fn because_sets_the_position_reason_and_is_a_no_op_without_a_position() {
    for k in KINDS {
        let d = tagged(k, "why");
        assert_eq!(
            d.position.as_ref().and_then(reason_of),
            Some("why"),
            "{k:?}"
        );
    }
    assert_eq!(Directive::say("hi").because("why"), Directive::say("hi"));
}

#[test]
fn is_empty_only_when_the_directive_has_no_effect() {
    assert!(Directive::new().is_empty());
    assert!(Directive::new().data(Patch::new()).is_empty());
    assert!(Directive::new().context(Patch::new()).is_empty());
    assert!(!Directive::say("").is_empty());
    assert!(!Directive::reset().is_empty());
    assert!(!Directive::new().data(patch(json!({"a": null}))).is_empty());
}

// ---------------------------------------------------------------------------------------
// Persistence: only the base directive crosses turns
// ---------------------------------------------------------------------------------------

#[test]
fn pre_directive_cannot_be_serialized_only_its_base_directive_can() {
    assert!(Probe::<Directive>(PhantomData).serializable());
    assert!(!Probe::<Pre>(PhantomData).serializable());
}

#[test]
fn persisting_a_pre_directive_keeps_position_state_and_reply_and_drops_augmentations() {
    let pre = Pre::from(Directive::go_to("Booking").because("vip"))
        .data(patch(json!({"tier": "vip"})))
        .context(patch(json!({"channel": "web"})))
        .reply("Welcome back.")
        .append_prompt("This caller is a VIP.")
        .inject_tool(tool("lookup_account", "per-turn lookup"))
        .halt();
    assert!(pre.has_pre_only_fields());

    let persisted = serde_json::to_value(&pre.base).unwrap_or_default();
    let mut keys: Vec<&str> = persisted
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    assert_eq!(keys, ["contextUpdate", "dataUpdate", "goTo", "reply"]);

    let restored: Directive = serde_json::from_value(persisted.clone()).unwrap_or_default();
    assert_eq!(restored, pre.base, "{persisted}");
    assert_eq!(restored.reply.as_deref(), Some("Welcome back."));
    assert_eq!(winner(&restored), Some((Kind::GoTo, "vip".to_owned())));

    let next_turn = Pre::from(restored);
    assert!(!next_turn.has_pre_only_fields());
    assert!(next_turn.append_prompt.is_empty());
    assert!(next_turn.inject_tools.is_empty());
    assert!(!next_turn.halt);
    assert_eq!(next_turn.base, pre.base);
}

#[test]
fn has_pre_only_fields_detects_each_augmentation_and_ignores_base_fields() {
    assert!(!Pre::new().has_pre_only_fields());
    let base_only = Pre::from(Directive::abort_and_clear("x"))
        .data(patch(json!({"a": 1})))
        .context(patch(json!({"b": 2})));
    assert!(!base_only.has_pre_only_fields());
    assert!(!Pre::new().reply("hi").has_pre_only_fields());
    assert!(Pre::new().append_prompt("nudge").has_pre_only_fields());
    assert!(Pre::new().inject_tool(tool("t", "d")).has_pre_only_fields());
    assert!(Pre::new().halt().has_pre_only_fields());
}

#[test]
fn augmentation_fields_in_persisted_json_are_refused() {
    for v in [
        json!({"goTo": "A", "appendPrompt": ["VIP."]}),
        json!({"reply": "hi", "halt": true}),
        json!({"injectTools": [{"name": "lookup"}]}),
    ] {
        let _ = rejected(v);
    }
}

// ---------------------------------------------------------------------------------------
// Error messages say what is wrong
// ---------------------------------------------------------------------------------------

#[test]
fn multiple_positions_message_names_the_fields_and_points_to_complete_next() {
    let msg = DirectiveError::MultiplePositions {
        fields: vec!["goTo".into(), "complete".into()],
    }
    .to_string();
    assert!(msg.contains("goTo") && msg.contains("complete"), "{msg}");
    assert!(msg.contains("complete.next"), "{msg}");
    let parsed_msg = rejected(json!({"goTo": "A", "abort": "x"}));
    assert!(parsed_msg.contains("complete.next"), "{parsed_msg}");
}

#[test]
fn other_directive_error_messages_name_the_field_and_the_problem() {
    let empty = DirectiveError::EmptyTarget {
        field: "goTo",
        what: "flow id",
    }
    .to_string();
    assert!(
        empty.contains("`goTo`") && empty.contains("flow id"),
        "{empty}"
    );

    let unknown = DirectiveError::UnknownKey {
        field: "abort",
        key: "clear_session".into(),
        allowed: &["reason", "clearSession"],
    }
    .to_string();
    for part in ["`abort`", "`clear_session`", "reason", "clearSession"] {
        assert!(unknown.contains(part), "{part} missing from {unknown}");
    }

    let shape = DirectiveError::Shape {
        field: "complete",
        expected: "true or an object",
        found: "a string",
    }
    .to_string();
    for part in ["`complete`", "true or an object", "a string"] {
        assert!(shape.contains(part), "{part} missing from {shape}");
    }

    let reply = DirectiveError::ReplyWithAbort.to_string();
    assert!(
        reply.contains("reply") && reply.contains("abort"),
        "{reply}"
    );
}
