//! A bot's votes: the recent-voters ring, the 12-hour check window and the counts.
//!
//! Rings and histories hold voters by their number in the state's [`VoterTable`], which the
//! book holds; how they are stored in files is `persist::codec`'s.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use chrono::Duration;
use rustc_hash::FxBuildHasher;
use serde::{Deserialize, Serialize};

pub mod history;
pub mod voters;

pub use voters::VoterTable;

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
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Voter {
    pub id: Snowflake,
    pub username: VoterName,
    pub avatar: Option<HttpUrl>,
}

/// A ring's voter: its number in the state's voter table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RingVoter(u32);

/// A link in the ring: a slot number, or none. Four bytes instead of an `Option<u32>`'s eight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Link(u32);

impl Link {
    const NONE: Link = Link(u32::MAX);

    fn get(self) -> Option<u32> {
        (self != Self::NONE).then_some(self.0)
    }

    /// A link as files store it: the `Option<u32>` it stands for.
    fn stored(slot: Option<u32>) -> Result<Self, &'static str> {
        match slot {
            Some(u32::MAX) => Err("a slot number out of range"),
            slot => Ok(slot.into()),
        }
    }
}

impl From<Option<u32>> for Link {
    fn from(slot: Option<u32>) -> Self {
        slot.map_or(Self::NONE, Link)
    }
}

/// A part of a bot's votes that snapshots share instead of copying: a snapshot's copy of a bot
/// (taken on the bot's actor thread, which requests share) is a count per part, and a write
/// copies the part only while a snapshot still holds it (a vote in the few milliseconds between
/// a bot handing its state over and the snapshot writing it). Stored as the part itself.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Shared<T>(Arc<T>);

impl<T> Shared<T> {
    pub fn new(value: T) -> Self {
        Self(Arc::new(value))
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// Copy on write: the part is copied first if a snapshot holds it too.
impl<T: Clone> std::ops::DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

/// The last [`RECENT_VOTERS`] distinct voters, most recent first, with O(1) work per vote.
///
/// A doubly linked list threaded through a slab, plus an index from user to slot: a returning
/// voter is unlinked and pushed to the front, a new one evicts the tail when the ring is full.
#[derive(Clone, Debug)]
pub struct VoterRing {
    capacity: usize,
    slots: Shared<Vec<Slot>>,
    head: Link,
    tail: Link,
    /// Derived, never stored: built by the first vote after the ring is read
    /// ([`VoterRing::reindex`]).
    index: Shared<HashMap<UserKey, u32, FxBuildHasher>>,
}

/// A user's id as a ring's index keys it: two 4-byte halves, so that an entry with its slot
/// is 12 bytes and 4-byte aligned. Keyed by the `u64`, the entry's alignment would pad it to
/// 16. Once every bot has taken a vote, the indexes hold an entry per recent voter of every
/// bot (4,570,606 at 100,000 bots and 5,000,000 votes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct UserKey([u32; 2]);

impl From<Snowflake> for UserKey {
    fn from(user: Snowflake) -> Self {
        let id = user.get();
        Self([id as u32, (id >> 32) as u32])
    }
}

/// Hashed as the one `u64` it was: an array would be hashed as a slice, its length first.
impl std::hash::Hash for UserKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let [low, high] = self.0;
        state.write_u64(u64::from(high) << 32 | u64::from(low));
    }
}

/// 20 bytes: the voter's number, the two links and the time as two 4-byte halves (an `i64`
/// would align the slot to 24).
#[derive(Clone, Debug)]
pub struct Slot {
    voter: RingVoter,
    newer: Link,
    older: Link,
    at_low: u32,
    at_high: i32,
}

impl Slot {
    fn new(voter: RingVoter, voted_at: Timestamp, newer: Link, older: Link) -> Self {
        let millis = voted_at.millis();
        Self {
            voter,
            newer,
            older,
            at_low: millis as u32,
            at_high: (millis >> 32) as i32,
        }
    }

    pub fn voted_at(&self) -> Timestamp {
        Timestamp::from_millis((i64::from(self.at_high) << 32) | i64::from(self.at_low))
    }

    fn set_voted_at(&mut self, at: Timestamp) {
        *self = Self::new(self.voter, at, self.newer, self.older);
    }
}

