//! A tool that returns nothing: one error, ours.
use agent_core::typed::prelude::*;

/// Ping.
#[tool]
async fn ping() {}

fn main() {}
