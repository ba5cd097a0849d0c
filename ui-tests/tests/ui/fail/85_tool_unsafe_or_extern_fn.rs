//! A `#[tool]` is called by the model with arguments it chose: there is no caller to
//! uphold an `unsafe fn`'s contract, and the agent calls it as a Rust fn (no ABI). Both
//! are rejected with one message each and nothing from rustc about the dropped keyword.
use agent_core::typed::prelude::*;

/// Reads raw memory.
#[tool]
async unsafe fn danger(addr: u64) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("{}", unsafe { *(addr as *const u8) })))
}

/// Exported.
#[tool]
extern "C" fn exported(n: u32) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(n.to_string()))
}

fn main() {
    let _ = (danger, exported);
}
