//! The read side of the directory: id resolution, token lookup, profiles and the search index.
//!
//! Only publications write here (the `publish_*` methods, private to `actors`): the closures the
//! bot actors and the registry hand to the journal with each record, which the journal's
//! publisher thread runs once the record is durable; and, at start, the registry publishing what
//! was recovered, which is durable already. Request handlers read it directly, so resolving an
//! id, a token or a profile, or searching, never queues behind a write.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use actix::{Addr, Handler, MailboxError, Message};
use dashmap::DashMap;
use parking_lot::{RwLock, RwLockWriteGuard};

use super::bot::{BotActor, DeliveryOutcome, ExpireVotes, PrepareAttempt, Publications, Published};
use crate::domain::bot::{BotView, ListingStatus};
use crate::domain::ids::{BotId, ProfileId, Snowflake, TokenHash};
use crate::domain::people::Grant;
use crate::domain::profile::Profile;
use crate::domain::render::push_hex;
use crate::domain::search::{Search, SearchPage};
use crate::domain::time::Timestamp;
use crate::domain::votes::history::Retention;
use crate::domain::webhook::Attempt;
use crate::domain::Rejection;
use crate::index::SearchIndex;
use crate::webhooks::{Job, LocalFuture, Owners, Prepared};

/// A page of a search and the state of the index it was read from.
pub struct VersionedPage {
    pub page: SearchPage,
    /// The index's version: every change to the index gives it a new one.
    pub version: u64,
    /// The directory's own random number, so versions of another run name other answers.
    pub seed: u64,
}

impl VersionedPage {
    /// A strong validator of an answer made from this page and `query` alone: the index's
    /// state and the query say what the body is, with no need to hash it.
    pub fn etag(&self, query: &str) -> String {
        self.etag_beside(query, None)
    }

    /// [`Self::etag`] for an answer that also shows what another counter names (the classic
    /// search: the profiles' version, `Directory::profiles_version`).
    pub fn etag_beside(&self, query: &str, other: Option<u64>) -> String {
        use std::hash::{Hash, Hasher};
        // The query only keeps answers to different URLs apart; the version is what changes.
        let mut hasher = rustc_hash::FxHasher::default();
        query.hash(&mut hasher);
        let mut tag = String::with_capacity(40);
        tag.push('"');
        push_hex(&mut tag, self.seed.into(), 16);
        tag.push('-');
        push_hex(&mut tag, self.version.into(), 0);
        if let Some(other) = other {
            tag.push('.');
            push_hex(&mut tag, other.into(), 0);
        }
        tag.push('-');
        push_hex(&mut tag, hasher.finish().into(), 16);
        tag.push('"');
        tag
    }
}

/// A random number per directory, or the time when the system has no randomness to give.
fn validator_seed(now: Timestamp) -> u64 {
    let mut seed = [0u8; 8];
    match getrandom::fill(&mut seed) {
        Ok(()) => u64::from_le_bytes(seed),
        Err(_) => now.millis() as u64 ^ u64::from(std::process::id()),
    }
}

/// A listed bot as the rest of the service reaches it.
pub struct BotHandle {
    pub id: BotId,
    pub addr: Addr<BotActor>,
    pub view: Published,
}

impl BotHandle {
    pub fn view(&self) -> Arc<BotView> {
        self.view.load_full()
    }

    /// Sends a write that carries its own [`Answer`](super::Answer): the asker awaits that,
    /// not the mailbox. A full mailbox takes it anyway (the asker waits for its answer, and
    /// the server bounds how many ask at once).
    pub fn tell<M>(&self, message: M) -> Result<(), Rejection>
    where
        M: Message<Result = ()> + Send + 'static,
        BotActor: Handler<M>,
    {
        match self.addr.try_send(message) {
            Ok(()) => Ok(()),
            Err(actix::prelude::SendError::Full(message)) => {
                self.addr.do_send(message);
                Ok(())
            }
            Err(actix::prelude::SendError::Closed(_)) => Err(self.delisted()),
        }
    }

