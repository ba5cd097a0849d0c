//! Custom field checks: code that validates or normalises a value beyond what a JSON
//! schema can say ("a city we serve", "trim and title-case the name"). They run after
//! the schema's constraints on every write (model, tool, hook, dispatch), so the one
//! rule of [`super::DataSchema::admit`] holds for them too.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A check on one field's JSON value: `Ok` with the value to store (the same or
/// normalised), or `Err` with a message the user may be shown.
pub type CheckFn = Arc<dyn Fn(&Value) -> Result<Value, String> + Send + Sync>;

/// A custom check bound to a field (from `#[field(validate = path)]` or
/// [`crate::AgentBuilder::validate`]).
#[derive(Clone)]
pub struct FieldCheck {
    /// The field it guards.
    pub field: String,
    /// The validator: given the field's value, `Ok` or the reason it is refused.
    pub check: CheckFn,
}

impl std::fmt::Debug for FieldCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldCheck")
            .field("field", &self.field)
            .finish_non_exhaustive()
    }
}

/// Wrap a typed check (`fn(T) -> Result<T, String>`: it takes the value and gives back
/// the one to store) as a JSON one: the value is read as `T`, checked, and written back
/// (so a normaliser's output is what gets stored).
pub fn typed<T, F>(f: F) -> CheckFn
where
    T: Serialize + DeserializeOwned + 'static,
    F: Fn(T) -> Result<T, String> + Send + Sync + 'static,
{
    Arc::new(move |v: &Value| {
        let typed: T = serde_json::from_value(v.clone())
            .map_err(|e| format!("is not a value of the field's type ({e})"))?;
        let out = f(typed)?;
        serde_json::to_value(out).map_err(|e| format!("could not be written back ({e})"))
    })
}

impl FieldCheck {
    /// A typed check on `field` (see [`typed`]).
    pub fn typed<T, F>(field: impl Into<String>, f: F) -> Self
    where
        T: Serialize + DeserializeOwned + 'static,
        F: Fn(T) -> Result<T, String> + Send + Sync + 'static,
    {
        Self {
            field: field.into(),
            check: typed(f),
        }
    }
}

/// The reason recorded for a value a custom check refused: it reads after "it" in the
/// engine's notes ("city Paris is not possible: it was refused: we only serve ...").
pub(crate) fn refusal(message: &str) -> String {
    format!("was refused: {}", message.trim())
}
