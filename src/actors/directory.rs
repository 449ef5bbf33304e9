//! The read side of the directory: id resolution, token lookup, profiles and the search index.
//!
//! Only the actors write here (the writing methods are private to `actors`), and only when a
//! change they made is durable; request handlers read it directly, so resolving an id, a token
//! or a profile, or searching, never queues behind a write.

use std::sync::Arc;

use actix::{Addr, Handler, MailboxError, Message};
use dashmap::DashMap;
use parking_lot::{RwLock, RwLockWriteGuard};

use super::bot::{BotActor, DeliveryOutcome, PrepareAttempt, Publications, Published};
use crate::domain::bot::BotView;
use crate::domain::ids::{BotId, ProfileId, Snowflake, TokenHash};
use crate::domain::profile::Profile;
use crate::domain::search::{Search, SearchPage};
use crate::domain::time::Timestamp;
use crate::domain::votes::history::Retention;
use crate::domain::webhook::Attempt;
use crate::domain::Rejection;
use crate::index::SearchIndex;
use crate::webhooks::{Job, LocalFuture, Outbox, Prepared};

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

    /// Asks the bot's actor. A bot delisted since it was looked up has stopped its actor: that
    /// is the bot not being there, not a failure of the service.
    pub async fn ask<M>(&self, message: M) -> Result<M::Result, Rejection>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        BotActor: Handler<M>,
    {
        self.addr.send(message).await.map_err(|error| match error {
            MailboxError::Closed => {
                Rejection::NotFound(format!("no bot with id {} (delisted)", self.id))
            }
            MailboxError::Timeout => Rejection::NotStored("the bot did not answer in time".into()),
        })
    }
}

/// What readers see of the directory. Every write here is a publication: it runs once the change
/// is durable (see [`crate::persist::journal::Publish`]), so nothing unacknowledged is ever shown.
pub struct Directory {
    bots: DashMap<BotId, Arc<BotHandle>>,
    platform_ids: DashMap<Snowflake, BotId>,
    tokens: DashMap<TokenHash, BotId>,
    profiles: DashMap<ProfileId, Arc<Profile>>,
    /// Searched under one read guard; written under one write guard per published change.
    index: RwLock<SearchIndex>,
    /// How long vote history is kept (`--vote-history-days`); read by every bot actor.
    pub vote_history_retention: crate::domain::votes::history::Retention,
    /// The weekend multiplier (`--weekend-multiplier`); read by every bot actor and `/weekend`.
    pub weekend: crate::domain::weekend::WeekendRule,
}

impl Directory {
    pub fn new(now: Timestamp) -> Self {
        Self {
            bots: DashMap::new(),
            platform_ids: DashMap::new(),
            tokens: DashMap::new(),
            profiles: DashMap::new(),
            index: RwLock::new(SearchIndex::new(now.month())),
            vote_history_retention: Default::default(),
            weekend: Default::default(),
        }
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
    pub fn authenticate(&self, presented: &str) -> Option<BotId> {
        let hash = TokenHash::of(presented);
        self.tokens.get(&hash).map(|entry| *entry.value())
    }

    pub fn profile(&self, id: ProfileId) -> Option<Arc<Profile>> {
        self.profiles
            .get(&id)
            .map(|entry| Arc::clone(entry.value()))
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
        let month = now.month();
        {
            let index = self.index.read();
            if index.month() == month {
                return index.search(search);
            }
        }
        // The first search of a new month: every monthly count reads 0 from now on, with or
        // without a vote, so the monthly order is rebuilt before anyone reads it. (A plain read
        // first: parking_lot lets only one upgradable reader in at a time.)
        let mut index = self.index.write();
        if index.month() != month {
            index.roll_month(month);
        }
        RwLockWriteGuard::downgrade(index).search(search)
    }

    /// Type-ahead: up to `limit` bots with a word of their name starting with the folded `q`.
    pub fn suggest(&self, q: &str, limit: usize) -> Vec<Arc<BotView>> {
        self.index.read().suggest(q, limit)
    }

    /// Publishes a newly listed (or, at startup, restored) bot. Its platform id comes from its
    /// listing: the directory's map is an index of published listings, never written apart.
    pub(super) fn publish_listed(&self, handle: Arc<BotHandle>, token: TokenHash) {
        let view = handle.view();
        self.index.write().insert(Arc::clone(&view));
        self.platform_ids
            .insert(view.listing.platform_id, handle.id);
        self.tokens.insert(token, handle.id);
        self.bots.insert(handle.id, handle);
    }

    /// Publishes a recovered directory at startup: the index is built in one pass, on every
    /// core, instead of a bot at a time.
    pub(super) fn publish_recovered(&self, bots: Vec<(Arc<BotHandle>, TokenHash)>) {
        {
            let mut index = self.index.write();
            if index.is_empty() {
                let views = bots.iter().map(|(handle, _)| handle.view()).collect();
                *index = SearchIndex::build(index.month(), views);
            } else {
                for (handle, _) in &bots {
                    index.insert(handle.view());
                }
            }
        }
        for (handle, token) in bots {
            self.platform_ids
                .insert(handle.view().listing.platform_id, handle.id);
            self.tokens.insert(token, handle.id);
            self.bots.insert(handle.id, handle);
        }
    }

    /// Publishes a bot's new state: the view its readers load, its place in the index, and
    /// its platform id when an edit moved it.
    pub(super) fn publish_view(&self, published: &Published, view: Arc<BotView>) {
        let old = published.swap(Arc::clone(&view));
        let (was, is) = (old.listing.platform_id, view.listing.platform_id);
        let id = view.listing.id;
        // An edit journaled after the bot's delisting publishes nothing.
        if !self.bots.contains_key(&id) {
            return;
        }
        if was != is {
            self.platform_ids.remove_if(&was, |_, owner| *owner == id);
            self.platform_ids.insert(is, id);
        }
        self.index.write().update(view);
    }

    pub(super) fn publish_delisted(&self, id: BotId, token: TokenHash) {
        self.tokens.remove(&token);
        if let Some((_, handle)) = self.bots.remove(&id) {
            let platform_id = handle.view().listing.platform_id;
            self.platform_ids
                .remove_if(&platform_id, |_, owner| *owner == id);
        }
        self.index.write().remove(id);
    }

    pub(super) fn publish_token(&self, id: BotId, old: TokenHash, new: TokenHash) {
        self.tokens.remove(&old);
        self.tokens.insert(new, id);
    }

    pub(super) fn publish_profile(&self, profile: Arc<Profile>) {
        self.profiles.insert(profile.id, profile);
    }

    pub(super) fn publish_profile_deleted(&self, id: ProfileId) {
        self.profiles.remove(&id);
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
impl Outbox for Directory {
    fn prepare(&self, job: &Job) -> LocalFuture<Option<Prepared>> {
        let Some(bot) = self.get(job.bot) else {
            return Box::pin(async { None });
        };
        let ask = bot.addr.send(PrepareAttempt {
            delivery: job.delivery,
            token: job.token,
        });
        Box::pin(async move { ask.await.ok().flatten() })
    }

    fn report(&self, job: &Job, attempt: Attempt) {
        if let Some(bot) = self.get(job.bot) {
            bot.addr.do_send(DeliveryOutcome {
                delivery: job.delivery,
                token: job.token,
                attempt,
            });
        }
    }
}
