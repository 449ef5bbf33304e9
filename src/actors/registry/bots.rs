//! The messages that list, edit and delist bots and rotate their tokens.

use std::sync::Arc;

use actix::prelude::*;
use futures_util::FutureExt;
use tokio::sync::oneshot;

use super::{reply, EditInFlight, Registry, Reply};
use crate::actors::bot::ApplyPatch;
use crate::domain::bot::{BotPatch, BotState, BotView, NewBot};
use crate::domain::ids::{BotId, Token};
use crate::domain::Rejection;
use crate::persist::journal::Durable;
use crate::persist::state::Record;

#[derive(Message)]
#[rtype(result = "Result<(Arc<BotView>, Token), Rejection>")]
pub struct CreateBot(pub NewBot);

impl Handler<CreateBot> for Registry {
    type Result = Reply<(Arc<BotView>, Token)>;

    fn handle(&mut self, CreateBot(new): CreateBot, ctx: &mut Self::Context) -> Self::Result {
        let waits = self.releases_in_flight();
        self.after(ctx, waits, move |registry| reply(registry.create_bot(new)))
    }
}

impl Registry {
    fn create_bot(&mut self, new: NewBot) -> Result<(Durable, (Arc<BotView>, Token)), Rejection> {
        self.check_platform_id_free(new.platform_id, None)?;
        self.check_owners(&new.owner_ids)?;
        let token = Token::generate();
        let state = BotState::create(BotId::new_random(), new, self.clock.now());
        let id = state.listing.id;
        let token_hash = token.hash();
        let record = Record::BotListed {
            state: Box::new(state),
            token: token_hash,
        };
        // The actor starts first, but nobody can reach it before its listing is published, so
        // its own records still come after this one. Until it journals one, its `last_seq`
        // stays 0: replay has nothing of its own to skip.
        let durable = self.make(record);
        let handle = self.handle_of(id)?;
        Ok((durable, (handle.view(), token)))
    }
}

#[derive(Message)]
#[rtype(result = "Result<Arc<BotView>, Rejection>")]
pub struct UpdateBot(pub BotId, pub BotPatch);

impl Handler<UpdateBot> for Registry {
    type Result = Reply<Arc<BotView>>;

    /// The registry checks the edit's rules and claims what it takes, then hands the edit to
    /// the bot, which journals it in order with its votes and stats; the registry goes on with
    /// other messages meanwhile.
    fn handle(&mut self, UpdateBot(id, patch): UpdateBot, ctx: &mut Self::Context) -> Self::Result {
        let takes = patch.platform_id.is_some() || patch.owner_ids.is_some();
        let waits = if takes {
            self.releases_in_flight()
        } else {
            Vec::new()
        };
        self.after(ctx, waits, move |registry| registry.update_bot(id, patch))
    }
}

impl Registry {
    fn update_bot(&mut self, id: BotId, patch: BotPatch) -> Reply<Arc<BotView>> {
        let checked = (|| {
            let entry = self
                .book
                .bots
                .get(&id)
                .ok_or_else(|| Self::not_found_bot(id))?;
            if let Some(owners) = &patch.owner_ids {
                self.check_owners(owners)?;
            }
            if let Some(new) = patch.platform_id {
                self.check_platform_id_free(new, Some(id))?;
            }
            let mut releases = false;
            if let Some(owners) = &patch.owner_ids {
                releases |= entry.owners.iter().any(|owner| !owners.contains(owner));
            }
            let handle = Arc::clone(&entry.handle);
            if let Some(new) = patch.platform_id {
                releases |= self.bot_platform_ids.of(id) != Some(new);
                self.bot_platform_ids.claim(id, new);
            }
            if let (Some(owners), Some(entry)) = (&patch.owner_ids, self.book.bots.get_mut(&id)) {
                entry.owners.clone_from(owners);
            }
            Ok((handle, releases))
        })();
        let (handle, releases) = match checked {
            Ok(checked) => checked,
            Err(rejection) => return Box::pin(async move { Err(rejection) }),
        };
        // Sent here, in the handler, so that edits reach the bot in the order they were checked.
        let applied = handle.addr.send(ApplyPatch(patch));
        let (finished, done) = oneshot::channel::<()>();
        self.edits.push(EditInFlight {
            releases,
            done: async move {
                let _ = done.await;
            }
            .boxed()
            .shared(),
        });
        Box::pin(async move {
            let answer = applied.await.map_err(|_| Self::not_found_bot(id));
            drop(finished);
            answer?
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct DelistBot(pub BotId);

impl Handler<DelistBot> for Registry {
    type Result = Reply<()>;

    /// An edit of the bot still in flight is journaled after the delisting, and replay passes
    /// over records of a bot that is not listed; the directory ignores its publication.
    fn handle(&mut self, DelistBot(id): DelistBot, _: &mut Self::Context) -> Self::Result {
        reply(self.delist_bot(id))
    }
}

impl Registry {
    fn delist_bot(&mut self, id: BotId) -> Result<(Durable, ()), Rejection> {
        if !self.book.bots.contains_key(&id) {
            return Err(Self::not_found_bot(id));
        }
        let durable = self.make(Record::BotDelisted(id));
        Ok((durable, ()))
    }
}

#[derive(Message)]
#[rtype(result = "Result<Token, Rejection>")]
pub struct RotateToken(pub BotId);

impl Handler<RotateToken> for Registry {
    type Result = Reply<Token>;

    fn handle(&mut self, RotateToken(id): RotateToken, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            if !self.book.bots.contains_key(&id) {
                return Err(Self::not_found_bot(id));
            }
            let token = Token::generate();
            let record = Record::TokenRotated {
                bot: id,
                token: token.hash(),
            };
            Ok((self.make(record), token))
        })())
    }
}
