//! `#[data]` and `#[context]`: plain fields, `Option` fields, the field enum, patches,
//! the JSON schema with doc comments as descriptions, existing derives kept.
use agent_core::typed::prelude::*;

#[data]
#[derive(PartialEq)]
pub struct Booking {
    /// City the guest wants to stay in
    pub city: String,
    /// Number of guests, 1 to 12
    pub guests: u8,
    /// Already optional in the source
    pub notes: Option<String>,
}

#[context]
#[derive(PartialEq)]
pub struct Concierge {
    /// Loyalty tier
    pub tier: String,
    /// Visits so far
    pub visits: u32,
}

fn main() {
    // At run time every data field is optional; the context is as written.
    let b = Booking::default();
    assert_eq!((b.city, b.guests, b.notes), (None, None, None));
    let c = Concierge::default();
    assert_eq!(c.visits, 0);

    assert_eq!(BookingField::ALL.map(BookingField::name), ["city", "guests", "notes"]);
    assert_eq!(Booking::FIELDS, ["city", "guests", "notes"]);
    assert_eq!(<Booking as DataType>::FIELDS.len(), 3);
    assert_eq!(ConciergeField::tier.name(), "tier");

    let p: agent_core::data::Patch = Booking::patch()
        .city("Lisbon")
        .guests(2)
        .notes("late arrival".to_string())
        .clear_notes()
        .into();
    assert_eq!(p["city"], "Lisbon");
    assert_eq!(p["guests"], 2);
    assert!(p["notes"].is_null());
    let c: agent_core::data::Patch = Concierge::patch().tier("gold").visits(3).into();
    assert_eq!(c["visits"], 3);

    let schema = Booking::json_schema();
    assert_eq!(
        schema["properties"]["city"]["description"],
        "City the guest wants to stay in"
    );
    assert!(schema.get("required").is_none_or(|r| r.as_array().is_some_and(|a| a.is_empty())));
}
