//! Unit tests of grounding: which words support which values.

use super::text::fold;
use super::*;
use serde_json::json;
use time::macros::date;

fn ev(said: &[&str]) -> Evidence<'static> {
    Evidence {
        said: said.iter().map(|s| normalize(s)).collect::<Vec<_>>().into(),
        today: date!(2026 - 06 - 15),
        defs: None,
    }
}

fn ok(said: &[&str], value: Value) -> bool {
    ev(said).check(&json!({}), &value, None) == Grounding::Grounded
}

#[test]
fn nothing_said_supports_nothing() {
    assert!(!ok(&["Hi, I need a hotel"], json!("London")));
    assert!(!ok(&["Hi, I need a hotel"], json!(12)));
    assert!(!ok(&["Hi, I need a hotel"], json!("2026-07-01")));
}

#[test]
fn text_and_numbers() {
    assert!(ok(&["Lisbon, for the two of us"], json!("Lisbon")));
    assert!(ok(&["Lisbon, for the two of us"], json!(2)));
    assert!(ok(&["quero um hotel em Lisboa"], json!("Lisbon")));
    assert!(ok(&["São Paulo please"], json!("Sao Paulo")));
    assert!(ok(
        &["The server room is on fire!"],
        json!("fire in the server room")
    ));
    assert!(ok(&["we are 4"], json!(4)));
    assert!(!ok(&["we are 4"], json!(40)));
    assert!(!ok(&["Hotel in Lisbon on 2026-07-01"], json!(1)));
    assert!(!ok(&["Hotel in Lisbon on 2026-07-01"], json!(7)));
    assert!(ok(&["2026-07-01 for 3"], json!(3)));
    assert!(ok(&["Lisbon in 2026, 3 of us"], json!(3)));
    assert!(!ok(&["Lisbon"], json!("Porto")));
    assert!(ok(&["1.5 kg"], json!(1.5)));
    assert!(ok(&["+351 912 345 678"], json!("+351912345678")));
    assert!(ok(&["it's invoice inv 7"], json!("INV-7")));
    // A day of a month is not a count.
    assert!(!ok(&["July 1st"], json!(1)));
    assert!(!ok(&["Lisbon, July 1"], json!(1)));
    assert!(!ok(&["1 de julho"], json!(1)));
    assert!(!ok(&["the 3rd of May"], json!(3)));
    assert!(ok(&["July 1st, 2 of us"], json!(2)));
    assert!(ok(&["3 people in July"], json!(3)));
    assert!(!ok(&["invoice 8"], json!("INV-7")));
    assert!(!ok(&["It's INV-8"], json!("INV-7")));
    assert!(!ok(&["Pixel 7"], json!("Pixel 8")));
    // "um", "un", "ein" are the article too: a count alone or of people.
    assert!(!ok(&["Olá, preciso de um hotel no Porto"], json!(1)));
    assert!(!ok(&["Quiero un hotel en Madrid"], json!(1)));
    assert!(ok(&["Só um"], json!(1)));
    assert!(ok(&["una persona, por favor"], json!(1)));
    assert!(ok(&["pour une personne"], json!(1)));
    assert!(ok(&["just one"], json!(1)));
}

#[test]
fn dates_against_the_clock() {
    assert!(ok(&["July 1st"], json!("2026-07-01")));
    assert!(!ok(&["July 1st"], json!("2023-07-01")));
    assert!(ok(&["1 de julho"], json!("2026-07-01")));
    assert!(ok(&["2026-07-01"], json!("2026-07-01")));
    assert!(ok(&["1/7"], json!("2026-07-01")));
    assert!(ok(&["tomorrow"], json!("2026-06-16")));
    assert!(ok(&["the day after tomorrow"], json!("2026-06-17")));
    assert!(ok(&["next Friday"], json!("2026-06-19")));
    assert!(!ok(&["next Friday"], json!("2026-06-20")));
    assert!(!ok(&["next Monday"], json!("2026-06-15")), "not today");
    assert!(ok(&["next Monday"], json!("2026-06-22")));
    assert!(!ok(&["last Friday"], json!("2026-06-19")), "not ahead");
    assert!(ok(&["last Friday"], json!("2026-06-12")));
    assert!(ok(&["in 3 days"], json!("2026-06-18")));
    assert!(ok(&["March 3rd 2027"], json!("2027-03-03")));
    // March 3rd without a year: this year's or the next one.
    assert!(ok(&["March 3rd"], json!("2026-03-03")));
    assert!(ok(&["March 3rd"], json!("2027-03-03")));
    assert!(!ok(&["March 3rd"], json!("2028-03-03")));
    // An ISO date's year is stated: another year of that day is not said.
    assert!(!ok(&["2025-12-24"], json!("2026-12-24")));
    assert!(ok(&["2025-12-24"], json!("2025-12-24")));
    assert!(ok(&["Sorry, I meant 2026-12-24"], json!("2026-12-24")));
    assert!(!ok(&["on 2027/07/01"], json!("2026-07-01")));
    assert!(ok(&["on 1/7/2027"], json!("2027-07-01")));
}

