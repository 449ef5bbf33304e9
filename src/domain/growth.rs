//! A bot's growth over time: its server count and the votes it received, per UTC hour for the
//! last 90 days and per UTC day before that.
//!
//! Built from the records that already exist (stats posts and votes) by the same apply function
//! that replay uses, so a replayed or snapshotted bot answers exactly what the live one did.
//! Only what changes is kept: an hour (or day) with votes, and an hour (or day) whose last
//! posted count differs from the count carried into it. An interval without its own count
//! answers the count carried forward, which is the same answer a stored repeat would give.

use serde::{Deserialize, Serialize};

use super::time::Timestamp;

const HOUR_MS: i64 = 3_600_000;
const DAY_HOURS: u32 = 24;
/// Hourly points are kept this many days back from the bot's newest record.
pub const HOURLY_DAYS: u32 = 90;

/// At most this many points in one answer.
pub const MAX_POINTS: u64 = 1000;

/// Hours since the Unix epoch (times before it count as its first hour).
fn hour_of(at: Timestamp) -> u32 {
    u32::try_from(at.millis().div_euclid(HOUR_MS).max(0)).unwrap_or(u32::MAX)
}

fn day_start(hour: u32) -> u32 {
    hour - hour % DAY_HOURS
}

/// The interval of a history's points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    Hour,
    Day,
}

impl Interval {
    pub fn name(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
        }
    }

    fn hours(self) -> u32 {
        match self {
            Self::Hour => 1,
            Self::Day => DAY_HOURS,
        }
    }

    /// The start of the interval holding `at`.
    pub fn floor(self, at: Timestamp) -> Timestamp {
        let span = i64::from(self.hours()) * HOUR_MS;
        Timestamp::from_millis(at.millis().div_euclid(span) * span)
    }

    pub fn span_ms(self) -> i64 {
        i64::from(self.hours()) * HOUR_MS
    }
}

/// One point of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub at: Timestamp,
    pub server_count: Option<u64>,
    pub votes: u64,
}

/// What the history holds for one bot. Entries are sorted by hour; those before `horizon` are
/// at the start of their day and stand for the whole day.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Growth {
    /// `(hour, count)`: the last count posted in that hour (or day), where it changed.
    counts: Vec<(u32, u64)>,
    /// `(hour, votes)`: the votes received in that hour (or day), each with its weight.
    votes: Vec<(u32, u32)>,
    /// Entries before this hour are daily. Moves forward with the newest record's time only.
    horizon: u32,
    /// How many posts and votes this process has applied to the history: a number that moves
    /// whenever the points may have, so an answer rendered from the history can be kept until
    /// it does (`GET /bots/:id/stats/history`). Not stored: it means nothing to another process.
    #[serde(skip)]
    changes: u64,
}

/// Two histories are equal when they hold the same points, however many changes made them.
impl PartialEq for Growth {
    fn eq(&self, other: &Self) -> bool {
        (&self.counts, &self.votes, self.horizon) == (&other.counts, &other.votes, other.horizon)
    }
}

impl Eq for Growth {}

impl Growth {
    /// A history as a file stores it (`persist::codec::bulk` reads it without serde): the
    /// fields as the derived `Deserialize` takes them, nothing checked that it does not check.
    pub(crate) fn stored(counts: Vec<(u32, u64)>, votes: Vec<(u32, u32)>, horizon: u32) -> Self {
        Self {
            counts,
            votes,
            horizon,
            changes: 0,
        }
    }

    /// A stats post at `at` left the bot's count at `count`.
    pub fn post(&mut self, at: Timestamp, count: u64) {
        self.changes += 1;
        let hour = hour_of(at);
        self.compact(hour);
        let slot = self.slot(hour);
        // The count carried into this slot, from the slots before it.
        let before = self.counts.partition_point(|&(h, _)| h < slot);
        let carried = before.checked_sub(1).map(|i| self.counts[i].1);
        match self.counts.get(before) {
            Some(&(h, _)) if h == slot => {
                if carried == Some(count) {
                    self.counts.remove(before);
                } else {
                    self.counts[before].1 = count;
                }
            }
            _ if carried == Some(count) => {}
            _ => self.counts.insert(before, (slot, count)),
        }
        self.drop_repeat_after(slot);
    }

