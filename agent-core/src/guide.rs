//! The guide's chapters (`docs/src/*.md`, an mdBook) as doctests: every Rust block in
//! them compiles and runs with `cargo test -p agent-core --doc --all-features`, which
//! `scripts/test.sh` runs. Chapters that need a cargo feature are behind it. The
//! providers chapter needs `agent-providers`, so its blocks are doctests of that crate.

#[doc = include_str!("../../docs/src/introduction.md")]
pub struct Introduction;
#[doc = include_str!("../../docs/src/data.md")]
pub struct Data;
#[doc = include_str!("../../docs/src/flows.md")]
pub struct Flows;
#[doc = include_str!("../../docs/src/tools.md")]
pub struct Tools;
#[doc = include_str!("../../docs/src/repair.md")]
pub struct Repair;
#[doc = include_str!("../../docs/src/replies.md")]
pub struct Replies;
#[doc = include_str!("../../docs/src/code-flows.md")]
pub struct CodeFlows;
#[doc = include_str!("../../docs/src/sessions.md")]
pub struct Sessions;
#[cfg(feature = "serve")]
#[doc = include_str!("../../docs/src/serving.md")]
pub struct Serving;
#[doc = include_str!("../../docs/src/telemetry.md")]
pub struct Telemetry;
#[doc = include_str!("../../docs/src/testing.md")]
pub struct Testing;
#[cfg(feature = "eval")]
#[doc = include_str!("../../docs/src/evaluating.md")]
pub struct Evaluating;
#[doc = include_str!("../../docs/src/guarantees.md")]
pub struct Guarantees;
#[doc = include_str!("../../docs/src/architecture.md")]
pub struct Architecture;