impl Slot {
    /// A slot as a file holds it: the voter's number, the time, and the links to the slots of
    /// the next newer and older voters.
    pub fn stored(
        voter: u32,
        voted_at: Timestamp,
        newer: Option<u32>,
        older: Option<u32>,
    ) -> Result<Self, &'static str> {
        let (newer, older) = (Link::stored(newer)?, Link::stored(older)?);
        Ok(Self::new(RingVoter(voter), voted_at, newer, older))
    }

    pub fn voter(&self) -> u32 {
        self.voter.0
    }

    pub fn newer(&self) -> Option<u32> {
        self.newer.get()
    }

    pub fn older(&self) -> Option<u32> {
        self.older.get()
    }
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
            slots: Shared::default(),
            head: Link::NONE,
            tail: Link::NONE,
            index: Shared::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// A ring as a file holds it: its slots, and the first (newest) and last of the list;
    /// [`Self::validate`] checks it and [`Self::reindex`] builds its index.
    pub fn stored(
        capacity: usize,
        slots: Vec<Slot>,
        head: Option<u32>,
        tail: Option<u32>,
    ) -> Result<Self, &'static str> {
        Ok(Self {
            capacity,
            slots: Shared::new(slots),
            head: Link::stored(head)?,
            tail: Link::stored(tail)?,
            index: Shared::default(),
        })
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The slots in slab order, as files store them.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    pub fn head(&self) -> Option<u32> {
        self.head.get()
    }

    pub fn tail(&self) -> Option<u32> {
        self.tail.get()
    }

    /// Gives each slot's voter its number in another table. `None` for a number the map does
    /// not know leaves the ring part renumbered: its owner refuses it as damaged.
    pub fn renumber(&mut self, mut map: impl FnMut(u32) -> Option<u32>) -> Option<()> {
        for slot in self.slots.iter_mut() {
            slot.voter = RingVoter(map(slot.voter.0)?);
        }
        Some(())
    }

    /// Puts the voter at the front, with the name and avatar of this latest vote, numbered in
    /// `voters` (the table the ring's numbers are in).
    pub fn record(&mut self, voters: &VoterTable, voter: Voter, voted_at: Timestamp) {
        let number = voters.number(&voter);
        self.record_number(voters, voter.id, number, voted_at);
    }

    /// As [`Self::record`], for the voter with this number in `voters`.
    fn record_number(
        &mut self,
        voters: &VoterTable,
        user: Snowflake,
        number: u32,
        voted_at: Timestamp,
    ) {
        let voter = RingVoter(number);
        let user = UserKey::from(user);
        self.reindex(voters);
        if let Some(&slot) = self.index.get(&user) {
            self.unlink(slot);
            let entry = &mut self.slots[slot as usize];
            entry.voter = voter;
            entry.set_voted_at(voted_at);
            self.push_front(slot);
            return;
        }
        let slot = if self.slots.len() < self.capacity {
            self.slots
                .push(Slot::new(voter, voted_at, Link::NONE, Link::NONE));
            (self.slots.len() - 1) as u32
        } else {
            // Full: the oldest voter's slot is reused for the new one.
            let oldest = self.tail.get().expect("a full ring has a tail");
            self.unlink(oldest);
            let entry = &mut self.slots[oldest as usize];
            let evicted = voters.with_users(|users| users.get(entry.voter.0 as usize).copied());
            if let Some(evicted) = evicted {
                self.index.remove(&UserKey::from(evicted));
            }
            entry.voter = voter;
            entry.set_voted_at(voted_at);
            oldest
        };
        self.index.insert(user, slot);
        self.push_front(slot);
    }

    /// Voters from the most recent, each once, with the shared copies of `voters` (the table
    /// the ring's numbers are in).
    pub fn iter(&self, voters: &VoterTable) -> impl Iterator<Item = (Arc<Voter>, Timestamp)> + '_ {
        let slots: Vec<&Slot> = self.in_order().collect();
        let voters: Vec<Option<Arc<Voter>>> = voters.with_voters(|all| {
            slots
                .iter()
                .map(|slot| all.get(slot.voter.0 as usize).cloned())
                .collect()
        });
        slots
            .into_iter()
            .zip(voters)
            .filter_map(|(slot, voter)| Some((voter?, slot.voted_at())))
    }

    /// The slots from the most recent.
    fn in_order(&self) -> impl Iterator<Item = &Slot> + '_ {
        let mut next = self.head.get();
        std::iter::from_fn(move || {
            let slot = &self.slots[next? as usize];
            next = slot.older.get();
            Some(slot)
        })
    }

    /// Checks a ring read from a file: the links must form one list through every slot, once.
    /// A damaged but checksummed file must not hand the actor a loop or an index out of bounds.
    pub fn validate(&self, voters: &VoterTable) -> Result<(), String> {
        if !(1..=100_000).contains(&self.capacity) || self.slots.len() > self.capacity {
            return Err("the recent-voters ring has an impossible size".into());
        }
        let len = self.slots.len();
        let mut seen = 0usize;
        let mut newer = Link::NONE;
        let mut next = self.head.get();
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
            newer = Link(at);
            next = slot.older.get();
        }
        if seen != len || newer != self.tail || !self.each_voter_once(voters)? {
            return Err("the recent-voters ring does not hold each voter once".into());
        }
        Ok(())
    }

    /// Whether no user has two slots. The index, once built, holds one entry per distinct
    /// user. Until it is built, the users are read in a pass of their own (as in
    /// [`Self::reindex`]) and sorted: every ring read at start is checked this way, and a
    /// sorted array of a few hundred numbers costs less than a hash set of them.
    fn each_voter_once(&self, voters: &VoterTable) -> Result<bool, String> {
        if self.index.len() == self.slots.len() {
            return Ok(true);
        }
        let mut ids = Vec::with_capacity(self.slots.len());
        let known = voters.with_users(|users| {
            self.slots.iter().all(|slot| {
                let user = users.get(slot.voter.0 as usize);
                ids.extend(user.map(|user| user.get()));
                user.is_some()
            })
        });
        if !known {
            return Err("the recent-voters ring holds an unknown voter".into());
        }
        ids.sort_unstable();
        Ok(ids.windows(2).all(|pair| pair[0] != pair[1]))
    }

    /// Builds the user index, which is derived and so not stored in snapshots, unless it is
    /// whole: an index with an entry per slot is kept up to date with every vote.
    ///
    /// Built by the first vote a ring takes after it was read, not when it is read: only a
    /// vote looks a user up in it, most bots take no vote soon after a start, and on this kind
    /// of machine a start's time follows the memory it touches (every bot's index built at
    /// start kept 94 MiB more resident at 100,000 bots and 5,000,000 votes; docs/PERFORMANCE.md,
    /// "The ring index built by a ring's next vote"). A ring holds at most its capacity, so
    /// the first vote pays for at most that many entries.
    pub fn reindex(&mut self, voters: &VoterTable) {
        if self.index.len() == self.slots.len() {
            return;
        }
        // Users are read from the table's list of them, not from each voter: at startup this
        // runs for millions of slots, and a voter apiece would be a cache miss apiece.
        // The users are read in a pass of their own: the reads do not depend on each other, so
        // the processor overlaps their cache misses, which a lookup followed by an insert into
        // the index, slot by slot, did not.
        let users: Vec<Option<Snowflake>> = voters.with_users(|users| {
            self.slots
                .iter()
                .map(|entry| users.get(entry.voter.0 as usize).copied())
                .collect()
        });
        let mut index = HashMap::with_capacity_and_hasher(self.slots.len(), FxBuildHasher);
        for (slot, user) in users.into_iter().enumerate() {
            if let Some(user) = user {
                index.insert(UserKey::from(user), slot as u32);
            }
        }
        self.index = Shared::new(index);
    }

    /// Bytes this ring holds apart from the shared voters, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.index.capacity() * (std::mem::size_of::<(UserKey, u32)>() + 1)
    }

    fn unlink(&mut self, slot: u32) {
        let (newer, older) = {
            let entry = &self.slots[slot as usize];
            (entry.newer, entry.older)
        };
        match newer.get() {
            Some(n) => self.slots[n as usize].older = older,
            None => self.head = older,
        }
        match older.get() {
            Some(o) => self.slots[o as usize].newer = newer,
            None => self.tail = newer,
        }
    }

    fn push_front(&mut self, slot: u32) {
        let old_head = self.head;
        {
            let entry = &mut self.slots[slot as usize];
            entry.newer = Link::NONE;
            entry.older = old_head;
        }
        match old_head.get() {
            Some(h) => self.slots[h as usize].newer = Link(slot),
            None => self.tail = Link(slot),
        }
        self.head = Link(slot);
    }
}

