//! `#[field]` constraints belong to `#[data]` fields, not to the context.
use agent_core::typed::prelude::*;

#[context]
pub struct Concierge {
    /// Loyalty tier
    #[field(one_of("silver", "gold"))]
    pub tier: String,
}

fn main() {}
