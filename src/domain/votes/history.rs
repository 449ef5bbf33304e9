//! A bot's vote history: every vote it accepted, with its time, numbered from 0.
//!
//! A stored vote is 12 bytes: the voter's index in the process-wide [`VoterTable`] and the
//! vote's time in milliseconds. The voter's name and avatar are held once for the whole
//! process, however many votes and bots they appear in. Positions are absolute: pruning old
//! votes (retention) never renumbers the ones kept, so cursors and `Last-Event-ID`s stay valid.

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use chrono::Duration;
use dashmap::DashMap;
use parking_lot::RwLock;
use rustc_hash::{FxBuildHasher, FxHashMap};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{vote_window, Shared, SharedVoter, Voter, VoterForm, FORM};
use crate::domain::ids::Snowflake;
use crate::domain::time::Timestamp;

/// Every voter any history holds, each with a number a stored vote refers to by.
///
/// Append-only: a voter whose every vote was pruned stays until the process restarts (a
/// snapshot stores only the voters its histories refer to).
pub struct VoterTable {
    voters: RwLock<Numbered>,
    /// By name and avatar: a voter renamed and renamed back is one entry, as a file reads it.
    numbers: DashMap<KeyedVoter, u32, FxBuildHasher>,
}

impl VoterTable {
    pub fn global() -> &'static VoterTable {
        static TABLE: OnceLock<VoterTable> = OnceLock::new();
        TABLE.get_or_init(|| VoterTable {
            voters: RwLock::new(Numbered::default()),
            numbers: DashMap::with_hasher(FxBuildHasher),
        })
    }

    /// The number of this voter (with this name and avatar), given one if new.
    pub fn number(&self, voter: &Voter) -> u32 {
        let hash = voter_hash(voter);
        if let Some(number) = self
            .numbers
            .get(&VoterProbe { hash, voter } as &dyn VoterKey)
        {
            return *number;
        }
        self.insert(hash, Arc::new(voter.clone()))
    }

    /// The table's copy of this voter (with this name and avatar) if it holds one, else a new
    /// copy that is numbered when a ring or history first refers to it: a voter read in full
    /// from many rings of an older file is held once.
    pub fn shared(&self, voter: Voter) -> Arc<Voter> {
        let hash = voter_hash(&voter);
        let probe = VoterProbe {
            hash,
            voter: &voter,
        };
        if let Some(known) = self.numbers.get(&probe as &dyn VoterKey) {
            return Arc::clone(&known.key().voter);
        }
        Arc::new(voter)
    }

    /// The number of a voter that is already a shared copy (read from a snapshot's voter
    /// table): hashed once, not copied again.
    pub fn number_shared(&self, shared: &Arc<Voter>) -> u32 {
        let hash = voter_hash(shared);
        let probe = VoterProbe {
            hash,
            voter: shared,
        };
        if let Some(number) = self.numbers.get(&probe as &dyn VoterKey) {
            return *number;
        }
        self.insert(hash, Arc::clone(shared))
    }

    /// The number of a voter read from a snapshot's table: one lookup by value, and the
    /// voter kept as the table's shared copy if new.
    pub fn adopt(&self, voter: Voter) -> u32 {
        self.insert(voter_hash(&voter), Arc::new(voter))
    }

    /// Gives a snapshot's voters the next numbers in a row, under one lock, before any is filed
    /// in the index (see [`Self::file`]); returns the first. A start from a snapshot then finds
    /// the table empty, and a voter's number in the snapshot plus this base is its number here:
    /// no array lookup (a cache miss apiece) for each of millions of ring entries and votes.
    pub fn reserve(&self, voters: &[Arc<Voter>]) -> u32 {
        let mut numbered = self.voters.write();
        let base = u32::try_from(numbered.shared.len()).unwrap_or(u32::MAX);
        numbered.shared.extend(voters.iter().cloned());
        numbered.ids.extend(voters.iter().map(|voter| voter.id));
        base
    }

    /// Files voters [`Self::reserve`]d at `first` on in the index, and gives each one's number:
    /// its reserved one, or, for a voter the table held already (another snapshot read before,
    /// or a damaged table that lists one twice), the number it had. The reserved entry of such a
    /// voter then holds the table's copy of it, and nothing refers to its number.
    pub fn file(&self, first: u32, voters: &[Arc<Voter>]) -> Vec<u32> {
        let mut numbers = Vec::with_capacity(voters.len());
        let mut known = Vec::new();
        for (reserved, voter) in (first..).zip(voters) {
            let key = KeyedVoter {
                hash: voter_hash(voter),
                voter: Arc::clone(voter),
            };
            let number = *self.numbers.entry(key).or_insert(reserved);
            if number != reserved {
                known.push((reserved, number));
            }
            numbers.push(number);
        }
        if !known.is_empty() {
            let mut numbered = self.voters.write();
            for (reserved, number) in known {
                let copy = Arc::clone(&numbered.shared[number as usize]);
                numbered.shared[reserved as usize] = copy;
            }
        }
        numbers
    }

    fn insert(&self, hash: u64, shared: Arc<Voter>) -> u32 {
        let key = KeyedVoter {
            hash,
            voter: Arc::clone(&shared),
        };
        // The entry lock orders two threads numbering the same voter at once.
        *self.numbers.entry(key).or_insert_with(|| {
            let mut voters = self.voters.write();
            let number = u32::try_from(voters.shared.len()).unwrap_or(u32::MAX);
            voters.ids.push(shared.id);
            voters.shared.push(shared);
            number
        })
    }

    pub fn get(&self, number: u32) -> Option<Arc<Voter>> {
        self.voters.read().shared.get(number as usize).cloned()
    }

    /// Runs `read` over the users of every number, in number order, under one lock: a ring
    /// finds its voters' users there without touching each voter (a cache miss apiece).
    pub fn with_users<R>(&self, read: impl FnOnce(&[Snowflake]) -> R) -> R {
        read(&self.voters.read().ids)
    }

    /// Runs `read` over every voter, in number order, under one lock.
    pub fn with_voters<R>(&self, read: impl FnOnce(&[Arc<Voter>]) -> R) -> R {
        read(&self.voters.read().shared)
    }

    /// Voters the table holds.
    pub fn len(&self) -> usize {
        self.voters.read().shared.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The hash a voter is filed under in [`VoterTable`]'s index.
fn voter_hash(voter: &Voter) -> u64 {
    FxBuildHasher.hash_one(voter)
}

/// A voter in [`VoterTable`]'s index, with its hash computed once: when a shard of the index
/// grows, it rehashes the stored hash instead of reading each voter's name and avatar again
/// (a cache miss apiece, half a million of them when a snapshot's table is numbered).
struct KeyedVoter {
    hash: u64,
    voter: Arc<Voter>,
}

/// What the index is searched by: a stored key, or a voter and its hash (no `Arc` needed).
trait VoterKey {
    fn key_hash(&self) -> u64;
    fn voter(&self) -> &Voter;
}

struct VoterProbe<'a> {
    hash: u64,
    voter: &'a Voter,
}