/// The time of every vote younger than the window, for every voter, not only the recent 1000.
///
/// Votes enter in time order into a queue; entries older than the window are dropped from its
/// front as time passes, so memory follows the votes of the last 12 hours, not all voters.
///
/// The same queue is the bot's queue of window ends for `vote.expired` (CONTRACT section 14):
/// in time order, each entry's window ends at its time plus the window. A bot that chose the
/// event has an `announced` mark, the end up to which every vote's expiry has been announced
/// (journaled by `Record::VotesExpired`); entries whose end is past the mark are kept until it
/// passes them, so a vote whose window ended while nothing ran is still here to be announced.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CheckWindow {
    queue: Shared<VecDeque<(Timestamp, Snowflake)>>,
    /// Every window ending at or before this was announced; `None` when the bot does not
    /// announce expiries. Last and left out when `None`, so files of earlier builds load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    announced: Option<Timestamp>,
    #[serde(skip)]
    latest: Shared<HashMap<Snowflake, Timestamp, FxBuildHasher>>,
    /// What `GET /bots/:id/check` reads without asking the actor: the votes known durable.
    #[serde(skip)]
    published: Arc<PublishedChecks>,
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

    /// Forgets votes that are no longer active at `now`, but those whose expiry is still to be
    /// announced.
    pub fn expire(&mut self, now: Timestamp) {
        let mut horizon = now.minus(vote_window());
        if let Some(announced) = self.announced {
            horizon = horizon.min(announced.minus(vote_window()));
        }
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

    /// The end up to which expiries were announced; `None` when the bot announces none.
    pub fn announced(&self) -> Option<Timestamp> {
        self.announced
    }

    /// Starts announcing expiries (from the windows that end after `from`), or stops
    /// (`None`); a bot already announcing keeps its mark.
    pub fn announce_from(&mut self, from: Option<Timestamp>) {
        self.announced = from.map(|from| self.announced.unwrap_or(from));
    }

    /// The votes whose window ended after the mark and by `now`, oldest first, as (voter, time
    /// of the vote); none when the bot announces none.
    pub fn due(&self, now: Timestamp) -> impl Iterator<Item = (Snowflake, Timestamp)> + '_ {
        let window = vote_window();
        let announced = self.announced;
        let start = announced.map_or(self.queue.len(), |mark| {
            self.queue
                .partition_point(|&(at, _)| at.plus(window) <= mark)
        });
        self.queue
            .range(start..)
            .take_while(move |&&(at, _)| at.plus(window) <= now)
            .map(|&(at, user)| (user, at))
    }

    /// When the next window past the mark ends; `None` when there is none to announce.
    pub fn next_end(&self) -> Option<Timestamp> {
        let mark = self.announced?;
        let window = vote_window();
        let start = self
            .queue
            .partition_point(|&(at, _)| at.plus(window) <= mark);
        self.queue.get(start).map(|&(at, _)| at.plus(window))
    }

    /// Every window ending by `through` is announced: the mark moves there (never back), and
    /// what is no longer active nor to be announced is forgotten.
    pub fn announced_through(&mut self, through: Timestamp) {
        if let Some(mark) = &mut self.announced {
            *mark = (*mark).max(through);
            self.expire(through);
        }
    }

    /// How many votes the window holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// The table the owner publishes durable votes to, and readers check.
    pub fn published(&self) -> &Arc<PublishedChecks> {
        &self.published
    }

    /// Rebuilds the derived lookups; what a file held is durable, so it is all published.
    pub fn reindex(&mut self) {
        let mut latest = HashMap::with_capacity_and_hasher(self.queue.len(), FxBuildHasher);
        for &(at, user) in self.queue.iter() {
            let latest = latest.entry(user).or_insert(at);
            *latest = (*latest).max(at);
        }
        self.latest = Shared::new(latest);
        self.published = Arc::new(PublishedChecks::of(&self.latest));
    }

    /// Bytes the window holds, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(Snowflake, Timestamp)>();
        self.queue.capacity() * entry + self.latest.capacity() * (entry + 1)
    }
}

