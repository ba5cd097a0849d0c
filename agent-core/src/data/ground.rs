//! Grounded extraction: a value the model writes is stored only when what the user said
//! supports it, so a small model cannot fill a field nobody mentioned ("hi" is not a
//! city). The model cites, per field, the words it took the value from; the engine
//! checks, per type, that the value follows from them:
//!
//! - text: the value occurs in the cited words (case, accents, punctuation and spacing
//!   ignored; a word may differ in its ending, so "Lisboa" supports "Lisbon");
//! - numbers: stated in digits or in words ("two", "a couple", "dois");
//! - dates (`format: date`, or any `YYYY-MM-DD` value): the words name that day
//!   against the agent's clock ("July 1st", "1/7", "tomorrow", "next Friday",
//!   "in 3 days"); a year not stated must be this year or that of the next such
//!   day (whether a past day is acceptable is the field's own rule);
//! - enum values: the value or one of its declared synonyms (`x-synonyms`) occurs;
//! - lists: every item is supported; booleans and objects are not checked.
//!
//! A quote that is not in what the user said is ignored and the value is checked
//! against the user's messages themselves. A field whose schema carries
//! `"x-inferred": true` (`#[field(inferred)]`) is exempt and its value is reported as
//! inferred.

use serde_json::Value;
use time::{Date, Duration, Month, Weekday};

/// What the user said this session, and today's date on the agent's clock.
pub(crate) struct Evidence<'a> {
    /// The user's messages, normalised ([`normalize`]).
    pub(crate) said: std::sync::Arc<[String]>,
    pub(crate) today: Date,
    pub(crate) defs: Option<&'a Value>,
}

/// The verdict on one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Grounding {
    Grounded,
    /// The field opts out; stored and reported as inferred.
    Inferred,
    /// Not stored: why.
    Unsupported(String),
}

impl Evidence<'_> {
    /// Check `value` for a field of schema `prop`, cited by `quote`.
    pub(crate) fn check(&self, prop: &Value, value: &Value, quote: Option<&str>) -> Grounding {
        if flag(prop, "x-inferred", self.defs) {
            return Grounding::Inferred;
        }
        let quote = quote
            .map(normalize)
            .filter(|q| !q.is_empty() && self.said.iter().any(|s| s.contains(q.as_str())));
        let sources: Vec<&str> = match &quote {
            Some(q) => vec![q.as_str()],
            None => self.said.iter().map(String::as_str).collect(),
        };
        if sources.iter().any(|text| self.supports(prop, value, text)) {
            return Grounding::Grounded;
        }
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Grounding::Unsupported(match quote {
            Some(q) => format!("\"{q}\" does not say {shown}"),
            None => format!("the user did not say {shown}"),
        })
    }

    fn supports(&self, prop: &Value, value: &Value, text: &str) -> bool {
        match value {
            Value::Null | Value::Bool(_) | Value::Object(_) => true,
            Value::Array(items) => items.iter().all(|v| self.supports(prop, v, text)),
            Value::Number(n) => n.as_f64().is_some_and(|n| states_number(text, n)),
            Value::String(s) => {
                if let Some(date) = crate::data::validate::parse_date(s) {
                    return names_date(text, date, self.today);
                }
                if let Some(syn) = synonyms(prop, s, self.defs) {
                    let syn: Vec<String> = syn.iter().map(|x| normalize(x)).collect();
                    if syn.iter().any(|x| contains_words(text, x)) {
                        return true;
                    }
                }
                contains_words(text, &normalize(s)) || same_code(text, s)
            }
        }
    }
}

/// Whether a schema (or a `$ref`/`anyOf` branch of it) sets `key` to `true`.
fn flag(prop: &Value, key: &str, defs: Option<&Value>) -> bool {
    find(prop, defs, &|o| o.get(key).and_then(Value::as_bool)).unwrap_or(false)
}

/// Declared synonyms of an enum value: `"x-synonyms": {"double": ["two beds"]}`.
fn synonyms(prop: &Value, value: &str, defs: Option<&Value>) -> Option<Vec<String>> {
    find(prop, defs, &|o| {
        let list = o.get("x-synonyms")?.get(value)?.as_array()?;
        Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        )
    })
}

