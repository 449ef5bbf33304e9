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

    /// The RFC 3339 text of an instant in years 0 to 9999, written by hand: every vote event
    /// and response shows timestamps, and chrono's `format` parses its pattern each time
    /// (about a microsecond a timestamp, most of a stream event's rendering).
    fn rfc3339(self) -> Option<[u8; 24]> {
        const DAY: i64 = 86_400_000;
        let (days, in_day) = (self.0.div_euclid(DAY), self.0.rem_euclid(DAY));
        let (year, month, day) = civil_from_days(days);
        if !(0..=9999).contains(&year) {
            return None;
        }
        let (seconds, millis) = (in_day / 1000, in_day % 1000);
        let mut out = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, digits: usize, mut value: i64| {
            for place in (at..at + digits).rev() {
                out[place] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(0, 4, year);
        put(5, 2, month);
        put(8, 2, day);
        put(11, 2, seconds / 3600);
        put(14, 2, seconds / 60 % 60);
        put(17, 2, seconds % 60);
        put(20, 3, millis);
        Some(out)
    }
}

/// How chrono writes what [`Timestamp::rfc3339`] writes, for instants outside its years.
const SHOWN: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, exact for every i64 day this type can hold).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rfc3339() {
            // ASCII digits and separators only, so always UTF-8.
            Some(text) => f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?),
            None => write!(f, "{}", self.to_datetime().format(SHOWN)),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            match self.rfc3339() {
                Some(text) => serializer
                    .serialize_str(std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?),
                None => serializer.collect_str(self),
            }
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

    proptest::proptest! {
        /// The hand-written text is chrono's, across years 0 to 9999 and the days around
        /// leap years and centuries.
        #[test]
        fn timestamps_read_as_chrono_writes_them(millis in -62_167_219_200_000i64..253_402_300_800_000) {
            let at = Timestamp::from_millis(millis);
            let chrono = at.to_datetime().format(SHOWN).to_string();
            proptest::prop_assert_eq!(at.to_string(), chrono);
        }
    }

    #[test]
    fn instants_outside_four_digit_years_are_still_shown() {
        for millis in [i64::MIN, -62_167_219_200_001, 253_402_300_800_000, i64::MAX] {
            let at = Timestamp::from_millis(millis);
            assert_eq!(at.to_string(), at.to_datetime().format(SHOWN).to_string());
        }
        let edges = [-62_167_219_200_000, 0, 951_782_400_000, 253_402_300_799_999];
        let shown: Vec<String> = edges.map(|m| Timestamp::from_millis(m).to_string()).into();
        assert_eq!(
            shown,
            [
                "0000-01-01T00:00:00.000Z",
                "1970-01-01T00:00:00.000Z",
                "2000-02-29T00:00:00.000Z",
                "9999-12-31T23:59:59.999Z"
            ]
        );
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
