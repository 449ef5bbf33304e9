//! The words of the searched texts, for needles longer than a gram made only of letters and
//! digits: their exact matches without reading one document.
//!
//! A word here is a longest run of alphanumeric characters of a folded name or short
//! description. A needle made only of alphanumeric characters can only occur inside one word
//! (the characters around any occurrence that are not alphanumeric end it), so the documents
//! that hold it are exactly the union of the documents of the words that hold it. The words
//! are far fewer than the documents that use them (the benchmark's `wizard`: a few distinct
//! words against 50,000 documents at 1,000,000 bots), so a first search of a common long word
//! reads a few words and unions their bitmaps, where verifying its trigrams' candidates read
//! every matching document (docs/SEARCH.md, "What a search may cost").
//!
//! Each word is kept apart by its field and by whether it opens its field or is the whole of
//! it: that gives `sort=relevance` its four name classes the same way (the name *is* the needle,
//! *starts* with it, has a *word* starting with it, *holds* it) without reading a name.
//! Words shorter than a needle this serves (4 bytes) are not kept. The words are found by
//! their own trigram index (trigram to word numbers), verified one by one: a word is short.

use std::borrow::Borrow;

use memchr::memmem::Finder;
use roaring::RoaringBitmap;
use rustc_hash::FxHashMap;

use super::grams::{add_doc, ascending_set, key, MAX_GRAM, SEPARATOR};
use super::relevance::NameMatches;
use super::work::Tally;

/// The word is in the short description (without it: in the name).
const IN_DESCRIPTION: u8 = 1;
/// The word opens its field.
const FIRST: u8 = 2;
/// The word is the whole field.
const WHOLE: u8 = 4;

/// One word of one field, with where it stands: the word's bytes, then one byte of marks, in
/// one allocation. A word is looked up by that key as a slice ([`Borrow`]), so building the
/// index looks each occurrence up without allocating it. The order is that of (bytes, marks):
/// the marks (under 8) sort below any byte of an alphanumeric character, as an end would.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Word {
    key: Box<[u8]>,
}

impl Word {
    fn new(bytes: &[u8], marks: u8) -> Self {
        let mut key = Vec::with_capacity(bytes.len() + 1);
        Self::write_key(&mut key, bytes, marks);
        Self { key: key.into() }
    }

    /// Writes a word's key into `key`, replacing what it held.
    fn write_key(key: &mut Vec<u8>, bytes: &[u8], marks: u8) {
        key.clear();
        key.extend_from_slice(bytes);
        key.push(marks);
    }

    fn bytes(&self) -> &[u8] {
        &self.key[..self.key.len() - 1]
    }

    fn marks(&self) -> u8 {
        self.key[self.key.len() - 1]
    }
}

impl Borrow<[u8]> for Word {
    fn borrow(&self) -> &[u8] {
        &self.key
    }
}

/// The distinct words of a searched text that a needle could fall in, sorted.
pub(super) fn words_of(text: &[u8]) -> Vec<Word> {
    let mut words = Vec::new();
    each_word(text, |bytes, marks| words.push(Word::new(bytes, marks)));
    words.sort_unstable();
    words.dedup();
    words
}

/// Calls `found` with each word of a searched text that a needle could fall in, and its marks,
/// in the order of the text (repeats too).
fn each_word(text: &[u8], mut found: impl FnMut(&[u8], u8)) {
    let (name, description) = match text.iter().position(|b| *b == SEPARATOR) {
        Some(at) => (&text[..at], &text[at + 1..]),
        None => (text, &[][..]),
    };
    for (field, marks) in [(name, 0), (description, IN_DESCRIPTION)] {
        // Both fields are folded `str`s; anything else has no word.
        let Ok(field) = std::str::from_utf8(field) else {
            continue;
        };
        let mut start = None;
        for (at, c) in field
            .char_indices()
            .chain(std::iter::once((field.len(), ' ')))
        {
            match (c.is_alphanumeric(), start) {
                (true, None) => start = Some(at),
                (false, Some(from)) => {
                    start = None;
                    if at - from <= MAX_GRAM {
                        continue;
                    }
                    let mut marks = marks;
                    if from == 0 {
                        marks |= FIRST;
                        if at == field.len() {
                            marks |= WHOLE;
                        }
                    }
                    found(&field.as_bytes()[from..at], marks);
                }
                _ => {}
            }
        }
    }
}

