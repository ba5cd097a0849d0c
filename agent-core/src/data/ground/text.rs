//! Comparing what the model wrote with what the user said as text: one normal form for
//! both (case, accents, punctuation), then word and code matches that forgive endings
//! and spacing.

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

pub(super) fn fold(c: char) -> char {
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

pub(super) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(' ').filter(|w| !w.is_empty())
}

/// Every word of `value` is in `text`, exactly or (for words of 4+ letters) sharing
/// most of its beginning ("lisboa" / "lisbon").
pub(super) fn contains_words(text: &str, value: &str) -> bool {
    if value.trim().is_empty() {
        return false;
    }
    if text.contains(value) {
        return true;
    }
    // Short words ("in", "of") may be phrased differently; the others must be there,
    // and so must every number ("INV 8" does not say "INV-7").
    let content: Vec<&str> = words(value)
        .filter(|w| w.chars().count() >= 3 || w.chars().any(char::is_numeric))
        .collect();
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
pub(super) fn same_code(text: &str, value: &str) -> bool {
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
