//! `match=words` and `sort=relevance` on the index: each word's exact matches come from the
//! n-gram bitmaps (verified and remembered like a long `q`), and relevance ranks only the
//! candidates the filters left, reading each one's folded name from the text arena.

use std::borrow::Cow;

use roaring::RoaringBitmap;

use super::grams::{Lookup, MAX_GRAM, SEPARATOR};
use super::{SearchIndex, TextSpan};
use crate::domain::search::{relevance_class, Search};

/// A candidate's place in a relevance ranking: featured first, better class, more votes, then
/// the listing id; the document rides along.
type Ranked = (bool, u8, u64, u128, u32);

impl SearchIndex {
    /// Exactly the documents whose text holds `needle`; `None` when none does.
    pub(super) fn exact_matches(&self, needle: &str) -> Option<Cow<'_, RoaringBitmap>> {
        match self.grams.lookup(needle.as_bytes()) {
            Lookup::Exact(None) => None,
            Lookup::Exact(Some(set)) => Some(Cow::Borrowed(set)),
            Lookup::Candidates(grams) => {
                let exact = match self.needles.get(needle) {
                    Some(exact) => exact,
                    None => {
                        let exact = self.verified(grams, needle);
                        self.needles.put(needle, exact.clone());
                        exact
                    }
                };
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

    /// One page ranked by relevance to `search.relevance`: every candidate is ranked (the
    /// filters have already cut them down), the page's end found by a selection and only the
    /// page sorted.
    pub(super) fn by_relevance(
        &self,
        search: &Search,
        candidates: Option<&RoaringBitmap>,
        start: usize,
        end: usize,
    ) -> Vec<u32> {
        let q = search.relevance.as_deref().unwrap_or("");
        let needle = q.as_bytes();
        let finder = memchr::memmem::Finder::new(needle);
        // The docs with a word of the name starting with `q`'s first 3 bytes: exactly class 2's
        // test for a short `q`, and for a longer one the only docs worth testing.
        let word_starts = self.word_starts.get(&needle[..needle.len().min(MAX_GRAM)]);
        let short = needle.len() <= MAX_GRAM;
        // `relevance_class` on the arena's bytes, with bitmap reads in place of string work
        // where they decide it: the string work was most of a ranking's cost.
        let class = |doc: u32, name: &[u8]| -> u8 {
            if name == needle {
                0
            } else if name.starts_with(needle) {
                1
            } else if word_starts.is_some_and(|set| set.contains(doc))
                && (short || relevance_class(std::str::from_utf8(name).unwrap_or(""), q) == 2)
            {
                2
            } else if finder.find(name).is_some() {
                3
            } else {
                4
            }
        };
        let ranked = |doc: u32| -> Option<Ranked> {
            let entry = self.doc(doc)?;
            let text = self.texts.get(entry.text);
            let name = memchr::memchr(SEPARATOR, text).map_or(text, |at| &text[..at]);
            Some((
                !entry.view.listing.featured,
                class(doc, name),
                u64::MAX - entry.votes,
                entry.id,
                doc,
            ))
        };
        let places: Vec<Ranked> = match candidates {
            Some(set) => set.iter().filter_map(ranked).collect(),
            None => (0..self.docs.len() as u32).filter_map(ranked).collect(),
        };
        super::page_of(places, start, end, |p| p.4)
    }
}
