//! `data = ..` may name a `pub` `#[data]` type of another crate by its path: the macro
//! `#[data]` generates beside a `pub` type is exported, so the flow learns its fields and
//! checks its names as for a type of its own crate.
use agent_core::typed::prelude::*;

#[flow(data = ui_tests::Order)]
mod ordering {
    #[step(prompt = "Ask what to order.", collect(item))]
    fn ask_item() {}

    #[step(end, prompt = "Confirm.", requires(item))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<ui_tests::Order, ()> {
        PreDirective::new().append_prompt(format!("Item: {}", v.item))
    }
}

fn main() {
    let f = ordering::flow().expect("a data type of another crate builds");
    assert_eq!(f.steps().len(), 2);
}
