//! Support for macro-generated code, re-exported through `agent_core::__private`. Not a
//! stable API.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use super::data::{ContextType, DataType, IntoContextPatch, IntoDataPatch, Mode, Opt, Req};
pub use super::directive::{IntoDirective, IntoPreDirective};
pub use super::flow::{FlowDef, FlowOver, StepId, StepOver};
pub use crate::branch::Branch;
pub use crate::codeflow::FlowRef;
pub use crate::data::Patch;
pub use crate::data::custom::FieldCheck;
pub use crate::directive::{Directive as RtDirective, PreDirective as RtPreDirective};
pub use crate::error::ConfigErrors;
pub use crate::flow::{Corrections, Flow};
pub use crate::hook::{Cx, NotifyHook, PostHook, PreHook};
pub use crate::step::Step as RtStep;
pub use crate::tool::{Tool, ToolCx, ToolError, ToolOutput as RtToolOutput};

/// The typed view of a step (implemented by the `#[data]` callback for each step marker).
pub trait StepView<'a> {
    /// The view type.
    type View;
}

/// A predicate over a view, as generated code stores it.
pub type ViewPredicate<'p, V> = &'p dyn Fn(&V) -> bool;

/// Pins a predicate's argument type to the step's view so closures infer it.
pub fn predicate<V, F: Fn(&V) -> bool>(f: F) -> F {
    f
}

/// A post-LLM directive from anything that converts.
pub fn into_directive(d: impl IntoDirective) -> RtDirective {
    d.into_directive()
}

/// A pre-LLM directive from anything a pre hook may return.
pub fn into_pre<D, C>(d: impl IntoPreDirective<D, C>) -> RtPreDirective<D, C> {
    d.into_pre_directive()
}

/// What a notification hook (`on_exit`, `on_data_update`, `on_context_update`) returns.
pub fn notified(_: ()) {}

/// Share a tool as builders take it.
pub fn tool_arc<D, C, T: Tool<D, C> + 'static>(t: T) -> Arc<dyn Tool<D, C>> {
    Arc::new(t)
}

/// The id of a flow over `D` (a branch or `on_complete` target of a flow over `D`).
pub fn flow_id_over<D, F: FlowOver<D>>() -> &'static str {
    F::ID
}

/// A jump to a typed step of a flow over `D` (a branch target of a flow over `D`).
pub fn step_directive_over<D, S: StepOver<D>>(s: S) -> RtDirective {
    RtDirective::go_to_step_in(S::FLOW_ID, s.id())
}

/// A `reply` template with its `{field}` placeholders written as in Rust (`#[step]`
/// checks them against the step's fields) renamed to the JSON names the runtime renders.
pub fn reply_template<D: DataType>(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("{{").or_else(|| tail.strip_prefix("}}")) {
            out.push_str(&tail[..2]);
            rest = t;
            continue;
        }
        match tail.find('}').filter(|_| tail.starts_with('{')) {
            Some(end) => {
                let name = tail[1..end].trim();
                out.push('{');
                out.push_str(D::json_name(name).unwrap_or(name));
                out.push('}');
                rest = &tail[end + 1..];
            }
            // Malformed: left as written for the runtime check to report.
            None => {
                out.push_str(tail);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// A data write from a typed patch.
pub fn data_patch(p: impl IntoDataPatch) -> Patch {
    p.into_data_patch()
}

/// A tool argument: deserializable and described by a JSON schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it must implement `serde::Deserialize` and `schemars::JsonSchema`",
    label = "not deserializable or not described by a schema",
    note = "derive `Deserialize` and `JsonSchema` for it (through `agent_core::__private::{{serde, schemars}}` if your crate does not depend on them), or take a type that has them"
)]
pub trait ToolArg: DeserializeOwned + JsonSchema {}
impl<T: DeserializeOwned + JsonSchema> ToolArg for T {}

type Decode<T> = fn(&serde_json::Map<String, Value>, &str, bool) -> Result<T, ToolError>;

/// How one tool parameter is decoded and described. Built once per parameter (the one
/// place where the type must be a [`ToolArg`]), so a bad type is reported once.
pub struct ToolArgSpec<T> {
    decode: Decode<T>,
    schema: fn(ToolSchema, &str, &str, bool) -> ToolSchema,
}

impl<T: ToolArg> Default for ToolArgSpec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> ToolArgSpec<T> {
    /// The spec of a valid argument type.
    pub const fn new() -> Self
    where
        T: ToolArg,
    {
        Self {
            decode: tool_arg::<T>,
            schema: ToolSchema::arg::<T>,
        }
    }
    /// Decode the parameter from the argument object.
    pub fn decode(
        &self,
        args: &serde_json::Map<String, Value>,
        key: &str,
        required: bool,
    ) -> Result<T, ToolError> {
        (self.decode)(args, key, required)
    }
    /// Describe the parameter.
    pub fn describe(&self, s: ToolSchema, key: &str, doc: &str, required: bool) -> ToolSchema {
        (self.schema)(s, key, doc, required)
    }
}

/// The JSON schema of a tool's argument object.
pub fn tool_parameters<A: JsonSchema>() -> Value {
    let mut parameters = schemars::schema_for!(A).to_value();
    if let Value::Object(o) = &mut parameters {
        o.remove("$schema");
        o.remove("title");
    }
    parameters
}

/// Decode a tool's argument object.
pub fn tool_args<A: DeserializeOwned>(args: Value) -> Result<A, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// What a `#[tool]` fn may return: `Result<ToolOutput, E>` with a typed or runtime
/// output and an error convertible into [`ToolError`].
#[diagnostic::on_unimplemented(
    message = "a `#[tool]` must return `Result<ToolOutput, ToolError>`, found `{Self}`",
    label = "not a tool result"
)]
pub trait IntoToolResult {
    /// The runtime result.
    fn into_tool_result(self) -> Result<RtToolOutput, ToolError>;
}

