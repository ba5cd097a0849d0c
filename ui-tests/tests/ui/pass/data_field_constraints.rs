//! `#[field(...)]` constraints on `#[data]` fields: every key, and the JSON-schema
//! keywords they put into the field's property (the engine checks writes against them).
use agent_core::typed::prelude::*;

#[data]
pub struct Stay {
    /// Number of guests, 1 to 12
    #[field(range = 1..=12, synonyms(1 = ["just me", "only me"], 2 = "my wife and I"))]
    pub guests: u8,
    /// Lowest acceptable temperature
    #[field(range = -10.5..=)]
    pub min_temp: Option<f64>,
    /// Budget
    #[field(range = ..=5000)]
    pub budget: i64,
    /// Check-in date, ISO 8601
    #[field(pattern = r"^\d{4}-\d{2}-\d{2}$", len = 10..=10)]
    pub check_in: String,
    /// Room type
    #[field(one_of("standard", "suite"), inferred, synonyms("suite" = ["the big one"]))]
    pub room: String,
    /// City
    #[field(len = 1..=80)]
    #[field(inferred)]
    pub city: String,
    /// Up to three tags
    #[field(len = ..=3)]
    pub tags: Vec<String>,
    /// No constraints
    pub notes: String,
    /// Arrival day, today or later
    #[field(not_past)]
    pub arrival: Date,
    /// A type alias of a calendar type is accepted
    #[field(not_past)]
    pub departure: Option<Day>,
}

/// `not_past` asks the type, not its spelling.
type Day = agent_core::data::Date;

fn main() {
    let schema = Stay::json_schema();
    let p = &schema["properties"];

    let guests = &p["guests"];
    assert_eq!(guests["type"].to_string(), r#"["integer","null"]"#);
    assert_eq!(guests["format"], "uint8");
    assert_eq!(guests["minimum"], 1);
    assert_eq!(guests["maximum"], 12);
    assert_eq!(guests["description"], "Number of guests, 1 to 12");
    assert!(guests.get("x-inferred").is_none());
    assert_eq!(
        guests["x-synonyms"].to_string(),
        r#"{"1":["just me","only me"],"2":["my wife and I"]}"#
    );

    assert_eq!(p["min_temp"]["minimum"], -10.5);
    assert!(p["min_temp"].get("maximum").is_none());
    assert_eq!(p["budget"]["maximum"], 5000);
    assert!(p["budget"].get("minimum").is_none());

    let check_in = &p["check_in"];
    assert_eq!(check_in["pattern"], r"^\d{4}-\d{2}-\d{2}$");
    assert_eq!(check_in["minLength"], 10);
    assert_eq!(check_in["maxLength"], 10);
    assert_eq!(check_in["description"], "Check-in date, ISO 8601");

    assert_eq!(p["arrival"]["x-not-past"], true);
    assert_eq!(p["arrival"]["format"], "date");
    assert_eq!(p["departure"]["x-not-past"], true);
    assert!(p["notes"].get("x-not-past").is_none());

    let room = &p["room"];
    assert_eq!(room["enum"].to_string(), r#"["standard","suite",null]"#);
    assert_eq!(room["x-inferred"], true);
    assert_eq!(room["x-synonyms"]["suite"][0], "the big one");

    assert_eq!(p["city"]["minLength"], 1);
    assert_eq!(p["city"]["maxLength"], 80);
    assert_eq!(p["city"]["x-inferred"], true);

    assert_eq!(p["tags"]["maxItems"], 3);
    assert!(p["tags"].get("minItems").is_none());

    let notes = p["notes"].as_object().map(|o| {
        let mut keys: Vec<&str> = o.keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    });
    assert_eq!(notes, Some(vec!["description", "type"]));

    // The fields stay plain optional values, and the patch builder is unchanged.
    let s = Stay {
        guests: Some(2),
        room: Some("suite".into()),
        ..Stay::default()
    };
    assert_eq!((s.guests, s.room.as_deref()), (Some(2), Some("suite")));
    let patch: agent_core::data::Patch = Stay::patch().guests(2).room("suite").into();
    assert_eq!(patch["guests"], 2);
}