/// The check window as readers see it: each user's latest vote whose record is durable.
///
/// Only the bot's actor writes here, and only through the publication that runs once the vote's
/// journal record is durable, so a check never sees a vote that was not acknowledged. Readers
/// take a shared lock for one lookup; the writer holds the lock for one insert, and now and then
/// for a sweep of the votes older than the window, at O(1) amortised work per vote.
#[derive(Debug, Default)]
pub struct PublishedChecks {
    inner: parking_lot::RwLock<Published>,
}

#[derive(Debug, Default)]
struct Published {
    latest: HashMap<Snowflake, Timestamp, FxBuildHasher>,
    since_sweep: usize,
}

impl PublishedChecks {
    fn of(latest: &HashMap<Snowflake, Timestamp, FxBuildHasher>) -> Self {
        Self {
            inner: parking_lot::RwLock::new(Published {
                latest: latest.clone(),
                since_sweep: 0,
            }),
        }
    }

    /// Whether the user's latest durable vote is less than the window old at `now`.
    pub fn is_active(&self, user: Snowflake, now: Timestamp) -> bool {
        self.inner
            .read()
            .latest
            .get(&user)
            .is_some_and(|&at| at > now.minus(vote_window()))
    }

    /// When the user's latest durable vote was taken, if it is less than the window old at
    /// `now` (the project API's answer to a user's vote).
    pub fn active_since(&self, user: Snowflake, now: Timestamp) -> Option<Timestamp> {
        self.inner
            .read()
            .latest
            .get(&user)
            .copied()
            .filter(|&at| at > now.minus(vote_window()))
    }

    /// Shows a durable vote; only the bot's actor calls this, through its publication.
    pub fn publish(&self, user: Snowflake, at: Timestamp) {
        let mut published = self.inner.write();
        published.latest.insert(user, at);
        published.since_sweep += 1;
        if published.since_sweep > 64 + published.latest.len() / 2 {
            let horizon = at.minus(vote_window());
            published.latest.retain(|_, &mut voted| voted > horizon);
            published.since_sweep = 0;
        }
    }

