//! How a bot's votes are stored: the shapes of the recent-voters ring and the vote history in
//! files, in their two forms, and the numbering that joins the second form to the state's
//! voter table.
//!
//! - **Voters in full** (journal records, snapshots of format versions 1 and 2, JSON): each
//!   ring slot and each history holds its voters whole. [`VoteBook`]'s own `Serialize` and
//!   `Deserialize` write and read this form; a book read this way has a voter table of its own
//!   until its state takes it in (`VoteBook::attach`).
//! - **Voters by number** (the bots of a snapshot of format version 3 and later): rings and
//!   histories hold each voter's number in the snapshot's voter table, which is written once
//!   after the bots. [`SnapshotVoters`] numbers them while a snapshot is written
//!   ([`encode_numbered`]), and [`decode_numbered`] reads a bot back into the state's table
//!   with the [`SnapshotNumbers`] that table gave the snapshot's voters.
//!
//! The field names and their order are those of the types before this module held them: files
//! of earlier builds read as they are.

mod bulk;
mod deliveries;

use std::borrow::Cow;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::de::{Error as _, SeqAccess, Visitor};
use serde::ser::{Error as _, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::state::StoredBot;
use crate::domain::bot::{BotState, Listing, WebhookSettings};
use crate::domain::growth::Growth;
use crate::domain::ids::{Snowflake, TokenHash};
use crate::domain::project::ProjectState;
use crate::domain::reviews::Reviews;
use crate::domain::stats::{ServerCount, ShardCounts};
use crate::domain::text::{HttpUrl, VoterName};
use crate::domain::time::Timestamp;
use crate::domain::votes::history::VoteHistory;
use crate::domain::votes::{
    CheckWindow, MonthlyCount, Slot, VoteBook, Voter, VoterRing, VoterTable,
};
use crate::domain::webhook::Deliveries;

/// A ring as files store it: `slots` holds each slot's voter in one of the two forms.
#[derive(Serialize, Deserialize)]
struct StoredRing<S> {
    capacity: usize,
    slots: S,
    head: Option<u32>,
    tail: Option<u32>,
}

/// A slot as files store it (the fields and order of the slot before it held a number).
#[derive(Serialize, Deserialize)]
struct StoredSlot<V> {
    voter: V,
    voted_at: Timestamp,
    newer: Option<u32>,
    older: Option<u32>,
}

/// A history as files store it: the voters it refers to, once each, and each vote as
/// (the voter's place in `voters`, millis).
#[derive(Serialize, Deserialize)]
struct StoredHistory<V> {
    first: u64,
    voters: Vec<V>,
    votes: Vec<(u32, i64)>,
}

impl<V> Default for StoredHistory<V> {
    fn default() -> Self {
        Self {
            first: 0,
            voters: Vec::new(),
            votes: Vec::new(),
        }
    }
}

/// A book as files store it; the history last, so that files written without it load.
#[derive(Serialize, Deserialize)]
struct StoredBook<R, W, M, H> {
    recent: R,
    window: W,
    total: u64,
    monthly: M,
    #[serde(default)]
    history: H,
}

/// A voter in full as read, its text borrowed from the file until it is known to be new.
#[derive(Deserialize)]
struct InlineVoter<'a> {
    id: Snowflake,
    #[serde(borrow)]
    username: Cow<'a, str>,
    #[serde(borrow)]
    avatar: Option<Cow<'a, str>>,
}

impl InlineVoter<'_> {
    fn parse<E: serde::de::Error>(self) -> Result<Voter, E> {
        Ok(Voter {
            id: self.id,
            username: VoterName::parse(self.username.into_owned())
                .map_err(|why| E::custom(format!("username: {why}")))?,
            avatar: self
                .avatar
                .map(|url| HttpUrl::from_stored(url.into_owned()))
                .transpose()
                .map_err(|why| E::custom(format!("avatar: {why}")))?,
        })
    }
}

/// Each distinct voter of a history in the order of its first vote there, and each vote as
/// (that voter's place, millis): what a file stores of a history, in either form.
fn history_parts(history: &VoteHistory) -> (Vec<u32>, Vec<(u32, i64)>) {
    let mut local: FxHashMap<u32, u32> = FxHashMap::default();
    let mut voters: Vec<u32> = Vec::new();
    let votes = history
        .votes()
        .map(|(voter, at)| {
            let place = *local.entry(voter).or_insert_with(|| {
                voters.push(voter);
                voters.len() as u32 - 1
            });
            (place, at.millis())
        })
        .collect();
    (voters, votes)
}

