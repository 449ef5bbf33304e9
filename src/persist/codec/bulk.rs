//! A snapshot's bot read with `rmp` directly where the bulk of it is: the ring's slots and the
//! history's votes, five million small arrays at 100,000 bots, which serde's generic path read
//! through a visitor, a sequence access and a marker lookup per number (about a third of
//! decoding a snapshot's bots). The other fields are small and varied: each is found by
//! skipping over its MessagePack and decoded by serde from those bytes.
//!
//! The same bytes, the same checks, the same state as [`super::decode_numbered`]'s serde path.
//! This reads only the shape today's builds write (structs as arrays, every number in one of
//! MessagePack's integer forms); anything else, damage included, is [`Declined`] and read by
//! the serde path, which accepts what it always did and names the fault.

use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::{history_by_number, SnapshotNumbers, StoredHistory};
use crate::domain::bot::BotState;
use crate::domain::growth::Growth;
use crate::domain::time::Timestamp;
use crate::domain::votes::history::VoteHistory;
use crate::domain::votes::{Slot, VoteBook, VoterRing, VoterTable};
use crate::persist::state::StoredBot;

/// Not read here: the serde path reads it (and says what is wrong, if anything is).
#[derive(Debug)]
pub(super) struct Declined;

type Read<'a, 'b> = &'a mut &'b [u8];

/// How deep [`skip`] follows nested arrays and maps (the serde path's limit is the same).
const DEPTH: u32 = 64;

fn take<'b>(rd: Read<'_, 'b>, len: usize) -> Result<&'b [u8], Declined> {
    if len > rd.len() {
        return Err(Declined);
    }
    let (taken, rest) = rd.split_at(len);
    *rd = rest;
    Ok(taken)
}

fn byte(rd: Read) -> Result<u8, Declined> {
    Ok(take(rd, 1)?[0])
}

fn be<const N: usize>(rd: Read) -> Result<[u8; N], Declined> {
    take(rd, N)?.try_into().map_err(|_| Declined)
}

/// A MessagePack integer, in whichever form it was written.
enum Int {
    Unsigned(u64),
    Signed(i64),
}

fn int(rd: Read) -> Result<Int, Declined> {
    Ok(match byte(rd)? {
        m @ 0x00..=0x7f => Int::Unsigned(u64::from(m)),
        m @ 0xe0..=0xff => Int::Signed(i64::from(m as i8)),
        0xcc => Int::Unsigned(u64::from(byte(rd)?)),
        0xcd => Int::Unsigned(u64::from(u16::from_be_bytes(be(rd)?))),
        0xce => Int::Unsigned(u64::from(u32::from_be_bytes(be(rd)?))),
        0xcf => Int::Unsigned(u64::from_be_bytes(be(rd)?)),
        0xd0 => Int::Signed(i64::from(byte(rd)? as i8)),
        0xd1 => Int::Signed(i64::from(i16::from_be_bytes(be(rd)?))),
        0xd2 => Int::Signed(i64::from(i32::from_be_bytes(be(rd)?))),
        0xd3 => Int::Signed(i64::from_be_bytes(be(rd)?)),
        _ => return Err(Declined),
    })
}

fn uint(rd: Read) -> Result<u64, Declined> {
    match int(rd)? {
        Int::Unsigned(n) => Ok(n),
        Int::Signed(n) => u64::try_from(n).map_err(|_| Declined),
    }
}

fn sint(rd: Read) -> Result<i64, Declined> {
    match int(rd)? {
        Int::Unsigned(n) => i64::try_from(n).map_err(|_| Declined),
        Int::Signed(n) => Ok(n),
    }
}

fn u32_of(rd: Read) -> Result<u32, Declined> {
    u32::try_from(uint(rd)?).map_err(|_| Declined)
}

/// `nil` or a `u32`, as serde reads an `Option<u32>`.
fn opt_u32(rd: Read) -> Result<Option<u32>, Declined> {
    if rd.first() == Some(&0xc0) {
        *rd = &rd[1..];
        return Ok(None);
    }
    u32_of(rd).map(Some)
}

fn array_len(rd: Read) -> Result<usize, Declined> {
    Ok(match byte(rd)? {
        m @ 0x90..=0x9f => usize::from(m & 0x0f),
        0xdc => usize::from(u16::from_be_bytes(be(rd)?)),
        0xdd => u32::from_be_bytes(be(rd)?) as usize,
        _ => return Err(Declined),
    })
}