impl VoterKey for KeyedVoter {
    fn key_hash(&self) -> u64 {
        self.hash
    }

    fn voter(&self) -> &Voter {
        &self.voter
    }
}

impl VoterKey for VoterProbe<'_> {
    fn key_hash(&self) -> u64 {
        self.hash
    }

    fn voter(&self) -> &Voter {
        self.voter
    }
}

impl<'a> Borrow<dyn VoterKey + 'a> for KeyedVoter {
    fn borrow(&self) -> &(dyn VoterKey + 'a) {
        self
    }
}

impl Hash for dyn VoterKey + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.key_hash());
    }
}

impl PartialEq for dyn VoterKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.key_hash() == other.key_hash() && self.voter() == other.voter()
    }
}

impl Eq for dyn VoterKey + '_ {}

/// Hashed and compared as the [`VoterKey`] it is, so that a probe finds it.
impl Hash for KeyedVoter {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialEq for KeyedVoter {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && *self.voter == *other.voter
    }
}

impl Eq for KeyedVoter {}

/// The table's voters by number, and their users apart (read in bulk by rings).
#[derive(Default)]
struct Numbered {
    shared: Vec<Arc<Voter>>,
    ids: Vec<Snowflake>,
}

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

    /// Adds a vote; returns its position.
    pub fn append(&mut self, voter: &Voter, at: Timestamp) -> u64 {
        self.append_number(VoterTable::global().number(voter), at)
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

    /// The vote at `position`, if kept.
    pub fn get(&self, position: u64) -> Option<HistoryEntry> {
        let index = usize::try_from(position.checked_sub(self.first)?).ok()?;
        self.entry(index)
    }

    fn entry(&self, index: usize) -> Option<HistoryEntry> {
        let stored = *self.votes.get(index)?;
        Some(HistoryEntry {
            position: self.first + index as u64,
            voter: VoterTable::global().get(stored.voter)?,
            voted_at: stored.at(),
        })
    }

    /// Votes from `from` (a position) on, oldest first, at most `limit`; stops before `to`.
    pub fn range(&self, from: u64, to: u64, limit: usize) -> Vec<HistoryEntry> {
        let start = from.max(self.first);
        let end = to.min(self.next_position());
        (start..end)
            .take(limit)
            .filter_map(|position| self.get(position))
            .collect()
    }

    /// A page, newest first. Times are in vote order unless the clock stepped back; bounds
    /// are found by binary search on that order.
    pub fn page(&self, query: &PageQuery) -> Page {
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
            .filter_map(|index| self.entry(index))
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
}

/// In files: the voters the history refers to, once each, and each vote as (voter, millis).
/// Voters are stored the way rings store theirs: in a snapshot with a voter table, as their
/// number in it, so a voter of many bots is written and read once there too.
#[derive(Serialize, Deserialize)]
struct StoredHistory<V> {
    first: u64,
    voters: Vec<V>,
    votes: Vec<(u32, i64)>,
}

impl Serialize for VoteHistory {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Each distinct voter gets a local number in the order of its first vote here.
        let mut local: FxHashMap<u32, u32> = FxHashMap::default();
        let mut globals: Vec<u32> = Vec::new();
        let mut votes = Vec::with_capacity(self.votes.len());
        for stored in self.votes.iter() {
            let number = *local.entry(stored.voter).or_insert_with(|| {
                globals.push(stored.voter);
                globals.len() as u32 - 1
            });
            votes.push((number, stored.at().millis()));
        }
        // In a snapshot, voters go by their number in its table, found from the process-wide
        // number without touching the voter; elsewhere, in full.
        let numbered = FORM.with(|form| match &mut *form.borrow_mut() {
            VoterForm::Numbering(table) => Some(
                globals
                    .iter()
                    .map(|&global| table.number_of_history(global))
                    .collect::<Result<Vec<u32>, _>>(),
            ),
            _ => None,
        });
        if let Some(voters) = numbered {
            let voters = voters.map_err(serde::ser::Error::custom)?;
            return StoredHistory {
                first: self.first,
                voters,
                votes,
            }
            .serialize(serializer);
        }
        let table = VoterTable::global();
        let voters = globals
            .iter()
            .map(|&global| table.get(global).map(SharedVoter))
            .collect::<Option<Vec<SharedVoter>>>()
            .ok_or_else(|| serde::ser::Error::custom("a vote of an unknown voter"))?;
        StoredHistory {
            first: self.first,
            voters,
            votes,
        }
        .serialize(serializer)
    }
}