/// A history whose voters are `numbers` (their numbers in the state's table, by place).
fn history_of<E: serde::de::Error>(
    first: u64,
    numbers: &[u32],
    votes: Vec<(u32, i64)>,
) -> Result<VoteHistory, E> {
    let len = votes.len();
    VoteHistory::try_from_votes(
        first,
        len,
        votes.into_iter().map(|(place, at)| {
            numbers
                .get(place as usize)
                .map(|&number| (number, Timestamp::from_millis(at)))
                .ok_or_else(|| E::custom("a vote refers to a voter not stored"))
        }),
    )
}

fn ring_of<E: serde::de::Error>(
    capacity: usize,
    slots: Vec<Slot>,
    head: Option<u32>,
    tail: Option<u32>,
) -> Result<VoterRing, E> {
    VoterRing::stored(capacity, slots, head, tail).map_err(E::custom)
}

fn slot_of<E: serde::de::Error>(stored: StoredSlot<u32>) -> Result<Slot, E> {
    Slot::stored(stored.voter, stored.voted_at, stored.newer, stored.older).map_err(E::custom)
}

// ---- Voters in full ----

/// A ring's slots with their voters in full, from the book's table.
struct InlineSlots<'a> {
    ring: &'a VoterRing,
    voters: &'a VoterTable,
}

impl Serialize for InlineSlots<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let slots = self.ring.slots();
        let mut seq = serializer.serialize_seq(Some(slots.len()))?;
        for slot in slots {
            let voter = self
                .voters
                .get(slot.voter())
                .ok_or_else(|| S::Error::custom("a vote of an unknown voter"))?;
            seq.serialize_element(&StoredSlot {
                voter: &*voter,
                voted_at: slot.voted_at(),
                newer: slot.newer(),
                older: slot.older(),
            })?;
        }
        seq.end()
    }
}

/// Voters in full: the form of journal records, JSON and snapshots of format versions 1 and 2.
impl Serialize for VoteBook {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let voters = self.voters();
        let (numbers, votes) = history_parts(&self.history);
        let history_voters = numbers
            .iter()
            .map(|&number| voters.get(number))
            .collect::<Option<Vec<Arc<Voter>>>>()
            .ok_or_else(|| S::Error::custom("a vote of an unknown voter"))?;
        StoredBook {
            recent: StoredRing {
                capacity: self.recent.capacity(),
                slots: InlineSlots {
                    ring: &self.recent,
                    voters,
                },
                head: self.recent.head(),
                tail: self.recent.tail(),
            },
            window: &self.window,
            total: self.total,
            monthly: &self.monthly,
            history: StoredHistory {
                first: self.history.first_position(),
                voters: history_voters,
                votes,
            },
        }
        .serialize(serializer)
    }
}

/// Voters in full, into a voter table of the book's own until its state takes it in
/// (`VoteBook::attach`).
impl<'de> Deserialize<'de> for VoteBook {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        type Inline<'a> = StoredBook<
            StoredRing<Vec<StoredSlot<InlineVoter<'a>>>>,
            CheckWindow,
            MonthlyCount,
            StoredHistory<InlineVoter<'a>>,
        >;
        let stored = Inline::deserialize(deserializer)?;
        let voters = Arc::new(VoterTable::new());
        let slots = stored
            .recent
            .slots
            .into_iter()
            .map(|slot| {
                let number = voters.adopt(slot.voter.parse()?);
                slot_of(StoredSlot {
                    voter: number,
                    voted_at: slot.voted_at,
                    newer: slot.newer,
                    older: slot.older,
                })
            })
            .collect::<Result<Vec<Slot>, D::Error>>()?;
        let recent = ring_of(
            stored.recent.capacity,
            slots,
            stored.recent.head,
            stored.recent.tail,
        )?;
        let numbers = stored
            .history
            .voters
            .into_iter()
            .map(|voter| Ok(voters.adopt(voter.parse()?)))
            .collect::<Result<Vec<u32>, D::Error>>()?;
        let history = history_of(stored.history.first, &numbers, stored.history.votes)?;
        Ok(VoteBook::stored(
            voters,
            recent,
            stored.window,
            stored.total,
            stored.monthly,
            history,
        ))
    }
}

