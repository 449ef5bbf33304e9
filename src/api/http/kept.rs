//! Answers rendered once per state of what they show, not once per request.
//!
//! Some answers are a function of their URL and of a validator the route can read without
//! rendering anything: a search page of the query string and the index's version (the ETag
//! already says so: see `VersionedPage::etag`), a badge of its URL and the bot's listing and
//! value. An answer asked again before that validator moved is the same bytes. Front ends ask
//! the same few URLs (the first page, a category) on every visit, and a README badge is asked
//! by every visitor of the README; serving those from here costs a hash and a reference count
//! instead of a walk of the sort order, or a drawing.
//!
//! A [`Kept`] table is a fixed set of slots, each holding the last answer rendered for a key
//! whose hash falls there: no eviction to run, no lock, and a bound on memory
//! ([`SLOTS`] × [`MAX_BODY`]) whatever clients ask. A slot whose validator is old is simply
//! rendered again; keys that share a slot take turns. Each route has its own table, since the
//! key is only unique within the route.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use actix_web::http::header::HeaderValue;
use arc_swap::ArcSwapOption;
use bytes::Bytes;

/// How many answers a table keeps: enough for a front end's hot URLs many times over.
pub const SLOTS: usize = 512;

/// Larger bodies (a page of 100 bots with long descriptions) are rendered every time, so the
/// table holds at most `SLOTS × MAX_BODY` (32 MiB) however it is used.
pub const MAX_BODY: usize = 64 * 1024;

/// One rendered answer.
pub struct Page<V> {
    key: Box<str>,
    validator: V,
    pub body: Bytes,
    pub etag: HeaderValue,
}

pub struct Kept<V> {
    slots: Box<[ArcSwapOption<Page<V>>]>,
}

impl<V> Default for Kept<V> {
    fn default() -> Self {
        Self {
            slots: (0..SLOTS).map(|_| ArcSwapOption::empty()).collect(),
        }
    }
}

impl<V: PartialEq> Kept<V> {
    /// The answer rendered for `key` when its validator was `validator`, if it is still held.
    pub fn get(&self, key: &str, validator: &V) -> Option<Arc<Page<V>>> {
        let page = self.slot(key).load_full()?;
        (page.validator == *validator && *page.key == *key).then_some(page)
    }

    /// Keeps `body` as the answer to `key` at `validator` (unless it is too large to keep).
    pub fn keep(&self, key: &str, validator: V, body: Bytes, etag: HeaderValue) {
        if body.len() > MAX_BODY {
            return;
        }
        self.slot(key).store(Some(Arc::new(Page {
            key: key.into(),
            validator,
            body,
            etag,
        })));
    }

    fn slot(&self, key: &str) -> &ArcSwapOption<Page<V>> {
        let mut hasher = rustc_hash::FxHasher::default();
        key.hash(&mut hasher);
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
        let pages = Kept::<u64>::default();
        pages.keep("q=a", 7, Bytes::from_static(b"A"), tag());
        assert_eq!(
            pages.get("q=a", &7).map(|p| p.body.clone()),
            Some(Bytes::from_static(b"A"))
        );
        assert!(
            pages.get("q=a", &8).is_none(),
            "a newer index renders again"
        );
        assert!(
            pages.get("q=b", &7).is_none(),
            "another query is another answer"
        );
    }

    #[test]
    fn a_body_too_large_is_not_kept() {
        let pages = Kept::<u64>::default();
        pages.keep("q=a", 1, Bytes::from(vec![b' '; MAX_BODY + 1]), tag());
        assert!(pages.get("q=a", &1).is_none());
    }

    #[test]
    fn queries_sharing_a_slot_replace_each_other_and_never_answer_for_each_other() {
        let pages = Kept::<u64>::default();
        // Find two queries whose hashes share a slot.
        let first = "q=0".to_string();
        let slot = |q: &str| pages.slot(q) as *const _;
        let second = (1..)
            .map(|n| format!("q={n}"))
            .find(|q| slot(q) == slot(&first))
            .unwrap_or_default();
        pages.keep(&first, 1, Bytes::from_static(b"first"), tag());
        pages.keep(&second, 1, Bytes::from_static(b"second"), tag());
        assert!(pages.get(&first, &1).is_none());
        assert_eq!(
            pages.get(&second, &1).map(|p| p.body.clone()),
            Some(Bytes::from_static(b"second"))
        );
    }
}