/// An array of exactly `len` elements.
fn array_of(rd: Read, len: usize) -> Result<(), Declined> {
    if array_len(rd)? == len {
        Ok(())
    } else {
        Err(Declined)
    }
}

/// Moves past one MessagePack value of any kind, its contents included.
fn skip(rd: Read, depth: u32) -> Result<(), Declined> {
    let depth = depth.checked_sub(1).ok_or(Declined)?;
    let length = |rd: Read, bytes: usize| -> Result<usize, Declined> {
        Ok(match bytes {
            1 => usize::from(byte(rd)?),
            2 => usize::from(u16::from_be_bytes(be(rd)?)),
            _ => u32::from_be_bytes(be(rd)?) as usize,
        })
    };
    // (values inside it, bytes of data after the marker and any length)
    let (values, data) = match byte(rd)? {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
        m @ 0x80..=0x8f => (usize::from(m & 0x0f) * 2, 0),
        m @ 0x90..=0x9f => (usize::from(m & 0x0f), 0),
        m @ 0xa0..=0xbf => (0, usize::from(m & 0x1f)),
        0xc4 | 0xd9 => (0, length(rd, 1)?),
        0xc5 | 0xda => (0, length(rd, 2)?),
        0xc6 | 0xdb => (0, length(rd, 4)?),
        0xc7 => (0, length(rd, 1)? + 1),
        0xc8 => (0, length(rd, 2)? + 1),
        0xc9 => (0, length(rd, 4)? + 1),
        0xcc | 0xd0 => (0, 1),
        0xcd | 0xd1 => (0, 2),
        0xca | 0xce | 0xd2 => (0, 4),
        0xcb | 0xcf | 0xd3 => (0, 8),
        0xd4 => (0, 2),
        0xd5 => (0, 3),
        0xd6 => (0, 5),
        0xd7 => (0, 9),
        0xd8 => (0, 17),
        0xdc => (length(rd, 2)?, 0),
        0xdd => (length(rd, 4)?, 0),
        0xde => (length(rd, 2)? * 2, 0),
        0xdf => (length(rd, 4)?.checked_mul(2).ok_or(Declined)?, 0),
        // 0xc1: never used.
        _ => return Err(Declined),
    };
    take(rd, data)?;
    // Each value takes at least a byte: a count past what is left fails as the bytes run out.
    for _ in 0..values {
        skip(rd, depth)?;
    }
    Ok(())
}

/// The next value, decoded by serde from its own bytes.
fn by_serde<T: DeserializeOwned>(rd: Read) -> Result<T, Declined> {
    let start = *rd;
    skip(rd, DEPTH)?;
    let bytes = &start[..start.len() - rd.len()];
    crate::persist::decode(bytes).map_err(|_| Declined)
}

/// A field the snapshot may end before (`#[serde(default)]`): `left` counts those still there.
fn by_serde_or_default<T: DeserializeOwned + Default>(
    rd: Read,
    left: &mut usize,
) -> Result<T, Declined> {
    match left.checked_sub(1) {
        Some(fewer) => {
            *left = fewer;
            by_serde(rd)
        }
        None => Ok(T::default()),
    }
}

type Error = rmp_serde::decode::Error;

/// A bot as a snapshot stores it (see [`super::SnapshotBot`]), into the state's table `voters`.
pub(super) fn numbered(
    bytes: &[u8],
    voters: &Arc<VoterTable>,
    numbers: &SnapshotNumbers,
) -> Result<StoredBot, Declined> {
    let rd = &mut &bytes[..];
    array_of(rd, 2)?;
    let fields = array_len(rd)?;
    // The five fields every build wrote, up to the eleven of today's.
    if !(5..=11).contains(&fields) {
        return Err(Declined);
    }
    let mut left = fields - 5;
    let listing = by_serde(rd)?;
    let webhook = by_serde(rd)?;
    let votes = book(rd, voters, numbers)?;
    let server_count = by_serde(rd)?;
    let updated_at = Timestamp::from_millis(sint(rd)?);
    let state = BotState {
        listing,
        webhook,
        votes,
        server_count,
        updated_at,
        last_seq: by_serde_or_default(rd, &mut left)?,
        deliveries: by_serde_or_default(rd, &mut left)?,
        shards: by_serde_or_default(rd, &mut left)?,
        growth: match left.checked_sub(1) {
            Some(fewer) => {
                left = fewer;
                growth(rd)?
            }
            None => Growth::default(),
        },
        project: by_serde_or_default(rd, &mut left)?,
        reviews: by_serde_or_default(rd, &mut left)?,
    };
    let token = by_serde(rd)?;
    Ok(StoredBot { state, token })
}