/// A history's voter as read: its number in [`VoterTable`].
struct NumberedVoter(u32);

impl<'de> Deserialize<'de> for NumberedVoter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::read_voter_number(deserializer).map(Self)
    }
}

impl<'de> Deserialize<'de> for VoteHistory {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = StoredHistory::<NumberedVoter>::deserialize(deserializer)?;
        let numbers: Vec<u32> = stored.voters.into_iter().map(|v| v.0).collect();
        let mut votes = VecDeque::with_capacity(stored.votes.len());
        for (voter, at) in stored.votes {
            let number = numbers
                .get(voter as usize)
                .ok_or_else(|| D::Error::custom("a vote refers to a voter not stored"))?;
            votes.push_back(Stored::new(*number, Timestamp::from_millis(at)));
        }
        Ok(Self {
            first: stored.first,
            votes: Shared::new(votes),
        })
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
    use crate::domain::ids::Snowflake;
    use crate::domain::text::VoterName;

    fn voter(id: u64) -> Voter {
        Voter {
            id: Snowflake::from_u64(id),
            username: VoterName::parse(format!("h{id}")).expect("valid"),
            avatar: None,
        }
    }

    fn t(minutes: i64) -> Timestamp {
        Timestamp::from_millis(1_790_000_000_000).plus(Duration::minutes(minutes))
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
        let mut history = VoteHistory::default();
        for i in 0..10 {
            history.append(&voter(i), t(i as i64));
        }
        let page = history.page(&PageQuery {
            limit: 3,
            ..PageQuery::default()
        });
        assert_eq!(positions(&page), [9, 8, 7]);
        assert!(page.more);
        let page = history.page(&PageQuery {
            before: Some(7),
            limit: 100,
            since: Some(t(2)),
            until: Some(t(6)),
        });
        assert_eq!(positions(&page), [5, 4, 3, 2]);
        assert!(!page.more);
        assert_eq!(page.entries[0].voter.username.as_str(), "h5");
        assert_eq!(page.entries[0].voted_at, t(5));
    }