    /// Asks the bot's actor. A bot delisted since it was looked up has stopped its actor: that
    /// is the bot not being there, not a failure of the service.
    pub async fn ask<M>(&self, message: M) -> Result<M::Result, Rejection>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        BotActor: Handler<M>,
    {
        self.addr.send(message).await.map_err(|error| match error {
            MailboxError::Closed => self.delisted(),
            // The message may have been handled after all: its write may be kept.
            MailboxError::Timeout => {
                Rejection::MaybeStored("the bot did not answer in time".into())
            }
        })
    }

    /// What a message to the actor of a bot delisted since it was looked up gets.
    fn delisted(&self) -> Rejection {
        Rejection::NotFound(format!("no bot with id {} (delisted)", self.id))
    }
}

/// A directory map. Every key in one is made by the server (ids, token digests) or by an admin
/// (platform ids); clients only look keys up, so a keyed fast hash does what SipHash did, for a
/// fraction of a read's cost (docs/PERFORMANCE.md, session 12).
type ByKey<K, V> = DashMap<K, V, foldhash::fast::RandomState>;

/// What readers see of the directory. Every write here is a publication: it runs once the change
/// is durable (see [`crate::persist::journal::Publish`]), so nothing unacknowledged is ever shown.
pub struct Directory {
    bots: ByKey<BotId, Arc<BotHandle>>,
    platform_ids: ByKey<Snowflake, BotId>,
    tokens: ByKey<TokenHash, BotId>,
    profiles: ByKey<ProfileId, Arc<Profile>>,
    /// Listings that are not approved (CONTRACT section 13): kept out of `bots`, the platform
    /// ids, the tokens and the index, so that every public read, search and count leaves them
    /// out without a check of its own; reached by their owners' routes and the admin API.
    hidden: ByKey<BotId, Arc<BotHandle>>,
    /// Every listing by its status, each set in the staff's order, (created_at, id): kept as
    /// views are published, so a page of the moderation queue (`pending`) or of staff's
    /// `GET /staff/bots?status=` and the queue's gauge cost the page, not the directory
    /// (scanning `hidden` cost about 150 ms a page at 100,000 pending).
    by_status: parking_lot::Mutex<HashMap<ListingStatus, BTreeSet<(Timestamp, BotId)>>>,
    /// Each listed bot's token hash, public or hidden, so a listing that becomes public (or
    /// stops being) moves its token with it.
    bot_tokens: ByKey<BotId, TokenHash>,
    /// Profile tokens by hash: one map read, like a bot token's.
    profile_tokens: ByKey<TokenHash, Grant>,
    /// Profiles by their linked platform id: the classic surface names users so.
    profile_platform_ids: ByKey<Snowflake, ProfileId>,
    /// Searched under one read guard; written under one write guard per published change.
    index: RwLock<SearchIndex>,
    /// Counts the index's changes: written only under the index's write guard, so a reader
    /// holding the read guard sees the number of the very state it reads. With
    /// `validator_seed`, it names a search's answer for its `ETag`.
    index_version: AtomicU64,
    /// Counts the profiles' publications, each after its maps were written: a reader that
    /// reads a number sees at least the profiles it names. The classic search shows owners by
    /// their profiles' platform ids, so its kept pages are valid for this and the index's
    /// version together.
    profiles_version: AtomicU64,
    /// Drawn once per directory, so that numbers counted again after a restart name nothing
    /// a client saw before it.
    validator_seed: u64,
    /// How long vote history is kept (`--vote-history-days`); read by every bot actor.
    pub vote_history_retention: crate::domain::votes::history::Retention,
    /// The weekend multiplier (`--weekend-multiplier`); read by every bot actor and `/weekend`.
    pub weekend: crate::domain::weekend::WeekendRule,
    /// The audit log (docs/API.md, "The audit log"): filled by the journal as audited records
    /// are published, read by the staff's and the owners' audit routes.
    pub audit: Arc<crate::domain::audit::AuditLog>,
}