    /// Users the table holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.read().latest.len()
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
        self.add(at, 1);
    }

    /// Counts a vote of this weight (the weekend multiplier) taken at `at`.
    pub fn add(&mut self, at: Timestamp, weight: u32) {
        let month = at.month();
        let weight = u64::from(weight);
        if month == self.month {
            self.count += weight;
        } else if month > self.month {
            *self = Self {
                month,
                count: weight,
            };
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

/// The bot's vote counts just after an accepted vote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct VoteCounts {
    pub vote_count: u64,
    pub monthly_vote_count: u64,
}

/// Everything a bot knows about its votes, with the voter table its ring and history number
/// their voters in: the state's, shared by all its bots, once the book is [attached]
/// (`VoteBook::attach`); a book made or read on its own has a table of its own until then.
#[derive(Clone, Debug)]
pub struct VoteBook {
    pub recent: VoterRing,
    pub window: CheckWindow,
    pub total: u64,
    pub monthly: MonthlyCount,
    /// Every accepted vote with its time.
    pub history: history::VoteHistory,
    voters: Arc<VoterTable>,
}

impl VoteBook {
    pub fn new(now: Timestamp) -> Self {
        Self {
            recent: VoterRing::default(),
            window: CheckWindow::default(),
            total: 0,
            monthly: MonthlyCount::new(now),
            history: Default::default(),
            voters: Arc::default(),
        }
    }

    /// A book as a file holds it, its ring and history numbered in `voters`.
    pub fn stored(
        voters: Arc<VoterTable>,
        recent: VoterRing,
        window: CheckWindow,
        total: u64,
        monthly: MonthlyCount,
        history: history::VoteHistory,
    ) -> Self {
        Self {
            recent,
            window,
            total,
            monthly,
            history,
            voters,
        }
    }

    /// The voter table the ring and the history number their voters in.
    pub fn voters(&self) -> &Arc<VoterTable> {
        &self.voters
    }

    /// Moves the book's voters into `voters` (the state's table), unless they are there: a
    /// book made or read on its own joins its state this way.
    pub fn attach(&mut self, voters: &Arc<VoterTable>) -> Result<(), String> {
        if Arc::ptr_eq(&self.voters, voters) {
            return Ok(());
        }
        let own = Arc::clone(&self.voters);
        let mut numbers = vec![u32::MAX; own.len()];
        let mut number = |old: u32| -> Option<u32> {
            let new = numbers.get_mut(old as usize)?;
            if *new == u32::MAX {
                *new = voters.number_shared(&own.get(old)?);
            }
            Some(*new)
        };
        self.recent
            .renumber(&mut number)
            .ok_or("the recent-voters ring holds an unknown voter")?;
        self.history
            .renumber(&mut number)
            .ok_or("the vote history holds an unknown voter")?;
        self.voters = Arc::clone(voters);
        Ok(())
    }

    /// The recent voters, most recent first, each once.
    pub fn recent_voters(&self) -> impl Iterator<Item = (Arc<Voter>, Timestamp)> + '_ {
        self.recent.iter(&self.voters)
    }

    /// The history's vote at `position`, if kept.
    pub fn history_entry(&self, position: u64) -> Option<history::HistoryEntry> {
        self.history.get(&self.voters, position)
    }

    /// A page of the history, newest first.
    pub fn history_page(&self, query: &history::PageQuery) -> history::Page {
        self.history.page(&self.voters, query)
    }

    /// The history's votes from `from` on, oldest first, at most `limit`; stops before `to`.
    pub fn history_range(&self, from: u64, to: u64, limit: usize) -> Vec<history::HistoryEntry> {
        self.history.range(&self.voters, from, to, limit)
    }

    /// Takes a vote at `now`, unless the same user's last vote is still active.
    ///
    /// A refused vote changes nothing, not even the window's housekeeping: it has no journal
    /// record, so anything it changed would be missing from the state that replay rebuilds.
    pub fn vote(&mut self, voter: Voter, now: Timestamp) -> Result<VoteCounts, AlreadyVoted> {
        self.vote_weighted(voter, now, 1)
    }

    /// Takes a vote that counts `weight` in the totals (the weekend multiplier); the voters
    /// list, the check window and the history hold it once, like any vote.
    pub fn vote_weighted(
        &mut self,
        voter: Voter,
        now: Timestamp,
        weight: u32,
    ) -> Result<VoteCounts, AlreadyVoted> {
        if let Some(retry_at) = self.window.active_until(voter.id, now) {
            return Err(AlreadyVoted { retry_at });
        }
        self.window.expire(now);
        self.window.record(voter.id, now);
        let number = self.voters.number(&voter);
        self.history.append_number(number, now);
        self.recent
            .record_number(&self.voters, voter.id, number, now);
        self.total += u64::from(weight);
        self.monthly.add(now, weight);
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

    /// Rebuilds what readers look at: the check window's lookups. The recent voters' index is
    /// built by the ring's next vote ([`VoterRing::reindex`]).
    pub fn reindex(&mut self) {
        self.window.reindex();
    }

    pub fn validate(&self) -> Result<(), String> {
        self.recent.validate(&self.voters)
    }

    /// Bytes this book holds apart from the shared voters, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        self.recent.heap_bytes() + self.window.heap_bytes() + self.history.heap_bytes()
    }
}

/// Voters and times for the tests of votes, histories, the voter table and their files.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// The voter `id`, named `{prefix}{id}`, without an avatar.
    pub fn named(prefix: &str, id: u64) -> Voter {
        Voter {
            id: Snowflake::from_u64(id),
            username: VoterName::parse(format!("{prefix}{id}")).expect("valid name"),
            avatar: None,
        }
    }

    /// The voter `id`, named `h{id}`.
    pub fn voter(id: u64) -> Voter {
        named("h", id)
    }

    /// `minutes` after a fixed moment.
    pub fn t(minutes: i64) -> Timestamp {
        Timestamp::from_millis(1_790_000_000_000).plus(Duration::minutes(minutes))
    }
}

