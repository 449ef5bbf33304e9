//! The n-gram index behind `q`: one bitmap of documents per distinct 1-, 2- and 3-byte gram of
//! each bot's case-folded name and short description.
//!
//! A needle of at most 3 bytes is itself a gram, so its bitmap is the exact answer. A longer
//! needle can only occur where all of its trigrams do: their intersection holds every match, and
//! each candidate is then verified against the text.
//!
//! Each gram is kept twice, once for the names it is in and once for the descriptions
//! ([`IN_DESCRIPTION`] in its key): `q` reads the union of the two, and `sort=relevance` the
//! names' alone, which tells "in the name" from "only in the description" for a short `q`
//! without reading a single name (docs/SEARCH.md, "relevance").

use std::borrow::Cow;

use roaring::RoaringBitmap;
use rustc_hash::FxHashMap;

/// Joins the two searched fields. Never valid UTF-8, so no needle contains it and no gram that
/// spans it is ever asked for: a match can never run from the name into the description.
pub(crate) const SEPARATOR: u8 = 0xFF;

/// The longest gram kept; needles up to this length are answered without verification.
pub const MAX_GRAM: usize = 3;

/// A gram as one number: its bytes, then its length, so grams of different lengths never share
/// a key (`"a"` and `"\0a"` differ).
pub(crate) fn key(gram: &[u8]) -> u32 {
    let bytes = gram.iter().fold(0u32, |k, &b| (k << 8) | u32::from(b));
    (bytes << 2) | gram.len() as u32
}

/// Marks the key of a gram that is in the short description (without it: in the name).
pub(crate) const IN_DESCRIPTION: u32 = 1 << 26;

/// Bits of a gram's key: 3 bytes, a 2-bit length and the field.
const KEY_BITS: u32 = 27;

/// Sorts (gram << 32 | document) pairs, gathered in document order, by gram, keeping that
/// order among equal grams, so that they end sorted by gram then document: a radix sort on
/// the key's 26 bits, in three passes of 9, through `spare` (kept by the caller, so a block
/// after the first touches no new memory). Sorting the millions of pairs of a start by
/// comparison took a tenth of its CPU time.
fn sort_by_gram(pairs: &mut Vec<u64>, spare: &mut Vec<u64>) {
    const DIGIT: u32 = 9;
    const PASSES: u32 = KEY_BITS.div_ceil(DIGIT);
    const MASK: u64 = (1 << DIGIT) - 1;
    spare.clear();
    spare.resize(pairs.len(), 0);
    for pass in 0..PASSES {
        let shift = 32 + pass * DIGIT;
        let mut starts = [0usize; 1 << DIGIT];
        for &pair in pairs.iter() {
            starts[((pair >> shift) & MASK) as usize] += 1;
        }
        let mut next = 0;
        for start in &mut starts {
            (*start, next) = (next, next + *start);
        }
        for &pair in pairs.iter() {
            let digit = ((pair >> shift) & MASK) as usize;
            spare[starts[digit]] = pair;
            starts[digit] += 1;
        }
        std::mem::swap(pairs, spare);
    }
}

/// The text a bot is found by: the folded name and short description, joined.
pub fn searched_text(name: &str, short_description: &str) -> Vec<u8> {
    let mut text = Vec::with_capacity(name.len() + 1 + short_description.len());
    text.extend_from_slice(name.as_bytes());
    text.push(SEPARATOR);
    text.extend_from_slice(short_description.as_bytes());
    text
}

/// Every distinct gram of the text with its field, sorted; none spans the separator.
pub fn grams_of(text: &[u8]) -> Vec<u32> {
    let mut grams = Vec::with_capacity(text.len() * MAX_GRAM);
    each_gram(text, |gram| grams.push(gram));
    grams.sort_unstable();
    grams.dedup();
    grams
}

