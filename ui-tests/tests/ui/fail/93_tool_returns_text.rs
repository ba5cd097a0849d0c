//! A `#[tool]` returns `Result<ToolOutput, ToolError>`: text (`String`, `&str`) or a bare
//! `ToolOutput` is one message of ours naming the fix, also through a type alias.
use agent_core::typed::prelude::*;

/// Say hello.
#[tool]
async fn hello(name: String) -> Result<String, ToolError> {
    Ok(format!("Hello {name}"))
}

/// Say bye.
#[tool]
async fn bye() -> String {
    "Bye".to_owned()
}

/// Say hi.
#[tool]
async fn hi() -> ToolOutput {
    ToolOutput::text("Hi")
}

type Text = String;

/// Say what.
#[tool]
async fn what() -> Result<Text, ToolError> {
    Ok("What".to_owned())
}

fn main() {
    let _ = (hello, bye, hi, what);
}
