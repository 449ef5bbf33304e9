//! Counting what a search does, so that its cost can be held to a bound by a test on a machine
//! of any speed or load (`tests/search_work.rs`, docs/SEARCH.md "What a search may cost").
//! A [`Tally`] lives on the searching thread's stack for one search; nothing is shared.

use std::cell::Cell;

use roaring::RoaringBitmap;

use crate::domain::search::Work;

#[derive(Default)]
pub(crate) struct Tally {
    visited: Cell<u64>,
    read: Cell<u64>,
    postings: Cell<u64>,
}

impl Tally {
    /// Places of an order stepped over or read.
    pub fn visit(&self, places: u64) {
        self.visited.set(self.visited.get() + places);
    }

    /// Documents read one by one.
    pub fn read(&self, docs: u64) {
        self.read.set(self.read.get() + docs);
    }

    /// A bitmap taken into a union, an intersection or a difference: its cells.
    pub fn combine(&self, set: &RoaringBitmap) {
        self.postings.set(self.postings.get() + cells(set));
    }

    pub fn work(&self) -> Work {
        Work {
            visited: self.visited.get(),
            read: self.read.get(),
            postings: self.postings.get(),
        }
    }
}

/// What combining a bitmap touches: each entry of a sparse container, each 64-bit word of a
/// dense one (1,024 of them), each run of a run container.
fn cells(set: &RoaringBitmap) -> u64 {
    let s = set.statistics();
    u64::from(s.n_values_array_containers)
        + u64::from(s.n_bitset_containers) * 1024
        + s.n_bytes_run_containers / 4
        + 1
}
