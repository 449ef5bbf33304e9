//! One maintained order per sort key, iterated in response order: featured first, the key
//! descending, the listing id ascending.

use crate::domain::search::Sort;

/// A document's place in one order. Ascending tuple order is response order: the rank packs
/// "featured" into its top bit (0 sorts first) and the key, inverted, below it; the listing id
/// follows as two halves; the document number rides along and never decides anything, since
/// listing ids are unique.
pub type Place = (u64, u64, u64, u32);

const NOT_FEATURED: u64 = 1 << 63;
const KEY_MAX: u64 = NOT_FEATURED - 1;

/// The rank of a key: sort keys are counts (far below 2^63) and milliseconds since 1970, so
/// nothing is lost by clamping them to 63 bits.
pub fn rank(featured: bool, key: u64) -> u64 {
    let flag = if featured { 0 } else { NOT_FEATURED };
    flag | (KEY_MAX - key.min(KEY_MAX))
}

pub fn place(rank: u64, id: u128, doc: u32) -> Place {
    (rank, (id >> 64) as u64, id as u64, doc)
}

/// The most places a block holds; a block that grows past it is split in two.
const BLOCK: usize = 512;

/// Places of each block read to foresee a walk ([`Order::foresee_walk`]): a block holds 128
/// to 512 places, so the forecast reads at most one in 32 of the places it foresees.
const PROBES: usize = 4;

/// A probe's offset within its stride, different for each block and probe, so that no period
/// in the order (every tenth place kept) lines up with the probes.
fn scatter(block: usize, probe: usize) -> usize {
    let x = (block as u64) << 8 | probe as u64;
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize
}

/// What [`Order::foresee_walk`] foresaw, and the places it read to do so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Foresight {
    /// The places a walk is expected to visit, or `None`: more than the limit.
    pub steps: Option<u64>,
    /// Places read by the forecast.
    pub probed: u64,
}

/// One order: its places sorted, in blocks of at most [`BLOCK`]. Unlike a B-tree, it can jump
/// to the n-th place by counting whole blocks, so a page at offset 20,000 costs about what the
/// first page costs; a change moves at most one block's places.
#[derive(Default)]
pub struct Order {
    blocks: Vec<Block>,
    len: usize,
}

/// A block's places, and their documents again in a column of their own: a walk reads only
/// the documents, 4 bytes a place where a place is 32, so walking half of a large order
/// streams an eighth of the memory (docs/PERFORMANCE.md, "A set gathered at one end of its
/// order"). Both change together, and only here.
struct Block {
    places: Vec<Place>,
    docs: Vec<u32>,
}

impl Block {
    fn with_places(places: &[Place]) -> Self {
        let mut block = Self {
            places: Vec::with_capacity(BLOCK),
            docs: Vec::with_capacity(BLOCK),
        };
        block.extend(places);
        block
    }

    fn len(&self) -> usize {
        self.places.len()
    }

    fn last(&self) -> Option<&Place> {
        self.places.last()
    }

    fn insert(&mut self, at: usize, place: Place) {
        self.places.insert(at, place);
        self.docs.insert(at, place.3);
    }

    fn remove(&mut self, at: usize) {
        self.places.remove(at);
        self.docs.remove(at);
    }

    fn extend(&mut self, places: &[Place]) {
        self.places.extend_from_slice(places);
        self.docs.extend(places.iter().map(|place| place.3));
    }

    /// Keeps the first `at` places and returns the rest as a block of their own.
    fn split_off(&mut self, at: usize) -> Self {
        let upper = Self::with_places(&self.places[at..]);
        self.places.truncate(at);
        self.docs.truncate(at);
        upper
    }

    fn heap_bytes(&self) -> usize {
        self.places.capacity() * std::mem::size_of::<Place>()
            + self.docs.capacity() * std::mem::size_of::<u32>()
    }
}

