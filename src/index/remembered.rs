//! The candidates of the last few filtered searches, and their order, kept exact by every write.
//!
//! A front end sends the same few filtered searches over and over (a category page, a common
//! word in a common category). Intersecting their sets again for each request costs in
//! proportion to the sets (a million bots: 50,000 that hold "wizard", 170,000 tagged music),
//! and ranking the candidates costs in proportion to the candidates; the page itself is 24 bots.
//! So the index remembers, for each of the last [`Remembered::CAPACITY`] filter combinations,
//! the exact set of bots that pass them, and every write that lists, edits, re-counts or
//! delists a bot re-tests it against each remembered combination that the change could affect
//! (under the index's write lock), by [`Search::matches`], the rule the tests hold the index to.
//! A remembered set is therefore always the set a fresh intersection would give now.
//!
//! Each entry also keeps its candidates ranked by a sort, stamped with the order's version and
//! the set's: valid until a rank in that order or a member of the set changes. A ranking is
//! kept only once a search finds the stamp unchanged since the search before it, so an order
//! that changes between every two searches (`sort=votes` under a stream of votes) is never
//! ranked in full, and costs what it cost before: a selection of the page.

use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::domain::bot::BotView;
use crate::domain::search::{Search, Sort};

/// What a write changed in a document, for which remembered filters to re-test.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Changed {
    /// Listed, or its listing edited: every filter may now say otherwise.
    Listing,
    /// Only its vote count: the `votes` floor.
    Votes,
    /// Only its server count: the invites bucket.
    Servers,
}

/// A ranking of an entry's candidates by one sort, or the stamp of the last search that asked.
#[derive(Clone, Default)]
struct Ranked {
    /// The order's version and the set's when this was made or last asked for.
    stamp: Option<(u64, u64)>,
    /// The candidates in the sort's order, when kept.
    docs: Option<Arc<[u32]>>,
}

struct Entry {
    key: String,
    /// The search the entry answers, for its filters.
    filters: Search,
    found: Arc<RoaringBitmap>,
    /// Bumped whenever `found` changes.
    version: u64,
    ranked: [Ranked; Sort::ALL.len()],
}

/// The answer to a remembered filter combination.
pub(super) struct Candidates {
    /// The combination's key ([`Remembered::key`]).
    pub key: String,
    pub found: Arc<RoaringBitmap>,
    /// The set's version, for [`Remembered::ranked`] and [`Remembered::keep_ranked`].
    pub version: u64,
}

#[derive(Default)]
pub(super) struct Remembered {
    /// Most recently used last; searches fill it under the index's read lock, hence the mutex.
    entries: parking_lot::Mutex<Vec<Entry>>,
}

impl Remembered {
    const CAPACITY: usize = 32;
    /// A ranking of more candidates than this is not kept: past it, walking the order is
    /// cheaper than ranking anyway, and the memory stays under a quarter of a MiB per entry.
    const MAX_RANKED: u64 = 65_536;

    /// The key of a search's filters, `None` when it has none (every bot is a candidate).
    pub fn key(search: &Search) -> Option<String> {
        use std::fmt::Write;
        let mut key = String::new();
        if let Some(text) = &search.text {
            let _ = write!(key, "q{}:{text}", text.len());
        }
        if let Some(words) = &search.words {
            for word in words {
                let _ = write!(key, "w{}:{word}", word.len());
            }
        }
        let mut sorted = |tag: char, set: &std::collections::HashSet<String>| {
            let mut items: Vec<&String> = set.iter().collect();
            items.sort_unstable();
            for item in items {
                let _ = write!(key, "{tag}{}:{item}", item.len());
            }
            // An empty list is a filter that no bot passes, unlike no list at all.
            key.push(tag);
        };
        if let Some(tags) = &search.tags {
            sorted('t', tags);
        }
        if let Some(languages) = &search.languages {
            sorted('l', languages);
        }
        if let Some(invites) = search.invites {
            let _ = write!(key, "i{}", invites.position());
        }
        if let Some(min) = search.min_votes.filter(|min| *min > 0) {
            let _ = write!(key, "v{min}");
        }
        (!key.is_empty()).then_some(key)
    }

    /// Forgets every entry (benches and tests measure a first search).
    pub fn clear(&self) {
        self.entries.lock().clear();
    }