impl<O: TryIntoToolOutput, E: Into<ToolError>> IntoToolResult for Result<O, E> {
    fn into_tool_result(self) -> Result<RtToolOutput, ToolError> {
        self.map_err(Into::into)?
            .try_into_tool_output()
            .map_err(ToolError::InvalidDirective)
    }
}

/// A tool's output, checked where a `#[tool]` converts it: a directive with `reply`
/// and `abort`, or (typed output) two position fields, is an error instead of a
/// silently dropped field.
pub trait TryIntoToolOutput {
    /// The runtime output, or why its directive breaks the rules.
    fn try_into_tool_output(self) -> Result<RtToolOutput, crate::error::DirectiveError>;
}

impl TryIntoToolOutput for super::tool::ToolOutput {
    fn try_into_tool_output(self) -> Result<RtToolOutput, crate::error::DirectiveError> {
        self.try_into_runtime()
    }
}

impl TryIntoToolOutput for RtToolOutput {
    fn try_into_tool_output(self) -> Result<RtToolOutput, crate::error::DirectiveError> {
        self.directive.validate()?;
        Ok(self)
    }
}

/// Serialize a patch value (`null` if the value cannot be represented as JSON).
pub fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Decode one argument of a tool call (`required`: missing or `null` is an error).
pub fn tool_arg<T: DeserializeOwned>(
    args: &serde_json::Map<String, Value>,
    key: &str,
    required: bool,
) -> Result<T, ToolError> {
    let v = args.get(key).cloned().unwrap_or(Value::Null);
    if required && v.is_null() {
        return Err(ToolError::InvalidArguments(format!(
            "missing argument `{key}`"
        )));
    }
    serde_json::from_value(v).map_err(|e| ToolError::InvalidArguments(format!("`{key}`: {e}")))
}

/// The argument object of a tool call (`null` counts as no arguments).
pub fn tool_args_object(args: Value) -> Result<serde_json::Map<String, Value>, ToolError> {
    match args {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(serde_json::Map::new()),
        other => Err(ToolError::InvalidArguments(format!(
            "expected an object of arguments, found {}",
            crate::data::json_kind(&other)
        ))),
    }
}

/// Builds a tool's argument schema one parameter at a time.
#[derive(Default)]
pub struct ToolSchema {
    generator: schemars::SchemaGenerator,
    properties: serde_json::Map<String, Value>,
    required: Vec<Value>,
}

impl ToolSchema {
    /// Add a parameter.
    pub fn arg<T: JsonSchema>(mut self, name: &str, description: &str, required: bool) -> Self {
        let mut v = self.generator.subschema_for::<T>().to_value();
        if !description.is_empty()
            && let Value::Object(o) = &mut v
        {
            o.insert("description".into(), Value::String(description.into()));
        }
        self.properties.insert(name.into(), v);
        if required {
            self.required.push(Value::String(name.into()));
        }
        self
    }
    /// The object schema.
    pub fn finish(mut self) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("type".into(), "object".into());
        o.insert("properties".into(), Value::Object(self.properties));
        o.insert("required".into(), Value::Array(self.required));
        let defs = self.generator.take_definitions(true);
        if !defs.is_empty() {
            o.insert("$defs".into(), Value::Object(defs));
        }
        Value::Object(o)
    }
}

impl ToolSchema {
    /// Apply `f` (keeps generated builder chains flat).
    pub fn pipe(self, f: impl FnOnce(Self) -> Self) -> Self {
        f(self)
    }
}
