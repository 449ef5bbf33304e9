//! The weekend multiplier: from Friday 00:00 to Sunday 23:59:59.999 UTC each vote may count
//! more than once, if the operator turned it on (`--weekend-multiplier`).
//!
//! The weight a vote was given is stored in its journal record, so replay counts it again with
//! that weight whatever the multiplier or the day is when the record is read back.

use std::sync::atomic::{AtomicU32, Ordering};

use chrono::{Datelike, Weekday};

use super::time::Timestamp;

/// The highest multiplier an operator may set: a vote counting more than this is a typo.
pub const MAX_MULTIPLIER: u32 = 100;

/// How much one vote counts in `vote_count` and `monthly_vote_count`; 1 outside weekends.
pub type Weight = u32;

/// The weight of a vote read from a record written before weights existed.
pub fn single() -> Weight {
    1
}

/// A weight of 1 is left out of records, so that they stay as earlier builds wrote them.
pub fn is_single(weight: &Weight) -> bool {
    *weight == 1
}

/// Whether `at` falls between Friday 00:00 and the end of Sunday, UTC.
pub fn is_weekend_day(at: Timestamp) -> bool {
    matches!(
        at.to_datetime().weekday(),
        Weekday::Fri | Weekday::Sat | Weekday::Sun
    )
}

/// The operator's multiplier, set once at start-up (1: no weekend at all).
#[derive(Debug)]
pub struct WeekendRule {
    multiplier: AtomicU32,
}

impl Default for WeekendRule {
    fn default() -> Self {
        Self::new(1)
    }
}

impl WeekendRule {
    pub fn new(multiplier: u32) -> Self {
        Self {
            multiplier: AtomicU32::new(multiplier.clamp(1, MAX_MULTIPLIER)),
        }
    }

    pub fn set(&self, multiplier: u32) {
        self.multiplier
            .store(multiplier.clamp(1, MAX_MULTIPLIER), Ordering::Relaxed);
    }

    pub fn multiplier(&self) -> u32 {
        self.multiplier.load(Ordering::Relaxed)
    }

    /// Whether votes at `at` count more than once: never with a multiplier of 1.
    pub fn is_weekend(&self, at: Timestamp) -> bool {
        self.multiplier() > 1 && is_weekend_day(at)
    }

    /// What a vote taken at `at` counts.
    pub fn weight_at(&self, at: Timestamp) -> Weight {
        if self.is_weekend(at) {
            self.multiplier()
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn at(y: i32, m: u32, d: u32, h: u32, min: u32, s: u32) -> Timestamp {
        Timestamp::from_datetime(Utc.with_ymd_and_hms(y, m, d, h, min, s).unwrap())
    }

    #[test]
    fn the_weekend_runs_from_friday_midnight_to_the_end_of_sunday_utc() {
        let rule = WeekendRule::new(2);
        // 2026-11-27 is a Friday.
        let friday = at(2026, 11, 27, 0, 0, 0);
        assert!(!rule.is_weekend(friday.minus(chrono::Duration::milliseconds(1))));
        assert!(rule.is_weekend(friday));
        assert_eq!(rule.weight_at(friday), 2);
        let monday = at(2026, 11, 30, 0, 0, 0);
        assert!(rule.is_weekend(at(2026, 11, 29, 23, 59, 59)));
        assert!(rule.is_weekend(monday.minus(chrono::Duration::milliseconds(1))));
        assert!(!rule.is_weekend(monday));
        assert_eq!(rule.weight_at(monday), 1);
    }

    #[test]
    fn a_multiplier_of_one_is_never_a_weekend() {
        let rule = WeekendRule::default();
        assert!(!rule.is_weekend(at(2026, 11, 28, 12, 0, 0)));
        assert_eq!(rule.weight_at(at(2026, 11, 28, 12, 0, 0)), 1);
    }
}