impl Order {
    fn from_sorted(places: Vec<Place>) -> Self {
        let len = places.len();
        let blocks = places
            .chunks(BLOCK * 3 / 4)
            .map(Block::with_places)
            .collect();
        Self { blocks, len }
    }

    /// The block a place belongs in: the first whose last place is not below it.
    fn block_of(&self, place: &Place) -> usize {
        let at = self
            .blocks
            .partition_point(|block| block.last().is_some_and(|last| last < place));
        at.min(self.blocks.len().saturating_sub(1))
    }

    pub fn insert(&mut self, place: Place) {
        if self.blocks.is_empty() {
            self.blocks.push(Block::with_places(&[]));
        }
        let b = self.block_of(&place);
        let block = &mut self.blocks[b];
        let Err(at) = block.places.binary_search(&place) else {
            return;
        };
        block.insert(at, place);
        self.len += 1;
        if block.len() > BLOCK {
            let upper = block.split_off(BLOCK / 2);
            self.blocks.insert(b + 1, upper);
        }
    }

    pub fn remove(&mut self, place: &Place) {
        if self.blocks.is_empty() {
            return;
        }
        let b = self.block_of(place);
        let block = &mut self.blocks[b];
        let Ok(at) = block.places.binary_search(place) else {
            return;
        };
        block.remove(at);
        let left = block.len();
        self.len -= 1;
        if left == 0 {
            self.blocks.remove(b);
        } else if left < BLOCK / 4
            && b + 1 < self.blocks.len()
            && left + self.blocks[b + 1].len() <= BLOCK
        {
            // Churn must not leave many small blocks behind: a small block takes in its
            // neighbour when both fit in one.
            let next = self.blocks.remove(b + 1);
            self.blocks[b].extend(&next.places);
        }
    }

    /// The documents from the `start`-th place on, in order: whole blocks are counted, not
    /// visited.
    pub fn docs_from(&self, start: usize) -> impl Iterator<Item = u32> + '_ {
        let mut skipped = 0;
        let mut first = self.blocks.len();
        for (b, block) in self.blocks.iter().enumerate() {
            if skipped + block.len() > start {
                first = b;
                break;
            }
            skipped += block.len();
        }
        let within = start - skipped.min(start);
        self.blocks[first..]
            .iter()
            .flat_map(|block| &block.docs)
            .copied()
            .skip(if first < self.blocks.len() { within } else { 0 })
    }

    /// The places not below `start`, in order: its block is found by a binary search over the
    /// blocks' last places, then within the block.
    pub fn iter_from_place(&self, start: &Place) -> impl Iterator<Item = &Place> {
        let b = self
            .blocks
            .partition_point(|block| block.last().is_some_and(|last| last < start));
        let within = self.blocks.get(b).map_or(0, |block| {
            block.places.partition_point(|place| place < start)
        });
        self.blocks[b..]
            .iter()
            .flat_map(|block| &block.places)
            .skip(within)
    }

    /// Every place's document, in order: what a walk reads.
    pub fn docs(&self) -> impl Iterator<Item = u32> + '_ {
        self.blocks.iter().flat_map(|block| &block.docs).copied()
    }

    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = &Place> {
        self.blocks.iter().flat_map(|block| &block.places)
    }

    /// How many places a walk from the start, keeping the places whose document passes
    /// `keep`, is expected to visit before it has kept `end`: foreseen from [`PROBES`] places
    /// of each block, a block at a time, reading about one place in a hundred of those the walk
    /// would visit. `None` once `limit` places are passed with too few kept places seen to
    /// reach `end`, but only after at least `evidence` probes: fewer could have missed a set
    /// spread thinly over the order (the limit is then foreseen, and the walk stops there if
    /// need be).
    ///
    /// A walk's own estimate, `end × N / |C|`, assumes the kept places are spread over the
    /// order; this sees where they are.
    pub fn foresee_walk(
        &self,
        end: u64,
        limit: u64,
        evidence: u64,
        keep: impl Fn(u32) -> bool,
    ) -> Foresight {
        // Estimates are counted in twelfths of a place, so that a block of one to four probes
        // adds a whole number: `len × hits × 12 / probes`.
        const SCALE: u64 = 12;
        let (mut visited, mut expected, mut probed) = (0u64, 0u64, 0u64);
        for (b, block) in self.blocks.iter().enumerate() {
            let len = block.len();
            let probes = PROBES.min(len);
            if probes == 0 {
                continue;
            }
            let stride = len / probes;
            let hits = (0..probes)
                .filter(|k| keep(block.docs[k * stride + scatter(b, *k) % stride]))
                .count() as u64;
            probed += probes as u64;
            visited += len as u64;
            expected += len as u64 * hits * SCALE / probes as u64;
            if expected >= end.saturating_mul(SCALE) {
                return Foresight {
                    steps: Some(visited),
                    probed,
                };
            }
            if visited >= limit {
                let steps = (probed < evidence).then_some(limit);
                return Foresight { steps, probed };
            }
        }
        // The estimate fell short by the order's end, within the limit: the walk reads the
        // whole order.
        Foresight {
            steps: Some(visited),
            probed,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(Block::heap_bytes).sum::<usize>()
            + self.blocks.capacity() * std::mem::size_of::<Block>()
    }
}