fn find<T>(
    schema: &Value,
    defs: Option<&Value>,
    get: &dyn Fn(&serde_json::Map<String, Value>) -> Option<T>,
) -> Option<T> {
    fn go<T>(
        schema: &Value,
        defs: Option<&Value>,
        get: &dyn Fn(&serde_json::Map<String, Value>) -> Option<T>,
        depth: u32,
    ) -> Option<T> {
        let o = schema.as_object()?;
        if depth > 8 {
            return None;
        }
        if let Some(v) = get(o) {
            return Some(v);
        }
        if let Some(r) = o.get("$ref").and_then(Value::as_str)
            && let Some(t) = r.strip_prefix("#/$defs/").and_then(|n| defs?.get(n))
            && let Some(v) = go(t, defs, get, depth + 1)
        {
            return Some(v);
        }
        ["anyOf", "oneOf"].iter().find_map(|k| {
            o.get(*k)?
                .as_array()?
                .iter()
                .find_map(|b| go(b, defs, get, depth + 1))
        })
    }
    go(schema, defs, get, 0)
}

/// Lower case, accents folded, everything but letters and digits a single space,
/// padded with a space on each side (so word matches are substring matches).
pub(crate) fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(' ');
    // `out` ends with a space (letters and digits never are one).
    let mut spaced = true;
    let mut put = |c: char| {
        if c.is_alphanumeric() {
            out.push(c);
            spaced = false;
        } else if !spaced {
            out.push(' ');
            spaced = true;
        }
    };
    for c in text.chars() {
        if c.is_ascii() {
            // The common case, without the Unicode tables: ASCII lower-cases to one
            // ASCII character, which `fold` leaves as it is.
            put(c.to_ascii_lowercase());
        } else {
            for l in c.to_lowercase() {
                put(fold(l));
            }
        }
    }
    if !spaced {
        out.push(' ');
    }
    out
}

fn fold(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
        'ç' => 'c',
        'è' | 'é' | 'ê' | 'ë' => 'e',
        'ì' | 'í' | 'î' | 'ï' => 'i',
        'ñ' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' => 'o',
        'ù' | 'ú' | 'û' | 'ü' => 'u',
        'ý' | 'ÿ' => 'y',
        'ß' => 's',
        other => other,
    }
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(' ').filter(|w| !w.is_empty())
}

/// Every word of `value` is in `text`, exactly or (for words of 4+ letters) sharing
/// most of its beginning ("lisboa" / "lisbon").
fn contains_words(text: &str, value: &str) -> bool {
    if value.trim().is_empty() {
        return false;
    }
    if text.contains(value) {
        return true;
    }
    // Short words ("in", "of") may be phrased differently; the others must be there.
    let content: Vec<&str> = words(value).filter(|w| w.chars().count() >= 3).collect();
    let needed: Vec<&str> = if content.is_empty() {
        words(value).collect()
    } else {
        content
    };
    needed
        .iter()
        .all(|v| words(text).any(|t| t == *v || similar(t, v)))
}