/// A bot's growth history: `[[[hour, count], ...], [[hour, votes], ...], horizon]`, a few
/// hundred small arrays a bot (a tenth of the serde path's time went to them).
fn growth(rd: Read) -> Result<Growth, Declined> {
    array_of(rd, 3)?;
    let counts = pairs(rd, uint)?;
    let votes = pairs(rd, u32_of)?;
    Ok(Growth::stored(counts, votes, u32_of(rd)?))
}

/// An array of `[u32, T]` arrays.
fn pairs<T>(rd: Read, second: fn(Read) -> Result<T, Declined>) -> Result<Vec<(u32, T)>, Declined> {
    let count = array_len(rd)?;
    // A pair takes at least three bytes.
    let mut pairs = Vec::with_capacity(count.min(rd.len() / 3));
    for _ in 0..count {
        array_of(rd, 2)?;
        pairs.push((u32_of(rd)?, second(rd)?));
    }
    Ok(pairs)
}

/// A book: `[recent, window, total, monthly, history?]` (see [`super::StoredBook`]).
fn book(
    rd: Read,
    voters: &Arc<VoterTable>,
    numbers: &SnapshotNumbers,
) -> Result<VoteBook, Declined> {
    let fields = array_len(rd)?;
    if fields != 4 && fields != 5 {
        return Err(Declined);
    }
    let recent = ring(rd, numbers)?;
    let window = by_serde(rd)?;
    let total = uint(rd)?;
    let monthly = by_serde(rd)?;
    let history = if fields == 5 {
        history(rd, numbers)?
    } else {
        history_by_number::<Error>(StoredHistory::default(), numbers).map_err(|_| Declined)?
    };
    Ok(VoteBook::stored(
        Arc::clone(voters),
        recent,
        window,
        total,
        monthly,
        history,
    ))
}

/// A ring: `[capacity, [[voter, millis, newer, older], ...], head, tail]`.
fn ring(rd: Read, numbers: &SnapshotNumbers) -> Result<VoterRing, Declined> {
    array_of(rd, 4)?;
    let capacity = usize::try_from(uint(rd)?).map_err(|_| Declined)?;
    let count = array_len(rd)?;
    // A slot takes at least five bytes: a count past that is damage, not a size.
    let mut slots = Vec::with_capacity(count.min(rd.len() / 5));
    for _ in 0..count {
        array_of(rd, 4)?;
        let voter = u32_of(rd)?;
        let at = Timestamp::from_millis(sint(rd)?);
        let (newer, older) = (opt_u32(rd)?, opt_u32(rd)?);
        slots.push(Slot::stored(voter, at, newer, older).map_err(|_| Declined)?);
    }
    let (head, tail) = (opt_u32(rd)?, opt_u32(rd)?);
    let mut ring = VoterRing::stored(capacity, slots, head, tail).map_err(|_| Declined)?;
    if !numbers.same() {
        ring.renumber(|index| numbers.get(index)).ok_or(Declined)?;
    }
    Ok(ring)
}

