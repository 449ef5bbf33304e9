//! A bot's votes: the recent-voters ring, the 12-hour check window and the counts.

use std::collections::{HashMap, VecDeque};

use chrono::Duration;
use serde::{Deserialize, Serialize};

use super::ids::Snowflake;
use super::text::{HttpUrl, VoterName};
use super::time::{Month, Timestamp};

/// How many distinct recent voters `GET /bots/:id/votes` shows.
pub const RECENT_VOTERS: usize = 1000;

/// How long a vote counts for the check endpoint, and how long a user waits to vote again.
pub fn vote_window() -> Duration {
    Duration::hours(12)
}

/// Who voted, as the voters list shows them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Voter {
    pub id: Snowflake,
    pub username: VoterName,
    pub avatar: Option<HttpUrl>,
}

/// The last [`RECENT_VOTERS`] distinct voters, most recent first, with O(1) work per vote.
///
/// A doubly linked list threaded through a slab, plus an index from user to slot: a returning
/// voter is unlinked and pushed to the front, a new one evicts the tail when the ring is full.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VoterRing {
    capacity: usize,
    slots: Vec<Slot>,
    head: Option<u32>,
    tail: Option<u32>,
    #[serde(skip)]
    index: HashMap<Snowflake, u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Slot {
    voter: Voter,
    voted_at: Timestamp,
    newer: Option<u32>,
    older: Option<u32>,
}

impl Default for VoterRing {
    fn default() -> Self {
        Self::with_capacity(RECENT_VOTERS)
    }
}

impl VoterRing {
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(capacity > 0 && capacity < u32::MAX as usize);
        Self {
            capacity,
            slots: Vec::new(),
            head: None,
            tail: None,
            index: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Puts the voter at the front, with the name and avatar of this latest vote.
    pub fn record(&mut self, voter: Voter, voted_at: Timestamp) {
        if let Some(&slot) = self.index.get(&voter.id) {
            self.unlink(slot);
            let entry = &mut self.slots[slot as usize];
            entry.voter = voter;
            entry.voted_at = voted_at;
            self.push_front(slot);
            return;
        }
        let slot = if self.slots.len() < self.capacity {
            self.slots.push(Slot {
                voter: voter.clone(),
                voted_at,
                newer: None,
                older: None,
            });
            (self.slots.len() - 1) as u32
        } else {
            // Full: the oldest voter's slot is reused for the new one.
            let oldest = self.tail.expect("a full ring has a tail");
            self.unlink(oldest);
            let entry = &mut self.slots[oldest as usize];
            self.index.remove(&entry.voter.id);
            entry.voter = voter.clone();
            entry.voted_at = voted_at;
            oldest
        };
        self.index.insert(voter.id, slot);
        self.push_front(slot);
    }

    /// Voters from the most recent, each once.
    pub fn iter(&self) -> impl Iterator<Item = (&Voter, Timestamp)> + '_ {
        let mut next = self.head;
        std::iter::from_fn(move || {
            let slot = &self.slots[next? as usize];
            next = slot.older;
            Some((&slot.voter, slot.voted_at))
        })
    }

