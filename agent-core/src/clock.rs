//! Injectable time, so cooldowns and timestamps are testable without sleeping.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// The current time in milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The operating system's wall clock: what agents use unless a test or an eval injects a
/// [`ManualClock`] or a fixed clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// A clock that moves only when told (for tests).
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock at `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        Self {
            now: Arc::new(AtomicU64::new(start_ms)),
        }
    }
    /// Move the clock forward by `d` (for tests of cooldowns, leases and timestamps without
    /// sleeping); every clone of this clock sees the new time.
    pub fn advance(&self, d: Duration) {
        self.now.fetch_add(d.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// A clock read in a time zone: what "today" is for rules that depend on the day
/// (a date field marked `not_past`, grounding "tomorrow").
#[derive(Clone)]
pub struct Calendar {
    clock: Arc<dyn Clock>,
    zone: TimeZone,
}

impl Default for Calendar {
    fn default() -> Self {
        Self::new(Arc::new(SystemClock), TimeZone::utc())
    }
}

impl std::fmt::Debug for Calendar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Calendar")
            .field("zone", &self.zone)
            .finish_non_exhaustive()
    }
}

impl Calendar {
    /// `clock` read in `zone`.
    pub fn new(clock: Arc<dyn Clock>, zone: TimeZone) -> Self {
        Self { clock, zone }
    }

    /// Today's date in the calendar's time zone.
    pub fn today(&self) -> time::Date {
        self.zone.local(self.clock.now_ms()).date()
    }
}

/// The agent's time zone: a fixed UTC offset and the name the model is shown.
/// Dates the user gives ("tomorrow", "next Friday") resolve in it.
#[derive(Clone)]
pub struct TimeZone {
    name: String,
    offset_minutes: i16,
    /// The last [`TimeZone::today_line`] and its day: the line changes once a day,
    /// and every prompt carries it. Shared by clones (same zone, same lines).
    today: Arc<Mutex<Option<(time::Date, String)>>>,
}

impl std::fmt::Debug for TimeZone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeZone")
            .field("name", &self.name)
            .field("offset_minutes", &self.offset_minutes)
            .finish()
    }
}

impl PartialEq for TimeZone {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.offset_minutes == other.offset_minutes
    }
}

impl Eq for TimeZone {}

impl Default for TimeZone {
    fn default() -> Self {
        Self::utc()
    }
}

impl TimeZone {
    /// Coordinated Universal Time, offset 0: the default zone of the date and time the prompt
    /// carries; use [`TimeZone::fixed`] for the agent's local time.
    pub fn utc() -> Self {
        Self {
            name: "UTC".into(),
            offset_minutes: 0,
            today: Arc::default(),
        }
    }

    /// A fixed offset from UTC (minutes, -1080..=1080), shown to the model as `name`
    /// (for instance `"Europe/Lisbon"`); out-of-range offsets are clamped.
    pub fn fixed(name: impl Into<String>, offset_minutes: i16) -> Self {
        Self {
            name: name.into(),
            offset_minutes: offset_minutes.clamp(-1080, 1080),
            today: Arc::default(),
        }
    }

    /// The name shown to the model.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The offset from UTC in minutes.
    pub fn offset_minutes(&self) -> i16 {
        self.offset_minutes
    }

    /// The local date and time of `now_ms` (milliseconds since the Unix epoch).
    pub fn local(&self, now_ms: u64) -> time::OffsetDateTime {
        let secs = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
        let offset = time::UtcOffset::from_whole_seconds(i32::from(self.offset_minutes) * 60)
            .unwrap_or(time::UtcOffset::UTC);
        time::OffsetDateTime::from_unix_timestamp(secs)
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
            .to_offset(offset)
    }

    /// The line that tells the model what day it is:
    /// `Today is Monday, 15 June 2026 (2026-06-15), time zone Europe/Lisbon (UTC+01:00).`
    /// No time of day: the line changes once a day, so the system prompt it sits in
    /// stays the prefix a provider caches.
    pub fn today_line(&self, now_ms: u64) -> String {
        let day = self.local(now_ms).date();
        let mut last = self.today.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((d, line)) = last.as_ref()
            && *d == day
        {
            return line.clone();
        }
        let line = self.line_of(day);
        *last = Some((day, line.clone()));
        line
    }

    /// [`TimeZone::today_line`] for the local date `t`.
    fn line_of(&self, t: time::Date) -> String {
        let off = self.offset_minutes;
        let sign = if off < 0 { '-' } else { '+' };
        let zone = if self.name == "UTC" && off == 0 {
            "UTC".to_owned()
        } else {
            format!(
                "{} (UTC{sign}{:02}:{:02})",
                self.name,
                off.unsigned_abs() / 60,
                off.unsigned_abs() % 60
            )
        };
        format!(
            "Today is {}, {} {} {} ({}-{:02}-{:02}), time zone {zone}. Write dates as YYYY-MM-DD, counted from today.",
            t.weekday(),
            t.day(),
            t.month(),
            t.year(),
            t.year(),
            u8::from(t.month()),
            t.day(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn today_line_names_weekday_date_and_zone() {
        // 2026-06-15T08:30:00Z is 09:30 in UTC+01:00, a Monday.
        let ms = 1_781_512_200_000;
        let tz = TimeZone::fixed("Europe/Lisbon", 60);
        assert_eq!(
            tz.today_line(ms),
            "Today is Monday, 15 June 2026 (2026-06-15), time zone Europe/Lisbon (UTC+01:00). Write dates as YYYY-MM-DD, counted from today."
        );
        assert!(TimeZone::utc().today_line(ms).contains("time zone UTC."));
    }

    #[test]
    fn today_line_follows_the_local_day_through_its_cache() {
        // 2026-06-15T08:30:00Z, a Monday; in UTC-05:00 the day turns at 05:00Z.
        let ms = 1_781_512_200_000;
        let hour = 3_600_000;
        let tz = TimeZone::fixed("America/Bogota", -300);
        let monday = tz.today_line(ms);
        assert!(
            monday.contains("Monday, 15 June 2026 (2026-06-15)"),
            "{monday}"
        );
        assert_eq!(tz.today_line(ms + 10 * hour), monday);
        let tuesday = tz.today_line(ms + 21 * hour);
        assert!(
            tuesday.contains("Tuesday, 16 June 2026 (2026-06-16)"),
            "{tuesday}"
        );
        assert!(
            tz.today_line(ms - 4 * hour)
                .contains("Sunday, 14 June 2026")
        );
        assert_eq!(tz.clone().today_line(ms), monday);
        assert_eq!(tz, TimeZone::fixed("America/Bogota", -300));
        assert_ne!(tz, TimeZone::fixed("America/Bogota", -240));
        assert_eq!(
            format!("{tz:?}"),
            r#"TimeZone { name: "America/Bogota", offset_minutes: -300 }"#
        );
    }
}
