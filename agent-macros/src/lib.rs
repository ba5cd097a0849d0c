//! Attribute macros for `agent-core`: `#[data]`, `#[context]`, `#[flow]`, `#[step]` and
//! `#[tool]` turn plain Rust items into an agent's data type, flows and tools, and the
//! compiler rejects broken flows (a branch to a step that does not exist, a directive
//! with two destinations, a field the data type does not have, ..).
//!
//! Use them through `agent-core`, which re-exports them:
//!
//! ```ignore
//! use agent_core::typed::prelude::*;
//! ```
//!
//! Each macro's page below starts with an example, then says what the macro generates,
//! then lists its keys. The examples are programs of their own, compiled and run by the
//! workspace's `ui-tests` crate (`agent-macros/examples-doc/*.rs`); they are marked
//! `ignore` here because a proc-macro crate cannot use its own macros in doc tests. The
//! full reference, with every rule and the runtime behaviour, is
//! `agent_core::typed::reference`.
//!
//! Every macro is written as parse → validate → expand (one module each), collects all
//! errors of an item and reports them together with spans on the user's tokens, never
//! panics, and still emits the item on error so that rustc adds no follow-on noise.
//! Generated code names only `::agent_core::__private::…`.

#![deny(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proc_macro::TokenStream;

mod chains;
mod codeflow;
mod data;
mod diag;
mod flow;
mod tool;

#[cfg(test)]
mod snapshots;

/// The agent's data type: what the conversation collects from the user.
///
/// Put it on a struct with named fields, written plain (`city: String`), and name it in
/// each flow (`#[flow(data = Booking)]`). Doc comments become the field descriptions
/// the model reads.
///
/// ```ignore
#[doc = include_str!("../examples-doc/data.rs")]
/// ```
///
/// The example is `agent-macros/examples-doc/data.rs`, which the `ui-tests` crate compiles
/// and runs.
///
/// # What it generates
///
/// - The struct with every field an `Option` at run time (data arrives over several
///   turns; a field already written `Option<T>` stays so), deriving `Debug`, `Clone`,
///   `Default`, serde's `Serialize`/`Deserialize` and `JsonSchema` unless you derived
///   them. Your own derives and attributes are kept.
/// - `BookingField`, an enum of the fields (`BookingField::city.name()` is the JSON
///   key), and `Booking::FIELDS`.
/// - `BookingPatch` (`Booking::patch().city("Lisbon").guests(2)`): a typed write, one
///   setter and one `clear_x()` per field.
/// - `Booking::json_schema()`: the schema sent to the model.
/// - The per-step views `#[flow]` hands to hooks and predicates (`BookingView`), and a
///   hidden macro of the struct's name through which `#[flow(data = Booking)]` learns the
///   fields. Name the data type in `data = ..` by its name, a path (another crate's
///   `pub` type included), or a `use .. as ..` import; not through a type alias.
///
/// Serde's names count: `#[serde(rename_all = "camelCase")]` on the struct and `rename`,
/// `alias`, `skip` and `default` on a field change the JSON names, while Rust code
/// (`collect(guests)`, `v.guests`, `{guests}` in a template) keeps the Rust names.
///
/// # Keys
///
/// `#[data]` takes no arguments. Each field may carry `#[field(..)]` with these keys
/// (comma-separated, each at most once):
///
/// | key | on | meaning |
/// |---|---|---|
/// | `range = 1..=12` | numbers | inclusive bounds (`1..=`, `..=12` leave one open); schema `minimum`/`maximum` |
/// | `len = 1..=80` | `String`, `Vec<T>` | length bounds; schema `minLength`/`maxLength` (`minItems`/`maxItems`) |
/// | `pattern = r"^[A-Z]{3}$"` | `String` | a regex (checked at compile time; not anchored: write `^…$`) |
/// | `one_of("standard", "suite")` | `String` | the allowed values; schema `enum` |
/// | `inferred` | any | the value need not be grounded in the user's words |
/// | `not_past` | `Date`, `DateTime` | a day before today is refused |
/// | `synonyms(1 = ["just me"], ..)` | numbers, `String`, enums | phrases users say for a value |
/// | `validate = path` | any | a `fn(T) -> Result<T, String>` run on every write (normalise or refuse) |
///
/// The engine checks every write against these constraints, whoever writes (model,
/// tool, hook). Compile errors: an unknown key (with a suggestion), a key on a field of
/// the wrong type, a malformed value, an empty range, a bound outside the field's type,
/// an invalid regex, a key given twice, an unsupported serde attribute, two fields with
/// one JSON name, and `#[field]` in a `#[context]`.
#[proc_macro_attribute]
pub fn data(attr: TokenStream, item: TokenStream) -> TokenStream {
    data::expand(data::Kind::Data, attr.into(), item.into()).into()
}

