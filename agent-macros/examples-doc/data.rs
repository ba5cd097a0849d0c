use agent_core::typed::prelude::*;

/// What the agent collects over the conversation.
#[data]
pub struct Booking {
    /// City the guest wants to stay in
    pub city: String,
    /// Number of guests
    #[field(range = 1..=12, synonyms(1 = ["just me", "alone"]))]
    pub guests: u8,
    /// Check-in day
    #[field(not_past)]
    pub check_in: Date,
    /// Room type
    #[field(one_of("standard", "suite"), inferred)]
    pub room: String,
    /// Already optional: stays `Option<String>`
    pub notes: Option<String>,
}

fn main() {
    // At run time every field is an `Option`: data arrives over several turns.
    let empty = Booking::default();
    assert_eq!(empty.city, None);

    // The field enum and the JSON names, in declaration order.
    assert_eq!(BookingField::guests.name(), "guests");
    assert_eq!(Booking::FIELDS, ["city", "guests", "check_in", "room", "notes"]);

    // Typed writes: a patch sets only the fields it names.
    let patch = Booking::patch().city("Lisbon").guests(2);
    let _write = Directive::data(patch);

    // The JSON schema sent to the model: doc comments describe the fields,
    // `#[field(..)]` constrains them.
    let schema = Booking::json_schema();
    assert_eq!(schema["properties"]["city"]["description"], "City the guest wants to stay in");
    assert_eq!(schema["properties"]["guests"]["maximum"], 12);
}
