//! Calendar values for `#[data]` fields: [`Date`] (`2026-07-01`) and [`DateTime`]
//! (RFC 3339). Their schema says `format: date` / `date-time`, so the model is asked for
//! ISO text, the engine checks it on every write, and grounding reads the user's words
//! ("July 1st", "next Friday") as that day against the agent's clock; the stored value
//! is typed, so hooks and predicates compare days, not strings.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A calendar day, written `YYYY-MM-DD` in JSON and in the schema sent to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(time::Date);

impl Date {
    /// The day, if it exists (`Date::new(2026, 7, 1)`).
    pub fn new(year: i32, month: u8, day: u8) -> Option<Self> {
        let month = time::Month::try_from(month).ok()?;
        time::Date::from_calendar_date(year, month, day)
            .ok()
            .map(Self)
    }

    /// The `time` crate's value, for date arithmetic.
    pub fn to_time(self) -> time::Date {
        self.0
    }
}

impl From<time::Date> for Date {
    fn from(d: time::Date) -> Self {
        Self(d)
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}",
            self.0.year(),
            u8::from(self.0.month()),
            self.0.day()
        )
    }
}

impl FromStr for Date {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        super::validate::parse_date(s)
            .map(Self)
            .ok_or_else(|| format!("`{s}` is not a date written YYYY-MM-DD"))
    }
}

impl Serialize for Date {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Date {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Date {
    fn schema_name() -> Cow<'static, str> {
        "Date".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "format": "date" })
    }
}

/// A moment with its offset, written in RFC 3339 (`2026-07-01T15:00:00+01:00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime(time::OffsetDateTime);

impl DateTime {
    /// The `time` crate's value.
    pub fn to_time(self) -> time::OffsetDateTime {
        self.0
    }
}

impl From<time::OffsetDateTime> for DateTime {
    fn from(d: time::OffsetDateTime) -> Self {
        Self(d)
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self
            .0
            .format(&time::format_description::well_known::Rfc3339)
        {
            Ok(s) => f.write_str(&s),
            Err(_) => Err(fmt::Error),
        }
    }
}

impl FromStr for DateTime {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc3339)
            .map(Self)
            .map_err(|_| format!("`{s}` is not a date and time in RFC 3339"))
    }
}

impl Serialize for DateTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DateTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for DateTime {
    fn schema_name() -> Cow<'static, str> {
        "DateTime".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "format": "date-time" })
    }
}

/// A type whose JSON is a calendar day (`YYYY-MM-DD`) or an RFC 3339 moment, so the
/// engine can compare it with today: what `#[field(not_past)]` asks of a field.
#[diagnostic::on_unimplemented(
    message = "`not_past` applies to date fields; `{Self}` is not a calendar value",
    label = "the field's type must be `Date` or `DateTime` (or implement `CalendarValue`)",
    note = "use `agent_core::data::Date` for a day, `DateTime` for a moment"
)]
pub trait CalendarValue {
    /// `#[field(not_past)]`'s check that the field holds a calendar value (read through
    /// the trait, `<T as CalendarValue>::CALENDAR`, so that rustc reports a type that
    /// is not one at the field's type, in one short error).
    #[doc(hidden)]
    const CALENDAR: () = ();
}

// Not listed under an error: its label names the types.
#[diagnostic::do_not_recommend]
impl CalendarValue for Date {}
#[diagnostic::do_not_recommend]
impl CalendarValue for DateTime {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_as_iso_text_and_refuse_anything_else() {
        let d = Date::new(2026, 7, 1).unwrap();
        assert_eq!(serde_json::to_value(d).unwrap(), "2026-07-01");
        assert_eq!(
            serde_json::from_value::<Date>("2026-07-01".into()).unwrap(),
            d
        );
        assert!(serde_json::from_value::<Date>("July 1st".into()).is_err());
        assert!(Date::new(2026, 2, 30).is_none());
        let t: DateTime = "2026-07-01T15:00:00+01:00".parse().unwrap();
        assert_eq!(t.to_string(), "2026-07-01T15:00:00+01:00");
        assert!("2026-07-01".parse::<DateTime>().is_err());
    }
}