/// Whether [`Words`] answers a needle: longer than a gram, and only alphanumeric characters.
pub(super) fn answers(needle: &str) -> bool {
    needle.len() > MAX_GRAM && needle.chars().all(char::is_alphanumeric)
}

fn trigrams(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes.windows(MAX_GRAM).map(key)
}

#[derive(Default)]
pub(super) struct Words {
    numbers: FxHashMap<Word, u32>,
    /// By word number: the word and the documents that have it; `None` once it has none.
    words: Vec<Option<(Word, RoaringBitmap)>>,
    free: Vec<u32>,
    /// Trigram key to the numbers of the words that hold it.
    grams: FxHashMap<u32, RoaringBitmap>,
}

impl Words {
    /// Builds from every document's text, in document order from 0.
    ///
    /// Each word's documents are gathered in a list and made a bitmap once, at the end: they
    /// come in ascending order, so each is a push. Inserting each into the word's bitmap as it
    /// came cost a search (or a scattered bit) per occurrence, a quarter of this thread's time
    /// at start, and this thread is the last of the index's to end.
    ///
    /// Each occurrence is looked up by a key written in one buffer, never allocated: only a
    /// new word is.
    pub fn build(texts: impl Iterator<Item = Vec<u8>>) -> Self {
        let mut numbers: FxHashMap<Word, u32> = FxHashMap::default();
        let mut gathered: Vec<(Word, Vec<u32>)> = Vec::new();
        let mut key = Vec::new();
        for (doc, text) in (0..).zip(texts) {
            each_word(&text, |bytes, marks| {
                Word::write_key(&mut key, bytes, marks);
                let number = match numbers.get(key.as_slice()) {
                    Some(number) => *number,
                    None => {
                        let number = gathered.len() as u32;
                        let word = Word {
                            key: key.as_slice().into(),
                        };
                        numbers.insert(word.clone(), number);
                        gathered.push((word, Vec::new()));
                        number
                    }
                };
                // A word twice in one text: its document once.
                let docs = &mut gathered[number as usize].1;
                if docs.last() != Some(&doc) {
                    docs.push(doc);
                }
            });
        }
        let mut grams: FxHashMap<u32, RoaringBitmap> = FxHashMap::default();
        let words = (0..)
            .zip(gathered)
            .map(|(number, (word, docs))| {
                for gram in trigrams(word.bytes()) {
                    grams.entry(gram).or_default().insert(number);
                }
                Some((word, ascending_set(&docs)))
            })
            .collect();
        Self {
            numbers,
            words,
            free: Vec::new(),
            grams,
        }
    }

    pub fn add(&mut self, doc: u32, words: &[Word]) {
        for word in words {
            let number = match self.numbers.get(word) {
                Some(number) => *number,
                None => self.new_word(word),
            };
            if let Some((_, docs)) = &mut self.words[number as usize] {
                add_doc(docs, doc);
            }
        }
    }

    fn new_word(&mut self, word: &Word) -> u32 {
        let number = self.free.pop().unwrap_or(self.words.len() as u32);
        for gram in trigrams(word.bytes()) {
            self.grams.entry(gram).or_default().insert(number);
        }
        let slot = Some((word.clone(), RoaringBitmap::new()));
        match self.words.get_mut(number as usize) {
            Some(free) => *free = slot,
            None => self.words.push(slot),
        }
        self.numbers.insert(word.clone(), number);
        number
    }

    pub fn remove(&mut self, doc: u32, words: &[Word]) {
        for word in words {
            let Some(&number) = self.numbers.get(word) else {
                continue;
            };
            let slot = &mut self.words[number as usize];
            let emptied = slot.as_mut().is_some_and(|(_, docs)| {
                docs.remove(doc);
                docs.is_empty()
            });
            if emptied {
                *slot = None;
                self.numbers.remove(word);
                self.free.push(number);
                for gram in trigrams(word.bytes()) {
                    if let Some(numbers) = self.grams.get_mut(&gram) {
                        numbers.remove(number);
                        if numbers.is_empty() {
                            self.grams.remove(&gram);
                        }
                    }
                }
            }
        }
    }

