//! Type-ahead (`GET /bots/suggest`): bots with a word of their name starting with `q`, by
//! `vote_count`. Each name's word starts are indexed by their first 1, 2 and 3 bytes (folded),
//! one bitmap per prefix: a `q` of up to 3 bytes is one bitmap, exactly; a longer one is the
//! bitmap of its first 3 bytes and its trigrams, each candidate then checked in the arena.
//! The answer is then either a walk of the votes order (featured and not merged back into one
//! order by `vote_count`) keeping candidates, or a ranking of just the candidates, whichever
//! is cheaper, as for `GET /bots`.

use std::borrow::Cow;
use std::sync::Arc;

use roaring::RoaringBitmap;
use rustc_hash::FxHashMap;

use super::grams::{add_doc, ascending_set, key, Lookup, MAX_GRAM};
use super::orders::Place;
use super::way;
use super::work::Tally;
use super::SearchIndex;
use crate::domain::bot::BotView;
use crate::domain::search::{starts_a_word, Sort, Work};

/// Word-start prefixes of every listed bot's folded name.
#[derive(Default)]
pub struct WordStarts {
    bitmaps: FxHashMap<u32, RoaringBitmap>,
}

/// Marks the key of a prefix of the whole name (class 1 of `sort=relevance`).
const NAME_START: u32 = 1 << 26;
/// Marks the key of a whole name of at most 3 bytes (class 0 of `sort=relevance`).
const NAME_IS: u32 = 1 << 27;