/// The agent's context type: what the application knows about the conversation (a
/// loyalty tier, an account id), as opposed to what the user is asked for.
///
/// ```ignore
#[doc = include_str!("../examples-doc/context.rs")]
/// ```
///
/// The example is `agent-macros/examples-doc/context.rs`, which the `ui-tests` crate compiles
/// and runs.
///
/// # What it generates
///
/// The struct with its fields as written (a context must round-trip through JSON and
/// have a `Default`: `Debug`, `Clone`, `Default` and serde's derives are added unless
/// you derived them), `ConciergeField` (the field enum) and `ConciergePatch`
/// (`Concierge::patch().tier("gold")`), the typed write that `.context(..)` takes. A
/// data patch is not accepted as a context write, nor the reverse.
///
/// # Keys
///
/// `#[context]` takes no arguments, and its fields take no `#[field(..)]`.
#[proc_macro_attribute]
pub fn context(attr: TokenStream, item: TokenStream) -> TokenStream {
    data::expand(data::Kind::Context, attr.into(), item.into()).into()
}

/// A flow: a conversation the agent leads, as steps that collect data, call tools and
/// branch. On an inline module, a declarative flow whose `#[step]` fns are its steps; on
/// an `async fn`, a code flow.
///
/// # Declarative flows
///
/// ```ignore
#[doc = include_str!("../examples-doc/flow.rs")]
/// ```
///
/// The example is `agent-macros/examples-doc/flow.rs`, which the `ui-tests` crate compiles
/// and runs.
///
/// For `mod booking`, `#[flow]` generates:
///
/// - `BookingFlow` next to the module: the flow type that branch targets, `on_complete`
///   and `Directive::go_to::<BookingFlow>()` name (a misspelled flow does not compile).
///   The flow id is the module name, also `BookingFlow::ID`.
/// - In the module: `Step`, one variant per step (`booking::Step::confirm`); `flow()`,
///   the runtime flow (`Result<Flow<D, C>, ConfigErrors>`: the runtime validates it
///   again); `DIAGRAM` and `diagram()`, a Mermaid diagram; `ID`; and the views, one per
///   step (`booking::confirm::View<'_>`: the fields the step `requires` are plain values,
///   the others `Unrequired<'_, T, _>`, read as an `Option<&T>` with `.get()`),
///   `booking::View<'_>` (no field required) and
///   `booking::Completed<'_>` (the `required` fields plain).
///
/// The module keeps your items and sees its parent (`use super::*;` is added). Steps run
/// in declaration order unless a branch or `end` says otherwise. Declare flows at module
/// level (not inside a fn body).
///
/// # Keys of a declarative flow
///
/// | key | example | meaning |
/// |---|---|---|
/// | `data` (required) | `data = Booking` | the `#[data]` type |
/// | `context` | `context = Concierge` | the `#[context]` type (default `()`) |
/// | `title` | `title = "Hotel booking"` | human title (default: the id) |
/// | `description` | `description = ".."` | what the router reads about the flow |
/// | `when` | `when = "the user wants to book"` | the condition under which the model starts the flow |
/// | `if` | `if = \|v\| v.context().tier != "banned"` | a code predicate over `View` that must hold too |
/// | `required(..)` | `required(city, guests)` | fields needed before the flow can complete |
/// | `optional(..)` | `optional(notes)` | more fields the model may write in this flow |
/// | `initial_data` | `initial_data = Booking::patch().guests(1)` | a patch written when the flow is entered |
/// | `corrections` | `corrections = reopen` | a correction after completion: `refuse` (default) or `reopen` the flow |
/// | `interrupted` | `interrupted = end` | when another flow starts meanwhile: `resume` (default), `restart` or `end` |
/// | `cancel_clears(..)` | `cancel_clears(booking_id)` | more fields a cancel clears |
/// | `cancel_after_tool` | `cancel_after_tool = "Your room stays booked."` | what a cancel says after a once-tool ran (required with such a tool) |
/// | `reentrant` | `reentrant` | the flow may start again after completing |
/// | `tools(..)` | `tools(book_room)` | tools offered in every step |
/// | `on_complete` | `on_complete = FeedbackFlow` | a flow type or typed directive applied when the flow completes |
/// | `on_enter` | `on_enter = greet` | `fn(View) -> PreDirective` run when the flow is entered |
/// | `on_exit`, `on_data_update`, `on_context_update` | `on_exit = bye` | `fn(View)` run at those moments |
/// | `on_complete_hook` | `on_complete_hook = done` | `fn(Completed) -> impl IntoDirective<D>`; not with `on_complete` |
///
/// Hooks name fns of the module (or paths); they may be `async` when declared in the
/// module. The step keys are listed under [`macro@step`].
///
/// # Code flows
///
/// ```ignore
#[doc = include_str!("../examples-doc/code_flow.rs")]
/// ```
///
/// The example is `agent-macros/examples-doc/code_flow.rs`, which the `ui-tests` crate compiles
/// and runs.
///
/// On `async fn tutor(ctx: FlowCx<Data, Context>) -> FlowResult`, `#[flow]` generates the
/// unit type `TutorFlow` (register it with `.code_flow(TutorFlow)`; name it in
/// `ctx.handoff::<TutorFlow>()` and in declarative flows' targets). The fn runs again
/// from the start on every turn, against the answers it recorded, so everything that
/// varies (time, randomness, ids) comes from `ctx`.
///
/// | key | example | meaning |
/// |---|---|---|
/// | `id` | `id = "remind"` | the flow id (default: the fn name) |
/// | `title` | `title = "English tutor"` | human title |
/// | `when` | `when = "the user wants a reminder"` | the condition under which the model starts the flow |
/// | `description` | `description = ".."` | what the router reads about the flow |
/// | `data`, `context` | `data = Booking` | the types, when the parameter is not written `FlowCx<Data, Context>` |
///
/// # Compile errors
///
/// A branch or `on_complete` naming a step or flow that does not exist (with "did you
/// mean"), a flow over another data type, a directive with two positions or with `reply`
/// and `abort`, an unknown field in a field list, an unreachable step, `auto` steps that
/// only lead to each other, step shape conflicts, two steps of one name, reserved names,
/// a flow without steps, and a data type without `#[data]`. Each names the fix at your
/// token.
#[proc_macro_attribute]
pub fn flow(attr: TokenStream, item: TokenStream) -> TokenStream {
    flow_entry(attr.into(), item.into()).into()
}

