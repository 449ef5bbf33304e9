//! The search index of the directory: what `GET /bots` answers from, instead of a scan.
//!
//! Each listed bot is a dense document number. Filters are bitmaps (one per tag, language,
//! invites bucket and power-of-two bucket of vote counts), `q` goes through the n-gram index,
//! and each sort key keeps its own order. A search intersects the candidate sets smallest first,
//! takes the exact total from the result, and either walks the order keeping candidates or, when
//! the candidates are few against the page's end, ranks just them.
//!
//! The index is written only where a change is published (see `actors::directory`), so it never
//! shows a write that is not durable; a search reads it under one read guard, so its total, its
//! order and its page all come from the same moment.

pub mod grams;
mod keys;
pub mod needles;
pub mod orders;
mod relevance;
mod remembered;
pub mod suggest;
pub mod way;
mod words;
mod work;

use std::borrow::Cow;
use std::sync::Arc;

use roaring::RoaringBitmap;
use rustc_hash::FxHashMap as HashMap;

use crate::domain::bot::BotView;
use crate::domain::ids::BotId;
use crate::domain::search::{Invites, Search, SearchPage, Sort, Work};
use crate::domain::time::Month;
use grams::{add_doc, ascending_set, grams_of, searched_text, Grams, Lookup};
use keys::Keys;
use needles::NeedleCache;
use orders::{place, rank, Orders, Place};
use remembered::{Candidates, Changed, Remembered};
use way::Way;
use words::{words_of, Words};
use work::Tally;

/// Vote counts are bucketed finely: 0 to 15 each in its own bucket, then sixteen buckets to
/// each doubling (the bit length and the four bits after the leading one, as a float with a
/// 4-bit mantissa), so that `votes=N` above [`VOTE_FLOORS`] reads only the bots whose count is
/// within about 6% below N's and takes the buckets above whole.
const VOTE_BUCKETS: usize = 16 + 60 * 16;
/// `votes=N` for N up to this is one bitmap, kept exact: no bot is checked per request.
const VOTE_FLOORS: u64 = 64;

fn vote_bucket(votes: u64) -> usize {
    let length = (u64::BITS - votes.leading_zeros()) as usize;
    if length <= 4 {
        return votes as usize;
    }
    let mantissa = (votes >> (length - 5)) as usize & 0xF;
    16 + (length - 5) * 16 + mantissa
}

/// The least vote count of a bucket of [`vote_bucket`].
fn vote_bucket_floor(bucket: usize) -> u64 {
    if bucket < 16 {
        return bucket as u64;
    }
    let (length, mantissa) = ((bucket - 16) / 16 + 5, (bucket - 16) % 16);
    (16 + mantissa as u64) << (length - 5)
}

/// A listed document; its id and ranks are in [`Keys`].
struct Doc {
    view: Arc<BotView>,
    /// Kept here so the `votes` filter reads no view.
    votes: u64,
    /// Where the searched text is in the arena.
    text: TextSpan,
}

pub struct SearchIndex {
    docs: Vec<Option<Doc>>,
    /// Each document's id and its rank in each order, as inserted there.
    keys: Keys,
    /// Numbers of delisted documents, handed out again before new ones.
    free: Vec<u32>,
    by_bot: HashMap<BotId, u32>,
    tags: HashMap<String, RoaringBitmap>,
    languages: HashMap<String, RoaringBitmap>,
    invites: [RoaringBitmap; Invites::ALL.len()],
    /// The featured bots, which `sort=relevance` ranks first.
    featured: RoaringBitmap,
    votes: Vec<RoaringBitmap>,
    /// `floors[k - 1]`: the bots with at least `k` votes, for `k` up to [`VOTE_FLOORS`]. A
    /// vote adds its bot to one of them at most; most bots have few votes, so most of them are
    /// in few.
    floors: Vec<RoaringBitmap>,
    grams: Grams,
    texts: TextArena,
    /// The exact matches of recently searched long needles, kept exact by every write.
    needles: NeedleCache,
    /// The candidates of recent filtered searches, and their rankings, kept exact by every
    /// write.
    remembered: Remembered,
    orders: Orders,
    /// The month the monthly order counts: votes of any other month count 0 in it.
    month: Month,
    /// Word starts of the names, for type-ahead (`suggest.rs`).
    word_starts: suggest::WordStarts,
    /// The words of the texts: a long alphanumeric needle's exact matches (`words.rs`).
    words: Words,
}

