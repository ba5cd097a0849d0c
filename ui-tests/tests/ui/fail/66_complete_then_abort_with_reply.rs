//! `reply` on `complete_then(abort)`: the chain ends the conversation, which delivers
//! no reply (the runtime would have sent the reply and lost the abort).
use agent_core::typed::prelude::*;

fn main() {
    let _ = Directive::complete_then(Directive::abort("spam")).reply("bye");
    // Fine: the chain does not abort.
    let _ = Directive::complete_then(Directive::reset()).reply("again");
}
