//! The exact matches of long needles that neither the grams nor the words answer (a needle of 4
//! bytes or more holding a space or punctuation: ` and `, `wizard `), found a slice at a time
//! and remembered.
//!
//! Such a needle can only be answered by reading the text of every bot that holds all of its
//! trigrams: ` and ` is in 3 descriptions of 4 (750,000 documents at a million bots, 250 ms of
//! CPU read at once). So the reading is cut into slices of [`SLICE`] candidates in document
//! order, each done under its own read guard of the index; the server yields to its other
//! requests between two slices (`api::resources::needle_cost`), and the client pays a rate-limit
//! token for every [`PAID_READ`] candidates (docs/PERFORMANCE.md, "Needles with a space or
//! punctuation").
//!
//! An entry remembers how far its reading has come (`next`): the documents below are verified,
//! and every write that lists, edits or delists one of them re-tests it under the write lock,
//! so the part already read stays the exact answer for those documents; the documents from
//! `next` on are read later, as they are then. When the reading ends the entry is the exact
//! answer, kept exact by every write, as the last [`CAPACITY`] needles searched always were.
//! The relevance classes of the needle (which names hold it, and how) are found in the same
//! reading, from the same texts.

use memchr::memmem::Finder;
use roaring::RoaringBitmap;

use super::grams::{Lookup, MAX_GRAM, SEPARATOR};
use super::relevance::NameMatches;
use super::work::Tally;
use super::SearchIndex;
use crate::domain::search::Search;

/// Candidates read in one slice. At a million bots a candidate costs 150 to 350 ns to read on
/// a quiet machine, and a slice of 8,192 with its bitmap intersection took 5.2 to 6.1 ms of
/// CPU on a loaded one (`cargo bench --bench worst`, 2026-11-29): half that keeps a step
/// within the 5 ms a request may cost before it yields (issue 39).
pub const SLICE: u64 = 4_096;

/// Candidates a client pays one request of its rate-limit bucket for: two slices, so the
/// price of a needle did not change when the slice was halved.
pub const PAID_READ: u64 = 2 * SLICE;

/// Needles remembered, read in full or in part.
const CAPACITY: usize = 32;

struct Entry {
    needle: String,
    found: RoaringBitmap,
    classes: NameMatches,
    /// The first document not yet read; `None` once every candidate has been.
    next: Option<u32>,
}

impl Entry {
    /// Whether a write to `doc` must be re-tested here: it was read already.
    fn covers(&self, doc: u32) -> bool {
        self.next.is_none_or(|next| doc < next)
    }
}

/// How far a needle's reading has come.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Progress {
    /// Never read, or forgotten: from document 0.
    Unread,
    /// Read below this document.
    ReadTo(u32),
    /// Read in full: the exact answer.
    Done,
}

impl Progress {
    /// The first document still to read, `None` when none is.
    pub fn next(self) -> Option<u32> {
        match self {
            Self::Unread => Some(0),
            Self::ReadTo(next) => Some(next),
            Self::Done => None,
        }
    }
}

/// One slice's reading: the documents from `from` up to `upto` (or to the end, `None`).
pub(super) struct Slice {
    pub from: u32,
    pub upto: Option<u32>,
    pub found: RoaringBitmap,
    pub classes: NameMatches,
}

#[derive(Default)]
pub(super) struct NeedleCache {
    /// Most recently used last; searches fill it under the index's read lock, hence the mutex.
    entries: parking_lot::Mutex<Vec<Entry>>,
}

impl NeedleCache {
    pub fn progress(&self, needle: &str) -> Progress {
        let entries = self.entries.lock();
        match entries.iter().find(|e| e.needle == needle) {
            None => Progress::Unread,
            Some(entry) => entry.next.map_or(Progress::Done, Progress::ReadTo),
        }
    }

    /// The exact matches of a needle read in full (and its name classes); `None` otherwise.
    pub fn get(&self, needle: &str) -> Option<(RoaringBitmap, NameMatches)> {
        let mut entries = self.entries.lock();
        let at = entries
            .iter()
            .position(|e| e.needle == needle && e.next.is_none())?;
        let entry = entries.remove(at);
        let answer = (entry.found.clone(), entry.classes.clone());
        entries.push(entry);
        Some(answer)
    }