/// A document's searched text in the arena.
#[derive(Clone, Copy)]
struct TextSpan {
    start: usize,
    len: usize,
}

/// Every document's searched text, back to back: verifying a long needle's candidates reads
/// one contiguous buffer instead of following four pointers per candidate (docs/PERFORMANCE.md,
/// "routes", has what the pointer chase cost). Edits append; the buffer is compacted when more
/// than half of it is stale.
#[derive(Default)]
struct TextArena {
    bytes: Vec<u8>,
    stale: usize,
}

impl TextArena {
    fn push(&mut self, text: &[u8]) -> TextSpan {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(text);
        TextSpan {
            start,
            len: text.len(),
        }
    }

    fn get(&self, span: TextSpan) -> &[u8] {
        &self.bytes[span.start..span.start + span.len]
    }
}

impl SearchIndex {
    pub fn new(month: Month) -> Self {
        Self {
            docs: Vec::new(),
            keys: Keys::default(),
            free: Vec::new(),
            by_bot: HashMap::default(),
            tags: HashMap::default(),
            languages: HashMap::default(),
            invites: Default::default(),
            featured: RoaringBitmap::new(),
            votes: vec![RoaringBitmap::new(); VOTE_BUCKETS],
            floors: vec![RoaringBitmap::new(); VOTE_FLOORS as usize],
            grams: Grams::default(),
            texts: TextArena::default(),
            needles: NeedleCache::default(),
            remembered: Remembered::default(),
            orders: Orders::default(),
            month,
            word_starts: Default::default(),
            words: Words::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.by_bot.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_bot.is_empty()
    }

    pub fn month(&self) -> Month {
        self.month
    }

    /// Builds the index of a whole directory at once (startup). The n-gram bitmaps, most of the
    /// cost, are built on every core, each thread owning a run of the documents (so each
    /// document's grams are computed once), while this thread builds everything else.
    pub fn build(month: Month, views: Vec<Arc<BotView>>) -> Self {
        let mut index = Self::new(month);
        let parts = crate::parallel::cores();
        let run = views.len().div_ceil(parts).max(1);
        let grams = std::thread::scope(|scope| {
            let workers: Vec<_> = views
                .chunks(run)
                .enumerate()
                .map(|(part, views)| {
                    let first = (part * run) as u32;
                    scope.spawn(move || Grams::build_run(views.iter().map(|v| text_of(v)), first))
                })
                .collect();
            // Documents are numbered in the order of `views` (no number is free yet).
            let words = scope.spawn(|| Words::build(views.iter().map(|v| text_of(v))));
            index.place_all(&views);
            index.words = words
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            workers
                .into_iter()
                .map(|worker| {
                    worker
                        .join()
                        .unwrap_or_else(|e| std::panic::resume_unwind(e))
                })
                .collect::<Vec<Grams>>()
        });
        index.grams = Grams::merge(grams);
        index
    }

    /// Lists a bot; a bot already listed is updated instead.
    pub fn insert(&mut self, view: Arc<BotView>) {
        if self.by_bot.contains_key(&view.listing.id) {
            return self.update(view);
        }
        let text = text_of(&view);
        let doc = self.place(view, &text);
        self.grams.add(doc, &grams_of(&text));
        self.words.add(doc, &words_of(&text));
        self.needles.retest(doc, &text);
        if let Some(entry) = &self.docs[doc as usize] {
            self.remembered.retest(doc, &entry.view, Changed::Listing);
        }
    }

    /// Lists a bot everywhere but in the n-gram index; gives its document number.
    fn place(&mut self, view: Arc<BotView>, text: &[u8]) -> u32 {
        let id = view.listing.id;
        let doc = self.free.pop().unwrap_or(self.docs.len() as u32);
        if self.month < view.monthly.month() {
            self.roll_month(view.monthly.month());
        }
        let ranks = self.ranks_of(&view);
        let id_bits = id.as_u128();
        self.keys.set(doc, id_bits, ranks);
        for sort in Sort::ALL {
            self.orders
                .insert(sort, place(ranks[sort.position()], id_bits, doc));
        }
        self.index_filters(doc, &view, true);
        self.word_starts.add(doc, &view.listing.search_text.name);
        add_doc(
            &mut self.invites[Invites::of(view.servers()).position()],
            doc,
        );
        add_doc(&mut self.votes[vote_bucket(view.vote_count)], doc);
        self.move_floors(doc, 0, view.vote_count);
        let entry = Doc {
            votes: view.vote_count,
            view,
            text: self.texts.push(text),
        };
        match self.docs.get_mut(doc as usize) {
            Some(slot) => *slot = Some(entry),
            None => self.docs.push(Some(entry)),
        }
        self.by_bot.insert(id, doc);
        doc
    }

    /// Lists every bot of a new, empty index at once (startup), documents numbered in the
    /// order of `views`: the same index as [`SearchIndex::place`] of each in turn, but each
    /// order is sorted once and each large set built from its members in ascending order.
    /// Placing a document at a time cost a binary search and a move per order, a hash lookup
    /// and an insert per word start of the name, and one insert per vote floor the bot reaches
    /// (up to 64); on the starting thread that was the longest part of the index build.
    fn place_all(&mut self, views: &[Arc<BotView>]) {
        // `place` rolls the month forward to a newer bot's, ranking every order again in it:
        // ranking once in the newest month gives the same ranks.
        for view in views {
            if self.month < view.monthly.month() {
                self.month = view.monthly.month();
            }
        }
        let mut places: [Vec<Place>; Sort::ALL.len()] =
            std::array::from_fn(|_| Vec::with_capacity(views.len()));
        let mut starts: HashMap<u32, Vec<u32>> = HashMap::default();
        // By vote count, those at or above the highest floor together.
        let mut by_votes = vec![Vec::new(); VOTE_FLOORS as usize + 1];
        self.docs.reserve(views.len());
        self.by_bot.reserve(views.len());
        for (doc, view) in (0u32..).zip(views) {
            let id = view.listing.id;
            let ranks = self.ranks_of(view);
            for sort in Sort::ALL {
                places[sort.position()].push(place(ranks[sort.position()], id.as_u128(), doc));
            }
            self.index_filters(doc, view, true);
            for key in suggest::word_start_keys(&view.listing.search_text.name) {
                starts.entry(key).or_default().push(doc);
            }
            add_doc(
                &mut self.invites[Invites::of(view.servers()).position()],
                doc,
            );
            add_doc(&mut self.votes[vote_bucket(view.vote_count)], doc);
            by_votes[view.vote_count.min(VOTE_FLOORS) as usize].push(doc);
            let text = text_of(view);
            self.keys.set(doc, id.as_u128(), ranks);
            self.docs.push(Some(Doc {
                votes: view.vote_count,
                view: Arc::clone(view),
                text: self.texts.push(&text),
            }));
            self.by_bot.insert(id, doc);
        }
        for (sort, places) in Sort::ALL.into_iter().zip(places) {
            self.orders.rebuild(sort, places);
        }
        self.word_starts = suggest::WordStarts::from_ascending(starts);
        // `floors[k - 1]` holds the bots with at least `k` votes: from the highest floor down,
        // each is the one above it and the bots with exactly `k`.
        let mut above = RoaringBitmap::new();
        for k in (1..=VOTE_FLOORS as usize).rev() {
            above |= ascending_set(&by_votes[k]);
            self.floors[k - 1] = above.clone();
        }
    }

    /// Publishes a bot's new view: only the structures whose input changed are touched.
    pub fn update(&mut self, view: Arc<BotView>) {
        let Some(&doc) = self.by_bot.get(&view.listing.id) else {
            return;
        };
        if self.month < view.monthly.month() {
            self.roll_month(view.monthly.month());
        }
        let Some(old) = self.docs[doc as usize].take() else {
            return;
        };
        let mut text = old.text;
        if !Arc::ptr_eq(&old.view.listing, &view.listing) {
            if let Some(new) = self.reindex_listing(doc, &old.view, &view) {
                self.texts.stale += old.text.len;
                text = self.texts.push(&new);
                self.needles.retest(doc, &new);
            }
        }
        let (was, is) = (Invites::of(old.view.servers()), Invites::of(view.servers()));
        if was != is {
            self.invites[was.position()].remove(doc);
            add_doc(&mut self.invites[is.position()], doc);
        }
        let (was, is) = (
            vote_bucket(old.view.vote_count),
            vote_bucket(view.vote_count),
        );
        if was != is {
            self.votes[was].remove(doc);
            add_doc(&mut self.votes[is], doc);
        }
        self.move_floors(doc, old.view.vote_count, view.vote_count);
        if !Arc::ptr_eq(&old.view.listing, &view.listing) {
            self.remembered.retest(doc, &view, Changed::Listing);
        } else {
            if old.view.vote_count != view.vote_count {
                self.remembered.retest(doc, &view, Changed::Votes);
            }
            if old.view.servers() != view.servers() {
                self.remembered.retest(doc, &view, Changed::Servers);
            }
        }
        let ranks = self.ranks_of(&view);
        let id = self.keys.id(doc);
        for sort in Sort::ALL {
            let i = sort.position();
            let was = self.keys.rank(i, doc);
            if ranks[i] != was {
                self.orders.remove(sort, &place(was, id, doc));
                self.orders.insert(sort, place(ranks[i], id, doc));
                self.keys.set_rank(i, doc, ranks[i]);
            }
        }
        self.docs[doc as usize] = Some(Doc {
            votes: view.vote_count,
            view,
            text,
        });
        if self.texts.stale > self.texts.bytes.len() / 2 {
            self.compact_texts();
        }
    }

    /// Rewrites the text arena without its stale bytes.
    fn compact_texts(&mut self) {
        let mut fresh = TextArena {
            bytes: Vec::with_capacity(self.texts.bytes.len() - self.texts.stale),
            stale: 0,
        };
        for entry in self.docs.iter_mut().flatten() {
            entry.text = fresh.push(self.texts.get(entry.text));
        }
        self.texts = fresh;
    }

    pub fn remove(&mut self, id: BotId) {
        let Some(doc) = self.by_bot.remove(&id) else {
            return;
        };
        let Some(old) = self.docs[doc as usize].take() else {
            return;
        };
        for sort in Sort::ALL {
            if let Some(place) = self.keys.place(sort.position(), doc) {
                self.orders.remove(sort, &place);
            }
        }
        self.index_filters(doc, &old.view, false);
        self.word_starts
            .remove(doc, &old.view.listing.search_text.name);
        self.grams.remove(doc, &grams_of(self.texts.get(old.text)));
        self.words.remove(doc, &words_of(self.texts.get(old.text)));
        self.needles.forget(doc);
        self.remembered.forget(doc);
        self.texts.stale += old.text.len;
        self.invites[Invites::of(old.view.servers()).position()].remove(doc);
        self.votes[vote_bucket(old.view.vote_count)].remove(doc);
        self.move_floors(doc, old.view.vote_count, 0);
        self.free.push(doc);
    }

    /// Makes `month` the counted month: every rank is computed anew, and each order whose ranks
    /// changed (the monthly one: its key reads the month) is rebuilt in one pass (a few
    /// milliseconds at 100,000 bots, once a month).
    pub fn roll_month(&mut self, month: Month) {
        self.month = month;
        for sort in Sort::ALL {
            let i = sort.position();
            let mut changed = false;
            let mut places = Vec::with_capacity(self.by_bot.len());
            for (doc, slot) in self.docs.iter().enumerate() {
                if let Some(entry) = slot {
                    let doc = doc as u32;
                    let rank = rank_of(sort, &entry.view, month);
                    changed |= rank != self.keys.rank(i, doc);
                    self.keys.set_rank(i, doc, rank);
                    places.extend(self.keys.place(i, doc));
                }
            }
            if changed {
                self.orders.rebuild(sort, places);
            }
        }
    }

    fn ranks_of(&self, view: &BotView) -> [u64; Sort::ALL.len()] {
        Sort::ALL.map(|sort| rank_of(sort, view, self.month))
    }

    /// Adds (or removes) a document to the tag and language sets of its listing.
    fn index_filters(&mut self, doc: u32, view: &BotView, add: bool) {
        let listing = &*view.listing;
        for tag in listing.tags.iter() {
            toggle(&mut self.tags, tag.as_str(), doc, add);
        }
        if let Some(code) = &listing.language_code {
            toggle(&mut self.languages, code.as_str(), doc, add);
        }
        if listing.featured {
            if add {
                add_doc(&mut self.featured, doc);
            } else {
                self.featured.remove(doc);
            }
        }
    }

    /// Moves a document between the sets its edit changed; gives back its new searched text
    /// when that changed.
    fn reindex_listing(&mut self, doc: u32, old: &BotView, new: &BotView) -> Option<Vec<u8>> {
        let (was, is) = (&*old.listing, &*new.listing);
        if was.tags != is.tags {
            for tag in was.tags.iter() {
                toggle(&mut self.tags, tag.as_str(), doc, false);
            }
            for tag in is.tags.iter() {
                toggle(&mut self.tags, tag.as_str(), doc, true);
            }
        }
        if was.featured != is.featured {
            if is.featured {
                self.featured.insert(doc);
            } else {
                self.featured.remove(doc);
            }
        }
        if was.language_code != is.language_code {
            if let Some(code) = &was.language_code {
                toggle(&mut self.languages, code.as_str(), doc, false);
            }
            if let Some(code) = &is.language_code {
                toggle(&mut self.languages, code.as_str(), doc, true);
            }
        }
        if was.search_text == is.search_text {
            return None;
        }
        if was.search_text.name != is.search_text.name {
            self.word_starts.remove(doc, &was.search_text.name);
            self.word_starts.add(doc, &is.search_text.name);
        }
        let text = text_of(new);
        let was = text_of(old);
        self.grams.replace(doc, &grams_of(&was), &grams_of(&text));
        self.words.replace(doc, &words_of(&was), &words_of(&text));
        Some(text)
    }

    /// One page of a search, with the exact total, all read at one moment, and the work it
    /// took.
    pub fn search(&self, search: &Search) -> SearchPage {
        let tally = Tally::default();
        let (total, docs) = self.page(search, &tally);
        SearchPage {
            total,
            bots: docs.into_iter().map(|doc| self.view(doc)).collect(),
            work: tally.work(),
        }
    }

    fn page(&self, search: &Search, tally: &Tally) -> (u64, Vec<u32>) {
        let candidates = Remembered::key(search).map(|key| self.candidates(key, search, tally));
        let total = candidates
            .as_ref()
            .map_or(self.by_bot.len() as u64, |c| c.found.len());
        let end = search.offset.saturating_add(search.limit).min(total);
        let start = search.offset.min(end);
        if start == end {
            return (total, Vec::new());
        }
        let (start, end) = (start as usize, end as usize);
        let docs = match &candidates {
            _ if search.relevance.is_some() => {
                let found = candidates.as_ref().map(|c| &*c.found);
                self.by_relevance(search, found, start, end, tally)
            }
            // Every listed bot is a candidate: the order jumps to the page.
            None => {
                tally.visit(self.orders.blocks(search.sort) + (end - start) as u64);
                self.orders
                    .docs_from(search.sort, start)
                    .take(end - start)
                    .collect()
            }
            Some(c) => self.page_of_set(search.sort, c, start, end, tally),
        };
        (total, docs)
    }

    /// A page of the candidates in a set, by a walk of the order or a ranking of them,
    /// whichever is cheaper.
    fn page_of_set(
        &self,
        sort: Sort,
        c: &Candidates,
        start: usize,
        end: usize,
        tally: &Tally,
    ) -> Vec<u32> {
        let candidates = c.found.len();
        if self.walk_is_cheaper(end, candidates) {
            // The walk's estimate assumes the candidates are spread over the order; a set
            // gathered at its far end (a tag only the oldest bots carry, `sort=newest`) would
            // have the walk read nearly all of it. A forecast from a few places of each block
            // sees such a set before the walk and ranks it instead, once it has probed enough
            // places to expect a few hits (`FORESIGHT_HITS`) were the set spread; should it
            // be wrong, the walk still stops at what ranking costs, and ranks.
            let budget = way::walk_budget(candidates);
            let evidence = way::FORESIGHT_HITS * self.by_bot.len() as u64 / candidates.max(1);
            let keep = |doc| c.found.contains(doc);
            let foreseen = self
                .orders
                .foresee_walk(sort, end as u64, budget, evidence, keep);
            tally.visit(foreseen.probed);
            if foreseen.steps.is_some() {
                if let Some(page) = self.walk_within(sort, start, end, keep, budget, tally) {
                    return page;
                }
            }
        }
        self.ranked_page(sort, c, start, end, tally)
    }

    /// [`SearchIndex::walk`] that gives up (`None`) after visiting `budget` places.
    fn walk_within(
        &self,
        sort: Sort,
        start: usize,
        end: usize,
        keep: impl Fn(u32) -> bool,
        budget: u64,
        tally: &Tally,
    ) -> Option<Vec<u32>> {
        let mut page = Vec::with_capacity(end - start);
        let mut kept = 0;
        for (visited, doc) in self.orders.docs(sort).enumerate() {
            if visited as u64 >= budget {
                return None;
            }
            tally.visit(1);
            if !keep(doc) {
                continue;
            }
            if kept >= start {
                page.push(doc);
                if page.len() == end - start {
                    break;
                }
            }
            kept += 1;
        }
        Some(page)
    }

    /// The page of a filtered search found the way asked, not the way chosen, with the work it
    /// counted, or `None` for a search without a filter or past its total. Only for
    /// `benches/worst.rs`, which measures what a step of each way costs (`way.rs`). The
    /// candidates are remembered as a search's are, and the ranking is never kept, so that
    /// repeated calls cost the way alone.
    #[doc(hidden)]
    pub fn page_by(&self, search: &Search, way: Way) -> Option<(Vec<u32>, Work)> {
        let tally = Tally::default();
        let key = Remembered::key(search)?;
        let c = self.candidates(key, search, &tally);
        let end = search
            .offset
            .saturating_add(search.limit)
            .min(c.found.len()) as usize;
        let start = (search.offset as usize).min(end);
        if start == end {
            return None;
        }
        let tally = Tally::default();
        let keep = |doc| c.found.contains(doc);
        let page = match way {
            Way::Walk => self.walk(search.sort, start, end, keep, &tally),
            Way::Rank => self.select(search.sort, &c.found, start, end, &tally),
        };
        Some((page, tally.work()))
    }

    /// Walking an order visits about `end * N / |C|` places; ranking the candidates reads
    /// `|C|` documents: the cheaper by their measured costs (`way.rs`).
    fn walk_is_cheaper(&self, end: usize, candidates: u64) -> bool {
        way::choose(end as u64, self.by_bot.len() as u64, candidates) == Way::Walk
    }

    fn walk(
        &self,
        sort: Sort,
        start: usize,
        end: usize,
        keep: impl Fn(u32) -> bool,
        tally: &Tally,
    ) -> Vec<u32> {
        // No budget: it never gives up.
        self.walk_within(sort, start, end, keep, u64::MAX, tally)
            .unwrap_or_default()
    }

    /// A page of candidates too few to walk the order for: from their ranking kept by
    /// [`Remembered`] while it holds, else ranked here (just the page, or all of them to keep
    /// when the same ranking was asked for twice in a row).
    fn ranked_page(
        &self,
        sort: Sort,
        candidates: &Candidates,
        start: usize,
        end: usize,
        tally: &Tally,
    ) -> Vec<u32> {
        let (key, order, version) = (
            candidates.key.as_str(),
            self.orders.version(sort),
            candidates.version,
        );
        let slice = |docs: &[u32]| docs[start.min(docs.len())..end.min(docs.len())].to_vec();
        if let Some(docs) = self.remembered.ranked(key, sort, order, version) {
            tally.visit((end - start) as u64);
            return slice(&docs);
        }
        if self.remembered.worth_ranking(key, sort, order, version) {
            let all = candidates.found.len() as usize;
            let docs: Arc<[u32]> = self.select(sort, &candidates.found, 0, all, tally).into();
            let page = slice(&docs);
            self.remembered.keep_ranked(key, sort, order, version, docs);
            return page;
        }
        self.select(sort, &candidates.found, start, end, tally)
    }

    fn select(
        &self,
        sort: Sort,
        set: &RoaringBitmap,
        start: usize,
        end: usize,
        tally: &Tally,
    ) -> Vec<u32> {
        tally.read(set.len());
        let i = sort.position();
        let mut places: Vec<Place> = Vec::with_capacity(set.len() as usize);
        places.extend(set.iter().filter_map(|doc| self.keys.place(i, doc)));
        page_of(places, start, end, |p| p.3)
    }

    fn view(&self, doc: u32) -> Arc<BotView> {
        match self.docs.get(doc as usize) {
            Some(Some(entry)) => Arc::clone(&entry.view),
            // Every place and bitmap entry names a live document: they change together.
            _ => unreachable!("the index names document {doc} that it does not hold"),
        }
    }

    /// The documents that pass every filter of a search that has filters (`key`): remembered,
    /// or found and remembered.
    fn candidates(&self, key: String, search: &Search, tally: &Tally) -> Candidates {
        match self.remembered.get(key) {
            Ok(found) => found,
            Err(key) => {
                let found = self.intersect(search, tally).unwrap_or_default();
                self.remembered.put(key, search, found)
            }
        }
    }

    /// The documents that pass every filter, or `None` when there is no filter at all.
    fn intersect(&self, search: &Search, tally: &Tally) -> Option<RoaringBitmap> {
        let mut sets: Vec<Cow<'_, RoaringBitmap>> = Vec::new();
        if let Some(tags) = &search.tags {
            sets.push(Cow::Owned(union(
                tags.iter().filter_map(|t| self.tags.get(t)),
                tally,
            )));
        }
        if let Some(languages) = &search.languages {
            sets.push(Cow::Owned(union(
                languages.iter().filter_map(|l| self.languages.get(l)),
                tally,
            )));
        }
        if let Some(bucket) = search.invites {
            sets.push(Cow::Borrowed(&self.invites[bucket.position()]));
        }
        if let Some(min) = search.min_votes.filter(|min| *min > 0) {
            sets.push(self.with_at_least(min, tally));
        }
        if let Some(words) = &search.words {
            for word in words {
                match self.exact_matches(word, tally) {
                    Some(set) => sets.push(set),
                    None => return Some(RoaringBitmap::new()),
                }
            }
        }
        if let Some(text) = &search.text {
            match self.grams.lookup(text.as_bytes()) {
                Lookup::Exact(None) => return Some(RoaringBitmap::new()),
                Lookup::Exact(Some(set)) => sets.push(set),
                // A long alphanumeric needle: the union of the words that hold it, exact.
                Lookup::Candidates(_) if words::answers(text) => {
                    sets.push(Cow::Owned(self.words.matches(text, tally)))
                }
                // Any other long needle: read, a slice at a time when the server searches
                // (`needles.rs`), in full once and remembered, with other filters or without:
                // reading only the candidates that pass the filters would cost every request in
                // proportion to its matches.
                Lookup::Candidates(_) => sets.push(Cow::Owned(self.read_in_full(text, tally).0)),
            }
        }
        sets.sort_by_key(|set| set.len());
        let mut sets = sets.into_iter();
        let mut found = sets.next()?.into_owned();
        tally.combine(&found);
        for set in sets {
            if found.is_empty() {
                break;
            }
            tally.combine(&set);
            found &= set.as_ref();
        }
        Some(found)
    }

    fn doc(&self, doc: u32) -> Option<&Doc> {
        self.docs.get(doc as usize).and_then(Option::as_ref)
    }

    /// A document's vote count went from `was` to `is`: it joins or leaves the floors between.
    fn move_floors(&mut self, doc: u32, was: u64, is: u64) {
        let (low, high) = (was.min(is).min(VOTE_FLOORS), was.max(is).min(VOTE_FLOORS));
        for floor in &mut self.floors[low as usize..high as usize] {
            if is > was {
                add_doc(floor, doc);
            } else {
                floor.remove(doc);
            }
        }
    }

    /// Bots with at least `min` votes: one kept bitmap up to [`VOTE_FLOORS`]; above it, whole
    /// buckets above `min`'s, and a check of each bot in its own.
    fn with_at_least(&self, min: u64, tally: &Tally) -> Cow<'_, RoaringBitmap> {
        if let Some(floor) = min.checked_sub(1).and_then(|k| self.floors.get(k as usize)) {
            return Cow::Borrowed(floor);
        }
        Cow::Owned(self.scan_at_least(min, tally))
    }