/// `#[flow]` on a fn is a code flow; on anything else, a declarative flow module.
fn flow_entry(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(f) => codeflow::expand(attr, f),
        Err(_) => flow::expand(attr, item),
    }
}

/// A step of a [`macro@flow`] module: one fn per step, in the order the conversation
/// takes them. `#[flow]` reads these attributes; `#[step]` anywhere else is an error.
///
/// The fn's body is the step's `prepare` hook, run before the step's model call: `fn
/// ask_city() {}` has none; `fn confirm(v: confirm::View<'_>) -> PreDirective<D, C>`
/// reads the step's view (its `requires` fields are plain values) and may append to the
/// prompt, inject a tool or halt. See the example under [`macro@flow`].
///
/// A step has one of three shapes: a model step (the default: the model writes the
/// message and extracts the data), `auto` (no model call; code-only branches) or
/// `reply = ".."` (a fixed message, which may name fields: `"Booked {booking_id}."`).
///
/// # Keys
///
/// | key | example | meaning |
/// |---|---|---|
/// | `auto` | `auto` | no model call: the step routes by code only |
/// | `reply` | `reply = "Booked {booking_id}."` | a verbatim message rendered by code; its fields must be present at the step |
/// | `prompt` | `prompt = "Ask the city."` | what the model does at this step |
/// | `ask` | `ask = "Shall I book {city}?"` | the step's question, written by code from the data |
/// | `collect(..)` | `collect(city)` | fields this step asks for |
/// | `requires(..)` | `requires(city)` | fields present before the step runs: plain values in its view |
/// | `depends_on(..)` | `depends_on(city)` | a correction of these fields sends the flow back here |
/// | `tools(..)` | `tools(book_room)` | tools offered at this step |
/// | `requires_tool(..)` | `requires_tool(book_room)` | the flow cannot end here until that tool ran this turn |
/// | `act_on_answer` | `act_on_answer` | the step's tools only in a call that reads the answer to its question |
/// | `end` | `end` | terminal: no next step |
/// | `interrupted` | `interrupted = restart` | overrides the flow's `interrupted` while waiting here |
/// | `skip` | `skip = \|v\| v.city.is_some()` | skip the step while the predicate holds |
/// | `if` | `if = \|v\| v.context().tier == "gold"` | as a successor: only when the predicate holds |
/// | `when` | `when = "the user is ready"` | as a successor: only when the model agrees |
/// | `on_enter` | `on_enter = entering` | `fn(step::View) -> PreDirective` run when entered |
/// | `finalize` | `finalize = after` | `fn(step::View) -> impl IntoDirective<D>` run after the model call |
/// | `branches(..)` | `branches(if \|v\| v.guests > 8 => large_group, else => confirm)` | where to go next |
/// | `jump_target` | `jump_target` | reached only by directives (not reported unreachable) |
///
/// A branch entry is `if <closure>`, `when "<condition>"` or both, then `=>` and a
/// target: a step of this flow, a flow type, `other::Step::name`, or a typed directive
/// (`Directive::abort("..")`); `else => target` is last. `auto` steps take no model keys
/// (`prompt`, `collect`, `tools`, `when` branches); `reply` steps neither.
/// `#[cfg(..)]` and `#[cfg_attr(pred, step(..))]` on a step fn are honoured.
#[proc_macro_attribute]
pub fn step(_attr: TokenStream, item: TokenStream) -> TokenStream {
    flow::stray_step(item.into()).into()
}

