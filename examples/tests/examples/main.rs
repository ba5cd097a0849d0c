//! Every example on its scripted model. One test binary for all of them: each example
//! links the whole provider stack, and fifteen binaries of that size made the test build
//! slow and heavy on disk.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Each test module `x` includes the example file as `x::x`, as the example's own crate
// sees it; the eval example and the exit tests include the concierge too, so that file is
// loaded more than once.
#![allow(clippy::module_inception, clippy::duplicate_mod)]

/// Run an example's conversation on its scripted model, as `main` does: the model (to
/// count its calls), what `run` returned, and what the example printed.
macro_rules! run_example {
    ($example:ident $(, $arg:expr)*) => {{
        let model = $example::scripted();
        let mut out = Vec::new();
        let result = $example::run(std::sync::Arc::new(model.clone()) $(, $arg)*, &mut out)
            .await
            .unwrap();
        (model, result, String::from_utf8(out).unwrap())
    }};
}

/// A day as code's summaries say it: "Wednesday 1 July", with the year when it is not
/// this year's on the system clock (the examples' agents run on it).
fn spoken(d: agent_core::data::Date) -> String {
    use agent_core::clock::{Clock, SystemClock, TimeZone};
    let today = TimeZone::utc().local(SystemClock.now_ms()).date();
    let t = d.to_time();
    let day = format!("{} {} {}", t.weekday(), t.day(), t.month());
    if t.year() == today.year() {
        day
    } else {
        format!("{day} {}", t.year())
    }
}

mod bench_example;
mod branching;
mod clinic;
mod concierge;
mod data_extraction;
mod eval;
mod exit;
mod flow_control;
mod instructions;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "otel")]
mod otel;
mod persistence;
mod quickstart;
mod server;
mod signals;
mod streaming;
mod tools;
mod triage;
mod tutor;
