//! Search answers rendered once per state of the index, not once per request.
//!
//! A search's body is a function of the query string and the index's version alone (the ETag
//! already says so: see `VersionedPage::etag`), so a page asked again before anything changed
//! is the same bytes. Front ends ask the same few URLs (the first page, a category) on every
//! visit; serving those from here costs a hash and a reference count instead of a walk of the
//! sort order and the copy of every bot's JSON.
//!
//! The memo is a fixed table of slots, each holding the last page rendered for a query string
//! whose hash falls there: no eviction to run, no lock, and a bound on memory
//! ([`SLOTS`] × [`MAX_BODY`]) whatever clients ask. A slot whose version is old is simply
//! rendered again; queries that share a slot take turns.
//!
//! Only `GET /bots` keeps pages here: the key is the query string alone, so a route that
//! answers the same query string with another body would need its own table.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use actix_web::http::header::HeaderValue;
use arc_swap::ArcSwapOption;
use bytes::Bytes;

/// How many pages are kept: enough for a front end's hot URLs many times over.
pub const SLOTS: usize = 512;

/// Larger bodies (a page of 100 bots with long descriptions) are rendered every time, so the
/// memo holds at most `SLOTS × MAX_BODY` (32 MiB) however it is used.
pub const MAX_BODY: usize = 64 * 1024;

/// One rendered answer.
pub struct Page {
    query: Box<str>,
    version: u64,
    pub body: Bytes,
    pub etag: HeaderValue,
}

pub struct SearchPages {
    slots: Box<[ArcSwapOption<Page>]>,
}

impl Default for SearchPages {
    fn default() -> Self {
        Self {
            slots: (0..SLOTS).map(|_| ArcSwapOption::empty()).collect(),
        }
    }
}

impl SearchPages {
    /// The page rendered for `query` at the index's `version`, if it is still held.
    pub fn get(&self, query: &str, version: u64) -> Option<Arc<Page>> {
        let page = self.slot(query).load_full()?;
        (page.version == version && *page.query == *query).then_some(page)
    }

    /// Keeps `body` as the answer to `query` at `version` (unless it is too large to keep).
    pub fn keep(&self, query: &str, version: u64, body: Bytes, etag: HeaderValue) {
        if body.len() > MAX_BODY {
            return;
        }
        self.slot(query).store(Some(Arc::new(Page {
            query: query.into(),
            version,
            body,
            etag,
        })));
    }

    fn slot(&self, query: &str) -> &ArcSwapOption<Page> {
        let mut hasher = rustc_hash::FxHasher::default();
        query.hash(&mut hasher);
        &self.slots[(hasher.finish() % SLOTS as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag() -> HeaderValue {
        HeaderValue::from_static("\"t\"")
    }

    #[test]
    fn a_page_is_served_only_at_its_version_and_for_its_query() {
        let pages = SearchPages::default();
        pages.keep("q=a", 7, Bytes::from_static(b"A"), tag());
        assert_eq!(
            pages.get("q=a", 7).map(|p| p.body.clone()),
            Some(Bytes::from_static(b"A"))
        );
        assert!(pages.get("q=a", 8).is_none(), "a newer index renders again");
        assert!(
            pages.get("q=b", 7).is_none(),
            "another query is another answer"
        );
    }

    #[test]
    fn a_body_too_large_is_not_kept() {
        let pages = SearchPages::default();
        pages.keep("q=a", 1, Bytes::from(vec![b' '; MAX_BODY + 1]), tag());
        assert!(pages.get("q=a", 1).is_none());
    }

    #[test]
    fn queries_sharing_a_slot_replace_each_other_and_never_answer_for_each_other() {
        let pages = SearchPages::default();
        // Find two queries whose hashes share a slot.
        let first = "q=0".to_string();
        let slot = |q: &str| pages.slot(q) as *const _;
        let second = (1..)
            .map(|n| format!("q={n}"))
            .find(|q| slot(q) == slot(&first))
            .unwrap_or_default();
        pages.keep(&first, 1, Bytes::from_static(b"first"), tag());
        pages.keep(&second, 1, Bytes::from_static(b"second"), tag());
        assert!(pages.get(&first, 1).is_none());
        assert_eq!(
            pages.get(&second, 1).map(|p| p.body.clone()),
            Some(Bytes::from_static(b"second"))
        );
    }
}
