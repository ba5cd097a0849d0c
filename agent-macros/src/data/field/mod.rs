//! `#[field(...)]` on the fields of a `#[data]` struct: value constraints that become
//! JSON-schema keywords of the field's property. The schema is the whole contract: the
//! model's structured output (and a local model's grammar) follows it, and the engine
//! checks every write against it.
//!
//! | key                       | field type            | schema keywords                      |
//! |---------------------------|-----------------------|--------------------------------------|
//! | `range = 1..=12`          | integers, `f32`/`f64` | `minimum`, `maximum`                 |
//! | `len = 1..=80`            | `String`, `Vec<T>`    | `minLength`/`maxLength` (`minItems`/`maxItems` for a `Vec`) |
//! | `pattern = "^[A-Z]{3}$"`  | `String`              | `pattern`                            |
//! | `one_of("a", "b")`        | `String`              | `enum` (with `null`)                 |
//! | `inferred`                | any                   | `"x-inferred": true`                 |
//! | `not_past`                | `Date`, `DateTime`    | `"x-not-past": true`                 |
//! | `synonyms(1 = ["just me"])` | numbers, `String`, enums | `"x-synonyms": {"1": ["just me"]}` |
//! | `validate = path`         | any                   | none: `path` runs on every write     |
//!
//! `validate` names a `fn(T) -> Result<T, String>` (`T` the field's value type): `Ok`
//! with the value to store (unchanged or normalised), `Err` with a message for the user.
//! A function of another shape is a type error on the path.
//!
//! `not_past` refuses a day before today on the agent's clock. The field's type must
//! implement `CalendarValue` (the engine's `Date` and `DateTime`), checked by rustc on
//! the key, so a type alias is accepted and a `String` is not.
//!
//! `synonyms` names, per value, what users say for it when the words are not the value
//! itself: grounding accepts "just me" as a statement of `1` guests, or "two beds" of
//! `"double"`, and the field list in the prompt shows them to the model. The value is a
//! number literal for a numeric field (within its `range`), a string for a text field
//! (within its `one_of`) or an enum's serialised variant name.
//!
//! Ranges are inclusive; either bound may be left out (`..=100`, `1..=`, `1..`).
//!
//! [`parse`] reads the attributes (syntax errors), [`validate`] checks them against the
//! field's type, [`schema_attrs`] emits the `#[schemars(...)]` attributes; each lives in
//! its own module, this one holds the constraint types they share.

mod expand;
mod parse;
mod validate;

pub use expand::{calendar_assert, check_expr, schema_attrs};
pub use parse::parse;
pub use validate::validate;

use proc_macro2::{Span, TokenStream};
use quote::quote;

/// The keys `#[field(...)]` accepts.
pub const KEYS: &[&str] = &[
    "range", "len", "pattern", "one_of", "inferred", "not_past", "validate", "synonyms",
];

/// A number literal of a bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// An integer literal (sign included).
    Int(i128),
    /// A float literal (sign included), finite.
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            // Bounds are compared, not computed with: the precision of huge ints is moot.
            #[allow(clippy::cast_precision_loss)]
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// The literal emitted into the schema attribute (`12i64`, `-0.5f64`).
    fn tokens(self) -> TokenStream {
        match self {
            Num::Int(i) => {
                let suffix = if i > i128::from(i64::MAX) {
                    "u64"
                } else {
                    "i64"
                };
                let lit =
                    syn::LitInt::new(&format!("{}{suffix}", i.unsigned_abs()), Span::call_site());
                if i < 0 { quote!(-#lit) } else { quote!(#lit) }
            }
            Num::Float(f) => {
                let lit = syn::LitFloat::new(&format!("{:?}f64", f.abs()), Span::call_site());
                if f.is_sign_negative() {
                    quote!(-#lit)
                } else {
                    quote!(#lit)
                }
            }
        }
    }
}

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Num::Int(i) => write!(f, "{i}"),
            Num::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// One bound of a range, with its tokens for error spans.
pub struct Bound {
    /// The value.
    pub num: Num,
    /// The tokens as written (`-`, literal).
    pub tokens: TokenStream,
}

/// An inclusive range with optional ends (`1..=12`, `..=12`, `1..=`, `1..`).
pub struct Bounds {
    /// The lower bound.
    pub min: Option<Bound>,
    /// The upper bound.
    pub max: Option<Bound>,
    /// The range as written.
    pub tokens: TokenStream,
}

/// A key with its value.
pub struct Entry<T> {
    /// The key as written.
    pub key: syn::Ident,
    /// Key and value as written, for errors about the whole entry.
    pub tokens: TokenStream,
    /// The parsed value.
    pub value: T,
}

/// The constraints of one field (every key at most once).
#[derive(Default)]
pub struct Constraints {
    /// `range = A..=B`.
    pub range: Option<Entry<Bounds>>,
    /// `len = A..=B`.
    pub len: Option<Entry<Bounds>>,
    /// `pattern = "regex"`.
    pub pattern: Option<Entry<syn::LitStr>>,
    /// `one_of("a", ...)`.
    pub one_of: Option<Entry<Vec<syn::LitStr>>>,
    /// `inferred`.
    pub inferred: Option<Entry<()>>,
    /// `not_past`.
    pub not_past: Option<Entry<()>>,
    /// `validate = path`.
    pub validate: Option<Entry<syn::Path>>,
    /// `synonyms(value = ["phrase", ...], ...)`.
    pub synonyms: Option<Entry<Vec<Synonyms>>>,
}

/// The value a group of synonyms stands for.
pub enum SynonymOf {
    /// A number (`1 = [...]`).
    Num(Bound),
    /// A text or enum value (`"double" = [...]`).
    Text(syn::LitStr),
}

impl SynonymOf {
    /// The value as the schema's `x-synonyms` key: numbers as JSON writes them, so
    /// the engine finds `1` under `"1"` and `1.5` under `"1.5"`.
    pub fn key(&self) -> String {
        match self {
            SynonymOf::Num(b) => match b.num {
                Num::Int(i) => i.to_string(),
                // Whole floats are keyed like the integer the model writes for them.
                #[allow(clippy::cast_possible_truncation)]
                Num::Float(x) if x.fract() == 0.0 && x.abs() < 1e15 => (x as i64).to_string(),
                Num::Float(x) => x.to_string(),
            },
            SynonymOf::Text(s) => s.value(),
        }
    }
}

/// One `value = ["phrase", ...]` of `synonyms(...)`.
pub struct Synonyms {
    /// The value.
    pub of: SynonymOf,
    /// What users say for it.
    pub phrases: Vec<syn::LitStr>,
    /// The entry as written, for errors.
    pub tokens: TokenStream,
}