    #[test]
    fn pruning_keeps_positions() {
        let mut history = VoteHistory::default();
        for i in 0..10 {
            history.append(&voter(i), t(i as i64));
        }
        assert_eq!(history.prune_before(t(4)), 4);
        assert_eq!(history.first_position(), 4);
        assert_eq!(history.get(5).map(|e| e.voted_at), Some(t(5)));
        assert_eq!(history.get(3), None);
        let page = history.page(&PageQuery {
            before: Some(6),
            limit: 10,
            ..PageQuery::default()
        });
        assert_eq!(positions(&page), [5, 4]);
        assert_eq!(history.append(&voter(1), t(20)), 10);
    }

    #[test]
    fn a_history_survives_a_file() {
        let mut history = VoteHistory::default();
        for i in 0..5 {
            history.append(&voter(i % 2), t(i as i64));
        }
        history.prune_before(t(1));
        let bytes = rmp_serde::to_vec(&history).expect("encodes");
        let back: VoteHistory = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(back.first_position(), 1);
        assert_eq!(back.range(0, 100, 100), history.range(0, 100, 100));
    }

    #[test]
    fn the_table_numbers_a_voter_by_name_and_avatar() {
        let table = VoterTable::global();
        let first = table.number(&voter(950));
        let renamed = Voter {
            username: VoterName::parse("h950-renamed".to_owned()).expect("valid"),
            ..voter(950)
        };
        let second = table.number(&renamed);
        assert_ne!(first, second, "another name is another entry");
        assert_eq!(
            table.number(&voter(950)),
            first,
            "renamed back: the first entry"
        );
        assert_eq!(table.number_shared(&Arc::new(renamed.clone())), second);
        assert_eq!(
            table.adopt(renamed),
            second,
            "a snapshot's copy finds the entry"
        );
        assert_eq!(table.get(first).as_deref(), Some(&voter(950)));
    }

    #[test]
    fn histories_read_by_snapshot_number_find_their_voters() {
        let table: super::super::SnapshotNumbers =
            super::super::SnapshotVoters::adopt((0..3).map(|i| voter(900 + i)).collect()).into();
        let stored = |voters: Vec<u32>| {
            let votes = (0..voters.len() as u32)
                .map(|i| (i, t(0).millis()))
                .collect();
            rmp_serde::to_vec(&StoredHistory {
                first: 0,
                voters,
                votes,
            })
            .expect("encodes")
        };
        let (a, b, bad) = (stored(vec![2, 0]), stored(vec![0, 1, 2]), stored(vec![3]));
        let [a, b, bad] = super::super::SnapshotVoters::numbered(&table, || {
            [a, b, bad].map(|bytes| rmp_serde::from_slice::<VoteHistory>(&bytes))
        });
        assert!(bad.is_err(), "a number past the table is refused");
        let names = |history: VoteHistory| -> Vec<String> {
            let entries = history.range(0, 10, 10).into_iter();
            entries
                .map(|e| e.voter.username.as_str().to_owned())
                .collect()
        };
        assert_eq!(names(a.expect("decodes")), ["h902", "h900"]);
        assert_eq!(names(b.expect("decodes")), ["h900", "h901", "h902"]);
    }
}
