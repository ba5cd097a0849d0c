//! Attribute macros for `agent-core`: `#[data]`, `#[context]`, `#[flow]`, `#[step]` and
//! `#[tool]` turn plain Rust items into the runtime's objects, and the compiler rejects
//! broken flows. The reference with examples is `agent_core::typed::reference`.
//!
//! Every macro is written as parse → validate → expand (one module each), collects all
//! errors of an item and reports them together with spans on the user's tokens, never
//! panics, and still emits the item on error so that rustc adds no follow-on noise.
//! Generated code names only `::agent_core::__private::…`.

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

/// The agent's data type (`TData`). Fields are written plain (`city: String`); at run
/// time every field is optional (data is collected over turns). Generates the field enum
/// (`BookingField`), the patch builder (`Booking::patch().city("Lisbon")`), the JSON
/// schema (doc comments are the field descriptions), and the step views `#[flow]` uses.
///
/// # Field constraints: `#[field(...)]`
///
/// Constraints on a field's value go into that field's JSON-schema property. The model
/// (and a local model's grammar) sees them, and the engine checks every write against
/// them. Keys, comma-separated, each at most once per field:
///
/// | key | fields | schema |
/// |---|---|---|
/// | `range = 1..=12` | integers, `f32`, `f64` | `minimum`, `maximum` |
/// | `len = 1..=80` | `String` (`Vec<T>`) | `minLength`, `maxLength` (`minItems`, `maxItems`) |
/// | `pattern = "^[A-Z]{3}$"` | `String` | `pattern` (not anchored: write `^…$`) |
/// | `one_of("standard", "suite")` | `String` | `enum` (plus `null`) |
/// | `inferred` | any | `"x-inferred": true`: the value need not be grounded in what the user said |
///
/// Ranges are inclusive, and either end may be left out: `..=100`, `1..=` (or `1..`).
/// Bounds are number literals (negative allowed; integers for integer fields, within the
/// type's range). For an exact length write `len = 5..=5`.
///
/// ```ignore
/// #[data]
/// pub struct Booking {
///     /// Number of guests
///     #[field(range = 1..=12)]
///     pub guests: u8,
///     /// Check-in date, ISO 8601
///     #[field(pattern = r"^\d{4}-\d{2}-\d{2}$")]
///     pub check_in: String,
///     #[field(one_of("standard", "suite"), inferred)]
///     pub room: String,
/// }
/// ```
///
/// Compile errors: an unknown key (with a suggestion), a key on a field of the wrong
/// type, a malformed value, an empty range (`12..=1`), a bound outside the type, an
/// invalid regex (a basic syntax check), a key given twice, and `#[field]` in a
/// `#[context]`.
#[proc_macro_attribute]
pub fn data(attr: TokenStream, item: TokenStream) -> TokenStream {
    data::expand(data::Kind::Data, attr.into(), item.into()).into()
}

/// The agent's context type (`TContext`): fields stay as written; generates the field
/// enum and the patch builder (`Concierge::patch().tier("gold")`).
#[proc_macro_attribute]
pub fn context(attr: TokenStream, item: TokenStream) -> TokenStream {
    data::expand(data::Kind::Context, attr.into(), item.into()).into()
}

/// A flow: an inline module whose `#[step(..)]` fns are its steps, in order; or, on
/// an `async fn(ctx: FlowCx<Data, Context>) -> FlowResult`, a code flow (`tutor` →
/// the type `TutorFlow`, registered with `.code_flow(TutorFlow)`).
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

/// A step of a `#[flow]` module (read by `#[flow]`; an error anywhere else).
#[proc_macro_attribute]
pub fn step(_attr: TokenStream, item: TokenStream) -> TokenStream {
    flow::stray_step(item.into()).into()
}

/// A tool the model may call: an (async) fn whose parameters (except a `ToolCx`) are the
/// arguments; its doc comment is the description, parameter doc comments describe the
/// arguments. `Option<T>` parameters are optional.
///
/// Arguments are the user's to give (see `agent_core::tool::Tool::derived_args`): a
/// parameter the model computes (a search query, an amount it converts) is marked
/// `#[arg(derived)]`:
///
/// ```ignore
/// /// Search the catalogue.
/// #[tool]
/// async fn search(
///     /// What to look for, in the model's words
///     #[arg(derived)]
///     query: String,
/// ) -> Result<ToolOutput, ToolError> { .. }
/// ```
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
