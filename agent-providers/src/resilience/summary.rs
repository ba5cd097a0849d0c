//! The failed attempts in one short line: identical causes are grouped ("compatible/m,
//! 3 attempts: connection refused"), so three retries of a server that is down do not
//! print the same cause three times. The errors are already redacted by their
//! provider; grouping only compares and drops text.

use super::AttemptFailure;

/// One cause: the model, its text, and the attempts that hit it.
struct Group<'a> {
    model: &'a str,
    cause: String,
    attempts: Vec<u32>,
}

/// `1-3` for a run, `1, 3` otherwise.
fn numbers(attempts: &[u32]) -> String {
    let contiguous = attempts.windows(2).all(|w| w[1] == w[0] + 1);
    match (attempts.first(), attempts.last()) {
        (Some(a), Some(b)) if contiguous => format!("{a}-{b}"),
        _ => attempts
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

impl Group<'_> {
    fn label(&self) -> String {
        match self.attempts.as_slice() {
            [one] => format!("{} attempt {one}", self.model),
            many => {
                let from_first = many.iter().copied().eq(1..=many.len() as u32);
                if from_first {
                    format!("{}, {} attempts", self.model, many.len())
                } else {
                    format!(
                        "{}, {} attempts ({})",
                        self.model,
                        many.len(),
                        numbers(many)
                    )
                }
            }
        }
    }
}

/// The attempts grouped by model and cause, in order of first appearance, `; `-separated.
pub(crate) fn grouped(attempts: &[AttemptFailure]) -> String {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for a in attempts {
        let cause = a.error.to_string();
        match groups
            .iter_mut()
            .find(|g| g.model == a.model && g.cause == cause)
        {
            Some(g) => g.attempts.push(a.attempt),
            None => groups.push(Group {
                model: &a.model,
                cause,
                attempts: vec![a.attempt],
            }),
        }
    }
    groups
        .iter()
        .map(|g| format!("{}: {}", g.label(), g.cause))
        .collect::<Vec<_>>()
        .join("; ")
}