/// A history: `[first, [voter, ...], [[place, millis], ...]]`, its voters in the state's table.
fn history(rd: Read, numbers: &SnapshotNumbers) -> Result<VoteHistory, Declined> {
    array_of(rd, 3)?;
    let first = uint(rd)?;
    let count = array_len(rd)?;
    let mut voters = Vec::with_capacity(count.min(rd.len()));
    for _ in 0..count {
        voters.push(numbers.get(u32_of(rd)?).ok_or(Declined)?);
    }
    let count = array_len(rd)?;
    // A vote takes at least three bytes.
    let len = count.min(rd.len() / 3);
    VoteHistory::try_from_votes(
        first,
        len,
        (0..count).map(|_| {
            array_of(rd, 2)?;
            let place = u32_of(rd)?;
            let at = Timestamp::from_millis(sint(rd)?);
            voters
                .get(place as usize)
                .map(|&number| (number, at))
                .ok_or(Declined)
        }),
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::sample::Index;

    use super::*;
    use crate::demo::{self, DemoSize};
    use crate::domain::votes::testing::voter;
    use crate::persist::codec::SnapshotVoters;
    use crate::persist::codec::{decode_numbered, decode_numbered_by_serde, encode_numbered};

    /// Each bot of a generated directory (of at least three) as a snapshot stores it, and the
    /// snapshot's voters.
    fn encoded(
        seed: u64,
        bots: usize,
        votes: usize,
    ) -> (Vec<Vec<u8>>, Vec<Arc<crate::domain::votes::Voter>>) {
        let size = DemoSize {
            seed,
            bots,
            profiles: 10,
            voters: 50,
            votes,
        };
        let state = demo::build(Timestamp::from_millis(1_790_000_000_000), &size).state;
        let mut voters = SnapshotVoters::default();
        let bots = state
            .bots
            .iter()
            .map(|bot| {
                let mut out = Vec::new();
                encode_numbered(&mut out, bot, &mut voters).expect("encodes");
                out
            })
            .collect();
        (bots, voters.voters().to_vec())
    }

    /// A state's table holding the snapshot's voters: from 0 (a start) or after another voter.
    fn table(
        voters: &[Arc<crate::domain::votes::Voter>],
        after_another: bool,
    ) -> (Arc<VoterTable>, SnapshotNumbers) {
        let table = Arc::new(VoterTable::new());
        if after_another {
            table.number(&voter(1));
        }
        let numbers: Vec<u32> = voters
            .iter()
            .map(|v| table.adopt(crate::domain::votes::Voter::clone(v)))
            .collect();
        (table, numbers.into())
    }

    fn as_bytes(bot: &StoredBot) -> Vec<u8> {
        rmp_serde::to_vec(bot).expect("encodes")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// What serde's path reads from a bot, this reads the same.
        #[test]
        fn reads_what_the_serde_path_reads(
            seed in any::<u64>(),
            bots in 3usize..6,
            votes in 0usize..300,
            after_another in any::<bool>(),
        ) {
            let (bots, voters) = encoded(seed, bots, votes);
            let (table, numbers) = table(&voters, after_another);
            for bytes in &bots {
                let fast = numbered(bytes, &table, &numbers).expect("today's shape is read here");
                let slow = decode_numbered_by_serde(bytes, &table, &numbers).expect("decodes");
                prop_assert_eq!(as_bytes(&fast), as_bytes(&slow));
            }
        }

        /// Cut short or with bytes changed, a bot is refused or read as serde's path reads it;
        /// never a panic.
        #[test]
        fn damage_is_refused_or_read_as_serde_reads_it(
            seed in any::<u64>(),
            votes in 0usize..200,
            cut in any::<Index>(),
            flips in proptest::collection::vec((any::<Index>(), any::<u8>()), 0..4),
        ) {
            // The first bots of a demo have reviews, the others none.
            let (bots, voters) = encoded(seed, 4, votes);
            let (table, numbers) = table(&voters, false);
            let mut bytes = bots[seed as usize % bots.len()].clone();
            for (at, byte) in flips {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            let cut = cut.index(bytes.len() + 1);
            for bytes in [&bytes[..], &bytes[..cut]] {
                let slow = decode_numbered_by_serde(bytes, &table, &numbers);
                if let Ok(mut fast) = numbered(bytes, &table, &numbers) {
                    let mut slow = slow.expect("what this reads, serde reads");
                    match (rmp_serde::to_vec(&fast), rmp_serde::to_vec(&slow)) {
                        (Ok(fast), Ok(slow)) => prop_assert_eq!(fast, slow),
                        // Damage both paths read alike and leave to the load's checks (a
                        // ring's slot whose voter the table lacks): the load refuses it.
                        (Err(a), Err(b)) => {
                            prop_assert_eq!(a.to_string(), b.to_string());
                            for bot in [&mut fast, &mut slow] {
                                bot.state.restore();
                                prop_assert!(bot.state.votes.validate().is_err(), "{a}");
                            }
                        }
                        (a, b) => prop_assert!(false, "fast {:?}, serde {:?}", a.err(), b.err()),
                    }
                }
                let _ = decode_numbered(bytes, &table, &numbers);
            }
        }
    }

    #[test]
    fn garbage_is_declined() {
        let (table, numbers) = table(&[], false);
        for bytes in [
            &[][..],
            &[0x92],
            &[0x92, 0x95],
            &[0xc1; 16],
            &[0x92, 0xdd, 0xff, 0xff, 0xff, 0xff],
            &[0x92, 0x9b, 0xdf, 0xff, 0xff, 0xff, 0xff],
        ] {
            assert!(numbered(bytes, &table, &numbers).is_err());
        }
        // Arrays nested past the depth limit are declined, not followed.
        let mut deep = vec![0x92, 0x95];
        deep.extend(std::iter::repeat_n(0x91, 10_000));
        assert!(numbered(&deep, &table, &numbers).is_err());
    }
}