    /// Adds a slice's reading, if it continues the entry where it stood (another search of
    /// the same needle may have read the same slice meanwhile: the first one counts). A slice
    /// from document 0 starts an entry; one whose entry was forgotten is dropped.
    pub fn commit(&self, needle: &str, slice: Slice) {
        let mut entries = self.entries.lock();
        match entries.iter().position(|e| e.needle == needle) {
            Some(at) => {
                let mut entry = entries.remove(at);
                if entry.next == Some(slice.from) {
                    entry.found |= slice.found;
                    entry.classes.join(slice.classes);
                    entry.next = slice.upto;
                } else if slice.from == 0 && slice.upto.is_none() && entry.next.is_some() {
                    // A reading in full, done under one read guard, is exact as it stands.
                    (entry.found, entry.classes, entry.next) = (slice.found, slice.classes, None);
                }
                entries.push(entry);
            }
            None if slice.from == 0 => {
                if entries.len() >= CAPACITY {
                    // The oldest needle read in full goes first: a reading under way is paid
                    // for by a client still waiting for it.
                    let at = entries.iter().position(|e| e.next.is_none()).unwrap_or(0);
                    entries.remove(at);
                }
                entries.push(Entry {
                    needle: needle.to_owned(),
                    found: slice.found,
                    classes: slice.classes,
                    next: slice.upto,
                });
            }
            None => {}
        }
    }

    /// A document's text is new or changed: it matches each needle or not, afresh, where the
    /// reading has passed it.
    pub fn retest(&mut self, doc: u32, text: &[u8]) {
        let name = memchr::memchr(super::grams::SEPARATOR, text).map_or(text, |at| &text[..at]);
        let name = std::str::from_utf8(name).unwrap_or("");
        for entry in self.entries.get_mut().iter_mut() {
            if !entry.covers(doc) {
                continue;
            }
            if memchr::memmem::find(text, entry.needle.as_bytes()).is_some() {
                entry.found.insert(doc);
            } else {
                entry.found.remove(doc);
            }
            entry.classes.retest(doc, name, &entry.needle);
        }
    }

    pub fn forget(&mut self, doc: u32) {
        for entry in self.entries.get_mut().iter_mut() {
            entry.found.remove(doc);
            entry.classes.forget(doc);
        }
    }

    pub fn clear(&self) {
        self.entries.lock().clear();
    }
}

/// Whether only a reading of texts answers a needle: longer than a gram (a gram's bitmap is
/// exact) and not made only of letters and digits (the words answer those).
fn only_read(needle: &str) -> bool {
    needle.len() > MAX_GRAM && !super::words::answers(needle)
}

impl SearchIndex {
    /// The needles of a search that only a reading answers: `q`, each word of `match=words`,
    /// the needle `sort=relevance` ranks by.
    fn needles_to_read(search: &Search) -> Vec<&str> {
        let mut needles: Vec<&str> = search
            .text
            .iter()
            .chain(search.words.iter().flatten())
            .chain(&search.relevance)
            .map(String::as_str)
            .filter(|needle| only_read(needle))
            .collect();
        needles.sort_unstable();
        needles.dedup();
        needles
    }

    /// Candidates a search still has to read before it can be answered from sets alone: 0 for
    /// nearly every search. Costs the needles' trigram intersections.
    pub fn left_to_read(&self, search: &Search) -> u64 {
        let tally = Tally::default();
        Self::needles_to_read(search)
            .into_iter()
            .filter_map(|needle| {
                let next = self.needles.progress(needle).next()?;
                let candidates = self.long_candidates(needle, &tally)?;
                Some(candidates.range_cardinality(next..))
            })
            .sum()
    }

    /// Reads one slice ([`SLICE`] candidates) of the first needle of the search not yet read
    /// in full and remembers it; `true` when nothing is left to read, `false` when more is.
    pub fn read_slice(&self, search: &Search) -> (bool, crate::domain::search::Work) {
        self.read_slice_of(search, SLICE)
    }

    /// [`SearchIndex::read_slice`] with slices of `most` candidates: for the tests, which cut
    /// a small directory's reading into many slices with writes between them.
    #[doc(hidden)]
    pub fn read_slice_of(&self, search: &Search, most: u64) -> (bool, crate::domain::search::Work) {
        let tally = Tally::default();
        let needles = Self::needles_to_read(search);
        let unread = needles
            .iter()
            .find_map(|needle| Some((*needle, self.needles.progress(needle).next()?)));
        let Some((needle, next)) = unread else {
            return (true, tally.work());
        };
        let slice = self.read_from(needle, next, most.max(1), &tally);
        let last = slice.upto.is_none();
        self.needles.commit(needle, slice);
        let done = last
            && needles
                .iter()
                .all(|n| self.needles.progress(n) == Progress::Done);
        (done, tally.work())
    }

