//! The voter table: every voter the state's rings and histories hold, each once, by number.
//!
//! One table belongs to a directory's state (`SavedState::voters`), and every bot's
//! [`VoteBook`](super::VoteBook) of that state holds it: a vote, a voters list or a history page
//! reads it there. Two states (two applications in one process) never share one.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use dashmap::DashMap;
use parking_lot::RwLock;
use rustc_hash::FxBuildHasher;

use super::Voter;
use crate::domain::ids::Snowflake;

/// Every voter any history holds, each with a number a stored vote refers to by.
///
/// Append-only: a voter whose every vote was pruned stays until the state is dropped (a
/// snapshot stores only the voters its rings and histories refer to).
pub struct VoterTable {
    voters: RwLock<Numbered>,
    /// By name and avatar: a voter renamed and renamed back is one entry, as a file reads it.
    numbers: DashMap<KeyedVoter, u32, FxBuildHasher>,
}

impl VoterTable {
    pub fn new() -> Self {
        Self {
            voters: RwLock::new(Numbered::default()),
            numbers: DashMap::with_hasher(FxBuildHasher),
        }
    }

    /// An empty table with room for `voters` in its index: a snapshot's table is filed from
    /// two threads at once, and each growth of a shard rehashed it under the shard's lock
    /// while the other thread waited for it (a start of 100,000 bots files about a million).
    pub fn with_capacity(voters: usize) -> Self {
        Self {
            voters: RwLock::new(Numbered::default()),
            numbers: DashMap::with_capacity_and_hasher(voters, FxBuildHasher),
        }
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

impl Default for VoterTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for VoterTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VoterTable")
            .field("voters", &self.len())
            .finish()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::text::VoterName;
    use crate::domain::votes::testing::voter;

    #[test]
    fn the_table_numbers_a_voter_by_name_and_avatar() {
        let table = VoterTable::new();
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
}
