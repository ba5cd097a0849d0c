use agent_core::typed::prelude::*;

/// What the application knows about the conversation (not collected from the user).
#[context]
pub struct Concierge {
    /// Loyalty tier
    pub tier: String,
}

fn main() {
    // Fields stay as written; a typed patch writes some of them.
    let c = Concierge { tier: "gold".into() };
    assert_eq!(c.tier, "gold");
    assert_eq!(ConciergeField::tier.name(), "tier");
    let _write = Directive::context(Concierge::patch().tier("silver"));
}