/// Every gram of the text with its field, in text order, repeats included.
fn each_gram(text: &[u8], mut each: impl FnMut(u32)) {
    let mut field = 0;
    for start in 0..text.len() {
        if text[start] == SEPARATOR {
            field = IN_DESCRIPTION;
        }
        for len in 1..=MAX_GRAM {
            match text.get(start..start + len) {
                Some(gram) if !gram.contains(&SEPARATOR) => each(key(gram) | field),
                _ => break,
            }
        }
    }
}

/// Documents whose (gram, document) pairs [`Grams::build_run`] gathers and sorts at once:
/// about 5 MB of pairs, used again for each block, so the run's pairs are never all in
/// memory at once.
const BLOCK: usize = 2048;

/// The trigrams of a needle longer than [`MAX_GRAM`] bytes, each once.
fn trigrams_of(needle: &[u8]) -> Vec<u32> {
    let mut grams: Vec<u32> = needle.windows(MAX_GRAM).map(key).collect();
    grams.sort_unstable();
    grams.dedup();
    grams
}

#[derive(Default)]
pub struct Grams {
    bitmaps: FxHashMap<u32, RoaringBitmap>,
}

/// Adds a document to a bitmap. Never `try_push`: to append, roaring finds a dense
/// container's highest member by scanning its 1,024 words from the end, about 500 words for
/// every document added in order; the start-up's floors, tags and buckets paid 8% of all its
/// CPU there. `insert` sets the bit (dense) or searches 12 steps at most (sparse).
pub fn add_doc(bitmap: &mut RoaringBitmap, doc: u32) {
    bitmap.insert(doc);
}

/// A set from documents given in ascending order, each appended without a search.
pub fn ascending_set(docs: &[u32]) -> RoaringBitmap {
    let docs = docs.iter().copied();
    // Ascending and distinct wherever this is called; collected in any order all the same.
    RoaringBitmap::from_sorted_iter(docs.clone()).unwrap_or_else(|_| docs.collect())
}

