//! Every example on its scripted model. One test binary for all of them: each example
//! links the whole provider stack, and fifteen binaries of that size made the test build
//! slow and heavy on disk.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Each test module `x` includes the example file as `x::x`, as the example's own crate
// sees it; the REPL example includes the concierge, so that file is loaded twice.
#![allow(clippy::module_inception, clippy::duplicate_mod)]

mod bench_example;
mod branching;
mod concierge;
mod data_extraction;
mod flow_control;
mod instructions;
mod persistence;
mod quickstart;
mod repl;
mod signals;
mod streaming;
mod tools;
mod triage;
mod tutor;
