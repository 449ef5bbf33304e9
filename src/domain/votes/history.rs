//! A bot's vote history: every vote it accepted, with its time, numbered from 0.
//!
//! A stored vote is 12 bytes: the voter's number in the state's [`VoterTable`] and the vote's
//! time in milliseconds. The voter's name and avatar are held once for the whole state, however
//! many votes and bots they appear in. Positions are absolute: pruning old
//! votes (retention) never renumbers the ones kept, so cursors and `Last-Event-ID`s stay valid.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use chrono::Duration;

pub use super::voters::VoterTable;
use super::{vote_window, Shared, Voter};
use crate::domain::time::Timestamp;

/// One stored vote: 12 bytes, 4-aligned (an `i64` field would pad it to 16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stored {
    voter: u32,
    at_low: u32,
    at_high: i32,
}

impl Stored {
    fn new(voter: u32, at: Timestamp) -> Self {
        let millis = at.millis();
        Self {
            voter,
            at_low: millis as u32,
            at_high: (millis >> 32) as i32,
        }
    }

    fn at(self) -> Timestamp {
        Timestamp::from_millis((i64::from(self.at_high) << 32) | i64::from(self.at_low))
    }
}

/// A vote as history shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The vote's place in the bot's history: 0 for its first vote ever.
    pub position: u64,
    pub voter: Arc<Voter>,
    pub voted_at: Timestamp,
}

impl HistoryEntry {
    pub fn expires_at(&self) -> Timestamp {
        self.voted_at.plus(vote_window())
    }
}

/// What a page asks for: votes before `before` (a position), at or after `since`, before
/// `until`, newest first.
#[derive(Clone, Copy, Debug, Default)]
pub struct PageQuery {
    pub before: Option<u64>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub limit: usize,
}

/// A page, and whether older votes match past it.
#[derive(Clone, Debug, Default)]
pub struct Page {
    pub entries: Vec<HistoryEntry>,
    pub more: bool,
}

/// Every vote the bot accepted, oldest first.
#[derive(Clone, Debug, Default)]
pub struct VoteHistory {
    /// Position of the oldest vote kept.
    first: u64,
    votes: Shared<VecDeque<Stored>>,
}

impl VoteHistory {
    /// The position the next vote gets.
    pub fn next_position(&self) -> u64 {
        self.first + self.votes.len() as u64
    }

    /// Position of the oldest vote kept.
    pub fn first_position(&self) -> u64 {
        self.first
    }

    pub fn len(&self) -> usize {
        self.votes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.votes.is_empty()
    }

    /// Adds a vote of a voter numbered in `voters`; returns its position.
    pub fn append(&mut self, voters: &VoterTable, voter: &Voter, at: Timestamp) -> u64 {
        self.append_number(voters.number(voter), at)
    }

    /// Adds a vote of the voter with this number in [`VoterTable`]; returns its position.
    pub fn append_number(&mut self, number: u32, at: Timestamp) -> u64 {
        // Grows by a quarter, not double: a stored vote costs at most 15 bytes with the slack.
        if self.votes.len() == self.votes.capacity() {
            let more = (self.votes.len() / 4).max(4);
            self.votes.reserve_exact(more);
        }
        self.votes.push_back(Stored::new(number, at));
        self.next_position() - 1
    }

    /// The position of the first vote kept taken at or after `since` (the next position when
    /// none is): times are in vote order unless the clock stepped back.
    pub fn position_since(&self, since: Timestamp) -> u64 {
        self.first + self.votes.partition_point(|v| v.at() < since) as u64
    }

    /// Forgets votes older than `horizon`. Positions of the votes kept do not change.
    pub fn prune_before(&mut self, horizon: Timestamp) -> usize {
        let mut pruned = 0;
        while self.votes.front().is_some_and(|v| v.at() < horizon) {
            self.votes.pop_front();
            self.first += 1;
            pruned += 1;
        }
        if pruned > 0 && self.votes.capacity() > 64 && self.votes.len() < self.votes.capacity() / 2
        {
            let keep = self.votes.len() + self.votes.len() / 4;
            self.votes.shrink_to(keep);
        }
        pruned
    }

    /// The vote at `position`, if kept; its voter is read in `voters`, the table it was
    /// numbered in.
    pub fn get(&self, voters: &VoterTable, position: u64) -> Option<HistoryEntry> {
        let index = usize::try_from(position.checked_sub(self.first)?).ok()?;
        self.entry(voters, index)
    }

    fn entry(&self, voters: &VoterTable, index: usize) -> Option<HistoryEntry> {
        let stored = *self.votes.get(index)?;
        Some(HistoryEntry {
            position: self.first + index as u64,
            voter: voters.get(stored.voter)?,
            voted_at: stored.at(),
        })
    }

    /// Votes from `from` (a position) on, oldest first, at most `limit`; stops before `to`.
    pub fn range(
        &self,
        voters: &VoterTable,
        from: u64,
        to: u64,
        limit: usize,
    ) -> Vec<HistoryEntry> {
        let start = from.max(self.first);
        let end = to.min(self.next_position());
        (start..end)
            .take(limit)
            .filter_map(|position| self.get(voters, position))
            .collect()
    }