    /// Checks a ring read from a file: the links must form one list through every slot, once.
    /// A damaged but checksummed file must not hand the actor a loop or an index out of bounds.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=100_000).contains(&self.capacity) || self.slots.len() > self.capacity {
            return Err("the recent-voters ring has an impossible size".into());
        }
        let len = self.slots.len();
        let mut seen = 0usize;
        let mut newer: Option<u32> = None;
        let mut next = self.head;
        while let Some(at) = next {
            let slot = self
                .slots
                .get(at as usize)
                .filter(|slot| slot.newer == newer)
                .ok_or("the recent-voters ring is not a well-formed list")?;
            seen += 1;
            if seen > len {
                return Err("the recent-voters ring loops".into());
            }
            newer = Some(at);
            next = slot.older;
        }
        let ids: std::collections::HashSet<_> = self.slots.iter().map(|s| s.voter.id).collect();
        if seen != len || newer != self.tail || ids.len() != len {
            return Err("the recent-voters ring does not hold each voter once".into());
        }
        Ok(())
    }

    /// Rebuilds the user index, which is derived and so not stored in snapshots.
    pub fn reindex(&mut self) {
        self.index = self
            .slots
            .iter()
            .enumerate()
            .map(|(slot, entry)| (entry.voter.id, slot as u32))
            .collect();
    }

    fn unlink(&mut self, slot: u32) {
        let (newer, older) = {
            let entry = &self.slots[slot as usize];
            (entry.newer, entry.older)
        };
        match newer {
            Some(n) => self.slots[n as usize].older = older,
            None => self.head = older,
        }
        match older {
            Some(o) => self.slots[o as usize].newer = newer,
            None => self.tail = newer,
        }
    }

    fn push_front(&mut self, slot: u32) {
        let old_head = self.head;
        {
            let entry = &mut self.slots[slot as usize];
            entry.newer = None;
            entry.older = old_head;
        }
        match old_head {
            Some(h) => self.slots[h as usize].newer = Some(slot),
            None => self.tail = Some(slot),
        }
        self.head = Some(slot);
    }
}

/// The time of every vote younger than the window, for every voter, not only the recent 1000.
///
/// Votes enter in time order into a queue; entries older than the window are dropped from its
/// front as time passes, so memory follows the votes of the last 12 hours, not all voters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CheckWindow {
    queue: VecDeque<(Timestamp, Snowflake)>,
    #[serde(skip)]
    latest: HashMap<Snowflake, Timestamp>,
}

impl CheckWindow {
    /// Whether the user's latest vote is less than the window old at `now`.
    pub fn is_active(&self, user: Snowflake, now: Timestamp) -> bool {
        self.latest
            .get(&user)
            .is_some_and(|&at| at > now.minus(vote_window()))
    }

    /// When the user's vote stops being active, if it still is at `now`.
    pub fn active_until(&self, user: Snowflake, now: Timestamp) -> Option<Timestamp> {
        self.is_active(user, now)
            .then(|| self.latest[&user].plus(vote_window()))
    }

    pub fn record(&mut self, user: Snowflake, at: Timestamp) {
        self.queue.push_back((at, user));
        self.latest.insert(user, at);
    }

    /// Forgets votes that are no longer active at `now`.
    pub fn expire(&mut self, now: Timestamp) {
        let horizon = now.minus(vote_window());
        while let Some(&(at, user)) = self.queue.front() {
            if at > horizon {
                break;
            }
            self.queue.pop_front();
            if self.latest.get(&user) == Some(&at) {
                self.latest.remove(&user);
            }
        }
    }

    /// How many votes the window holds, for memory accounting in tests.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn reindex(&mut self) {
        self.latest.clear();
        for &(at, user) in &self.queue {
            let latest = self.latest.entry(user).or_insert(at);
            *latest = (*latest).max(at);
        }
    }
}

/// Votes in one UTC month; reads 0 once the month is over, with no write needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonthlyCount {
    month: Month,
    count: u64,
}

impl MonthlyCount {
    pub fn new(now: Timestamp) -> Self {
        Self {
            month: now.month(),
            count: 0,
        }
    }

    pub fn at(&self, now: Timestamp) -> u64 {
        self.in_month(now.month())
    }

    /// The count as read in `month`: a count of any other month reads 0.
    pub fn in_month(&self, month: Month) -> u64 {
        if self.month == month {
            self.count
        } else {
            0
        }
    }

    /// The month of the latest vote counted.
    pub fn month(&self) -> Month {
        self.month
    }

    pub fn add_one(&mut self, at: Timestamp) {
        let month = at.month();
        if month == self.month {
            self.count += 1;
        } else if month > self.month {
            *self = Self { month, count: 1 };
        }
        // A vote stamped in an earlier month than the one counted (the clock went back) counts
        // in the all-time total only.
    }
}