impl Directory {
    pub fn new(now: Timestamp) -> Self {
        Self {
            bots: ByKey::default(),
            platform_ids: ByKey::default(),
            tokens: ByKey::default(),
            profiles: ByKey::default(),
            hidden: ByKey::default(),
            by_status: Default::default(),
            bot_tokens: ByKey::default(),
            profile_tokens: ByKey::default(),
            profile_platform_ids: ByKey::default(),
            index: RwLock::new(SearchIndex::new(now.month())),
            index_version: AtomicU64::new(0),
            profiles_version: AtomicU64::new(0),
            validator_seed: validator_seed(now),
            vote_history_retention: Default::default(),
            weekend: Default::default(),
            audit: Default::default(),
        }
    }

    /// Drawn once per directory: validators made of numbers that start again after a restart
    /// (or that another directory could count too) carry it, so they name nothing a client saw
    /// from another one.
    pub fn validator_seed(&self) -> u64 {
        self.validator_seed
    }

    /// `:id` is tried as a listing UUID, then as a platform snowflake.
    pub fn resolve(&self, id: &str) -> Option<Arc<BotHandle>> {
        let bot = match BotId::parse(id) {
            Some(bot) => bot,
            None => *self.platform_ids.get(&Snowflake::parse(id)?)?,
        };
        self.get(bot)
    }

    pub fn get(&self, id: BotId) -> Option<Arc<BotHandle>> {
        self.bots.get(&id).map(|entry| Arc::clone(entry.value()))
    }

    /// The bot whose token this is. The map is keyed by the token's SHA-256, so the lookup
    /// compares hashes of the secret, never the secret itself.
    pub fn authenticate(&self, presented: &[u8]) -> Option<BotId> {
        let hash = TokenHash::of(presented);
        self.tokens.get(&hash).map(|entry| *entry.value())
    }

    /// The profile token this is, whatever its expiry (the caller holds the clock). The map is
    /// keyed by the token's SHA-256, like the bots' tokens.
    pub fn authenticate_profile(&self, presented: &[u8]) -> Option<Grant> {
        let hash = TokenHash::of(presented);
        self.profile_tokens.get(&hash).map(|entry| *entry.value())
    }

    /// A listed bot, public or not: for its owners' routes and the admin API.
    pub fn managed(&self, id: BotId) -> Option<Arc<BotHandle>> {
        self.get(id)
            .or_else(|| self.hidden.get(&id).map(|entry| Arc::clone(entry.value())))
    }

    /// `:id` of a route that reaches listings that are not public: a public listing by its
    /// UUID or platform id, a hidden one by its UUID (its platform id is not published).
    pub fn resolve_managed(&self, id: &str) -> Option<Arc<BotHandle>> {
        self.resolve(id)
            .or_else(|| BotId::parse(id).and_then(|bot| self.managed(bot)))
    }

    pub fn profile(&self, id: ProfileId) -> Option<Arc<Profile>> {
        self.profiles
            .get(&id)
            .map(|entry| Arc::clone(entry.value()))
    }

    /// The profile linked to this platform id.
    pub fn profile_by_platform_id(&self, platform_id: Snowflake) -> Option<Arc<Profile>> {
        let id = *self.profile_platform_ids.get(&platform_id)?;
        self.profile(id)
    }

    pub fn len(&self) -> usize {
        self.bots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bots.is_empty()
    }

    /// One page of a search. Runs on the calling thread: at these costs a hop to a thread pool
    /// would cost more than the search.
    pub fn search(&self, search: &Search, now: Timestamp) -> SearchPage {
        self.search_versioned(search, now).page
    }

