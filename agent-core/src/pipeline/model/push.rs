//! Prompt text without format machinery (prompts are built on every call).

/// Append pieces in order (prompts are built on every call: no format machinery).
pub(super) fn push_all(out: &mut String, parts: &[&str]) {
    for p in parts {
        out.push_str(p);
    }
}

/// `- cN: condition` (what the model answers by key `cN`), without format machinery.
pub(super) fn push_condition(sys: &mut String, n: usize, condition: &str) {
    sys.push_str("- c");
    push_number(sys, n);
    sys.push_str(": ");
    sys.push_str(condition);
    sys.push('\n');
}

fn push_number(s: &mut String, n: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        s.push(char::from(b));
    }
}
