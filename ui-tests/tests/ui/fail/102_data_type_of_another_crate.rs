//! `data = ..` naming a `#[data]` type defined in another crate: rustc's one error (the
//! macro `#[data]` generates is `pub(crate)`). See the macro reference.
use agent_core::typed::prelude::*;

#[flow(data = ui_tests::Order)]
mod booking {
    #[step(end, prompt = "Ask the item.", collect(item))]
    fn ask_item() {}
}

fn main() {}