    /// Candidates a search must still read before it can be answered from sets alone
    /// (`index::needles`): 0 for nearly every search.
    pub fn left_to_read(&self, search: &Search) -> u64 {
        self.index.read().left_to_read(search)
    }

    /// One slice of that reading, under a read guard of its own (writes go on between two
    /// slices); `true` once nothing is left to read.
    pub fn read_slice(&self, search: &Search) -> bool {
        self.index.read().read_slice(search).0
    }

    /// The index's version as a search at `now` would read it; `None` when the month turned
    /// since the last search, which changes every page (the search rolls the month first).
    pub fn version_at(&self, now: Timestamp) -> Option<u64> {
        let index = self.index.read();
        // Under the read guard: a change takes its version with the write guard, so the
        // number read here names the state every search under this guard sees.
        (index.month() == now.month()).then(|| self.index_version.load(Ordering::Acquire))
    }

    /// How many times the profiles have been published (see the field).
    pub fn profiles_version(&self) -> u64 {
        self.profiles_version.load(Ordering::Acquire)
    }

    /// One page of a search, with the number of the index's state it was read from.
    pub fn search_versioned(&self, search: &Search, now: Timestamp) -> VersionedPage {
        let month = now.month();
        {
            let index = self.index.read();
            if index.month() == month {
                return self.versioned(&index, search);
            }
        }
        // The first search of a new month: every monthly count reads 0 from now on, with or
        // without a vote, so the monthly order is rebuilt before anyone reads it. (A plain read
        // first: parking_lot lets only one upgradable reader in at a time.)
        let mut index = self.write_index();
        if index.month() != month {
            index.roll_month(month);
        }
        let index = RwLockWriteGuard::downgrade(index);
        self.versioned(&index, search)
    }

    fn versioned(&self, index: &SearchIndex, search: &Search) -> VersionedPage {
        VersionedPage {
            page: index.search(search),
            version: self.index_version.load(Ordering::Acquire),
            seed: self.validator_seed,
        }
    }

