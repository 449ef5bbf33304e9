//! Time: the injected clock, millisecond timestamps and the UTC calendar month.

use std::fmt;
use std::sync::Mutex;

use chrono::{DateTime, Datelike, Duration, TimeZone, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An instant with millisecond precision, shown as RFC 3339 UTC with `Z`.
///
/// Kept as milliseconds since the Unix epoch so that what is shown is exactly what is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    pub fn from_datetime(at: DateTime<Utc>) -> Self {
        Self(at.timestamp_millis())
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    pub fn to_datetime(self) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(self.0)
            .single()
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    pub fn plus(self, span: Duration) -> Self {
        Self(self.0.saturating_add(span.num_milliseconds()))
    }

    pub fn minus(self, span: Duration) -> Self {
        Self(self.0.saturating_sub(span.num_milliseconds()))
    }

    pub fn month(self) -> Month {
        let at = self.to_datetime();
        Month(at.year() * 12 + at.month0() as i32)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_datetime().format("%Y-%m-%dT%H:%M:%S%.3fZ"))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(self)
        } else {
            serializer.serialize_i64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let text = String::deserialize(deserializer)?;
            DateTime::parse_from_rfc3339(&text)
                .map(|at| Self::from_datetime(at.with_timezone(&Utc)))
                .map_err(|_| serde::de::Error::custom("not an RFC 3339 timestamp"))
        } else {
            i64::deserialize(deserializer).map(Self)
        }
    }
}

/// A UTC calendar month, counted from year 0, so that comparing two is one integer compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Month(i32);

/// Where every rule that depends on time reads the time, so tests can move it by hand.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_datetime(Utc::now())
    }
}

/// A clock that moves only when told to.
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self(Mutex::new(start))
    }

    pub fn set(&self, to: Timestamp) {
        *self.lock() = to;
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.lock();
        *now = now.plus(by);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Timestamp> {
        // The guarded value is a plain integer, valid whatever a panicking holder did.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_show_milliseconds_and_z() {
        let at = Timestamp::from_millis(1_795_322_151_123);
        assert_eq!(at.to_string(), "2026-11-22T04:35:51.123Z");
        let json = serde_json::to_string(&at).expect("serializes");
        let back: Timestamp = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, at);
    }

    #[test]
    fn months_change_at_the_first_utc_instant() {
        let last = Timestamp::from_datetime(
            Utc.with_ymd_and_hms(2026, 11, 30, 23, 59, 59)
                .single()
                .expect("valid date")
                .checked_add_signed(Duration::milliseconds(999))
                .expect("in range"),
        );
        assert_ne!(last.month(), last.plus(Duration::milliseconds(1)).month());
        assert_eq!(
            last.month(),
            last.minus(Duration::days(29)).month(),
            "same month"
        );
    }
}