#[cfg(test)]
mod tests {
    use super::testing::t;
    use super::*;

    const HOURS_12: i64 = 12 * 60;

    fn users(due: impl Iterator<Item = (Snowflake, Timestamp)>) -> Vec<u64> {
        due.map(|(user, _)| user.get()).collect()
    }

    #[test]
    fn the_window_is_the_queue_of_ends_and_keeps_what_is_not_announced() {
        let mut window = CheckWindow::default();
        // Not announcing: nothing is due, nothing is armed.
        window.record(Snowflake::from_u64(1), t(0));
        assert_eq!(window.next_end(), None);
        assert!(users(window.due(t(10_000))).is_empty());
        window.announce_from(Some(t(0)));
        // Equal ends, then a later one.
        window.record(Snowflake::from_u64(2), t(0));
        window.record(Snowflake::from_u64(3), t(5));
        assert_eq!(window.next_end(), Some(t(HOURS_12)));
        assert!(users(window.due(t(HOURS_12 - 1))).is_empty());
        assert_eq!(users(window.due(t(HOURS_12))), [1, 2]);
        // A vote long after does not drop votes whose end is not announced.
        window.record(Snowflake::from_u64(4), t(2 * HOURS_12));
        window.expire(t(2 * HOURS_12));
        assert_eq!(users(window.due(t(2 * HOURS_12))), [1, 2, 3]);
        window.announced_through(t(HOURS_12));
        assert_eq!(window.announced(), Some(t(HOURS_12)));
        assert_eq!(users(window.due(t(2 * HOURS_12))), [3]);
        assert_eq!(window.next_end(), Some(t(HOURS_12 + 5)));
        // The mark never moves back, and what it passed is forgotten.
        window.announced_through(t(2 * HOURS_12));
        window.announced_through(t(0));
        assert_eq!(window.announced(), Some(t(2 * HOURS_12)));
        assert_eq!(window.len(), 1);
        assert_eq!(window.next_end(), Some(t(3 * HOURS_12)));
        // Choosing again keeps the mark; stopping forgets it.
        window.announce_from(Some(t(5 * HOURS_12)));
        assert_eq!(window.announced(), Some(t(2 * HOURS_12)));
        window.announce_from(None);
        assert_eq!(window.next_end(), None);
    }

    #[test]
    fn a_window_stored_without_a_mark_loads_and_one_with_a_mark_keeps_it() {
        #[derive(Serialize)]
        struct Earlier {
            queue: VecDeque<(Timestamp, Snowflake)>,
        }
        let earlier = Earlier {
            queue: VecDeque::from([(t(0), Snowflake::from_u64(1))]),
        };
        let bytes = rmp_serde::to_vec(&earlier).expect("encodes");
        let window: CheckWindow = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(window.announced(), None);
        let mut window = window;
        window.announce_from(Some(t(3)));
        let bytes = rmp_serde::to_vec(&window).expect("encodes");
        let back: CheckWindow = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(back.announced(), Some(t(3)));
        assert_eq!(back.len(), 1);
    }

    proptest::proptest! {
        /// Any votes in time order, announced at any moments: every vote is due exactly once
        /// over all announcements, in time order, and never before its end.
        #[test]
        fn every_vote_is_due_once_in_order(
            gaps in proptest::collection::vec(0i64..200, 1..300),
            checks in proptest::collection::vec(0i64..2000, 1..30),
        ) {
            let mut window = CheckWindow::default();
            window.announce_from(Some(t(0)));
            let mut at = 0;
            let mut votes = Vec::new();
            for (user, gap) in (0u64..).zip(&gaps) {
                at += gap;
                window.record(Snowflake::from_u64(user), t(at));
                votes.push((user, at));
            }
            let mut checks = checks;
            checks.sort_unstable();
            checks.push(at + HOURS_12);
            let mut announced = Vec::new();
            for now in checks {
                let due: Vec<(Snowflake, Timestamp)> = window.due(t(now)).collect();
                for (_, voted) in &due {
                    proptest::prop_assert!(voted.plus(vote_window()) <= t(now));
                }
                announced.extend(due.iter().map(|(user, _)| user.get()));
                window.announced_through(t(now));
            }
            let all: Vec<u64> = votes.iter().map(|(user, _)| *user).collect();
            proptest::prop_assert_eq!(announced, all);
            proptest::prop_assert_eq!(window.next_end(), None);
        }
    }

    fn voter(id: u64) -> Voter {
        super::testing::named("user", id)
    }

    /// A ring of this capacity after votes of these users, the `i`-th at minute `i`.
    fn ring_of(capacity: usize, users: &[u64]) -> (VoterTable, VoterRing) {
        let voters = VoterTable::new();
        let mut ring = VoterRing::with_capacity(capacity);
        for (minute, &user) in (0..).zip(users) {
            ring.record(&voters, voter(user), t(minute));
        }
        (voters, ring)
    }

