//! Running one tool call safely, and the checks every registered tool passes.

use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;

use super::{Tool, ToolCx, ToolError, ToolOutput};
use crate::error::FlowConfigurationError;
/// Run one call through the gates, catching errors and panics (the gates' too) as
/// failed results and cancelling it at its time limit (the tool's own, else
/// `default_limit`).
pub(crate) async fn execute<D, C>(
    tool: &dyn Tool<D, C>,
    cx: ToolCx<D, C>,
    args: Value,
    default_limit: Option<Duration>,
) -> Result<ToolOutput, ToolError> {
    let panicked =
        |p: Box<dyn std::any::Any + Send>| ToolError::Panicked(panic_message(p.as_ref()));
    let valid =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.validate_input(&args)));
    if let Err(e) = valid.map_err(panicked)? {
        return Err(ToolError::InvalidArguments(e));
    }
    let permitted = std::panic::AssertUnwindSafe(tool.check_permissions(&cx))
        .catch_unwind()
        .await;
    if let Err(e) = permitted.map_err(panicked)? {
        return Err(ToolError::PermissionDenied(e));
    }
    let call = std::panic::AssertUnwindSafe(tool.call(cx, args)).catch_unwind();
    let caught = match tool.timeout().or(default_limit) {
        Some(limit) => match tokio::time::timeout(limit, call).await {
            Ok(r) => r,
            Err(_) => return Err(ToolError::TimedOut(limit)),
        },
        None => call.await,
    };
    caught.unwrap_or_else(|payload| Err(ToolError::Panicked(panic_message(payload.as_ref()))))
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// Whether a tool name is valid for every vendor API.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Tool checks shared by flow and agent builders.
pub(crate) fn check_tool<D, C>(
    t: &dyn Tool<D, C>,
    flow: &str,
    step: Option<&str>,
    errs: &mut Vec<FlowConfigurationError>,
) {
    if !valid_tool_name(t.name()) {
        errs.push(FlowConfigurationError {
            flow: flow.to_owned(),
            step: step.map(str::to_owned),
            problem: format!("invalid tool name `{}`", t.name()),
            help: "use 1 to 64 ASCII letters, digits, `_` or `-`".into(),
        });
    }
    if t.description().trim().is_empty() {
        errs.push(FlowConfigurationError {
            flow: flow.to_owned(),
            step: step.map(str::to_owned),
            problem: format!("tool `{}` has no description", t.name()),
            help: "the model needs a description to decide when to call it".into(),
        });
    }
}

// The directive layer carries tools through its seam; this is the one place that says
// what the carried tool is.
impl<D, C> crate::directive::ToolSeam<D, C> for crate::directive::Tools {
    type Tool = dyn Tool<D, C>;
    fn name(tool: &Self::Tool) -> &str {
        tool.name()
    }
}