#[test]
fn one_named_day_resolves_two_do_not() {
    let today = date!(2026 - 06 - 15);
    assert_eq!(resolve_date("tomorrow", today), Some(date!(2026 - 06 - 16)));
    assert_eq!(
        resolve_date("Madrid, July 1st", today),
        Some(date!(2026 - 07 - 01))
    );
    assert_eq!(
        resolve_date("next Friday please", today),
        Some(date!(2026 - 06 - 19))
    );
    assert_eq!(resolve_date("from July 1 to July 5", today), None);
    // Today is a Monday: "next Monday" is a week on, "Monday" today, "last Friday"
    // three days back, "this Friday" four days on.
    assert_eq!(
        resolve_date("Next Monday", today),
        Some(date!(2026 - 06 - 22))
    );
    assert_eq!(resolve_date("Monday", today), Some(today));
    // A weekday and "next week": that weekday of next week.
    assert_eq!(
        resolve_date("Monday next week, please", today),
        Some(date!(2026 - 06 - 22))
    );
    assert_eq!(
        resolve_date("next week on Thursday", date!(2026 - 06 - 17)),
        Some(date!(2026 - 06 - 25))
    );
    assert_eq!(resolve_date("sometime next week", today), None);
    assert_eq!(
        resolve_date("last Friday", today),
        Some(date!(2026 - 06 - 12))
    );
    assert_eq!(
        resolve_date("this Friday", today),
        Some(date!(2026 - 06 - 19))
    );
    // A day without a year is the next such day.
    assert_eq!(
        resolve_date("July 1st", date!(2026 - 11 - 25)),
        Some(date!(2027 - 07 - 01))
    );
    assert_eq!(resolve_date("hi there", today), None);
    assert_eq!(
        resolve_date("A hotel in Lisbon from July 1st for 2", today),
        Some(date!(2026 - 07 - 01))
    );
    assert_eq!(
        resolve_date("A hotel in Lisbon on 2026-07-01 for 2", today),
        Some(date!(2026 - 07 - 01))
    );
    assert_eq!(
        resolve_date("Lisbon, 2026-07-01, 2 guests", today),
        Some(date!(2026 - 07 - 01))
    );
    assert_eq!(
        resolve_date(
            "Hotel in Berlin for 3 people, checking in the day after tomorrow",
            today
        ),
        Some(date!(2026 - 06 - 17))
    );
    assert_eq!(
        resolve_date("July 4th then", today),
        Some(date!(2026 - 07 - 04))
    );
}

#[test]
fn a_quote_must_be_said_and_must_say_the_value() {
    let e = ev(&["Lisbon for two, then maybe Porto"]);
    let p = json!({});
    assert_eq!(
        e.check(&p, &json!("Lisbon"), Some("Lisbon")),
        Grounding::Grounded
    );
    assert!(matches!(
        e.check(&p, &json!("Lisbon"), Some("Porto")),
        Grounding::Unsupported(_)
    ));
    // A quote nobody said is ignored: the messages decide.
    assert_eq!(
        e.check(&p, &json!("Lisbon"), Some("Lisboa city")),
        Grounding::Grounded
    );
}