// ---- Voters by number, in snapshots ----

/// The voters of a snapshot being written, each once: a voter gets a number the first time a
/// ring or a history that holds it is written, and they store that number. At 5 million votes
/// from 500,000 voters this stores and parses each name and avatar once instead of nine times.
///
/// Rings and histories hold their voters' numbers in their state's table; this maps those
/// numbers to its own with an array, so numbering a ring entry costs an array read, and a
/// voter is never compared by value.
#[derive(Default)]
pub struct SnapshotVoters {
    voters: Vec<Arc<Voter>>,
    /// For each state's table met (one, but for a book not yet attached), the number here of
    /// each of its numbers (`u32::MAX` until known).
    tables: Vec<(Arc<VoterTable>, Vec<u32>)>,
}

impl SnapshotVoters {
    /// The voters numbered so far, in number order.
    pub fn voters(&self) -> &[Arc<Voter>] {
        &self.voters
    }

    /// Which of the tables met `table` is, found once per bot rather than once per voter.
    fn table(&mut self, table: &Arc<VoterTable>) -> usize {
        match self.tables.iter().position(|(t, _)| Arc::ptr_eq(t, table)) {
            Some(at) => at,
            None => {
                self.tables.push((Arc::clone(table), Vec::new()));
                self.tables.len() - 1
            }
        }
    }

    /// The number here of the voter numbered `number` in the table met `at`th.
    fn number(&mut self, at: usize, number: u32) -> Result<u32, &'static str> {
        let Self { voters, tables } = self;
        let (table, known) = &mut tables[at];
        let index = number as usize;
        if let Some(&here) = known.get(index).filter(|&&n| n != u32::MAX) {
            return Ok(here);
        }
        let voter = table.get(number).ok_or("a vote of an unknown voter")?;
        let here = u32::try_from(voters.len())
            .ok()
            .filter(|&n| n != u32::MAX)
            .ok_or("more voters than a table holds")?;
        voters.push(voter);
        if known.len() <= index {
            known.resize((index + 1).max(table.len()), u32::MAX);
        }
        known[index] = here;
        Ok(here)
    }
}

/// A ring's slots with their voters' numbers in the snapshot's table, by slot.
struct NumberedSlots<'a> {
    ring: &'a VoterRing,
    numbers: &'a [u32],
}

impl Serialize for NumberedSlots<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let slots = self.ring.slots();
        let mut seq = serializer.serialize_seq(Some(slots.len()))?;
        for (slot, &voter) in slots.iter().zip(self.numbers) {
            seq.serialize_element(&StoredSlot {
                voter,
                voted_at: slot.voted_at(),
                newer: slot.newer(),
                older: slot.older(),
            })?;
        }
        seq.end()
    }
}

/// A bot's state as a snapshot stores it: [`BotState`]'s fields in its order, the votes with
/// their voters by number.
#[derive(Serialize, Deserialize)]
struct SnapshotState<L, W, B, C, D, H, G, P, R> {
    listing: L,
    webhook: W,
    votes: B,
    server_count: C,
    updated_at: Timestamp,
    #[serde(default)]
    last_seq: u64,
    #[serde(default)]
    deliveries: D,
    #[serde(default)]
    shards: H,
    #[serde(default)]
    growth: G,
    /// Last: snapshots written before the project API load with none.
    #[serde(default)]
    project: P,
    /// Last: snapshots written before reviews load with none.
    #[serde(default)]
    reviews: R,
}

#[derive(Serialize, Deserialize)]
struct SnapshotBot<S, T> {
    state: S,
    token: T,
}

