//! Every document's sort keys by document number: its bot's id and its rank in each order, one
//! column each.
//!
//! A ranking (`way.rs`) reads the keys of every candidate, in document order. Held in each
//! document's entry, a candidate of a sparse set cost a cache and TLB miss of its own (an
//! entry is about 90 bytes, so the 30,000 candidates of a set in 1,000,000 bots are 3 KB
//! apart); in columns it reads 24 bytes from two arrays it walks forward, a few candidates per
//! page, which the prefetcher follows. The orders hold the same keys: a document's place in an
//! order is made from these, so a place removed is the place once inserted.

use crate::domain::search::Sort;

use super::orders::{place, Place};

const ORDERS: usize = Sort::ALL.len();

#[derive(Default)]
pub struct Keys {
    ids: Vec<u128>,
    ranks: [Vec<u64>; ORDERS],
}

impl Keys {
    /// Sets a document's keys (a new document, or a number handed out again).
    pub fn set(&mut self, doc: u32, id: u128, ranks: [u64; ORDERS]) {
        let at = doc as usize;
        if at >= self.ids.len() {
            self.ids.resize(at + 1, 0);
            for column in &mut self.ranks {
                column.resize(at + 1, 0);
            }
        }
        self.ids[at] = id;
        for (column, rank) in self.ranks.iter_mut().zip(ranks) {
            column[at] = rank;
        }
    }

    /// Sets one rank of a document already set.
    pub fn set_rank(&mut self, order: usize, doc: u32, rank: u64) {
        self.ranks[order][doc as usize] = rank;
    }

    /// A document's bot id, as a number.
    pub fn id(&self, doc: u32) -> u128 {
        self.ids[doc as usize]
    }

    /// A document's rank in the order at `order` (its position in `Sort::ALL`).
    pub fn rank(&self, order: usize, doc: u32) -> u64 {
        self.ranks[order][doc as usize]
    }

    /// A document's place in the order at `order`, as the order holds it; `None` for a number
    /// never set.
    pub fn place(&self, order: usize, doc: u32) -> Option<Place> {
        let at = doc as usize;
        Some(place(*self.ranks[order].get(at)?, *self.ids.get(at)?, doc))
    }

    pub fn heap_bytes(&self) -> usize {
        self.ids.capacity() * std::mem::size_of::<u128>()
            + self
                .ranks
                .iter()
                .map(|column| column.capacity() * std::mem::size_of::<u64>())
                .sum::<usize>()
    }
}