/// Why a vote was not taken.
#[derive(Debug, PartialEq, Eq)]
pub struct AlreadyVoted {
    pub retry_at: Timestamp,
}

/// Counts after an accepted vote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VoteCounts {
    pub vote_count: u64,
    pub monthly_vote_count: u64,
}

/// Everything a bot knows about its votes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VoteBook {
    pub recent: VoterRing,
    pub window: CheckWindow,
    pub total: u64,
    pub monthly: MonthlyCount,
}

impl VoteBook {
    pub fn new(now: Timestamp) -> Self {
        Self {
            recent: VoterRing::default(),
            window: CheckWindow::default(),
            total: 0,
            monthly: MonthlyCount::new(now),
        }
    }

    /// Takes a vote at `now`, unless the same user's last vote is still active.
    ///
    /// A refused vote changes nothing, not even the window's housekeeping: it has no journal
    /// record, so anything it changed would be missing from the state that replay rebuilds.
    pub fn vote(&mut self, voter: Voter, now: Timestamp) -> Result<VoteCounts, AlreadyVoted> {
        if let Some(retry_at) = self.window.active_until(voter.id, now) {
            return Err(AlreadyVoted { retry_at });
        }
        self.window.expire(now);
        self.window.record(voter.id, now);
        self.recent.record(voter, now);
        self.total += 1;
        self.monthly.add_one(now);
        Ok(self.counts(now))
    }

    pub fn has_voted(&self, user: Snowflake, now: Timestamp) -> bool {
        self.window.is_active(user, now)
    }

    pub fn counts(&self, now: Timestamp) -> VoteCounts {
        VoteCounts {
            vote_count: self.total,
            monthly_vote_count: self.monthly.at(now),
        }
    }

    pub fn reindex(&mut self) {
        self.recent.reindex();
        self.window.reindex();
    }

