//! The macros' compile-time guarantees (DESIGN §3), one program per guarantee.

#[test]
fn compile_fail_cases_are_rejected_with_their_reviewed_messages() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
}

#[test]
fn pass_cases_compile_and_run() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
}

#[test]
fn the_macro_docs_examples_compile_and_run() {
    // The examples on the macros' rustdoc pages (`agent-macros/examples-doc`, included
    // there verbatim).
    let t = trybuild::TestCases::new();
    t.pass("../agent-macros/examples-doc/*.rs");
}
