//! Incremental extraction of the top-level `"message"` string from a streamed JSON
//! object, so structured answers can be streamed as plain text deltas. The deltas of a
//! complete, valid document concatenate to exactly the parsed `message` value.

/// Feeds raw JSON chunks, yields decoded pieces of the top-level `message` string.
#[derive(Debug, Default)]
pub(crate) struct MessageExtractor {
    depth: u32,
    in_string: bool,
    escape: bool,
    unicode: Option<(u8, u32)>,
    pending_high: Option<u32>,
    /// Characters of the current top-level key being read.
    key: String,
    reading_key: bool,
    /// The last completed top-level key (value follows after ':').
    last_key: Option<String>,
    in_message: bool,
    done: bool,
    /// Raw text before the message value (the decisions: data, step, ...), kept until
    /// the message starts.
    head: String,
    /// Set once when the message value opens; taken by `take_head`.
    head_ready: bool,
}

impl MessageExtractor {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Consume a chunk; returns the decoded message text it contained (maybe empty).
    pub(crate) fn push(&mut self, chunk: &str) -> String {
        let mut out = String::new();
        for ch in chunk.chars() {
            if self.done {
                break;
            }
            if !self.in_message && !self.head_ready {
                self.head.push(ch);
            }
            if self.in_string {
                self.string_char(ch, &mut out);
                continue;
            }
            match ch {
                '{' | '[' => self.depth += 1,
                '}' | ']' => self.depth = self.depth.saturating_sub(1),
                '"' => {
                    self.in_string = true;
                    if self.depth == 1 && self.last_key.is_none() {
                        self.reading_key = true;
                        self.key.clear();
                    } else if self.depth == 1 && self.last_key.as_deref() == Some("message") {
                        self.in_message = true;
                        self.head_ready = true;
                    }
                }
                ':' if self.depth == 1 => {}
                ',' if self.depth == 1 => self.last_key = None,
                _ => {}
            }
        }
        out
    }

    /// Once the message value has started: the document before it, closed so that it
    /// parses (`{…,"message":""}`). Returned once.
    pub(crate) fn take_head(&mut self) -> Option<String> {
        if !self.head_ready || self.head.is_empty() {
            return None;
        }
        let mut h = std::mem::take(&mut self.head);
        h.push_str("\"}");
        Some(h)
    }

    fn string_char(&mut self, ch: char, out: &mut String) {
        if let Some((n, acc)) = self.unicode {
            let Some(d) = ch.to_digit(16) else {
                self.unicode = None;
                return;
            };
            let acc = acc * 16 + d;
            if n + 1 < 4 {
                self.unicode = Some((n + 1, acc));
                return;
            }
            self.unicode = None;
            let decoded = if (0xD800..0xDC00).contains(&acc) {
                self.pending_high = Some(acc);
                None
            } else if (0xDC00..0xE000).contains(&acc) {
                self.pending_high
                    .take()
                    .and_then(|hi| char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (acc - 0xDC00)))
            } else {
                char::from_u32(acc)
            };
            if let Some(c) = decoded {
                self.emit(c, out);
            }
            return;
        }
        if self.escape {
            self.escape = false;
            let c = match ch {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'u' => {
                    self.unicode = Some((0, 0));
                    return;
                }
                other => other,
            };
            self.emit(c, out);
            return;
        }
        match ch {
            '\\' => self.escape = true,
            '"' => {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.last_key = Some(std::mem::take(&mut self.key));
                } else if self.in_message {
                    self.in_message = false;
                    self.done = true;
                }
            }
            c => self.emit(c, out),
        }
    }

    fn emit(&mut self, c: char, out: &mut String) {
        if self.reading_key {
            self.key.push(c);
        } else if self.in_message {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(doc: &str, chunk: usize) -> String {
        let mut x = MessageExtractor::new();
        let chars: Vec<char> = doc.chars().collect();
        let mut out = String::new();
        for c in chars.chunks(chunk) {
            out.push_str(&x.push(&c.iter().collect::<String>()));
        }
        out
    }

    #[test]
    fn deltas_concatenate_to_the_parsed_message_for_any_chunking() {
        let doc = r#"{"data":{"city":"Lis\"bon","message":"no"},"step":"a","message":"Hi \"there\"\n caf\u00e9 \ud83d\ude00 {ok}","x":1}"#;
        let parsed: serde_json::Value = serde_json::from_str(doc).unwrap();
        let want = parsed["message"].as_str().unwrap();
        for chunk in 1..12 {
            assert_eq!(run(doc, chunk), want, "chunk size {chunk}");
        }
    }

    #[test]
    fn the_head_before_the_message_parses_as_the_decisions() {
        let doc = r#"{"data":{"city":"Lisbon"},"step":"ask_date","message":"When?"}"#;
        let mut x = MessageExtractor::new();
        let mut head = None;
        for c in doc.chars() {
            x.push(&c.to_string());
            if head.is_none() {
                head = x.take_head();
            }
        }
        let v: serde_json::Value = serde_json::from_str(&head.unwrap()).unwrap();
        assert_eq!(v["step"], "ask_date");
        assert_eq!(v["data"]["city"], "Lisbon");
        assert_eq!(v["message"], "");
    }

    #[test]
    fn nested_message_keys_are_ignored() {
        let doc = r#"{"data":{"message":"inner"},"message":"outer"}"#;
        assert_eq!(run(doc, 3), "outer");
    }
}