    fn ids(voters: &VoterTable, ring: &VoterRing) -> Vec<u64> {
        ring.iter(voters).map(|(v, _)| v.id.get()).collect()
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
        let (voters, mut ring) = ring_of(3, &[1, 2, 1]);
        assert_eq!(ids(&voters, &ring), [1, 2]);
        ring.record(&voters, voter(3), t(3));
        ring.record(&voters, voter(4), t(4));
        assert_eq!(
            ids(&voters, &ring),
            [4, 3, 1],
            "2 was the oldest and is evicted"
        );
        ring.record(&voters, voter(3), t(5));
        assert_eq!(ids(&voters, &ring), [3, 4, 1]);
        ring.record(&voters, voter(2), t(6));
        assert_eq!(ids(&voters, &ring), [2, 3, 4]);
        assert_eq!(ring.len(), 3);
    }

    #[test]
    fn ring_updates_the_name_and_time_of_a_returning_voter() {
        let voters = VoterTable::new();
        let mut ring = VoterRing::with_capacity(2);
        ring.record(&voters, voter(1), t(0));
        let mut renamed = voter(1);
        renamed.username = VoterName::parse("renamed".into()).expect("valid");
        ring.record(&voters, renamed, t(9));
        let (first, at) = ring.iter(&voters).next().expect("one voter");
        assert_eq!(first.username.as_str(), "renamed");
        assert_eq!(at, t(9));
    }

    #[test]
    fn a_voter_of_many_bots_is_stored_once() {
        // The 50 bots of one state share its voter table.
        let id = 977_000_000_000_000_001;
        let voters = Arc::new(VoterTable::new());
        let mut books: Vec<VoteBook> = (0..50).map(|_| VoteBook::new(t(0))).collect();
        for book in &mut books {
            book.attach(&voters).expect("an empty book joins the state");
            book.vote(voter(id), t(0)).expect("first vote for this bot");
        }
        let first = |book: &VoteBook| book.recent_voters().next().expect("one").0;
        let shared = first(&books[0]);
        assert!(books.iter().all(|book| Arc::ptr_eq(&first(book), &shared)));
        // The 50 rings and histories hold its number in the voter table; the table (its list
        // and its index) and `shared` itself hold the one copy.
        assert_eq!(Arc::strong_count(&shared), 3);

        // Read back from a file into the state, the rings share the one copy too.
        let bytes = rmp_serde::to_vec(&books).expect("encodes");
        let mut decoded: Vec<VoteBook> = rmp_serde::from_slice(&bytes).expect("decodes");
        for book in &mut decoded {
            book.attach(&voters)
                .expect("the state takes the file's voters");
        }
        assert!(decoded
            .iter()
            .all(|book| Arc::ptr_eq(&first(book), &shared)));

        // A new name is a new voter; rings not yet told keep theirs.
        let mut renamed = voter(id);
        renamed.username = VoterName::parse("renamed".into()).expect("valid");
        let later = t(13 * 60);
        books[0]
            .vote(renamed, later)
            .expect("a vote 13 hours later");
        assert_eq!(first(&books[0]).username.as_str(), "renamed");
        assert_eq!(first(&books[1]).username.as_str(), format!("user{id}"));
    }

    #[test]
    fn ring_reindex_restores_lookups() {
        let (voters, ring) = ring_of(2, &[1, 2]);
        let mut copy =
            VoterRing::stored(2, ring.slots().to_vec(), ring.head(), ring.tail()).expect("stored");
        copy.reindex(&voters);
        copy.record(&voters, voter(1), t(2));
        assert_eq!(ids(&voters, &copy), [1, 2]);
    }

    /// A ring read from a file builds its index at its next vote, not when it is read: a
    /// returning voter is still found (moved to the front, not given a second slot).
    #[test]
    fn a_ring_read_back_builds_its_index_at_its_next_vote() {
        let (voters, ring) = ring_of(3, &[1, 2, 3]);
        let mut book = VoteBook::new(t(0));
        book.recent =
            VoterRing::stored(3, ring.slots().to_vec(), ring.head(), ring.tail()).expect("stored");
        book.voters = Arc::new(voters);
        book.reindex();
        assert!(book.validate().is_ok());
        assert_eq!(book.recent.index.len(), 0, "nothing is built as it is read");
        book.vote(voter(2), t(5)).expect("a vote");
        assert_eq!(ids(&book.voters, &book.recent), [2, 3, 1]);
        assert_eq!((book.recent.len(), book.recent.index.len()), (3, 3));
        book.vote(voter(4), t(6)).expect("a vote");
        assert_eq!(ids(&book.voters, &book.recent), [4, 2, 3]);
    }

    /// Without an index, a ring that names one user twice, or a number the table does not
    /// know, is still refused as it is read.
    #[test]
    fn a_ring_read_back_is_checked_without_its_index() {
        let (voters, ring) = ring_of(2, &[1, 2]);
        let stored = |slots: Vec<Slot>| {
            VoterRing::stored(2, slots, ring.head(), ring.tail()).expect("stored")
        };
        assert!(stored(ring.slots().to_vec()).validate(&voters).is_ok());
        let mut twice = ring.slots().to_vec();
        twice[1].voter = twice[0].voter;
        assert_eq!(
            stored(twice).validate(&voters),
            Err("the recent-voters ring does not hold each voter once".into())
        );
        let mut unknown = ring.slots().to_vec();
        unknown[0].voter = RingVoter(99);
        assert_eq!(
            stored(unknown).validate(&voters),
            Err("the recent-voters ring holds an unknown voter".into())
        );
    }