    /// The index for a change: every change gets a new version number.
    fn write_index(&self) -> RwLockWriteGuard<'_, SearchIndex> {
        let guard = self.index.write();
        self.index_version.fetch_add(1, Ordering::AcqRel);
        guard
    }

    /// Type-ahead: up to `limit` bots with a word of their name starting with the folded `q`.
    pub fn suggest(&self, q: &str, limit: usize) -> Vec<Arc<BotView>> {
        self.index.read().suggest(q, limit)
    }

    /// Publishes a newly listed (or, at startup, restored) bot. Its platform id comes from its
    /// listing: the directory's map is an index of published listings, never written apart.
    pub(super) fn publish_listed(&self, handle: Arc<BotHandle>, token: TokenHash) {
        let view = handle.view();
        self.bot_tokens.insert(handle.id, token);
        if !view.listing.status.is_public() {
            self.hidden.insert(handle.id, handle);
            self.requeue(None, &view);
            return;
        }
        self.write_index().insert(Arc::clone(&view));
        self.platform_ids
            .insert(view.listing.platform_id, handle.id);
        self.tokens.insert(token, handle.id);
        self.bots.insert(handle.id, handle);
        self.requeue(None, &view);
    }

    /// Publishes a recovered directory at startup: the index is built in one pass, on every
    /// core, instead of a bot at a time. `views` are the bots' views, in the order `list` gives
    /// their handles, as their handles hold them (nothing publishes a bot's view before its
    /// handle is filed here, so they are what the handles' views would read). Into an empty
    /// index, the build starts from them before `list` runs, while `list` (the registry's own
    /// work for each bot: claims, actors, entries) runs on this thread: the index is locked
    /// throughout, so `list` must not read it.
    pub(super) fn publish_recovered(
        &self,
        views: Vec<Arc<BotView>>,
        list: impl FnOnce() -> Vec<(Arc<BotHandle>, TokenHash)>,
    ) {
        // Only the registry writes the index: it is still empty when written to below.
        if !self.index.read().is_empty() {
            let (bots, hidden) = Self::split_hidden(list());
            self.publish_hidden(hidden);
            let mut index = self.write_index();
            for (handle, _) in &bots {
                index.insert(handle.view());
            }
            drop(index);
            return self.file_listed(bots);
        }
        let public: Vec<_> = views
            .into_iter()
            .filter(|view| view.listing.status.is_public())
            .collect();
        let mut index = self.write_index();
        let month = index.month();
        // A start: the index is built on other threads while the registry starts the bots
        // and this thread files them in the maps, where this thread waited for the build's
        // slowest part before. Nothing reads the directory yet, and the index stays locked
        // until it is whole.
        std::thread::scope(|scope| {
            let built = scope.spawn(move || SearchIndex::build(month, public));
            let (bots, hidden) = Self::split_hidden(list());
            self.publish_hidden(hidden);
            self.file_listed(bots);
            *index = built
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
        });
    }

    /// Listed bots, public first and hidden second, each in the order given.
    #[allow(clippy::type_complexity)]
    fn split_hidden(
        bots: Vec<(Arc<BotHandle>, TokenHash)>,
    ) -> (
        Vec<(Arc<BotHandle>, TokenHash)>,
        Vec<(Arc<BotHandle>, TokenHash)>,
    ) {
        bots.into_iter()
            .partition(|(handle, _)| handle.view().listing.status.is_public())
    }

    fn publish_hidden(&self, hidden: Vec<(Arc<BotHandle>, TokenHash)>) {
        for (handle, token) in hidden {
            self.bot_tokens.insert(handle.id, token);
            let view = handle.view();
            self.hidden.insert(handle.id, handle);
            self.requeue(None, &view);
        }
    }

    /// Files listed bots in the directory's maps and the moderation queue. Each is queued
    /// under its status as [`Self::requeue`] would queue a listed bot, all under one lock and
    /// each status's set built from its sorted keys at once (a bot at a time, with a lock, two
    /// lookups and a removal each, was a tenth of the starting thread's work at a start).
    fn file_listed(&self, bots: Vec<(Arc<BotHandle>, TokenHash)>) {
        let mut queued: HashMap<ListingStatus, Vec<(Timestamp, BotId)>> = HashMap::new();
        for (handle, token) in bots {
            let view = handle.view();
            self.bot_tokens.insert(handle.id, token);
            self.platform_ids
                .insert(view.listing.platform_id, handle.id);
            self.tokens.insert(token, handle.id);
            self.bots.insert(handle.id, handle);
            queued
                .entry(view.listing.status)
                .or_default()
                .push((view.listing.created_at, view.listing.id));
        }
        let mut by_status = self.by_status.lock();
        for (status, keys) in queued {
            let mut keys: BTreeSet<_> = keys.into_iter().collect();
            by_status.entry(status).or_default().append(&mut keys);
        }
        Self::gauge(&by_status);
    }

    /// Publishes a bot's new state: the view its readers load, its place in the index, and
    /// its platform id when an edit moved it; the moderation queue's gauge when it entered or
    /// left the queue.
    pub(super) fn publish_view(&self, published: &Published, view: Arc<BotView>) {
        let old = published.swap(Arc::clone(&view));
        self.place_view(&old, Arc::clone(&view));
        self.requeue(Some(&old), &view);
    }

    fn place_view(&self, old: &BotView, view: Arc<BotView>) {
        let (was, is) = (old.listing.platform_id, view.listing.platform_id);
        let id = view.listing.id;
        let public = view.listing.status.is_public();
        if let Some((_, handle)) = self.hidden.remove_if(&id, |_, _| public) {
            return self.show(handle, view);
        }
        // An edit journaled after the bot's delisting publishes nothing.
        if !self.bots.contains_key(&id) {
            return;
        }
        if !public {
            return self.hide(id, was);
        }
        if was != is {
            self.platform_ids.remove_if(&was, |_, owner| *owner == id);
            self.platform_ids.insert(is, id);
        }
        self.write_index().update(view);
    }

    /// Up to `limit` listings in `status`, oldest first (by `created_at`, then id), after the
    /// listing whose key is `after`; each with its view. Reads the status's ordered set, so it
    /// costs the page whatever the directory's size.
    pub fn status_page(
        &self,
        status: ListingStatus,
        after: Option<(Timestamp, BotId)>,
        limit: usize,
    ) -> Vec<Arc<BotView>> {
        let keys: Vec<BotId> = {
            let by_status = self.by_status.lock();
            let Some(set) = by_status.get(&status) else {
                return Vec::new();
            };
            let range = match after {
                Some(after) => set.range((Bound::Excluded(after), Bound::Unbounded)),
                None => set.range(..),
            };
            range.take(limit).map(|&(_, id)| id).collect()
        };
        keys.into_iter()
            .filter_map(|id| self.managed(id).map(|handle| handle.view()))
            // Moved since the keys were read: the next page read leaves it out anyway.
            .filter(|view| view.listing.status == status)
            .collect()
    }

    /// Keeps the per-status sets and the queue's gauge (`botlist_moderation_queue_length`) as
    /// a listing's view moves from `old` (none when newly published) to `view`: in its
    /// status's set exactly while it is listed (public or hidden).
    fn requeue(&self, old: Option<&BotView>, view: &BotView) {
        let id = view.listing.id;
        let listed = self.hidden.contains_key(&id) || self.bots.contains_key(&id);
        let mut by_status = self.by_status.lock();
        if let Some(old) = old {
            Self::unfile(&mut by_status, old);
        }
        Self::unfile(&mut by_status, view);
        if listed {
            by_status
                .entry(view.listing.status)
                .or_default()
                .insert((view.listing.created_at, id));
        }
        Self::gauge(&by_status);
    }

    /// A listing removed: out of its status's set.
    fn unqueue(&self, view: &BotView) {
        let mut by_status = self.by_status.lock();
        Self::unfile(&mut by_status, view);
        Self::gauge(&by_status);
    }

    fn unfile(
        by_status: &mut HashMap<ListingStatus, BTreeSet<(Timestamp, BotId)>>,
        view: &BotView,
    ) {
        if let Some(set) = by_status.get_mut(&view.listing.status) {
            set.remove(&(view.listing.created_at, view.listing.id));
        }
    }

    fn gauge(by_status: &HashMap<ListingStatus, BTreeSet<(Timestamp, BotId)>>) {
        let pending = by_status
            .get(&ListingStatus::Pending)
            .map_or(0, BTreeSet::len);
        crate::telemetry::moderation_queue(pending);
    }

    /// A hidden listing approved: published as a newly listed one is.
    fn show(&self, handle: Arc<BotHandle>, view: Arc<BotView>) {
        self.write_index().insert(Arc::clone(&view));
        self.platform_ids
            .insert(view.listing.platform_id, handle.id);
        if let Some(token) = self.bot_tokens.get(&handle.id).map(|t| *t.value()) {
            self.tokens.insert(token, handle.id);
        }
        self.bots.insert(handle.id, handle);
    }

    /// A public listing that stops being public (denied, delisted): out of every public map,
    /// its token unknown from now on, kept for its owners.
    fn hide(&self, id: BotId, platform_id: Snowflake) {
        let Some((_, handle)) = self.bots.remove(&id) else {
            return;
        };
        self.platform_ids
            .remove_if(&platform_id, |_, owner| *owner == id);
        if let Some(token) = self.bot_tokens.get(&id).map(|t| *t.value()) {
            self.tokens.remove(&token);
        }
        self.write_index().remove(id);
        self.hidden.insert(id, handle);
    }

    pub(super) fn publish_delisted(&self, id: BotId, token: TokenHash) {
        self.bot_tokens.remove(&id);
        if let Some((_, handle)) = self.hidden.remove(&id) {
            self.unqueue(&handle.view());
        }
        self.tokens.remove(&token);
        if let Some((_, handle)) = self.bots.remove(&id) {
            let view = handle.view();
            self.unqueue(&view);
            let platform_id = view.listing.platform_id;
            self.platform_ids
                .remove_if(&platform_id, |_, owner| *owner == id);
        }
        self.write_index().remove(id);
    }

    pub(super) fn publish_token(&self, id: BotId, old: TokenHash, new: TokenHash) {
        self.tokens.remove(&old);
        self.bot_tokens.insert(id, new);
        // A hidden listing's token works nowhere until the listing is public.
        if self.bots.contains_key(&id) {
            self.tokens.insert(new, id);
        }
    }

    /// A profile saved, or its tokens changed: the tokens it no longer has stop working here.
    pub(super) fn publish_profile(&self, profile: Arc<Profile>) {
        let (id, platform_id) = (profile.id, profile.platform_id);
        if let Some(old) = self.profiles.get(&id).map(|p| Arc::clone(p.value())) {
            for token in &old.tokens {
                self.profile_tokens.remove(&token.hash);
            }
            self.unlink_platform_id(id, old.platform_id);
        }
        for token in &profile.tokens {
            self.profile_tokens.insert(token.hash, token.grant(id));
        }
        self.profiles.insert(id, profile);
        if let Some(platform_id) = platform_id {
            self.profile_platform_ids.insert(platform_id, id);
        }
        self.profiles_version.fetch_add(1, Ordering::AcqRel);
    }

    pub(super) fn publish_profile_deleted(&self, id: ProfileId) {
        if let Some((_, old)) = self.profiles.remove(&id) {
            for token in &old.tokens {
                self.profile_tokens.remove(&token.hash);
            }
            self.unlink_platform_id(id, old.platform_id);
        }
        self.profiles_version.fetch_add(1, Ordering::AcqRel);
    }

    /// Forgets a platform id the profile `id` held, unless another profile took it since.
    fn unlink_platform_id(&self, id: ProfileId, platform_id: Option<Snowflake>) {
        if let Some(platform_id) = platform_id {
            self.profile_platform_ids
                .remove_if(&platform_id, |_, holder| *holder == id);
        }
    }
}