    fn scan_at_least(&self, min: u64, tally: &Tally) -> RoaringBitmap {
        let own = vote_bucket(min);
        // A count at its bucket's floor takes the bucket whole; otherwise the bucket's bots
        // (counts within about 6% below `min`'s bucket's top) are checked one by one.
        let mut found = if vote_bucket_floor(own) == min {
            tally.combine(&self.votes[own]);
            self.votes[own].clone()
        } else {
            tally.read(self.votes[own].len());
            sorted_set(
                self.votes[own]
                    .iter()
                    .filter(|doc| self.doc(*doc).is_some_and(|entry| entry.votes >= min)),
            )
        };
        for bucket in self.votes[own + 1..].iter().filter(|b| !b.is_empty()) {
            tally.combine(bucket);
            found |= bucket;
        }
        found
    }

    /// Forgets every remembered needle, filter combination and ranking, so that the next
    /// search costs what a first one does: for the benches and tests that measure the worst
    /// case, which is a search nobody asked for recently.
    pub fn forget_remembered(&self) {
        self.needles.clear();
        self.remembered.clear();
    }

    /// What the index holds beyond the views it shares with the rest of the service.
    pub fn memory(&self) -> IndexMemory {
        let bitmaps = |map: &HashMap<String, RoaringBitmap>| -> usize {
            map.iter()
                .map(|(k, b)| k.capacity() + b.serialized_size() + 48)
                .sum()
        };
        let buckets: usize = self
            .invites
            .iter()
            .chain(&self.votes)
            .chain(&self.floors)
            .map(RoaringBitmap::serialized_size)
            .sum();
        IndexMemory {
            documents: self.docs.capacity() * std::mem::size_of::<Option<Doc>>()
                + self.keys.heap_bytes()
                + self.by_bot.capacity() * (std::mem::size_of::<(BotId, u32)>() + 1)
                + self.texts.bytes.capacity(),
            filters: bitmaps(&self.tags)
                + bitmaps(&self.languages)
                + buckets
                + self.remembered.heap_bytes(),
            grams: self.grams.heap_bytes() + self.word_starts.heap_bytes(),
            words: self.words.heap_bytes(),
            distinct_grams: self.grams.distinct(),
            orders: self.orders.heap_bytes(),
        }
    }
}