    /// A vote of `weight` was taken at `at`.
    pub fn vote(&mut self, at: Timestamp, weight: u32) {
        self.changes += 1;
        let hour = hour_of(at);
        self.compact(hour);
        let slot = self.slot(hour);
        let at = self.votes.partition_point(|&(h, _)| h < slot);
        match self.votes.get_mut(at) {
            Some((h, votes)) if *h == slot => *votes = votes.saturating_add(weight),
            _ => self.votes.insert(at, (slot, weight)),
        }
    }

    /// Where a record of this hour is kept: its hour, or its day's start before the horizon
    /// (a record older than the bot's newest by 90 days, as a clock set back may write).
    fn slot(&self, hour: u32) -> u32 {
        if hour < self.horizon {
            day_start(hour)
        } else {
            hour
        }
    }

    /// After a slot's count changed, the next slot's count may now repeat it: drop it, so that
    /// only changes are stored.
    fn drop_repeat_after(&mut self, slot: u32) {
        let next = self.counts.partition_point(|&(h, _)| h <= slot);
        if next == 0 || next >= self.counts.len() {
            return;
        }
        if self.counts[next].1 == self.counts[next - 1].1 {
            self.counts.remove(next);
        }
    }

    /// Moves the horizon to the day 90 days before `newest`, merging the hourly entries it
    /// passes into daily ones (a day's count is its last, its votes their sum).
    fn compact(&mut self, newest: u32) {
        let horizon = day_start(newest.saturating_sub(HOURLY_DAYS * DAY_HOURS));
        if horizon <= self.horizon {
            return;
        }
        let old = self.horizon;
        self.horizon = horizon;
        let in_window = |h: u32| h >= old && h < horizon;
        // Counts: keep the last of each day in the window, at the day's start.
        let mut counts: Vec<(u32, u64)> = Vec::with_capacity(self.counts.len());
        for &(h, count) in &self.counts {
            let slot = if in_window(h) { day_start(h) } else { h };
            match counts.last_mut() {
                Some(last) if last.0 == slot => last.1 = count,
                _ => counts.push((slot, count)),
            }
        }
        counts.dedup_by(|later, earlier| later.1 == earlier.1);
        self.counts = counts;
        let mut votes: Vec<(u32, u32)> = Vec::with_capacity(self.votes.len());
        for &(h, n) in &self.votes {
            let slot = if in_window(h) { day_start(h) } else { h };
            match votes.last_mut() {
                Some(last) if last.0 == slot => last.1 = last.1.saturating_add(n),
                _ => votes.push((slot, n)),
            }
        }
        self.votes = votes;
    }

    /// The posts and votes applied so far in this process (see the field).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Takes the place of `before` (a bot's state rebuilt from the disk): its count of changes
    /// goes on past `before`'s, so no answer kept from `before` is taken for one of this.
    pub fn replaces(&mut self, before: &Growth) {
        self.changes = before.changes + 1;
    }

    /// The first hour still kept hour by hour.
    pub fn hourly_from(&self) -> Timestamp {
        Timestamp::from_millis(i64::from(self.horizon) * HOUR_MS)
    }

    /// The points of `interval` starting at `from` (aligned) while before `to`, at most
    /// [`MAX_POINTS`]. Hourly points before the horizon hold their day's votes in the day's
    /// first hour (the API refuses such hourly queries).
    pub fn points(&self, interval: Interval, from: Timestamp, to: Timestamp) -> Vec<Point> {
        let span = interval.span_ms();
        let mut out = Vec::new();
        let mut start = interval.floor(from).millis();
        let mut count_at = {
            let first = hour_of(Timestamp::from_millis(start));
            self.counts.partition_point(|&(h, _)| h < first)
        };
        let mut carried = count_at.checked_sub(1).map(|i| self.counts[i].1);
        let mut vote_at = {
            let first = hour_of(Timestamp::from_millis(start));
            self.votes.partition_point(|&(h, _)| h < first)
        };
        while start < to.millis() && (out.len() as u64) < MAX_POINTS {
            let end = start.saturating_add(span);
            let end_hour = u32::try_from((end / HOUR_MS).max(0)).unwrap_or(u32::MAX);
            while let Some(&(h, count)) = self.counts.get(count_at) {
                if h >= end_hour {
                    break;
                }
                carried = Some(count);
                count_at += 1;
            }
            let mut votes = 0u64;
            while let Some(&(h, n)) = self.votes.get(vote_at) {
                if h >= end_hour {
                    break;
                }
                votes += u64::from(n);
                vote_at += 1;
            }
            out.push(Point {
                at: Timestamp::from_millis(start),
                server_count: carried,
                votes,
            });
            start = end;
        }
        out
    }