    #[test]
    fn a_ring_index_entry_is_twelve_bytes() {
        assert_eq!(std::mem::size_of::<(UserKey, u32)>(), 12);
    }

    /// The index keys a user by the two halves of its id: users alike in either half are
    /// still apart, and a returning one is found (moved to the front, not given a slot).
    #[test]
    fn users_alike_in_one_half_of_their_id_are_apart_in_the_ring() {
        let (low, both, high) = (7, (7 << 32) | 7, 7 << 32);
        let (voters, mut ring) = ring_of(3, &[low, both, high]);
        assert_eq!(ids(&voters, &ring), [high, both, low]);
        ring.record(&voters, voter(low), t(3));
        assert_eq!(ids(&voters, &ring), [low, high, both]);
        let mut copy =
            VoterRing::stored(3, ring.slots().to_vec(), ring.head(), ring.tail()).expect("stored");
        copy.reindex(&voters);
        copy.record(&voters, voter(both), t(4));
        assert_eq!(ids(&voters, &copy), [both, low, high]);
        assert_eq!(copy.len(), 3);
    }

    #[test]
    fn a_snapshot_copy_shares_the_votes_until_the_bot_changes_them() {
        let mut book = VoteBook::new(t(0));
        book.vote(voter(1), t(0)).expect("accepted");
        let copy = book.clone();
        assert!(Arc::ptr_eq(&book.recent.slots.0, &copy.recent.slots.0));
        assert!(Arc::ptr_eq(&book.window.queue.0, &copy.window.queue.0));
        book.vote(voter(2), t(1)).expect("accepted");
        assert!(!Arc::ptr_eq(&book.recent.slots.0, &copy.recent.slots.0));
        assert_eq!(ids(book.voters(), &book.recent), [2, 1]);
        assert_eq!(
            ids(copy.voters(), &copy.recent),
            [1],
            "the copy is what it was"
        );
        assert_eq!((book.history.len(), copy.history.len()), (2, 1));
        assert_eq!((book.window.len(), copy.window.len()), (2, 1));
        assert!(copy.has_voted(Snowflake::from_u64(1), t(2)));
        assert!(!copy.has_voted(Snowflake::from_u64(2), t(2)));
        // Alone again, a part is written in place.
        drop(copy);
        let slots = Arc::as_ptr(&book.recent.slots.0);
        book.vote(voter(3), t(2)).expect("accepted");
        assert_eq!(Arc::as_ptr(&book.recent.slots.0), slots);
    }

    #[test]
    fn a_damaged_ring_is_refused_not_trusted() {
        let voters = VoterTable::new();
        let mut ring = VoterRing::with_capacity(3);
        for id in 1..=3 {
            ring.record(&voters, voter(id), t(id as i64));
        }
        assert!(ring.validate(&voters).is_ok());
        let mut looped = ring.clone();
        looped.slots[0].older = looped.head;
        assert!(looped.validate(&voters).is_err());
        let mut out_of_bounds = ring.clone();
        out_of_bounds.head = Link(7);
        assert!(out_of_bounds.validate(&voters).is_err());
        let mut dangling = ring;
        dangling.tail = Link::NONE;
        assert!(dangling.validate(&voters).is_err());
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
    fn the_published_window_shows_what_is_published_and_forgets_old_votes() {
        let mut book = VoteBook::new(t(0));
        book.vote(voter(1), t(0)).expect("vote");
        book.reindex();
        let checks = Arc::clone(book.window.published());
        assert!(
            checks.is_active(Snowflake::from_u64(1), t(1)),
            "restored state is published"
        );
        book.vote(voter(2), t(1)).expect("vote");
        assert!(
            !checks.is_active(Snowflake::from_u64(2), t(2)),
            "a vote is not shown before its owner publishes it"
        );
        checks.publish(Snowflake::from_u64(2), t(1));
        assert!(checks.is_active(Snowflake::from_u64(2), t(2)));
        assert!(!checks.is_active(Snowflake::from_u64(2), t(1 + 12 * 60)));
        for id in 100..400 {
            checks.publish(Snowflake::from_u64(id), t(13 * 60));
        }
        assert!(checks.len() <= 300, "votes older than the window are swept");
    }

    #[test]
    fn rejected_vote_changes_nothing() {
        let mut book = VoteBook::new(t(0));
        book.vote(voter(1), t(0)).expect("vote");
        book.vote(voter(2), t(1)).expect("vote");
        let before = (ids(book.voters(), &book.recent), book.total, book.monthly);
        assert!(book.vote(voter(1), t(5)).is_err());
        assert_eq!(
            (ids(book.voters(), &book.recent), book.total, book.monthly),
            before
        );
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