/// Approximate heap bytes of each part of the index.
#[derive(Debug, Clone, Copy)]
pub struct IndexMemory {
    pub documents: usize,
    pub filters: usize,
    pub grams: usize,
    pub distinct_grams: usize,
    pub orders: usize,
    /// The words of the texts (`words.rs`).
    pub words: usize,
}

impl IndexMemory {
    pub fn total(&self) -> usize {
        self.documents + self.filters + self.grams + self.orders + self.words
    }
}

fn text_of(view: &BotView) -> Vec<u8> {
    let text = &view.listing.search_text;
    searched_text(&text.name, &text.short_description)
}

/// A bot's rank in the order of `sort` ([`Sort::key`], the table's key): a time before 1970
/// ranks as 1970.
fn rank_of(sort: Sort, view: &BotView, month: Month) -> u64 {
    let key = sort.key(view, month).max(0);
    rank(
        view.listing.featured,
        u64::try_from(key).unwrap_or(u64::MAX),
    )
}

/// A set from documents in ascending order, appended without a search each.
fn sorted_set(docs: impl Iterator<Item = u32>) -> RoaringBitmap {
    let mut set = RoaringBitmap::new();
    for doc in docs {
        add_doc(&mut set, doc);
    }
    set
}

fn toggle(map: &mut HashMap<String, RoaringBitmap>, key: &str, doc: u32, add: bool) {
    if add {
        // A known key is not copied: at a start, one copy a tag a bot was a cost.
        match map.get_mut(key) {
            Some(set) => add_doc(set, doc),
            None => add_doc(map.entry(key.to_owned()).or_default(), doc),
        }
    } else if let Some(set) = map.get_mut(key) {
        set.remove(doc);
        if set.is_empty() {
            map.remove(key);
        }
    }
}