    /// The candidates of `key`, if remembered; `Err` gives the key back.
    pub fn get(&self, key: String) -> Result<Candidates, String> {
        let mut entries = self.entries.lock();
        let Some(at) = entries.iter().position(|entry| entry.key == key) else {
            return Err(key);
        };
        let entry = entries.remove(at);
        let answer = Candidates {
            key,
            found: Arc::clone(&entry.found),
            version: entry.version,
        };
        entries.push(entry);
        Ok(answer)
    }

    pub fn put(&self, key: String, search: &Search, found: RoaringBitmap) -> Candidates {
        let found = Arc::new(found);
        let mut entries = self.entries.lock();
        if let Some(entry) = entries.iter().find(|entry| entry.key == key) {
            return Candidates {
                key,
                found: Arc::clone(&entry.found),
                version: entry.version,
            };
        }
        if entries.len() == Self::CAPACITY {
            entries.remove(0);
        }
        let mut filters = search.clone();
        filters.relevance = None;
        entries.push(Entry {
            key: key.clone(),
            filters,
            found: Arc::clone(&found),
            version: 0,
            ranked: Default::default(),
        });
        Candidates {
            key,
            found,
            version: 0,
        }
    }

    /// The candidates of `key` ranked by `sort`, if kept and still what ranking them now gives:
    /// `order` is the order's version now, `version` the set's as [`Remembered::get`] gave it.
    pub fn ranked(&self, key: &str, sort: Sort, order: u64, version: u64) -> Option<Arc<[u32]>> {
        let entries = self.entries.lock();
        let entry = entries.iter().find(|entry| entry.key == key)?;
        let ranked = &entry.ranked[sort.position()];
        if ranked.stamp != Some((order, version)) || entry.version != version {
            return None;
        }
        ranked.docs.clone()
    }

    /// After a search ranked a page of `key`'s candidates itself: whether the next one should
    /// rank them all and keep them ([`Remembered::keep_ranked`]), which is when the previous
    /// search saw the same stamp. Stamps the entry either way.
    pub fn worth_ranking(&self, key: &str, sort: Sort, order: u64, version: u64) -> bool {
        let mut entries = self.entries.lock();
        let Some(entry) = entries.iter_mut().find(|entry| entry.key == key) else {
            return false;
        };
        if entry.version != version || entry.found.len() > Self::MAX_RANKED {
            return false;
        }
        let ranked = &mut entry.ranked[sort.position()];
        let again = ranked.stamp == Some((order, version));
        ranked.stamp = Some((order, version));
        ranked.docs = None;
        again
    }

    pub fn keep_ranked(&self, key: &str, sort: Sort, order: u64, version: u64, docs: Arc<[u32]>) {
        let mut entries = self.entries.lock();
        if let Some(entry) = entries.iter_mut().find(|entry| entry.key == key) {
            if entry.version == version {
                entry.ranked[sort.position()] = Ranked {
                    stamp: Some((order, version)),
                    docs: Some(docs),
                };
            }
        }
    }

    /// A document was listed or changed as `changed` says: it passes each remembered filter
    /// combination that change could affect, or not, afresh.
    pub fn retest(&mut self, doc: u32, view: &BotView, changed: Changed) {
        for entry in self.entries.get_mut().iter_mut() {
            let filters = &entry.filters;
            let affected = match changed {
                Changed::Listing => true,
                Changed::Votes => filters.min_votes.is_some_and(|min| min > 0),
                Changed::Servers => filters.invites.is_some(),
            };
            if !affected {
                continue;
            }
            let passes = filters.matches(view);
            if passes != entry.found.contains(doc) {
                let found = Arc::make_mut(&mut entry.found);
                if passes {
                    found.insert(doc);
                } else {
                    found.remove(doc);
                }
                entry.version += 1;
            }
        }
    }

    /// A document was delisted.
    pub fn forget(&mut self, doc: u32) {
        for entry in self.entries.get_mut().iter_mut() {
            if entry.found.contains(doc) {
                Arc::make_mut(&mut entry.found).remove(doc);
                entry.version += 1;
            }
        }
    }

    /// Bytes held, for the memory report.
    pub fn heap_bytes(&self) -> usize {
        self.entries
            .lock()
            .iter()
            .map(|entry| {
                entry.key.capacity()
                    + entry.found.serialized_size()
                    + entry
                        .ranked
                        .iter()
                        .filter_map(|r| r.docs.as_ref())
                        .map(|docs| docs.len() * 4)
                        .sum::<usize>()
            })
            .sum()
    }
}
