//! One maintained order per sort key, iterated in response order: featured first, the key
//! descending, the listing id ascending.

use std::collections::BTreeSet;

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

#[derive(Default)]
pub struct Orders {
    sets: [BTreeSet<Place>; Sort::ALL.len()],
}

impl Orders {
    pub fn insert(&mut self, sort: Sort, place: Place) {
        self.sets[sort.position()].insert(place);
    }

    pub fn remove(&mut self, sort: Sort, place: &Place) {
        self.sets[sort.position()].remove(place);
    }

    pub fn iter(&self, sort: Sort) -> impl Iterator<Item = &Place> {
        self.sets[sort.position()].iter()
    }

    /// The places from `start` on, in order.
    pub fn iter_from(&self, sort: Sort, start: Place) -> impl Iterator<Item = &Place> {
        self.sets[sort.position()].range(start..)
    }

    /// Builds one order anew from every place at once (a month's rollover).
    pub fn rebuild(&mut self, sort: Sort, mut places: Vec<Place>) {
        places.sort_unstable();
        self.sets[sort.position()] = places.into_iter().collect();
    }

    /// Bytes held by the orders, for the memory report: a B-tree node holds up to 11 places
    /// and is, on average, about three quarters full.
    pub fn heap_bytes(&self) -> usize {
        let places: usize = self.sets.iter().map(BTreeSet::len).sum();
        places * std::mem::size_of::<Place>() * 4 / 3
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

    #[test]
    fn id_halves_keep_uuid_order() {
        let low = place(0, 1u128 << 64, 0);
        let high = place(0, (1u128 << 64) + 1, 0);
        let higher = place(0, 2u128 << 64, 0);
        assert!(low < high && high < higher);
    }
}