fn union<'a>(sets: impl Iterator<Item = &'a RoaringBitmap>, tally: &Tally) -> RoaringBitmap {
    let mut all = RoaringBitmap::new();
    for set in sets {
        tally.combine(set);
        all |= set;
    }
    all
}
/// Places `start..end` of `places` in order: the first `end` are selected before only they are
/// sorted, so a page of a large candidate set costs about the page, not a whole sort.
fn page_of<T: Ord, R>(
    mut places: Vec<T>,
    start: usize,
    end: usize,
    pick: impl Fn(&T) -> R,
) -> Vec<R> {
    if end < places.len() {
        places.select_nth_unstable(end - 1);
        places.truncate(end);
    }
    places.sort_unstable();
    places[start.min(places.len())..].iter().map(pick).collect()
}

#[cfg(test)]
mod tests {
    use super::{vote_bucket, vote_bucket_floor, VOTE_BUCKETS};

    /// Buckets follow the counts in order, each starting at its floor, and the last count
    /// there can be has one.
    #[test]
    fn vote_buckets_are_ordered_ranges_starting_at_their_floors() {
        let counts = (0..5_000u64)
            .chain((5..64).flat_map(|shift| [(1u64 << shift) - 1, 1 << shift, (1 << shift) + 1]))
            .chain([u64::MAX - 1, u64::MAX]);
        let mut counts: Vec<u64> = counts.collect();
        counts.sort_unstable();
        let mut last = 0;
        for votes in counts {
            let bucket = vote_bucket(votes);
            assert!(bucket < VOTE_BUCKETS, "{votes}");
            assert!(bucket >= last, "{votes} went back to bucket {bucket}");
            last = bucket;
            let floor = vote_bucket_floor(bucket);
            assert!(
                floor <= votes && vote_bucket(floor) == bucket,
                "{votes}: {floor}"
            );
            if bucket > 0 {
                assert!(vote_bucket(floor - 1) < bucket, "{votes}");
            }
        }
        assert_eq!(vote_bucket(u64::MAX), VOTE_BUCKETS - 1);
    }
}