    pub fn validate(&self) -> Result<(), String> {
        self.recent.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voter(id: u64) -> Voter {
        Voter {
            id: Snowflake::from_u64(id),
            username: VoterName::parse(format!("user{id}")).expect("valid name"),
            avatar: None,
        }
    }

    fn t(minutes: i64) -> Timestamp {
        Timestamp::from_millis(1_790_000_000_000).plus(Duration::minutes(minutes))
    }

    fn ids(ring: &VoterRing) -> Vec<u64> {
        ring.iter().map(|(v, _)| v.id.get()).collect()
    }

    /// The flaky durability property: a refused vote expired old window entries, which replay
    /// (that sees only accepted votes) never did, so the recovered state differed.
    #[test]
    fn a_refused_vote_changes_nothing() {
        let mut book = VoteBook::new(t(0));
        book.vote(voter(1), t(0)).expect("accepted");
        book.vote(voter(2), t(600)).expect("accepted");
        let before = serde_json::to_value(&book).expect("serializes");
        book.vote(voter(2), t(800)).expect_err("within 12 hours");
        assert_eq!(serde_json::to_value(&book).expect("serializes"), before);
    }

    #[test]
    fn ring_keeps_distinct_voters_most_recent_first() {
        let mut ring = VoterRing::with_capacity(3);
        ring.record(voter(1), t(0));
        ring.record(voter(2), t(1));
        ring.record(voter(1), t(2));
        assert_eq!(ids(&ring), [1, 2]);
        ring.record(voter(3), t(3));
        ring.record(voter(4), t(4));
        assert_eq!(ids(&ring), [4, 3, 1], "2 was the oldest and is evicted");
        ring.record(voter(3), t(5));
        assert_eq!(ids(&ring), [3, 4, 1]);
        ring.record(voter(2), t(6));
        assert_eq!(ids(&ring), [2, 3, 4]);
        assert_eq!(ring.len(), 3);
    }

    #[test]
    fn ring_updates_the_name_and_time_of_a_returning_voter() {
        let mut ring = VoterRing::with_capacity(2);
        ring.record(voter(1), t(0));
        let mut renamed = voter(1);
        renamed.username = VoterName::parse("renamed".into()).expect("valid");
        ring.record(renamed, t(9));
        let (first, at) = ring.iter().next().expect("one voter");
        assert_eq!(first.username.as_str(), "renamed");
        assert_eq!(at, t(9));
    }

    #[test]
    fn ring_reindex_restores_lookups() {
        let mut ring = VoterRing::with_capacity(2);
        ring.record(voter(1), t(0));
        ring.record(voter(2), t(1));
        let mut copy: VoterRing =
            serde_json::from_str(&serde_json::to_string(&ring).expect("ser")).expect("de");
        copy.reindex();
        copy.record(voter(1), t(2));
        assert_eq!(ids(&copy), [1, 2]);
    }

    #[test]
    fn a_damaged_ring_is_refused_not_trusted() {
        let mut ring = VoterRing::with_capacity(3);
        for id in 1..=3 {
            ring.record(voter(id), t(id as i64));
        }
        assert!(ring.validate().is_ok());
        let mut looped = ring.clone();
        looped.slots[0].older = looped.head;
        assert!(looped.validate().is_err());
        let mut out_of_bounds = ring.clone();
        out_of_bounds.head = Some(7);
        assert!(out_of_bounds.validate().is_err());
        let mut dangling = ring;
        dangling.tail = None;
        assert!(dangling.validate().is_err());
    }

    #[test]
    fn window_is_twelve_hours_for_every_voter() {
        let mut book = VoteBook::new(t(0));
        for id in 0..5000 {
            book.vote(voter(id), t(0)).expect("first vote");
        }
        assert_eq!(book.recent.len(), RECENT_VOTERS);
        assert!(
            book.has_voted(Snowflake::from_u64(0), t(719)),
            "voter 0 fell out of the ring but is still active"
        );
        assert!(!book.has_voted(Snowflake::from_u64(0), t(720)));
        assert_eq!(
            book.vote(voter(7), t(719)),
            Err(AlreadyVoted { retry_at: t(720) })
        );
        assert!(book.vote(voter(7), t(720)).is_ok());
    }

    #[test]
    fn window_forgets_votes_older_than_twelve_hours() {
        let mut book = VoteBook::new(t(0));
        for id in 0..1000 {
            book.vote(voter(id), t(0)).expect("vote");
        }
        assert_eq!(book.window.len(), 1000);
        book.vote(voter(5000), t(12 * 60)).expect("vote");
        assert_eq!(
            book.window.len(),
            1,
            "only the vote of the last 12 hours is kept"
        );
    }

    #[test]
    fn rejected_vote_changes_nothing() {
        let mut book = VoteBook::new(t(0));
        book.vote(voter(1), t(0)).expect("vote");
        book.vote(voter(2), t(1)).expect("vote");
        let before = (ids(&book.recent), book.total, book.monthly);
        assert!(book.vote(voter(1), t(5)).is_err());
        assert_eq!((ids(&book.recent), book.total, book.monthly), before);
    }

    #[test]
    fn monthly_count_reads_zero_in_a_new_month() {
        use chrono::TimeZone;
        let end = Timestamp::from_datetime(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 30, 23, 0, 0)
                .single()
                .expect("date"),
        );
        let mut book = VoteBook::new(end);
        book.vote(voter(1), end).expect("vote");
        assert_eq!(book.counts(end).monthly_vote_count, 1);
        let next = end.plus(Duration::hours(1));
        assert_eq!(book.counts(next).monthly_vote_count, 0);
        assert_eq!(book.counts(next).vote_count, 1);
        book.vote(voter(2), next).expect("vote");
        assert_eq!(book.counts(next).monthly_vote_count, 1);
    }
}