/// A tool the model may call: an `async` (or plain) fn whose parameters are the tool's
/// arguments.
///
/// ```ignore
#[doc = include_str!("../examples-doc/tool.rs")]
/// ```
///
/// The example is `agent-macros/examples-doc/tool.rs`, which the `ui-tests` crate compiles
/// and runs.
///
/// # What it generates
///
/// A unit struct of the fn's name implementing `Tool<D, C>` (for any data and context
/// types, or those of its `ToolCx<D, C>` parameter); offer it with `tools(book_room)` in
/// a flow or step, or give it to the agent builder (`.tool(book_room.arc())`). The doc
/// comment is the description the model reads (required); each parameter's doc comment
/// describes that argument; `Option<T>` parameters are optional; a `ToolCx` parameter is
/// not an argument. Arguments must be owned, `Deserialize` and `JsonSchema`. The fn keeps
/// its other attributes and its name, and returns `Result<ToolOutput, ToolError>`
/// (`ToolOutput` carries the text for the model, typed data and context writes, and a
/// directive).
///
/// # Keys
///
/// | key | example | meaning |
/// |---|---|---|
/// | `name` | `name = "weather"` | the name the model sees (default: the fn name; `[A-Za-z0-9_-]{1,64}`) |
/// | `description` | `description = ".."` | the description (default: the doc comment) |
/// | `concurrency_safe` | `concurrency_safe` | may run in parallel with the other concurrency-safe calls of the same round |
/// | `timeout_ms` | `timeout_ms = 5_000` | this tool's time limit per call |
/// | `effect` | `effect = once` | what running a call again does: `pure`, `idempotent` (default) or `once` (journaled, never run twice) |
/// | `request_words` | `request_words = ["refund"]` | offered only when the user's words ask for it |
/// | `approval` | `approval` or `approval = rule` | every call (or those where `fn(&Value) -> bool` holds) waits for a person |
///
/// On a parameter, `#[arg(derived)]` marks an argument the model computes (a search
/// query) rather than one the user must have given. Compile errors: a missing
/// description, an invalid name, a key given twice, an argument type that is not
/// `Deserialize` and `JsonSchema`, a borrowed or `impl Trait` argument, `unsafe` or
/// `extern` fns, and a return type other than `Result<ToolOutput, ToolError>`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}

/// The callback `#[data]` generates for `#[flow]` (views and field checks). Not an API.
#[doc(hidden)]
#[proc_macro]
pub fn __data_callback(input: TokenStream) -> TokenStream {
    data::callback::expand(input.into()).into()
}
