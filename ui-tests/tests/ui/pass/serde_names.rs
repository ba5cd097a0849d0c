//! A field's JSON name is serde's everywhere: `rename`, `rename_all`, `alias`, `skip`
//! and `default` work end to end (`FIELDS`, the field enum, patches, the schema, step
//! `collect` / `requires` lists and the flow's `required`), while Rust code keeps the
//! Rust names (`collect(guests)`, `v.guests`).
use agent_core::__private::serde_json::json;
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
#[serde(rename_all = "camelCase")]
pub struct Stay {
    /// Check-in date
    pub check_in: String,
    /// Number of guests
    #[serde(rename = "n_guests", alias = "guestCount")]
    pub guests: u8,
    /// Notes
    #[serde(default)]
    pub notes: String,
    /// Not data the model sees
    #[serde(skip)]
    pub cache: String,
}

#[flow(data = Stay, required(check_in, guests))]
mod stay {
    #[step(prompt = "Ask the date.", collect(check_in))]
    fn ask_date() {}

    #[step(prompt = "Ask how many guests.", collect(guests), requires(check_in))]
    fn ask_guests(v: ask_guests::View<'_>) -> PreDirective<Stay, ()> {
        PreDirective::new().append_prompt(format!("Check-in: {}", v.check_in))
    }

    #[step(end, reply = "Booked for {guests} guests ({{ok}}).", requires(guests))]
    fn done() {}
}

fn main() {
    assert_eq!(Stay::FIELDS, ["checkIn", "n_guests", "notes"]);
    assert_eq!(StayField::ALL.len(), 3);
    assert_eq!(StayField::guests.name(), "n_guests");
    let patch = Stay::patch().check_in("2026-07-01").guests(2).into_patch();
    assert_eq!(patch.get("checkIn"), Some(&json!("2026-07-01")));
    assert_eq!(patch.get("n_guests"), Some(&json!(2)));
    let schema = Stay::json_schema();
    let props = schema["properties"].as_object().expect("properties");
    let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["checkIn", "n_guests", "notes"], "{schema}");

    // The alias is read, the canonical name written.
    let s: Stay =
        agent_core::__private::serde_json::from_value(json!({"guestCount": 3})).expect("alias");
    assert_eq!(s.guests, Some(3));

    let f = stay::flow().expect("the flow names fields by their JSON names");
    assert_eq!(
        &*f.step("ask_date").expect("step").collected_fields()[0],
        "checkIn"
    );
    assert_eq!(
        &*f.step("ask_guests").expect("step").collected_fields()[0],
        "n_guests"
    );
    assert_eq!(f.required().len(), 2);
    assert_eq!(&*f.required()[1], "n_guests");
    match f.step("done").expect("step").kind() {
        agent_core::step::StepKind::Reply(text) => {
            assert_eq!(text, "Booked for {n_guests} guests ({{ok}}).");
        }
        _ => panic!("a reply step"),
    }
}