/// What the gram index can say about a needle.
pub enum Lookup<'a> {
    /// Exactly the documents that contain the needle.
    Exact(Option<Cow<'a, RoaringBitmap>>),
    /// A superset of them: every candidate must be verified against its text.
    Candidates(Vec<Cow<'a, RoaringBitmap>>),
}

impl Grams {
    pub fn add(&mut self, doc: u32, grams: &[u32]) {
        for gram in grams {
            add_doc(self.bitmaps.entry(*gram).or_default(), doc);
        }
    }

    /// The bitmaps of a run of documents given in document order from `first`, so every
    /// document is appended without a search. Each document's grams are computed once, by the
    /// thread that owns its run.
    ///
    /// The (gram, document) pairs of a block of documents are gathered and sorted, then each
    /// gram's documents in the block are appended to its bitmap in one call: appending to a
    /// bitmap per pair, in a different bitmap each time, was a cache miss per pair and the
    /// largest cost of startup. A block at a time, in buffers used again: the pairs of the
    /// whole run (and the radix sort's second buffer, and the copies as they grew) were
    /// hundreds of megabytes of fresh pages, and faulting them in was half of this function's
    /// time. A document's grams are neither sorted nor made distinct first: the sort groups
    /// them, and a repeat is skipped as it is appended.
    pub fn build_run(texts: impl Iterator<Item = Vec<u8>>, first: u32) -> Self {
        let mut grams = Self::default();
        let (mut pairs, mut spare) = (Vec::new(), Vec::new());
        let mut in_block = 0;
        for (doc, text) in (first..).zip(texts) {
            each_gram(&text, |gram| {
                pairs.push((u64::from(gram) << 32) | u64::from(doc))
            });
            in_block += 1;
            if in_block == BLOCK {
                grams.file_block(&mut pairs, &mut spare);
                in_block = 0;
            }
        }
        grams.file_block(&mut pairs, &mut spare);
        grams
    }

    /// Files a block's pairs, of documents after every one filed before, and empties them.
    fn file_block(&mut self, pairs: &mut Vec<u64>, spare: &mut Vec<u64>) {
        sort_by_gram(pairs, spare);
        for run in pairs.chunk_by(|a, b| a >> 32 == b >> 32) {
            let gram = (run[0] >> 32) as u32;
            let mut last = None;
            // Ascending, a document's repeats of the gram side by side: each is kept once.
            let docs = run
                .iter()
                .map(|&pair| pair as u32)
                .filter(move |&doc| last.replace(doc) != Some(doc));
            let bitmap = self.bitmaps.entry(gram).or_default();
            // Past every member by construction; filed one by one all the same if not.
            if bitmap.append(docs.clone()).is_err() {
                docs.for_each(|doc| add_doc(bitmap, doc));
            }
        }
        pairs.clear();
    }

    /// Joins runs built by [`Grams::build_run`], given in document order: a gram's documents in
    /// a later run all come after those in an earlier one.
    pub fn merge(runs: Vec<Grams>) -> Self {
        let mut runs = runs.into_iter();
        let mut all = runs.next().unwrap_or_default();
        for run in runs {
            all.bitmaps.reserve(run.bitmaps.len());
            for (gram, docs) in run.bitmaps {
                match all.bitmaps.entry(gram) {
                    std::collections::hash_map::Entry::Occupied(mut known) => {
                        *known.get_mut() |= docs
                    }
                    std::collections::hash_map::Entry::Vacant(new) => {
                        new.insert(docs);
                    }
                }
            }
        }
        all
    }

    pub fn remove(&mut self, doc: u32, grams: &[u32]) {
        for gram in grams {
            if let Some(bitmap) = self.bitmaps.get_mut(gram) {
                bitmap.remove(doc);
                if bitmap.is_empty() {
                    self.bitmaps.remove(gram);
                }
            }
        }
    }

    /// Re-indexes an edited text: only the grams that changed are touched. Both lists sorted.
    pub fn replace(&mut self, doc: u32, old: &[u32], new: &[u32]) {
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < new.len() {
            match (old.get(i), new.get(j)) {
                (Some(o), Some(n)) if o == n => {
                    i += 1;
                    j += 1;
                }
                (Some(o), Some(n)) if o < n => {
                    self.remove(doc, &[*o]);
                    i += 1;
                }
                (Some(o), None) => {
                    self.remove(doc, &[*o]);
                    i += 1;
                }
                (_, Some(n)) => {
                    self.add(doc, &[*n]);
                    j += 1;
                }
                (None, None) => break,
            }
        }
    }

    pub fn lookup(&self, needle: &[u8]) -> Lookup<'_> {
        if needle.len() <= MAX_GRAM {
            return Lookup::Exact(self.either(key(needle)));
        }
        let mut sets = Vec::new();
        for gram in trigrams_of(needle) {
            match self.either(gram) {
                Some(bitmap) => sets.push(bitmap),
                // A trigram no bot has: nothing can match.
                None => return Lookup::Exact(None),
            }
        }
        Lookup::Candidates(sets)
    }

    /// The documents with a gram in either field.
    fn either(&self, gram: u32) -> Option<Cow<'_, RoaringBitmap>> {
        match (
            self.bitmaps.get(&gram),
            self.bitmaps.get(&(gram | IN_DESCRIPTION)),
        ) {
            (Some(name), Some(description)) => Some(Cow::Owned(name | description)),
            (Some(one), None) | (None, Some(one)) => Some(Cow::Borrowed(one)),
            (None, None) => None,
        }
    }

    /// Exactly the documents whose name holds a needle of at most [`MAX_GRAM`] bytes.
    pub fn in_names(&self, needle: &[u8]) -> Option<&RoaringBitmap> {
        debug_assert!(needle.len() <= MAX_GRAM);
        self.bitmaps.get(&key(needle))
    }

    /// A superset of the documents whose name holds a longer needle: its trigrams' names'
    /// bitmaps intersected (`None`: no name can hold it).
    pub fn in_names_candidates(&self, needle: &[u8]) -> Option<RoaringBitmap> {
        let mut sets = Vec::new();
        for gram in trigrams_of(needle) {
            sets.push(self.bitmaps.get(&gram)?);
        }
        sets.sort_by_key(|set| set.len());
        let mut sets = sets.into_iter();
        let mut found = sets.next()?.clone();
        for set in sets {
            found &= set;
        }
        Some(found)
    }

    pub fn distinct(&self) -> usize {
        self.bitmaps.len()
    }

    /// Bytes held by the bitmaps and their map, for the memory report.
    pub fn heap_bytes(&self) -> usize {
        let bitmaps: usize = self
            .bitmaps
            .values()
            .map(|b| b.serialized_size() + std::mem::size_of::<RoaringBitmap>())
            .sum();
        bitmaps + self.bitmaps.capacity() * (std::mem::size_of::<u32>() + 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_in_document_order_end_sorted_by_gram_then_document() {
        // Gram keys up to the widest a text can make (3 bytes of 0xFE: 0xFF is the separator),
        // over documents in order, as `build_run` gathers them.
        let widest = key(&[0xFE, 0xFE, 0xFE]) | IN_DESCRIPTION;
        assert!(widest < 1 << KEY_BITS);
        let mut seed = 7u64;
        let mut pairs = Vec::new();
        for doc in 0..2_000u64 {
            for _ in 0..20 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let gram = match seed % 5 {
                    0 => widest,
                    _ => (seed >> 33) as u32 % (1 << KEY_BITS),
                };
                pairs.push((u64::from(gram) << 32) | doc);
            }
        }
        let mut expected = pairs.clone();
        expected.sort_unstable();
        sort_by_gram(&mut pairs, &mut Vec::new());
        assert_eq!(pairs, expected);
    }

    #[test]
    fn a_run_built_in_blocks_holds_what_adding_each_document_does() {
        // More than two blocks, texts with repeated grams, from a first document past 0.
        let mut seed = 11u64;
        let texts: Vec<Vec<u8>> = (0..BLOCK * 2 + 77)
            .map(|_| {
                let mut word = |len: u64| -> String {
                    (0..len)
                        .map(|_| {
                            seed = seed
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            char::from(b'a' + (seed >> 60) as u8 % 6)
                        })
                        .collect()
                };
                let (name, description) = (word(5), word(12));
                searched_text(&name, &description)
            })
            .collect();
        let first = 1_000;
        let built = Grams::build_run(texts.iter().cloned(), first);
        let mut added = Grams::default();
        for (doc, text) in (first..).zip(&texts) {
            added.add(doc, &grams_of(text));
        }
        assert_eq!(built.bitmaps, added.bitmaps);
        assert!(built.distinct() > 100);
    }

    #[test]
    fn grams_never_span_the_two_fields() {
        let text = searched_text("ab", "cd");
        let grams = grams_of(&text);
        assert!(grams.contains(&key(b"ab")));
        assert!(grams.contains(&(key(b"cd") | IN_DESCRIPTION)));
        assert!(!grams.iter().any(|g| *g & !IN_DESCRIPTION == key(b"bc")));
        assert_eq!(grams.len(), 6, "a, b, ab, c, d, cd");
    }

    #[test]
    fn grams_of_different_lengths_differ() {
        assert_ne!(key(b"a"), key(b"\0a"));
        assert_ne!(key(b"\0\0a"), key(b"\0a"));
    }

    #[test]
    fn replace_touches_only_what_changed() {
        let mut grams = Grams::default();
        let old = grams_of(b"abc");
        grams.add(7, &old);
        let new = grams_of(b"abd");
        grams.replace(7, &old, &new);
        let exact = |g: &Grams, n: &[u8]| match g.lookup(n) {
            Lookup::Exact(b) => b.is_some_and(|b| b.contains(7)),
            Lookup::Candidates(_) => unreachable!("short needle"),
        };
        assert!(exact(&grams, b"abd"));
        assert!(exact(&grams, b"ab"));
        assert!(!exact(&grams, b"abc"));
        assert!(!exact(&grams, b"c"));
    }
}