impl Publications for Directory {
    fn publish_view(&self, published: &Published, view: Arc<BotView>) {
        Directory::publish_view(self, published, view);
    }

    fn history_retention(&self) -> &Retention {
        &self.vote_history_retention
    }

    fn weekend(&self) -> &crate::domain::weekend::WeekendRule {
        &self.weekend
    }
}

/// The dispatcher reaches a delivery's owner through the directory: a delisted bot's attempts
/// come to nothing.
impl Owners for Directory {
    fn prepare(&self, job: &Job) -> LocalFuture<Option<Prepared>> {
        // A listing that is not public is asked too: its actor sends it its decisions only.
        let Some(bot) = self.managed(job.bot) else {
            return Box::pin(async { None });
        };
        let ask = bot.addr.send(PrepareAttempt {
            delivery: job.delivery,
            token: job.token,
        });
        Box::pin(async move { ask.await.ok().flatten() })
    }

    fn report(&self, job: &Job, attempt: Attempt) {
        if let Some(bot) = self.managed(job.bot) {
            bot.addr.do_send(DeliveryOutcome {
                delivery: job.delivery,
                token: job.token,
                attempt,
            });
        }
    }

    fn expire(&self, bot: BotId) {
        // A listing that is not public announces too (its mark moves on); its deliveries are
        // given up when they come due, as a vote's are (CONTRACT section 14).
        if let Some(bot) = self.managed(bot) {
            bot.addr.do_send(ExpireVotes);
        }
    }
}