#[test]
fn inferred_fields_and_synonyms() {
    let e = ev(&["hi"]);
    let inferred = json!({ "type": ["string", "null"], "x-inferred": true });
    assert_eq!(
        e.check(&inferred, &json!("anything"), None),
        Grounding::Inferred
    );
    let room = json!({ "enum": ["double"], "x-synonyms": { "double": ["two beds"] } });
    let e = ev(&["a room with two beds"]);
    assert_eq!(e.check(&room, &json!("double"), None), Grounding::Grounded);
}

#[test]
fn a_number_is_stated_by_a_declared_synonym_of_that_number_only() {
    let guests = json!({
        "anyOf": [{ "type": "integer", "minimum": 1 }, { "type": "null" }],
        "x-synonyms": { "1": ["just me", "only me"], "2": ["my wife and I"] }
    });
    let e = ev(&["Just me."]);
    assert_eq!(e.check(&guests, &json!(1), None), Grounding::Grounded);
    // A float the model writes for a whole number is keyed like the integer.
    assert_eq!(e.check(&guests, &json!(1.0), None), Grounding::Grounded);
    assert!(matches!(
        e.check(&guests, &json!(2), None),
        Grounding::Unsupported(_)
    ));
    // The phrase, not its words apart: "just us" is not "just me".
    let e = ev(&["just us, me and my brother"]);
    assert!(matches!(
        e.check(&guests, &json!(1), None),
        Grounding::Unsupported(_)
    ));
    let e = ev(&["My wife and I, in Porto"]);
    assert_eq!(e.check(&guests, &json!(2), None), Grounding::Grounded);
    // Without synonyms "just me" states nothing.
    let bare = json!({ "type": "integer" });
    let e = ev(&["just me"]);
    assert!(matches!(
        e.check(&bare, &json!(1), None),
        Grounding::Unsupported(_)
    ));
}

#[test]
fn normalize_folds_case_accents_and_punctuation_as_the_unicode_tables_do() {
    // The character-by-character definition, through the Unicode tables only.
    fn reference(text: &str) -> String {
        let mut out = String::from(" ");
        for c in text.chars().flat_map(char::to_lowercase) {
            let c = fold(c);
            if c.is_alphanumeric() {
                out.push(c);
            } else if !out.ends_with(' ') {
                out.push(' ');
            }
        }
        if !out.ends_with(' ') {
            out.push(' ');
        }
        out
    }
    for text in [
        "",
        " ",
        "I'd like to book a room",
        "  Lisbon,  2 GUESTS!! ",
        "Ça coûte 15€ — São Paulo; İstanbul ß ẞ Ǆ ΣΑΣ",
        "x",
        "1.5/7\t\nend",
        "ÀÉÎÕÜ ÿ ñ ø",
    ] {
        assert_eq!(normalize(text), reference(text), "{text:?}");
    }
    assert_eq!(normalize("Hello, World!"), " hello world ");
}

#[test]
fn the_words_a_message_says_beyond_the_values_read() {
    let e = ev(&[]);
    let text = json!({});
    let beyond = |msg: &str, v: Value| e.words_beyond(&[(&text, &v)], msg);
    assert_eq!(beyond("Anna Berg", json!("Anna Berg")), Some(vec![]));
    assert_eq!(
        beyond("It's INV-7", json!("INV-7")),
        Some(vec!["it".to_owned(), "s".to_owned()])
    );
    // Short words of a text value may be phrased otherwise: they are not needed.
    assert_eq!(
        beyond("A check-up", json!("check-up")),
        Some(vec!["a".to_owned(), "up".to_owned()])
    );
    // Everything but the name is beyond it.
    assert_eq!(
        beyond("Anna Berg, next Monday please", json!("Anna Berg")).map(|b| b.len()),
        Some(3)
    );
    // A day needs the words that name it ("next week" shows each of its days as
    // well); "please" it does not.
    assert_eq!(
        beyond("Monday next week, please", json!("2026-06-22")),
        Some(vec!["monday".to_owned(), "please".to_owned()])
    );
    // A message that does not show the value.
    assert_eq!(
        beyond("Before that, my app crashes", json!("Anna Berg")),
        None
    );
    assert_eq!(e.words_beyond(&[], "Anna Berg"), None);
}