#[derive(Default)]
pub struct Orders {
    sets: [Order; Sort::ALL.len()],
    /// Each order's version: bumped by every change to it, so a ranking made from it can tell
    /// whether it still holds.
    versions: [u64; Sort::ALL.len()],
}

impl Orders {
    pub fn insert(&mut self, sort: Sort, place: Place) {
        self.versions[sort.position()] += 1;
        self.sets[sort.position()].insert(place);
    }

    pub fn remove(&mut self, sort: Sort, place: &Place) {
        self.versions[sort.position()] += 1;
        self.sets[sort.position()].remove(place);
    }

    /// The order's version: equal versions, equal orders.
    pub fn version(&self, sort: Sort) -> u64 {
        self.versions[sort.position()]
    }

    /// The documents of the sort's order, in order.
    pub fn docs(&self, sort: Sort) -> impl Iterator<Item = u32> + '_ {
        self.sets[sort.position()].docs()
    }

    /// [`Order::foresee_walk`] on the sort's order.
    pub fn foresee_walk(
        &self,
        sort: Sort,
        end: u64,
        limit: u64,
        evidence: u64,
        keep: impl Fn(u32) -> bool,
    ) -> Foresight {
        self.sets[sort.position()].foresee_walk(end, limit, evidence, keep)
    }

    /// The order's documents from the `start`-th place on, reached without visiting those
    /// before it.
    pub fn docs_from(&self, sort: Sort, start: usize) -> impl Iterator<Item = u32> + '_ {
        self.sets[sort.position()].docs_from(start)
    }

    /// The places from `start` on (a place, not a rank), in order.
    pub fn iter_from_place(&self, sort: Sort, start: Place) -> impl Iterator<Item = &Place> {
        self.sets[sort.position()].iter_from_place(&start)
    }

    /// How many blocks the order is in: what a jump to a place counts over.
    pub fn blocks(&self, sort: Sort) -> u64 {
        self.sets[sort.position()].blocks.len() as u64
    }

    /// Builds one order anew from every place at once (a month's rollover).
    pub fn rebuild(&mut self, sort: Sort, mut places: Vec<Place>) {
        places.sort_unstable();
        places.dedup();
        self.versions[sort.position()] += 1;
        self.sets[sort.position()] = Order::from_sorted(places);
    }

    /// Bytes held by the orders, for the memory report.
    pub fn heap_bytes(&self) -> usize {
        self.sets.iter().map(Order::heap_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn featured_first_then_key_descending_then_id_ascending() {
        let mut places = [
            place(rank(false, 10), 1, 0),
            place(rank(true, 1), 5, 1),
            place(rank(false, 10), 0, 2),
            place(rank(false, 99), 9, 3),
            place(rank(true, 2), 7, 4),
            place(rank(false, u64::MAX), 3, 5),
        ];
        places.sort_unstable();
        let docs: Vec<u32> = places.iter().map(|p| p.3).collect();
        assert_eq!(docs, [4, 1, 5, 3, 2, 0]);
    }

    /// Inserts, removes and jumps agree with a plain sorted set, through splits and merges.
    #[test]
    fn an_order_is_a_sorted_set_that_jumps_to_a_rank() {
        let mut order = Order::default();
        let mut plain = std::collections::BTreeSet::new();
        let mut x: u64 = 12345;
        for step in 0..40_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // The document follows from the rank and id, so that the same place comes again.
            let p = place(x >> 52, u128::from(x >> 40 & 0xff), (x >> 40) as u32);
            if step % 3 == 2 || plain.len() > 3000 {
                order.remove(&p);
                plain.remove(&p);
            } else {
                order.insert(p);
                plain.insert(p);
            }
            if step % 997 == 0 {
                assert!(order.iter().eq(plain.iter()));
                assert!(
                    order.docs().eq(plain.iter().map(|p| p.3)),
                    "the column follows"
                );
            }
        }
        assert_eq!(order.len(), plain.len());
        assert!(order.iter().eq(plain.iter()));
        assert!(order.docs().eq(plain.iter().map(|p| p.3)));
        for start in [
            0,
            1,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            plain.len() / 2,
            plain.len() - 1,
            plain.len(),
            plain.len() + 5,
        ] {
            assert!(
                order
                    .docs_from(start)
                    .eq(plain.iter().skip(start).map(|p| p.3)),
                "from {start}"
            );
        }
        let mut rebuilt = Orders::default();
        rebuilt.rebuild(Sort::Votes, plain.iter().copied().collect());
        assert!(rebuilt
            .docs_from(Sort::Votes, 777)
            .eq(plain.iter().skip(777).map(|p| p.3)));
    }

    /// A forecast sees where the kept places are: spread, it expects about as many places as
    /// the walk visits (within a few blocks for a shallow page: a tenth of the places kept,
    /// four probes a block miss them all one block in three); gathered at the far end, it gives up at its limit having read a few
    /// places a block; all kept, the first block does.
    #[test]
    fn a_forecast_sees_where_the_kept_places_are() {
        let places: Vec<Place> = (0..100_000u32)
            .map(|doc| place(u64::from(doc), 0, doc))
            .collect();
        let order = Order::from_sorted(places);
        let spread = |doc: u32| doc % 10 == 3;
        for end in [1, 50, 500, 5_000] {
            let steps = order
                .foresee_walk(end, u64::MAX, 0, spread)
                .steps
                .expect("spread");
            let true_steps = end * 10;
            assert!(
                steps <= true_steps * 2 + 8 * 384 && steps * 2 + 384 >= true_steps,
                "end {end}: foresaw {steps}, the walk visits about {true_steps}"
            );
        }
        let gathered = |doc: u32| doc >= 90_000;
        let far = order.foresee_walk(10, 50_000, 100, gathered);
        // Too few probes to tell a thin set from none: the limit is foreseen.
        assert_eq!(
            order.foresee_walk(10, 50_000, 1_000, gathered).steps,
            Some(50_000)
        );
        assert_eq!(far.steps, None);
        assert!(
            far.probed <= 50_000 / 384 * PROBES as u64 + PROBES as u64,
            "{far:?}"
        );
        assert_eq!(order.foresee_walk(10, 50_000, 0, |_| true).steps, Some(384));
    }

    #[test]
    fn id_halves_keep_uuid_order() {
        let low = place(0, 1u128 << 64, 0);
        let high = place(0, (1u128 << 64) + 1, 0);
        let higher = place(0, 2u128 << 64, 0);
        assert!(low < high && high < higher);
    }
}
