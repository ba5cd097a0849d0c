::core::compile_error! {
    "`#[step]` only works on fns inside a `#[flow(..)]` module: the flow reads its steps"
}
fn ask_city() {}
