//! `match=words` and `sort=relevance` on the index: each word's exact matches come from the
//! n-gram bitmaps (verified and remembered like a long `q`), and relevance pages through its
//! classes a class at a time without ranking the candidates.
//!
//! Relevance orders the candidates featured first, then by class (0 the name is `q`, 1 it
//! starts with it, 2 a word of it does, 3 it holds it, 4 only the description does), then by
//! votes: within a class and a featuredness that is the votes order. Each class is a set of
//! the index (for a short `q` the name-start, word-start and name-gram bitmaps; for a longer one
//! the same sets found once by reading the names that hold its trigrams, then remembered and kept
//! exact by every write), so the classes' sizes are counts of intersections, the classes before
//! the page are skipped by their sizes, and the page comes from one or two classes like an
//! ordinary filtered page. The cost no longer grows with the matches (docs/SEARCH.md).

use std::borrow::Cow;

use roaring::RoaringBitmap;

use super::grams::{Lookup, MAX_GRAM, SEPARATOR};
use super::work::Tally;
use super::{SearchIndex, TextSpan};
use crate::domain::search::{relevance_class, Search, Sort};

/// The documents passing each test of [`relevance_class`] in its name, over every document:
/// `is` within `starts` within `word` within `has`.
#[derive(Clone, Default)]
pub(super) struct NameMatches {
    /// Class 0: the name is the needle.
    pub is: RoaringBitmap,
    /// Class 0 or 1: the name starts with it.
    pub starts: RoaringBitmap,
    /// Classes 0 to 2: a word of the name starts with it.
    pub word: RoaringBitmap,
    /// Classes 0 to 3: the name holds it.
    pub has: RoaringBitmap,
}

impl NameMatches {
    /// A document's name was listed or changed: its class afresh.
    pub fn retest(&mut self, doc: u32, name: &str, needle: &str) {
        let class = relevance_class(name, needle);
        for (set, within) in [
            (&mut self.is, class == 0),
            (&mut self.starts, class <= 1),
            (&mut self.word, class <= 2),
            (&mut self.has, class <= 3),
        ] {
            if within {
                set.insert(doc);
            } else {
                set.remove(doc);
            }
        }
    }

    /// Adds the classes of another slice of documents (`needles.rs`).
    pub fn join(&mut self, other: NameMatches) {
        self.is |= other.is;
        self.starts |= other.starts;
        self.word |= other.word;
        self.has |= other.has;
    }

    pub fn forget(&mut self, doc: u32) {
        for set in [
            &mut self.is,
            &mut self.starts,
            &mut self.word,
            &mut self.has,
        ] {
            set.remove(doc);
        }
    }
}

/// The same sets, borrowed from the index for a short needle or owned for a long one.
struct Classes<'a> {
    is: Cow<'a, RoaringBitmap>,
    starts: Cow<'a, RoaringBitmap>,
    word: Cow<'a, RoaringBitmap>,
    has: Cow<'a, RoaringBitmap>,
}

fn or_empty(set: Option<&RoaringBitmap>) -> Cow<'_, RoaringBitmap> {
    set.map_or_else(|| Cow::Owned(RoaringBitmap::new()), Cow::Borrowed)
}

impl SearchIndex {
    /// Exactly the documents whose text holds `needle`; `None` when none does.
    pub(super) fn exact_matches(
        &self,
        needle: &str,
        tally: &Tally,
    ) -> Option<Cow<'_, RoaringBitmap>> {
        match self.grams.lookup(needle.as_bytes()) {
            Lookup::Exact(None) => None,
            Lookup::Exact(Some(set)) => Some(set),
            Lookup::Candidates(_) if super::words::answers(needle) => {
                let exact = self.words.matches(needle, tally);
                (!exact.is_empty()).then_some(Cow::Owned(exact))
            }
            Lookup::Candidates(_) => {
                let exact = self.read_in_full(needle, tally).0;
                (!exact.is_empty()).then_some(Cow::Owned(exact))
            }
        }
    }

    /// The folded name of a document, from the arena (the text before the separator).
    pub(super) fn name_of(&self, span: TextSpan) -> &str {
        let text = self.texts.get(span);
        let name = text
            .iter()
            .position(|b| *b == SEPARATOR)
            .map_or(text, |at| &text[..at]);
        std::str::from_utf8(name).unwrap_or("")
    }

    /// The class sets of `q`: read off the indexes for a short one; for a longer one,
    /// remembered, or found by reading each name that holds all of its trigrams.
    fn classes(&self, q: &str, tally: &Tally) -> Classes<'_> {
        let needle = q.as_bytes();
        if needle.len() <= MAX_GRAM {
            return Classes {
                is: or_empty(self.word_starts.name_is(needle)),
                starts: or_empty(self.word_starts.name_starts(needle)),
                word: or_empty(self.word_starts.get(needle)),
                has: or_empty(self.grams.in_names(needle)),
            };
        }
        // A long alphanumeric needle: its words give the classes, exact, reading no name; any
        // other is read (`needles.rs`), in the same reading as its matches.
        let found = if super::words::answers(q) {
            self.words.classes(q, tally)
        } else {
            self.read_in_full(q, tally).1
        };
        Classes {
            is: Cow::Owned(found.is),
            starts: Cow::Owned(found.starts),
            word: Cow::Owned(found.word),
            has: Cow::Owned(found.has),
        }
    }

    /// One page ranked by relevance to `search.relevance`: the groups (featured or not, by
    /// class) before the page are skipped by their sizes, and the page is read from the groups
    /// it falls in, each in the votes order.
    pub(super) fn by_relevance(
        &self,
        search: &Search,
        candidates: Option<&RoaringBitmap>,
        start: usize,
        end: usize,
        tally: &Tally,
    ) -> Vec<u32> {
        let q = search.relevance.as_deref().unwrap_or("");
        let all;
        let found: &RoaringBitmap = match candidates {
            Some(found) => found,
            // Unreachable by `Search::parse` (relevance comes with a `q`), answered all the same.
            None => {
                all = self
                    .docs
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| d.is_some())
                    .map(|(n, _)| n as u32)
                    .collect();
                &all
            }
        };
        let classes = self.classes(q, tally);
        let mut page = Vec::with_capacity(end - start);
        let mut before = 0usize;
        for featured in [true, false] {
            if before >= end {
                break;
            }
            tally.combine(found);
            tally.combine(&self.featured);
            let group = if featured {
                found & &self.featured
            } else {
                found - &self.featured
            };
            // Group k is `within[k] - within[k - 1]`: the sets nest.
            let within = [&classes.is, &classes.starts, &classes.word, &classes.has];
            let mut counted = [0u64; 5];
            for (k, set) in within.iter().enumerate() {
                tally.combine(set);
                counted[k] = group.intersection_len(set);
            }
            counted[4] = group.len();
            let mut previous = 0;
            for (k, upto) in counted.into_iter().enumerate() {
                let size = (upto - previous) as usize;
                previous = upto;
                if before >= end {
                    break;
                }
                if size == 0 || before + size <= start {
                    before += size;
                    continue;
                }
                let mut class = if k < 4 {
                    &group & within[k].as_ref()
                } else {
                    group.clone()
                };
                if k > 0 {
                    class -= within[k - 1].as_ref();
                }
                tally.combine(&group);
                let (from, to) = (start.saturating_sub(before), (end - before).min(size));
                page.extend(if self.walk_is_cheaper(to, class.len()) {
                    self.walk(Sort::Votes, from, to, |doc| class.contains(doc), tally)
                } else {
                    self.select(Sort::Votes, &class, from, to, tally)
                });
                before += size;
            }
        }
        page
    }
}