    /// Bytes held apart from the struct itself, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        self.counts.capacity() * std::mem::size_of::<(u32, u64)>()
            + self.votes.capacity() * std::mem::size_of::<(u32, u32)>()
    }

    /// Entries kept: (counts, votes).
    pub fn len(&self) -> (usize, usize) {
        (self.counts.len(), self.votes.len())
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty() && self.votes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(hours: i64) -> Timestamp {
        // 2026-11-01T00:00Z plus `hours`.
        Timestamp::from_millis(1_793_491_200_000 + hours * HOUR_MS)
    }

    #[test]
    fn counts_carry_forward_and_votes_sum_per_interval() {
        let mut g = Growth::default();
        g.post(h(1), 10);
        g.vote(h(1), 1);
        g.vote(h(1), 2);
        g.post(h(3), 12);
        g.post(h(3), 15);
        let points = g.points(Interval::Hour, h(0), h(5));
        let shown: Vec<_> = points.iter().map(|p| (p.server_count, p.votes)).collect();
        assert_eq!(
            shown,
            [
                (None, 0),
                (Some(10), 3),
                (Some(10), 0),
                (Some(15), 0),
                (Some(15), 0)
            ]
        );
        let day = g.points(Interval::Day, h(0), h(24));
        assert_eq!(day.len(), 1);
        assert_eq!((day[0].server_count, day[0].votes), (Some(15), 3));
    }

    #[test]
    fn a_repeated_count_is_not_stored_and_answers_the_same() {
        let mut g = Growth::default();
        for hour in 0..100 {
            g.post(h(hour), 42);
        }
        assert_eq!(g.len(), (1, 0));
        assert_eq!(
            g.points(Interval::Hour, h(99), h(100))[0].server_count,
            Some(42)
        );
    }

    #[test]
    fn hours_older_than_90_days_become_days_and_memory_stays_bounded() {
        let mut g = Growth::default();
        let days = 400;
        for hour in 0..days * 24 {
            g.post(h(hour), hour as u64);
            g.vote(h(hour), 1);
        }
        let (counts, votes) = g.len();
        // The figure of docs/PERFORMANCE.md ("features"): entries and bytes after 400 days of
        // a count that changes and votes that come every hour.
        let mut exact = g.clone();
        exact.counts.shrink_to_fit();
        exact.votes.shrink_to_fit();
        eprintln!(
            "growth after {days} days: {counts} counts, {votes} vote entries, {} heap bytes ({} with spare capacity), {} inline",
            exact.heap_bytes(),
            g.heap_bytes(),
            std::mem::size_of::<Growth>()
        );
        let hourly = (HOURLY_DAYS as usize + 1) * 24;
        let daily = days as usize - HOURLY_DAYS as usize;
        assert!(counts <= hourly + daily, "{counts}");
        assert!(votes <= hourly + daily, "{votes}");
        // A day before the horizon: its last count, and all its votes.
        let old = g.points(Interval::Day, h(24), h(48));
        assert_eq!((old[0].server_count, old[0].votes), (Some(47), 24));
        // The last 90 days answer hour by hour.
        let last = days * 24 - 1;
        let recent = g.points(Interval::Hour, h(last - 10), h(last + 1));
        assert_eq!(recent.len(), 11);
        assert!(recent.iter().all(|p| p.votes == 1));
        assert_eq!(recent[10].server_count, Some(last as u64));
    }

    #[test]
    fn a_snapshot_of_the_history_decodes_to_the_same_history() {
        let mut g = Growth::default();
        g.post(h(1), 3);
        g.vote(h(2), 2);
        let bytes = rmp_serde::to_vec(&g).expect("encodes");
        let back: Growth = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(back, g);
    }
}
