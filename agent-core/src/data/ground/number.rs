//! Whether the user stated a number, in digits or in words, without mistaking the parts
//! of a date or a day of the month for a count.

use super::lexicon::{ARTICLE_ONES, MONTHS, NUMBER_WORDS, PERSON_WORDS};
use super::text::words;

/// `n` is stated in `text`: as digits (also "2x", "2nd"), or in words. The parts of a
/// date ("2026-07-01") and zero-padded numbers are not counts.
pub(super) fn states_number(text: &str, n: f64) -> bool {
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
        .any(|(i, w)| {
            let w = *w;
            // "um hotel" is an article; "um" at the end or "uma pessoa" a count.
            if ARTICLE_ONES.contains(&w)
                && ws
                    .get(i + 1)
                    .is_some_and(|next| !PERSON_WORDS.contains(next))
            {
                return false;
            }
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