/// Codes and numbers written with other spacing or punctuation: "+351 912 345 678"
/// supports "+351912345678", "INV 7" supports "INV-7" (values with two digits or more).
fn same_code(text: &str, value: &str) -> bool {
    let compact = |t: &str| -> String {
        t.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let v = compact(value);
    v.chars().filter(char::is_ascii_digit).count() >= 2 && compact(text).contains(&v)
}

fn similar(a: &str, b: &str) -> bool {
    let (la, lb) = (a.chars().count(), b.chars().count());
    if la.min(lb) < 4 {
        return false;
    }
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    common >= 4 && common * 10 >= la.max(lb) * 6
}

/// Numbers in words, in the languages users most often write to these agents.
const NUMBER_WORDS: &[(&str, f64)] = &[
    ("zero", 0.0),
    ("one", 1.0),
    ("alone", 1.0),
    ("myself", 1.0),
    ("two", 2.0),
    ("couple", 2.0),
    ("pair", 2.0),
    ("both", 2.0),
    ("three", 3.0),
    ("four", 4.0),
    ("five", 5.0),
    ("six", 6.0),
    ("seven", 7.0),
    ("eight", 8.0),
    ("nine", 9.0),
    ("ten", 10.0),
    ("eleven", 11.0),
    ("twelve", 12.0),
    ("dozen", 12.0),
    ("thirteen", 13.0),
    ("fourteen", 14.0),
    ("fifteen", 15.0),
    ("twenty", 20.0),
    ("thirty", 30.0),
    ("forty", 40.0),
    ("fifty", 50.0),
    ("hundred", 100.0),
    // Portuguese, Spanish, French, German, Italian.
    ("um", 1.0),
    ("uma", 1.0),
    ("uno", 1.0),
    ("una", 1.0),
    ("un", 1.0),
    ("une", 1.0),
    ("ein", 1.0),
    ("eine", 1.0),
    ("dois", 2.0),
    ("duas", 2.0),
    ("dos", 2.0),
    ("deux", 2.0),
    ("zwei", 2.0),
    ("due", 2.0),
    ("tres", 3.0),
    ("trois", 3.0),
    ("drei", 3.0),
    ("tre", 3.0),
    ("quatro", 4.0),
    ("cuatro", 4.0),
    ("quatre", 4.0),
    ("vier", 4.0),
    ("quattro", 4.0),
    ("cinco", 5.0),
    ("cinq", 5.0),
    ("funf", 5.0),
    ("cinque", 5.0),
    ("seis", 6.0),
    ("sechs", 6.0),
    ("sei", 6.0),
    ("sete", 7.0),
    ("siete", 7.0),
    ("sept", 7.0),
    ("sieben", 7.0),
    ("sette", 7.0),
    ("oito", 8.0),
    ("ocho", 8.0),
    ("huit", 8.0),
    ("acht", 8.0),
    ("otto", 8.0),
    ("dez", 10.0),
    ("diez", 10.0),
    ("dix", 10.0),
    ("zehn", 10.0),
    ("dieci", 10.0),
    ("doze", 12.0),
    ("doce", 12.0),
    ("douze", 12.0),
    ("zwolf", 12.0),
    ("dodici", 12.0),
];

/// `n` is stated in `text`: as digits (also "2x", "2nd"), or in words. The parts of a
/// date ("2026-07-01") and zero-padded numbers are not counts.
fn states_number(text: &str, n: f64) -> bool {
    let ws: Vec<&str> = words(text).collect();
    let year = |i: usize| {
        ws.get(i)
            .is_some_and(|w| w.len() == 4 && w.chars().all(|c| c.is_ascii_digit()))
    };
    let part = |i: usize| {
        ws.get(i)
            .is_some_and(|w| (1..=2).contains(&w.len()) && w.chars().all(|c| c.is_ascii_digit()))
    };
    // A year, month and day in a row ("2026 07 01" once normalised).
    let in_date = |i: usize| {
        (i >= 1 && year(i - 1) && part(i) && part(i + 1))
            || (i >= 2 && year(i - 2) && part(i - 1) && part(i))
    };
    let month = |i: usize| {
        ws.get(i)
            .is_some_and(|w| MONTHS.iter().any(|(m, _)| m == w))
    };
    // A day of a month is not a count: "July 1", "1 July", "1 de julho", "the 1st".
    let day_of_month = |i: usize| {
        let w = ws[i];
        let digits = w.chars().take_while(char::is_ascii_digit).count();
        let ordinal = digits > 0 && matches!(&w[digits..], "st" | "nd" | "rd" | "th");
        ordinal
            || (digits == w.len()
                && ((i >= 1 && month(i - 1))
                    || month(i + 1)
                    || (ws.get(i + 1).is_some_and(|w| matches!(*w, "de" | "of")) && month(i + 2))))
    };
    ws.iter()
        .enumerate()
        .filter(|(i, w)| {
            let padded = w.len() > 1 && w.starts_with('0');
            !(in_date(*i) || padded || day_of_month(*i))
        })
        .any(|(_, w)| {
            let w = *w;
            let digits: String = w
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let as_digits = !digits.is_empty()
                && digits.parse::<f64>().is_ok_and(|d| d == n)
                && w[digits.len()..].chars().all(char::is_alphabetic);
            as_digits || NUMBER_WORDS.iter().any(|(word, v)| *v == n && w == *word)
        })
        || decimal_stated(text, n)
}

/// "1.5" and "1,5" are split in two words by [`normalize`]; join them back.
fn decimal_stated(text: &str, n: f64) -> bool {
    if n.fract() == 0.0 {
        return false;
    }
    let ws: Vec<&str> = words(text).collect();
    ws.windows(2).any(|p| {
        format!("{}.{}", p[0], p[1])
            .parse::<f64>()
            .is_ok_and(|d| d == n)
    })
}

const MONTHS: &[(&str, u8)] = &[
    ("january", 1),
    ("jan", 1),
    ("janeiro", 1),
    ("enero", 1),
    ("janvier", 1),
    ("januar", 1),
    ("gennaio", 1),
    ("february", 2),
    ("feb", 2),
    ("fevereiro", 2),
    ("febrero", 2),
    ("fevrier", 2),
    ("februar", 2),
    ("febbraio", 2),
    ("march", 3),
    ("mar", 3),
    ("marco", 3),
    ("marzo", 3),
    ("mars", 3),
    ("marz", 3),
    ("april", 4),
    ("apr", 4),
    ("abril", 4),
    ("avril", 4),
    ("aprile", 4),
    ("may", 5),
    ("maio", 5),
    ("mayo", 5),
    ("mai", 5),
    ("maggio", 5),
    ("june", 6),
    ("jun", 6),
    ("junho", 6),
    ("junio", 6),
    ("juin", 6),
    ("juni", 6),
    ("giugno", 6),
    ("july", 7),
    ("jul", 7),
    ("julho", 7),
    ("julio", 7),
    ("juillet", 7),
    ("juli", 7),
    ("luglio", 7),
    ("august", 8),
    ("aug", 8),
    ("agosto", 8),
    ("aout", 8),
    ("september", 9),
    ("sep", 9),
    ("sept", 9),
    ("setembro", 9),
    ("septiembre", 9),
    ("septembre", 9),
    ("settembre", 9),
    ("october", 10),
    ("oct", 10),
    ("outubro", 10),
    ("octubre", 10),
    ("octobre", 10),
    ("oktober", 10),
    ("ottobre", 10),
    ("november", 11),
    ("nov", 11),
    ("novembro", 11),
    ("noviembre", 11),
    ("novembre", 11),
    ("december", 12),
    ("dec", 12),
    ("dezembro", 12),
    ("diciembre", 12),
    ("decembre", 12),
    ("dezember", 12),
    ("dicembre", 12),
];

const WEEKDAYS: &[(&str, Weekday)] = &[
    ("monday", Weekday::Monday),
    ("mon", Weekday::Monday),
    ("segunda", Weekday::Monday),
    ("lunes", Weekday::Monday),
    ("lundi", Weekday::Monday),
    ("montag", Weekday::Monday),
    ("tuesday", Weekday::Tuesday),
    ("tue", Weekday::Tuesday),
    ("terca", Weekday::Tuesday),
    ("martes", Weekday::Tuesday),
    ("mardi", Weekday::Tuesday),
    ("dienstag", Weekday::Tuesday),
    ("wednesday", Weekday::Wednesday),
    ("wed", Weekday::Wednesday),
    ("quarta", Weekday::Wednesday),
    ("miercoles", Weekday::Wednesday),
    ("mercredi", Weekday::Wednesday),
    ("mittwoch", Weekday::Wednesday),
    ("thursday", Weekday::Thursday),
    ("thu", Weekday::Thursday),
    ("quinta", Weekday::Thursday),
    ("jueves", Weekday::Thursday),
    ("jeudi", Weekday::Thursday),
    ("donnerstag", Weekday::Thursday),
    ("friday", Weekday::Friday),
    ("fri", Weekday::Friday),
    ("sexta", Weekday::Friday),
    ("viernes", Weekday::Friday),
    ("vendredi", Weekday::Friday),
    ("freitag", Weekday::Friday),
    ("saturday", Weekday::Saturday),
    ("sat", Weekday::Saturday),
    ("sabado", Weekday::Saturday),
    ("samedi", Weekday::Saturday),
    ("samstag", Weekday::Saturday),
    ("sunday", Weekday::Sunday),
    ("sun", Weekday::Sunday),
    ("domingo", Weekday::Sunday),
    ("dimanche", Weekday::Sunday),
    ("sonntag", Weekday::Sunday),
];

const ORDINALS: &[(&str, u8)] = &[
    ("first", 1),
    ("second", 2),
    ("third", 3),
    ("fourth", 4),
    ("fifth", 5),
    ("sixth", 6),
    ("seventh", 7),
    ("eighth", 8),
    ("ninth", 9),
    ("tenth", 10),
    ("eleventh", 11),
    ("twelfth", 12),
    ("thirteenth", 13),
    ("fourteenth", 14),
    ("fifteenth", 15),
    ("sixteenth", 16),
    ("seventeenth", 17),
    ("eighteenth", 18),
    ("nineteenth", 19),
    ("twentieth", 20),
    ("thirtieth", 30),
];

/// The one day that `text` names, if it names exactly one (the nearest from today for
/// an expression several days fit: "July 1st", "next Friday"). Used to correct a date
/// the model wrote that the user's words do not support. Two different days named
/// ("from July 1 to July 5") resolve to nothing.
pub(crate) fn resolve_date(text: &str, today: Date) -> Option<Date> {
    let text = normalize(text);
    let found: Vec<Date> = (-1..=400)
        .map(|d| today + Duration::days(d))
        .filter(|d| names_date(&text, *d, today))
        .collect();
    let first = *found.first()?;
    let same_day_of_year = found
        .iter()
        .all(|d| (d.month(), d.day()) == (first.month(), first.day()));
    let same_weekday = found.iter().all(|d| d.weekday() == first.weekday());
    (same_day_of_year || same_weekday).then_some(first)
}

/// `text` names `date`, against `today`.
fn names_date(text: &str, date: Date, today: Date) -> bool {
    let iso = format!(
        " {} {:02} {:02} ",
        date.year(),
        u8::from(date.month()),
        date.day()
    );
    if text.contains(&iso) {
        return true;
    }
    let ws: Vec<&str> = words(text).collect();
    relative(&ws, date, today) || calendar(&ws, date, today)
}

/// "today", "tomorrow", "in 3 days", weekdays ("next Friday"), "next week".
fn relative(ws: &[&str], date: Date, today: Date) -> bool {
    let offset = (date - today).whole_days();
    let has = |w: &str| ws.contains(&w);
    let pairs = |a: &str, b: &str| ws.windows(2).any(|p| p[0] == a && p[1] == b);
    if (has("today") || has("tonight") || has("hoje") || has("hoy")) && offset == 0 {
        return true;
    }
    if has("yesterday") && offset == -1 {
        return true;
    }
    let after_tomorrow = pairs("after", "tomorrow");
    if has("tomorrow") && !after_tomorrow && offset == 1 {
        return true;
    }
    if (has("amanha") || has("manana") || has("demain") || has("morgen")) && offset == 1 {
        return true;
    }
    if after_tomorrow && offset == 2 {
        return true;
    }
    // "in 3 days", "in two weeks".
    for p in ws.windows(3) {
        if p[0] != "in" {
            continue;
        }
        let Some(n) = count(p[1]) else { continue };
        let unit = match p[2] {
            "day" | "days" => 1,
            "week" | "weeks" => 7,
            _ => continue,
        };
        if offset == n * unit {
            return true;
        }
    }
    let weekday_named = WEEKDAYS.iter().any(|(w, d)| has(w) && *d == date.weekday());
    if weekday_named && (0..=14).contains(&offset) {
        return true;
    }
    if pairs("next", "week") && (1..=13).contains(&offset) {
        let monday =
            today + Duration::days(7 - i64::from(today.weekday().number_days_from_monday()));
        return date >= monday && date < monday + Duration::days(7);
    }
    if (pairs("this", "weekend") || has("weekend"))
        && matches!(date.weekday(), Weekday::Saturday | Weekday::Sunday)
        && (0..=13).contains(&offset)
    {
        return true;
    }
    false
}

fn count(w: &str) -> Option<i64> {
    if let Ok(n) = w.parse::<i64>() {
        return Some(n);
    }
    NUMBER_WORDS
        .iter()
        .find(|(x, _)| *x == w)
        .map(|(_, v)| *v as i64)
        .or(match w {
            "a" | "an" => Some(1),
            _ => None,
        })
}

/// A day and month ("July 1st", "1 de julho", "1/7", "07/01/2026"), with the year
/// stated or the next such day from today.
fn calendar(ws: &[&str], date: Date, today: Date) -> bool {
    let day = date.day();
    let month = u8::from(date.month());
    let year = date.year();
    let is_day = |w: &str| {
        let digits: String = w.chars().take_while(char::is_ascii_digit).collect();
        let suffix = &w[digits.len()..];
        (!digits.is_empty()
            && digits.parse::<u8>().is_ok_and(|d| d == day)
            && matches!(suffix, "" | "st" | "nd" | "rd" | "th" | "o" | "er" | "eme"))
            || ORDINALS.iter().any(|(o, d)| *d == day && *o == w)
    };
    let named_month = ws
        .iter()
        .any(|w| MONTHS.iter().any(|(m, n)| *n == month && m == w));
    let years: Vec<i32> = ws
        .iter()
        .filter_map(|w| w.parse::<i32>().ok())
        .filter(|y| (1900..=2200).contains(y))
        .collect();
    let year_ok = |stated: &[i32]| {
        if stated.is_empty() {
            year == today.year() || year == next_year_of(today, date.month(), day)
        } else {
            stated.contains(&year)
        }
    };
    if named_month && ws.iter().any(|w| is_day(w)) {
        return year_ok(&years);
    }
    // Numeric: d m [y] or m d [y] in consecutive words ("1/7", "07 01 2026").
    for (i, p) in ws.windows(2).enumerate() {
        let (Ok(a), Ok(b)) = (p[0].parse::<u8>(), p[1].parse::<u8>()) else {
            continue;
        };
        if (a, b) != (day, month) && (a, b) != (month, day) {
            continue;
        }
        let stated: Vec<i32> = ws
            .get(i + 2)
            .and_then(|w| w.parse::<i32>().ok())
            .map(|y| if y < 100 { 2000 + y } else { y })
            .into_iter()
            .collect();
        if year_ok(&stated) {
            return true;
        }
    }
    // "the 5th", no month named at all: the next such day of a month.
    let any_month = ws.iter().any(|w| MONTHS.iter().any(|(m, _)| m == w));
    if !any_month && ws.iter().any(|w| is_day(w) && w.parse::<u8>().is_err()) {
        let offset = (date - today).whole_days();
        return (0..=31).contains(&offset);
    }
    false
}

/// The year of the next `month`/`day` on or after `today`.
fn next_year_of(today: Date, month: Month, day: u8) -> i32 {
    match Date::from_calendar_date(today.year(), month, day) {
        Ok(d) if d >= today => today.year(),
        _ => today.year() + 1,
    }
}

#[cfg(test)]
mod tests {
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
        assert!(ok(&["in 3 days"], json!("2026-06-18")));
        assert!(ok(&["March 3rd 2027"], json!("2027-03-03")));
        // March 3rd without a year: this year's or the next one.
        assert!(ok(&["March 3rd"], json!("2026-03-03")));
        assert!(ok(&["March 3rd"], json!("2027-03-03")));
        assert!(!ok(&["March 3rd"], json!("2028-03-03")));
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
        // A day without a year is the next such day.
        assert_eq!(
            resolve_date("July 1st", date!(2026 - 11 - 25)),
            Some(date!(2027 - 07 - 01))
        );
        assert_eq!(resolve_date("hi there", today), None);
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
}
