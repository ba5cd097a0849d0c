//! A code flow must be an `async fn` taking one `FlowCx<Data, Context>` and returning
//! `FlowResult`; unknown options are named with the valid ones.
use agent_core::typed::prelude::*;

#[flow(wen = "the user wants a reminder")]
fn reminder(_ctx: FlowCx<(), ()>, _extra: u8) {}

fn main() {}