    /// The exact matches of a needle only a reading answers, and its name classes: remembered,
    /// or read now in full (a search not cut into slices: tests, benches, or a reading forgotten
    /// between its last slice and its page).
    pub(super) fn read_in_full(&self, needle: &str, tally: &Tally) -> (RoaringBitmap, NameMatches) {
        if let Some(answer) = self.needles.get(needle) {
            return answer;
        }
        let slice = self.read_from(needle, 0, u64::MAX, tally);
        let answer = (slice.found.clone(), slice.classes.clone());
        self.needles.commit(needle, slice);
        answer
    }

    /// A superset of the documents holding a long needle: its trigrams' bitmaps intersected,
    /// smallest first; `None` when no document can hold it.
    fn long_candidates(&self, needle: &str, tally: &Tally) -> Option<RoaringBitmap> {
        let Lookup::Candidates(mut grams) = self.grams.lookup(needle.as_bytes()) else {
            return None;
        };
        grams.sort_by_key(|set| set.len());
        let mut grams = grams.into_iter();
        let first = grams.next()?;
        tally.combine(&first);
        let mut found = first.into_owned();
        for set in grams {
            tally.combine(&set);
            found &= set.as_ref();
        }
        Some(found)
    }

    /// Reads up to `most` candidates of a needle from document `from`, in document order: those
    /// whose text holds it, and the class of each whose name does (the leftmost match is in the
    /// name exactly when the name holds it: no needle holds the separator).
    fn read_from(&self, needle: &str, from: u32, most: u64, tally: &Tally) -> Slice {
        let mut slice = Slice {
            from,
            upto: None,
            found: RoaringBitmap::new(),
            classes: NameMatches::default(),
        };
        let Some(candidates) = self.long_candidates(needle, tally) else {
            return slice;
        };
        let finder = Finder::new(needle.as_bytes());
        let mut docs = candidates.iter();
        docs.advance_to(from);
        let mut read = 0;
        for doc in docs {
            if read == most {
                slice.upto = Some(doc);
                break;
            }
            read += 1;
            let Some(entry) = self.doc(doc) else { continue };
            let text = self.texts.get(entry.text);
            let Some(at) = finder.find(text) else {
                continue;
            };
            super::grams::add_doc(&mut slice.found, doc);
            let name_len = memchr::memchr(SEPARATOR, text).unwrap_or(text.len());
            if at < name_len {
                let name = std::str::from_utf8(&text[..name_len]).unwrap_or("");
                slice.classes.retest(doc, name, needle);
            }
        }
        tally.read(read);
        slice
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(from: u32, upto: Option<u32>, docs: &[u32]) -> Slice {
        Slice {
            from,
            upto,
            found: docs.iter().copied().collect(),
            classes: NameMatches::default(),
        }
    }

    #[test]
    fn slices_count_only_where_the_reading_stands() {
        let cache = NeedleCache::default();
        assert_eq!(cache.progress(" and "), Progress::Unread);
        // A slice of a forgotten reading does not start one.
        cache.commit(" and ", slice(10, Some(20), &[12]));
        assert_eq!(cache.progress(" and "), Progress::Unread);
        cache.commit(" and ", slice(0, Some(10), &[3]));
        // The same slice read twice by two searches: the second is dropped.
        cache.commit(" and ", slice(0, Some(10), &[4]));
        assert_eq!(cache.progress(" and "), Progress::ReadTo(10));
        assert!(cache.get(" and ").is_none(), "not read in full");
        cache.commit(" and ", slice(10, None, &[15]));
        assert_eq!(cache.progress(" and "), Progress::Done);
        let (found, _) = cache.get(" and ").expect("read in full");
        assert_eq!(found.iter().collect::<Vec<_>>(), [3, 15]);
    }

    #[test]
    fn a_write_is_retested_only_where_the_reading_has_passed() {
        let mut cache = NeedleCache::default();
        cache.commit(" and ", slice(0, Some(10), &[3]));
        cache.retest(3, b"gone\xffnothing here");
        cache.retest(5, b"x\xffcats and dogs");
        // Past the reading: read later, as it is then.
        cache.retest(12, b"x\xffcats and dogs");
        cache.commit(" and ", slice(10, None, &[]));
        let (found, _) = cache.get(" and ").expect("read in full");
        assert_eq!(found.iter().collect::<Vec<_>>(), [5]);
    }

    #[test]
    fn a_reading_under_way_outlives_the_needles_read_in_full() {
        let cache = NeedleCache::default();
        cache.commit("under way", slice(0, Some(1), &[]));
        for n in 0..CAPACITY {
            cache.commit(&format!("needle {n}"), slice(0, None, &[]));
        }
        assert_eq!(cache.progress("under way"), Progress::ReadTo(1));
        assert_eq!(cache.progress("needle 0"), Progress::Unread);
    }
}