/// Writes a bot as a snapshot stores it, its voters numbered in `voters`.
pub fn encode_numbered(
    out: &mut Vec<u8>,
    bot: &StoredBot,
    voters: &mut SnapshotVoters,
) -> Result<(), rmp_serde::encode::Error> {
    let state = &bot.state;
    let book = &state.votes;
    let table = voters.table(book.voters());
    let custom = |why: &str| rmp_serde::encode::Error::Syntax(why.to_owned());
    let ring_numbers = book
        .recent
        .slots()
        .iter()
        .map(|slot| voters.number(table, slot.voter()))
        .collect::<Result<Vec<u32>, _>>()
        .map_err(custom)?;
    let (history_voters, votes) = history_parts(&book.history);
    let history_voters = history_voters
        .into_iter()
        .map(|number| voters.number(table, number))
        .collect::<Result<Vec<u32>, _>>()
        .map_err(custom)?;
    let stored = SnapshotBot {
        state: SnapshotState {
            listing: &state.listing,
            webhook: &state.webhook,
            votes: StoredBook {
                recent: StoredRing {
                    capacity: book.recent.capacity(),
                    slots: NumberedSlots {
                        ring: &book.recent,
                        numbers: &ring_numbers,
                    },
                    head: book.recent.head(),
                    tail: book.recent.tail(),
                },
                window: &book.window,
                total: book.total,
                monthly: &book.monthly,
                history: StoredHistory {
                    first: book.history.first_position(),
                    voters: history_voters,
                    votes,
                },
            },
            server_count: &state.server_count,
            updated_at: state.updated_at,
            last_seq: state.last_seq,
            deliveries: &state.deliveries,
            shards: &state.shards,
            growth: &state.growth,
            project: &state.project,
            reviews: &state.reviews,
        },
        token: &bot.token,
    };
    rmp_serde::encode::write(out, &stored)
}

/// The voters of a snapshot's table as the state's table numbers them: from one base on, in a
/// row (a start: the table was empty), or one by one.
#[derive(Clone, Debug)]
pub enum SnapshotNumbers {
    InRow { base: u32, len: u32 },
    Each(Arc<[u32]>),
}

impl From<Vec<u32>> for SnapshotNumbers {
    fn from(numbers: Vec<u32>) -> Self {
        let base = numbers.first().copied().unwrap_or(0);
        let in_row = u32::try_from(numbers.len()).ok().filter(|&len| {
            base.checked_add(len).is_some()
                && numbers.iter().zip(base..).all(|(&number, at)| number == at)
        });
        match in_row {
            Some(len) => Self::InRow { base, len },
            None => Self::Each(numbers.into()),
        }
    }
}

impl SnapshotNumbers {
    /// Whether the numbers are in a row (no lookup per voter read).
    pub fn in_row(&self) -> bool {
        matches!(self, Self::InRow { .. })
    }

    /// The state's number of the snapshot's voter `index`.
    pub fn get(&self, index: u32) -> Option<u32> {
        match self {
            Self::InRow { base, len } => (index < *len).then(|| base + index),
            Self::Each(each) => each.get(index as usize).copied(),
        }
    }

    /// Whether a snapshot's number is the state's: the table was empty when the snapshot's
    /// voters were numbered (a start). A number past the table then fails the ring's check.
    fn same(&self) -> bool {
        matches!(self, Self::InRow { base: 0, .. })
    }
}

/// A history whose voters are numbered in a snapshot's table, in the state's table.
fn history_by_number<E: serde::de::Error>(
    stored: StoredHistory<u32>,
    numbers: &SnapshotNumbers,
) -> Result<VoteHistory, E> {
    let voters = stored
        .voters
        .iter()
        .map(|&index| numbers.get(index))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| E::custom("a voter number not in the voter table"))?;
    history_of(stored.first, &voters, stored.votes)
}

/// A ring's slots with their voters' numbers in the snapshot's table, read in one pass.
struct SlotsByNumber(Vec<Slot>);

impl<'de> Deserialize<'de> for SlotsByNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Slots;
        impl<'de> Visitor<'de> for Slots {
            type Value = SlotsByNumber;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("the slots of a recent-voters ring")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                // At most a ring's capacity is trusted from the announced length.
                let mut slots = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1000));
                while let Some(slot) = seq.next_element::<StoredSlot<u32>>()? {
                    slots.push(slot_of(slot)?);
                }
                Ok(SlotsByNumber(slots))
            }
        }
        deserializer.deserialize_seq(Slots)
    }
}

/// Reads a bot as a snapshot stores it, into the state's table `voters`, which gave the
/// snapshot's voters `numbers`.
pub fn decode_numbered(
    bytes: &[u8],
    voters: &Arc<VoterTable>,
    numbers: &SnapshotNumbers,
) -> Result<StoredBot, rmp_serde::decode::Error> {
    // The shape today's builds write, read without serde's generic path where the votes are;
    // the serde path reads anything else and names what is wrong.
    match bulk::numbered(bytes, voters, numbers) {
        Ok(bot) => Ok(bot),
        Err(bulk::Declined) => decode_numbered_by_serde(bytes, voters, numbers),
    }
}

