//! Whether the user's words name a given day against the agent's clock: ISO dates,
//! relative days ("tomorrow", "next Friday", "in 3 days") and calendar dates in the
//! languages users write in.

use time::{Date, Duration, Month, Weekday};

use super::lexicon::{MONTHS, NUMBER_WORDS, ORDINALS, WEEKDAYS};
use super::text::{normalize, words};

/// The one day that `text` names, if it names exactly one (the nearest from today for
/// an expression several days fit: "July 1st", "next Friday"; a day of the past week
/// for "last Friday"). Used to correct a date
/// the model wrote that the user's words do not support. Two different days named
/// ("from July 1 to July 5") resolve to nothing.
pub(crate) fn resolve_date(text: &str, today: Date) -> Option<Date> {
    let text = normalize(text);
    let found: Vec<Date> = (-7..=400)
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
pub(super) fn names_date(text: &str, date: Date, today: Date) -> bool {
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
    // A weekday and "next week" name that weekday of next week ("Monday next week"):
    // both hold, not either.
    let weekdays: Vec<Weekday> = ws
        .iter()
        .filter_map(|w| WEEKDAYS.iter().find(|(n, _)| n == w).map(|(_, d)| *d))
        .collect();
    if pairs("next", "week") && !weekdays.is_empty() {
        let monday =
            today + Duration::days(7 - i64::from(today.weekday().number_days_from_monday()));
        return weekdays.contains(&date.weekday())
            && date >= monday
            && date < monday + Duration::days(7);
    }
    // A weekday, with the word before it saying which one: "next Monday" is never
    // today, "last Friday" is in the past week, "this Friday" within this week; a bare
    // one is the nearest, today included.
    for (i, w) in ws.iter().enumerate() {
        if !WEEKDAYS.iter().any(|(n, d)| n == w && *d == date.weekday()) {
            continue;
        }
        let days = match i.checked_sub(1).map(|k| ws[k]) {
            Some("next" | "coming") => 1..=14,
            Some("last" | "past" | "previous") => -7..=-1,
            Some("this") => 0..=6,
            _ => 0..=14,
        };
        if days.contains(&offset) {
            return true;
        }
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
    // The day next to its month ("July 1st", "1st of July", "1 de julho"): in "July
    // 1st for 2" the 2 is not a day of July.
    let month_at: Vec<usize> = ws
        .iter()
        .enumerate()
        .filter(|(_, w)| MONTHS.iter().any(|(m, n)| *n == month && m == *w))
        .map(|(i, _)| i)
        .collect();
    let day_by_month = ws
        .iter()
        .enumerate()
        .any(|(i, w)| is_day(w) && month_at.iter().any(|m| m.abs_diff(i) <= 2));
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
    if day_by_month {
        return year_ok(&years);
    }
    // Numeric: [y] m d, d m [y] or m d [y] in consecutive words ("1/7", "07 01 2026",
    // "2025-12-24": the year before the pair counts too, or an ISO date of another
    // year would support this one).
    // The words of a full date ("2026 07 01") belong to it: its day and a count after
    // it ("2026-07-01, 2 guests") are no day-month pair.
    let full_dates: Vec<usize> = ws
        .windows(3)
        .enumerate()
        .filter(|(_, t)| {
            t[0].len() == 4
                && t[0].parse::<i32>().is_ok()
                && t[1..]
                    .iter()
                    .all(|w| w.len() <= 2 && w.parse::<u8>().is_ok())
        })
        .map(|(k, _)| k)
        .collect();
    let straddles = |i: usize| {
        full_dates
            .iter()
            .any(|&k| i + 1 >= k && i <= k + 2 && i != k + 1)
    };
    for (i, p) in ws.windows(2).enumerate() {
        if straddles(i) {
            continue;
        }
        let (Ok(a), Ok(b)) = (p[0].parse::<u8>(), p[1].parse::<u8>()) else {
            continue;
        };
        if (a, b) != (day, month) && (a, b) != (month, day) {
            continue;
        }
        let before = i
            .checked_sub(1)
            .and_then(|k| ws.get(k))
            .filter(|w| w.len() == 4)
            .and_then(|w| w.parse::<i32>().ok());
        let after = ws
            .get(i + 2)
            .and_then(|w| w.parse::<i32>().ok())
            .map(|y| if y < 100 { 2000 + y } else { y });
        let stated: Vec<i32> = before.into_iter().chain(after).collect();
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