    /// A page, newest first. Times are in vote order unless the clock stepped back; bounds
    /// are found by binary search on that order.
    pub fn page(&self, voters: &VoterTable, query: &PageQuery) -> Page {
        let len = self.votes.len();
        let mut end = len;
        if let Some(before) = query.before {
            end = end.min(before.saturating_sub(self.first).min(len as u64) as usize);
        }
        if let Some(until) = query.until {
            end = end.min(self.votes.partition_point(|v| v.at() < until));
        }
        let start = query
            .since
            .map_or(0, |since| self.votes.partition_point(|v| v.at() < since))
            .min(end);
        let take = query.limit.min(end - start);
        let entries: Vec<HistoryEntry> = (end - take..end)
            .rev()
            .filter_map(|index| self.entry(voters, index))
            .collect();
        Page {
            entries,
            more: end - take > start,
        }
    }

    /// Bytes this history holds apart from the shared voters, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        self.votes.capacity() * std::mem::size_of::<Stored>()
    }

    /// Bytes one stored vote takes, without slack.
    pub const fn bytes_per_vote() -> usize {
        std::mem::size_of::<Stored>()
    }

    /// A history of the `len` votes given as (voter number, time), oldest first, the first at
    /// position `first`: what a file holds (`persist::codec`); the first error refuses it.
    pub fn try_from_votes<E>(
        first: u64,
        len: usize,
        votes: impl Iterator<Item = Result<(u32, Timestamp), E>>,
    ) -> Result<Self, E> {
        let mut stored = VecDeque::with_capacity(len);
        for vote in votes {
            let (voter, at) = vote?;
            stored.push_back(Stored::new(voter, at));
        }
        Ok(Self {
            first,
            votes: Shared::new(stored),
        })
    }

    /// Every vote kept as (voter number, time), oldest first.
    pub fn votes(&self) -> impl ExactSizeIterator<Item = (u32, Timestamp)> + '_ {
        self.votes.iter().map(|stored| (stored.voter, stored.at()))
    }

    /// Gives each vote's voter its number in another table. `None` for a number the map does
    /// not know leaves the history part renumbered: its owner refuses it as damaged.
    pub fn renumber(&mut self, mut map: impl FnMut(u32) -> Option<u32>) -> Option<()> {
        for stored in self.votes.iter_mut() {
            stored.voter = map(stored.voter)?;
        }
        Some(())
    }
}

/// How long history keeps a vote; shared by the bot actors of one service.
#[derive(Debug, Default)]
pub struct Retention {
    /// Milliseconds; 0 keeps everything.
    millis: AtomicI64,
}

impl Retention {
    pub fn set(&self, keep: Option<Duration>) {
        let millis = keep.map_or(0, |d| d.num_milliseconds().max(1));
        self.millis.store(millis, Ordering::Relaxed);
    }

    pub fn get(&self) -> Option<Duration> {
        match self.millis.load(Ordering::Relaxed) {
            0 => None,
            millis => Some(Duration::milliseconds(millis)),
        }
    }

    /// The oldest time kept at `now`, if votes expire at all.
    pub fn horizon(&self, now: Timestamp) -> Option<Timestamp> {
        self.get().map(|keep| now.minus(keep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::domain::votes::testing::{t, voter};

    /// Voters 0 to 9, voter `i` at minute `i`.
    fn ten_votes() -> (VoterTable, VoteHistory) {
        let voters = VoterTable::new();
        let mut history = VoteHistory::default();
        for i in 0..10 {
            history.append(&voters, &voter(i), t(i as i64));
        }
        (voters, history)
    }

    fn positions(page: &Page) -> Vec<u64> {
        page.entries.iter().map(|e| e.position).collect()
    }

    #[test]
    fn a_stored_vote_is_twelve_bytes() {
        assert_eq!(VoteHistory::bytes_per_vote(), 12);
        let at = Timestamp::from_millis(-5);
        assert_eq!(Stored::new(1, at).at(), at);
        let at = t(123_456);
        assert_eq!(Stored::new(1, at).at(), at);
    }

    #[test]
    fn pages_go_newest_first_and_bounds_hold() {
        let (voters, history) = ten_votes();
        let page = history.page(
            &voters,
            &PageQuery {
                limit: 3,
                ..PageQuery::default()
            },
        );
        assert_eq!(positions(&page), [9, 8, 7]);
        assert!(page.more);
        let page = history.page(
            &voters,
            &PageQuery {
                before: Some(7),
                limit: 100,
                since: Some(t(2)),
                until: Some(t(6)),
            },
        );
        assert_eq!(positions(&page), [5, 4, 3, 2]);
        assert!(!page.more);
        assert_eq!(page.entries[0].voter.username.as_str(), "h5");
        assert_eq!(page.entries[0].voted_at, t(5));
    }

    #[test]
    fn pruning_keeps_positions() {
        let (voters, mut history) = ten_votes();
        assert_eq!(history.prune_before(t(4)), 4);
        assert_eq!(history.first_position(), 4);
        assert_eq!(history.get(&voters, 5).map(|e| e.voted_at), Some(t(5)));
        assert_eq!(history.get(&voters, 3), None);
        let page = history.page(
            &voters,
            &PageQuery {
                before: Some(6),
                limit: 10,
                ..PageQuery::default()
            },
        );
        assert_eq!(positions(&page), [5, 4]);
        assert_eq!(history.append(&voters, &voter(1), t(20)), 10);
    }
}