/// [`decode_numbered`] through serde alone: every shape a build ever wrote.
fn decode_numbered_by_serde(
    bytes: &[u8],
    voters: &Arc<VoterTable>,
    numbers: &SnapshotNumbers,
) -> Result<StoredBot, rmp_serde::decode::Error> {
    type Stored = SnapshotBot<
        SnapshotState<
            Arc<Listing>,
            WebhookSettings,
            StoredBook<StoredRing<SlotsByNumber>, CheckWindow, MonthlyCount, StoredHistory<u32>>,
            Option<ServerCount>,
            Deliveries,
            ShardCounts,
            Growth,
            ProjectState,
            Reviews,
        >,
        TokenHash,
    >;
    type Error = rmp_serde::decode::Error;
    let stored: Stored = super::decode(bytes)?;
    let state = stored.state;
    let book = state.votes;
    let not_in_table = || Error::custom("a voter number not in the voter table");
    let mut recent = ring_of::<Error>(
        book.recent.capacity,
        book.recent.slots.0,
        book.recent.head,
        book.recent.tail,
    )?;
    if !numbers.same() {
        recent
            .renumber(|index| numbers.get(index))
            .ok_or_else(not_in_table)?;
    }
    let history = history_by_number::<Error>(book.history, numbers)?;
    Ok(StoredBot {
        state: BotState {
            listing: state.listing,
            webhook: state.webhook,
            votes: VoteBook::stored(
                Arc::clone(voters),
                recent,
                book.window,
                book.total,
                book.monthly,
                history,
            ),
            server_count: state.server_count,
            updated_at: state.updated_at,
            last_seq: state.last_seq,
            deliveries: state.deliveries,
            shards: state.shards,
            growth: state.growth,
            project: state.project,
            reviews: state.reviews,
        },
        token: stored.token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::votes::testing::{t, voter};

    #[test]
    fn a_book_survives_a_file_with_its_voters_in_full() {
        let mut book = VoteBook::new(t(0));
        for i in 0..5 {
            book.vote(voter(i % 3), t(i as i64 * 800))
                .expect("13 hours apart");
        }
        book.history.prune_before(t(800));
        let bytes = rmp_serde::to_vec(&book).expect("encodes");
        let back: VoteBook = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(back.history.first_position(), 1);
        assert_eq!(
            back.history_range(0, 100, 100),
            book.history_range(0, 100, 100)
        );
        let ids = |book: &VoteBook| -> Vec<_> { book.recent_voters().collect() };
        assert_eq!(ids(&back), ids(&book));
        assert!(
            !Arc::ptr_eq(back.voters(), book.voters()),
            "a table of its own"
        );
    }

    #[test]
    fn histories_read_by_snapshot_number_find_their_voters() {
        let voters = Arc::new(VoterTable::new());
        voters.number(&voter(1));
        let numbers: SnapshotNumbers = (0..3)
            .map(|i| voters.adopt(voter(900 + i)))
            .collect::<Vec<u32>>()
            .into();
        assert!(
            numbers.in_row() && !numbers.same(),
            "numbered after voter 1"
        );
        let stored = |history: Vec<u32>| {
            let votes = (0..history.len() as u32)
                .map(|i| (i, t(0).millis()))
                .collect();
            let bytes = rmp_serde::to_vec(&StoredHistory {
                first: 0,
                voters: history,
                votes,
            })
            .expect("encodes");
            let stored: StoredHistory<u32> = rmp_serde::from_slice(&bytes).expect("decodes");
            history_by_number::<rmp_serde::decode::Error>(stored, &numbers)
        };
        let names = |history: VoteHistory| -> Vec<String> {
            let entries = history.range(&voters, 0, 10, 10).into_iter();
            entries
                .map(|e| e.voter.username.as_str().to_owned())
                .collect()
        };
        assert!(
            stored(vec![3]).is_err(),
            "a number past the table is refused"
        );
        assert_eq!(
            names(stored(vec![2, 0]).expect("decodes")),
            ["h902", "h900"]
        );
        assert_eq!(
            names(stored(vec![0, 1, 2]).expect("decodes")),
            ["h900", "h901", "h902"]
        );
    }
}