    /// Re-indexes an edited text: both lists sorted, only the words that changed are touched.
    pub fn replace(&mut self, doc: u32, old: &[Word], new: &[Word]) {
        let gone: Vec<Word> = old
            .iter()
            .filter(|w| new.binary_search(w).is_err())
            .cloned()
            .collect();
        let came: Vec<Word> = new
            .iter()
            .filter(|w| old.binary_search(w).is_err())
            .cloned()
            .collect();
        self.remove(doc, &gone);
        self.add(doc, &came);
    }

    /// The words that hold `needle` (one that [`answers`]), each read once.
    fn holding<'a>(
        &'a self,
        needle: &'a str,
        tally: &'a Tally,
    ) -> impl Iterator<Item = &'a (Word, RoaringBitmap)> + 'a {
        let mut sets: Vec<&RoaringBitmap> = Vec::new();
        let mut missing = false;
        for gram in trigrams(needle.as_bytes()) {
            match self.grams.get(&gram) {
                Some(set) => sets.push(set),
                None => missing = true,
            }
        }
        sets.sort_by_key(|set| set.len());
        let mut candidates = RoaringBitmap::new();
        if !missing {
            if let Some((first, rest)) = sets.split_first() {
                tally.combine(first);
                candidates = (*first).clone();
                for set in rest {
                    tally.combine(set);
                    candidates &= *set;
                }
            }
        }
        tally.read(candidates.len());
        let finder = Finder::new(needle.as_bytes()).into_owned();
        candidates
            .into_iter()
            .filter_map(|number| self.words.get(number as usize)?.as_ref())
            .filter(move |(word, _)| finder.find(word.bytes()).is_some())
    }

    /// Exactly the documents whose text holds `needle`, one that [`answers`].
    pub fn matches(&self, needle: &str, tally: &Tally) -> RoaringBitmap {
        let mut found = RoaringBitmap::new();
        for (_, docs) in self.holding(needle, tally) {
            tally.combine(docs);
            found |= docs;
        }
        found
    }

    /// The relevance classes of the names for `needle`, one that [`answers`].
    pub fn classes(&self, needle: &str, tally: &Tally) -> NameMatches {
        let mut found = NameMatches::default();
        let q = needle.as_bytes();
        for (word, docs) in self.holding(needle, tally) {
            if word.marks() & IN_DESCRIPTION != 0 {
                continue;
            }
            let starts = word.bytes().starts_with(q);
            for (set, within) in [
                (&mut found.has, true),
                (&mut found.word, starts),
                (&mut found.starts, starts && word.marks() & FIRST != 0),
                (
                    &mut found.is,
                    word.marks() & WHOLE != 0 && word.bytes() == q,
                ),
            ] {
                if within {
                    tally.combine(docs);
                    *set |= docs;
                }
            }
        }
        found
    }

    /// Bytes held, for the memory report: each word twice (the map's key and the list's), its
    /// bitmap, and the word trigrams' bitmaps.
    pub fn heap_bytes(&self) -> usize {
        let word = std::mem::size_of::<Word>();
        let entries: usize = self
            .words
            .iter()
            .flatten()
            .map(|(w, docs)| 2 * w.key.len() + docs.serialized_size())
            .sum();
        let slots = self.words.capacity() * std::mem::size_of::<Option<(Word, RoaringBitmap)>>();
        let map = self.numbers.capacity() * (word + 4 + 1);
        let grams: usize = self
            .grams
            .values()
            .map(|set| set.serialized_size() + std::mem::size_of::<RoaringBitmap>() + 4)
            .sum();
        entries + slots + map + grams + self.free.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::domain::search::relevance_class;

    impl Words {
        fn word(&self, number: u32) -> &Word {
            &self.words[number as usize].as_ref().expect("a live word").0
        }
    }

    fn text(name: &str, description: &str) -> Vec<u8> {
        super::super::grams::searched_text(name, description)
    }

    #[test]
    fn words_are_alphanumeric_runs_of_four_bytes_or_more_with_their_place() {
        let words = words_of(&text("wizard", "a wizard—wizards élan"));
        let found: Vec<(&[u8], u8)> = words.iter().map(|w| (w.bytes(), w.marks())).collect();
        assert!(found.contains(&(&b"wizard"[..], FIRST | WHOLE)));
        assert!(found.contains(&(&b"wizard"[..], IN_DESCRIPTION)));
        assert!(found.contains(&(&b"wizards"[..], IN_DESCRIPTION)));
        assert!(found.contains(&("élan".as_bytes(), IN_DESCRIPTION)));
        assert_eq!(found.len(), 4, "`a` is too short to keep: {found:?}");
    }

    /// Built at once, the words are numbered, hold their documents and are found by their
    /// grams exactly as when each document is added in turn.
    #[test]
    fn built_at_once_is_what_adding_one_document_at_a_time_makes() {
        let texts = [
            ("wizard", "the wizard bot"),
            ("music bot", "plays wizard rock"),
            ("groovy wizard", "wizards, wizardry, music"),
            ("", ""),
            ("wizard", "music music"),
        ];
        let texts = || texts.iter().map(|(n, d)| text(n, d));
        let built = Words::build(texts());
        let mut added = Words::default();
        for (doc, text) in (0..).zip(texts()) {
            added.add(doc, &words_of(&text));
        }
        // The same words, each with the same documents, found by the same grams, whatever
        // numbers they were given.
        let canonical = |words: &Words| {
            let docs: BTreeMap<Word, RoaringBitmap> =
                words.words.iter().flatten().cloned().collect();
            let grams: BTreeMap<u32, BTreeSet<Word>> = words
                .grams
                .iter()
                .map(|(gram, numbers)| {
                    let words = numbers.iter().map(|n| words.word(n).clone()).collect();
                    (*gram, words)
                })
                .collect();
            assert_eq!(words.numbers.len(), docs.len());
            for (word, number) in &words.numbers {
                assert_eq!(words.word(*number), word);
            }
            (docs, grams)
        };
        assert_eq!(canonical(&built), canonical(&added));
        assert!(built.free.is_empty() && added.free.is_empty());
    }

    /// The words give what a scan of the texts gives, classes too, through edits and removals.
    #[test]
    fn matches_and_classes_agree_with_a_scan() {
        let texts = [
            ("wizard", "the wizard bot"),
            ("groovy wizard", "wizards, wizardry"),
            ("wizardly", "no"),
            ("a-wizard x", "zard"),
            ("ǅwizard", "i̇wizard"),
            ("music bot", "plays wizard rock"),
        ];
        let mut words = Words::build(texts.iter().map(|(n, d)| text(n, d)));
        let check = |words: &Words, texts: &[(&str, &str)], live: &[bool]| {
            for needle in ["wizard", "izar", "zard", "wizards", "music", "ǅwiz", "rock"] {
                let tally = Tally::default();
                let mut expected = RoaringBitmap::new();
                let mut names = NameMatches::default();
                for (doc, (name, description)) in texts.iter().enumerate() {
                    if !live[doc] {
                        continue;
                    }
                    if name.contains(needle) || description.contains(needle) {
                        expected.insert(doc as u32);
                    }
                    names.retest(doc as u32, name, needle);
                    assert_eq!(
                        names.has.contains(doc as u32),
                        relevance_class(name, needle) <= 3
                    );
                }
                assert_eq!(words.matches(needle, &tally), expected, "{needle}");
                let classes = words.classes(needle, &tally);
                assert_eq!(classes.is, names.is, "is {needle}");
                assert_eq!(classes.starts, names.starts, "starts {needle}");
                assert_eq!(classes.word, names.word, "word {needle}");
                assert_eq!(classes.has, names.has, "has {needle}");
            }
        };
        let mut live = [true; 6];
        check(&words, &texts, &live);
        let mut edited = texts;
        edited[1] = ("wizardry", "none");
        words.replace(
            1,
            &words_of(&text(texts[1].0, texts[1].1)),
            &words_of(&text(edited[1].0, edited[1].1)),
        );
        check(&words, &edited, &live);
        words.remove(0, &words_of(&text(edited[0].0, edited[0].1)));
        live[0] = false;
        check(&words, &edited, &live);
        assert!(answers("wizard") && !answers("wiz") && !answers("wiz ard"));
    }
}
