//! The read side of the directory: id resolution, token lookup and the list search reads.
//!
//! Only the registry actor writes here (the writing methods are private to `actors`); request
//! handlers read it directly, so resolving an id or a token never queues behind a write.

use std::sync::Arc;

use actix::{Addr, Handler, MailboxError, Message};
use arc_swap::ArcSwap;
use dashmap::DashMap;

use super::bot::{BotActor, Published};
use crate::domain::bot::BotView;
use crate::domain::ids::{BotId, Snowflake, TokenHash};
use crate::domain::search::{Search, SearchPage};
use crate::domain::time::Timestamp;
use crate::domain::Rejection;

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

#[derive(Default)]
pub struct Directory {
    bots: DashMap<BotId, Arc<BotHandle>>,
    platform_ids: DashMap<Snowflake, BotId>,
    tokens: DashMap<TokenHash, BotId>,
    /// Every listed bot, republished whole when one is listed or delisted (rare), so a search
    /// walks a plain slice without holding any lock.
    listed: ArcSwap<Vec<Arc<BotHandle>>>,
}

impl Directory {
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

    pub fn len(&self) -> usize {
        self.bots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bots.is_empty()
    }

    pub fn search(&self, search: &Search, now: Timestamp) -> SearchPage {
        let listed = self.listed.load();
        search.run(listed.iter().map(|bot| bot.view()), now)
    }

    pub(super) fn insert(&self, handle: Arc<BotHandle>, platform_id: Snowflake, token: TokenHash) {
        self.platform_ids.insert(platform_id, handle.id);
        self.tokens.insert(token, handle.id);
        self.bots.insert(handle.id, handle);
    }

    pub(super) fn remove(&self, id: BotId, platform_id: Snowflake, token: TokenHash) {
        self.tokens.remove(&token);
        self.platform_ids.remove(&platform_id);
        self.bots.remove(&id);
    }

    pub(super) fn replace_token(&self, id: BotId, old: TokenHash, new: TokenHash) {
        self.tokens.remove(&old);
        self.tokens.insert(new, id);
    }

    pub(super) fn move_platform_id(&self, id: BotId, old: Snowflake, new: Snowflake) {
        self.platform_ids.remove(&old);
        self.platform_ids.insert(new, id);
    }

    pub(super) fn platform_id_owner(&self, platform_id: Snowflake) -> Option<BotId> {
        self.platform_ids
            .get(&platform_id)
            .map(|entry| *entry.value())
    }

    /// Makes the listed set match the id map; call after a batch of inserts or removals.
    pub(super) fn publish_listing(&self) {
        let listed = self.bots.iter().map(|e| Arc::clone(e.value())).collect();
        self.listed.store(Arc::new(listed));
    }
}
