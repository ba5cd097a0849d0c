//! A flow over a `#[data]` type of another crate checks the names it uses against that
//! type's fields, as for a type of its own crate.
use agent_core::typed::prelude::*;

#[flow(data = ui_tests::Order)]
mod ordering {
    #[step(end, prompt = "Ask the item.", collect(items))]
    fn ask_item() {}
}

fn main() {}
