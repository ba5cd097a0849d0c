//! The `conditions` object of a model answer (`{"c0": true, "c1": false}`), read as
//! (index, verdict) pairs straight from the JSON: no map, no key strings. Every turn
//! with a `when` condition parses one.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

/// Verdicts by condition index. A key that is not `cN` is ignored; anything but `true`
/// is false; a repeated key counts once, last wins.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Judged(Vec<(usize, bool)>);

impl Judged {
    /// The verdict on condition `n` (false when the model gave none).
    pub(crate) fn verdict(&self, n: usize) -> bool {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| *k == n)
            .is_some_and(|(_, v)| *v)
    }
}

/// `cN` → `Some(N)`.
pub(crate) fn condition_index(key: &str) -> Option<usize> {
    key.strip_prefix('c').and_then(|d| d.parse().ok())
}

/// A key, read as its condition index while the parser still holds the text.
struct Key(Option<usize>);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<De: Deserializer<'de>>(d: De) -> Result<Self, De::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a condition key like \"c0\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(condition_index(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A verdict: `true` or anything else.
struct Verdict(bool);

impl<'de> Deserialize<'de> for Verdict {
    fn deserialize<De: Deserializer<'de>>(d: De) -> Result<Self, De::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Verdict;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a boolean verdict")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Verdict, E> {
                Ok(Verdict(v))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Verdict, E> {
                Ok(Verdict(false))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Verdict, E> {
                Ok(Verdict(false))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Verdict, E> {
                Ok(Verdict(false))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Verdict, E> {
                Ok(Verdict(false))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Verdict, E> {
                Ok(Verdict(false))
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<Verdict, E> {
                Ok(Verdict(false))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<Verdict, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Verdict(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Verdict, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Verdict(false))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Judged {
    fn deserialize<De: Deserializer<'de>>(d: De) -> Result<Self, De::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Judged;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of condition verdicts")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Judged, A::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(2));
                while let Some((Key(k), Verdict(v))) = m.next_entry::<Key, Verdict>()? {
                    if let Some(n) = k {
                        out.push((n, v));
                    }
                }
                Ok(Judged(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Judged {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn verdicts_are_read_by_index_and_only_true_is_true() {
        let j = parse(
            r#"{"c0": true, "c1": false, "c2": "yes", "c3": 1, "c4": null, "c5": {"a": [1]}, "c6": [true]}"#,
        );
        assert!(j.verdict(0));
        assert!((1..=6).all(|n| !j.verdict(n)));
        assert!(!j.verdict(7), "absent is false");
    }

    #[test]
    fn unknown_and_escaped_keys_and_repeats() {
        let j = parse(r#"{"x": true, "c\u0031": true, "c2": true, "c2": false, "c": true}"#);
        assert!(j.verdict(1), "an escaped key is still read");
        assert!(!j.verdict(2), "last wins");
        assert_eq!(j.0.len(), 3);
    }

    #[test]
    fn a_non_object_is_an_error() {
        assert!(serde_json::from_str::<Judged>("[true]").is_err());
        assert!(serde_json::from_str::<Judged>("true").is_err());
    }
}