/// The sorted, distinct keys of the 1- to 3-byte prefixes of each word of a folded name (a word
/// starts where the name does and after each character that is not a letter or digit); then
/// those of the name's own start, and the name itself when it is that short, marked.
pub fn word_start_keys(name: &str) -> Vec<u32> {
    let mut keys = Vec::new();
    let bytes = name.as_bytes();
    for len in 1..=MAX_GRAM.min(bytes.len()) {
        keys.push(key(&bytes[..len]) | NAME_START);
    }
    if !bytes.is_empty() && bytes.len() <= MAX_GRAM {
        keys.push(key(bytes) | NAME_IS);
    }
    let mut previous: Option<char> = None;
    for (at, c) in name.char_indices() {
        if previous.is_none_or(|p| !p.is_alphanumeric()) {
            let rest = &name.as_bytes()[at..];
            for len in 1..=MAX_GRAM.min(rest.len()) {
                keys.push(key(&rest[..len]));
            }
        }
        previous = Some(c);
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}

impl WordStarts {
    pub fn add(&mut self, doc: u32, name: &str) {
        for k in word_start_keys(name) {
            add_doc(self.bitmaps.entry(k).or_default(), doc);
        }
    }

    /// From each key's documents in ascending order (the build of a whole index).
    pub fn from_ascending(keys: FxHashMap<u32, Vec<u32>>) -> Self {
        Self {
            bitmaps: keys
                .into_iter()
                .map(|(key, docs)| (key, ascending_set(&docs)))
                .collect(),
        }
    }

    pub fn remove(&mut self, doc: u32, name: &str) {
        for k in word_start_keys(name) {
            if let Some(set) = self.bitmaps.get_mut(&k) {
                set.remove(doc);
                if set.is_empty() {
                    self.bitmaps.remove(&k);
                }
            }
        }
    }

    pub(super) fn get(&self, prefix: &[u8]) -> Option<&RoaringBitmap> {
        self.bitmaps.get(&key(prefix))
    }

    /// The names that start with `prefix` (at most 3 bytes).
    pub(super) fn name_starts(&self, prefix: &[u8]) -> Option<&RoaringBitmap> {
        self.bitmaps.get(&(key(prefix) | NAME_START))
    }

    /// The names that are `name` (at most 3 bytes).
    pub(super) fn name_is(&self, name: &[u8]) -> Option<&RoaringBitmap> {
        self.bitmaps.get(&(key(name) | NAME_IS))
    }

    pub fn heap_bytes(&self) -> usize {
        self.bitmaps
            .values()
            .map(|b| b.serialized_size() + 48)
            .sum()
    }
}

impl SearchIndex {
    /// Up to `limit` bots with a word of their name starting with the folded `q`, by
    /// `vote_count` descending, then listing id ascending.
    pub fn suggest(&self, q: &str, limit: usize) -> Vec<Arc<BotView>> {
        self.suggest_counted(q, limit).0
    }

    /// [`SearchIndex::suggest`], with the work it took.
    pub fn suggest_counted(&self, q: &str, limit: usize) -> (Vec<Arc<BotView>>, Work) {
        let tally = Tally::default();
        let docs = self.suggested(q, limit, &tally);
        (
            docs.into_iter().map(|doc| self.view(doc)).collect(),
            tally.work(),
        )
    }

    fn suggested(&self, q: &str, limit: usize, tally: &Tally) -> Vec<u32> {
        if q.is_empty() || limit == 0 {
            return Vec::new();
        }
        let bytes = q.as_bytes();
        let Some(first) = self.word_starts.get(&bytes[..bytes.len().min(MAX_GRAM)]) else {
            return Vec::new();
        };
        // A longer `q` narrows the candidates by its trigrams, then each is checked.
        let long = bytes.len() > MAX_GRAM;
        let candidates = if long {
            tally.combine(first);
            let mut set = first.clone();
            if let Lookup::Candidates(grams) = self.grams.lookup(bytes) {
                for gram in grams {
                    if set.is_empty() {
                        break;
                    }
                    tally.combine(&gram);
                    set &= gram.as_ref();
                }
            }
            Cow::Owned(set)
        } else {
            Cow::Borrowed(first)
        };
        let keep = |doc: u32| {
            !long || {
                tally.read(1);
                self.doc(doc)
                    .is_some_and(|entry| starts_a_word(self.name_of(entry.text), q))
            }
        };
        if self.walk_is_cheaper(limit, candidates.len()) {
            if let Some(found) = self.walk_suggestions(limit, &candidates, &keep, tally) {
                return found;
            }
        }
        tally.read(candidates.len());
        let mut ranked: Vec<(u64, u128, u32)> = candidates
            .iter()
            .filter_map(|doc| {
                let entry = self.doc(doc)?;
                Some((u64::MAX - entry.votes, self.keys.id(doc), doc))
            })
            .collect();
        if long {
            // Checked in rank order, only until the answer is full: a long `q` reads
            // about `limit` names, not every candidate's.
            ranked.sort_unstable();
            return ranked
                .into_iter()
                .map(|r| r.2)
                .filter(|doc| keep(*doc))
                .take(limit)
                .collect();
        }
        if limit < ranked.len() {
            ranked.select_nth_unstable(limit - 1);
            ranked.truncate(limit);
        }
        ranked.sort_unstable();
        ranked.into_iter().map(|r| r.2).collect()
    }

    /// The walk of the votes order, if it finds the answer within what ranking the candidates
    /// would cost: the walk's estimate assumes the candidates are spread over the order and
    /// all kept, but a long `q`'s are only its trigrams' (`wizard wizard` has 2,457 at
    /// 1,000,000 bots and no name starts with it, so a walk read the whole order: 40 ms), and
    /// a short `q`'s may all sit at the order's end. `None`: ranking must answer instead.
    fn walk_suggestions(
        &self,
        limit: usize,
        candidates: &RoaringBitmap,
        keep: &impl Fn(u32) -> bool,
        tally: &Tally,
    ) -> Option<Vec<u32>> {
        let listed = self.by_bot.len() as u64;
        let expected = way::walk_steps(limit as u64, listed, candidates.len());
        let ranking = candidates.len() * way::RANK_READ_NS / way::WALK_STEP_NS;
        let budget = (2 * expected).max(ranking) + 64;
        let mut found = Vec::with_capacity(limit);
        for (visited, place) in self.by_votes().enumerate() {
            if visited as u64 >= budget {
                return None;
            }
            tally.visit(1);
            let doc = place.3;
            if candidates.contains(doc) && keep(doc) {
                found.push(doc);
                if found.len() == limit {
                    break;
                }
            }
        }
        Some(found)
    }

    /// The votes order by `vote_count` alone: its featured and other places, each already by
    /// vote count, merged.
    fn by_votes(&self) -> impl Iterator<Item = &Place> {
        let key = |place: &Place| (place.0 & !(1 << 63), place.1, place.2);
        let (mut featured, mut others) = (
            self.orders
                .iter_from_place(Sort::Votes, (0, 0, 0, 0))
                .take_while(|p| p.0 >> 63 == 0)
                .peekable(),
            self.orders
                .iter_from_place(Sort::Votes, (1 << 63, 0, 0, 0))
                .peekable(),
        );
        std::iter::from_fn(move || match (featured.peek(), others.peek()) {
            (Some(a), Some(b)) if key(a) <= key(b) => featured.next(),
            (Some(_), Some(_)) => others.next(),
            (Some(_), None) => featured.next(),
            (None, _) => others.next(),
        })
    }
}
