//! The messages that list, edit and delist bots and rotate their tokens.

use std::sync::Arc;

use actix::prelude::*;
use futures_util::FutureExt;
use tokio::sync::oneshot;

use super::{reply, EditInFlight, Registry, Reply};
use crate::actors::bot::ApplyPatch;
use crate::domain::audit::{bot_target, set_fields, Acting, AuditAction, AuditActor};
use crate::domain::bot::{BotPatch, BotState, BotView, DecidedBy, Decider, ListingStatus, NewBot};
use crate::domain::ids::{BotId, ProfileId, Token};
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
        self.after(ctx, waits, move |registry| {
            reply(registry.create_bot(new, None))
        })
    }
}

/// A listing submitted by a profile with a `bots` token: `pending`, the submitter its first
/// owner (CONTRACT section 13).
#[derive(Message)]
#[rtype(result = "Result<(Arc<BotView>, Token), Rejection>")]
pub struct SubmitBot {
    pub new: NewBot,
    pub submitter: ProfileId,
}

impl Handler<SubmitBot> for Registry {
    type Result = Reply<(Arc<BotView>, Token)>;

    fn handle(&mut self, submit: SubmitBot, ctx: &mut Self::Context) -> Self::Result {
        let waits = self.releases_in_flight();
        self.after(ctx, waits, move |registry| {
            reply(registry.create_bot(submit.new, Some(submit.submitter)))
        })
    }
}

impl Registry {
    fn create_bot(
        &mut self,
        mut new: NewBot,
        submitter: Option<ProfileId>,
    ) -> Result<(Durable, (Arc<BotView>, Token)), Rejection> {
        self.refuse_while_failed()?;
        if let Some(submitter) = submitter {
            new.owner_ids.retain(|owner| *owner != submitter);
            new.owner_ids.insert(0, submitter);
            new.owner_ids.truncate(crate::domain::bot::MAX_OWNERS);
        }
        self.check_platform_id_free(new.platform_id, None)?;
        self.check_owners(&new.owner_ids)?;
        let token = Token::generate();
        let mut state = BotState::create(BotId::new_random(), new, self.clock.now());
        state.webhook.check_secret()?;
        if submitter.is_some() {
            Arc::make_mut(&mut state.listing).status = ListingStatus::Pending;
        }
        let id = state.listing.id;
        let token_hash = token.hash();
        let mut changes = set_fields(&*state.listing);
        changes.extend(
            [
                ("webhook_url", state.webhook.url.is_some()),
                ("webhook_secret", state.webhook.secret.is_some()),
            ]
            .into_iter()
            .filter(|(_, set)| *set)
            .map(|(name, _)| name.to_string()),
        );
        let acting = match submitter {
            Some(profile) => Acting::new(AuditActor::profile(profile), AuditAction::BotSubmit),
            None => Acting::admin(AuditAction::BotCreate),
        };
        let record = Record::BotListed {
            state: Box::new(state),
            token: token_hash,
        };
        // The actor starts first, but nobody can reach it before its listing is published, so
        // its own records still come after this one. Until it journals one, its `last_seq`
        // stays 0: replay has nothing of its own to skip.
        let durable = self.make_audited(acting, bot_target(id), changes, record)?;
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
        self.update_bot_after(
            ctx,
            id,
            patch,
            DecidedBy::Admin,
            Acting::admin(AuditAction::BotUpdate),
        )
    }
}

/// An edit by one of the bot's owners (a `bots` token): 403 for a profile that is not one, and
/// only the first owner changes who the first owner is.
#[derive(Message)]
#[rtype(result = "Result<Arc<BotView>, Rejection>")]
pub struct OwnerUpdateBot {
    pub bot: BotId,
    pub owner: ProfileId,
    pub patch: BotPatch,
    /// `bot.update`, or `bot.owners` from `PUT /bots/{id}/owners`.
    pub action: AuditAction,
}

impl Handler<OwnerUpdateBot> for Registry {
    type Result = Reply<Arc<BotView>>;

    fn handle(&mut self, edit: OwnerUpdateBot, ctx: &mut Self::Context) -> Self::Result {
        let acting = Acting::new(AuditActor::profile(edit.owner), edit.action);
        self.update_bot_after(
            ctx,
            edit.bot,
            edit.patch,
            DecidedBy::Owner(edit.owner),
            acting,
        )
    }
}

impl Registry {
    pub(super) fn update_bot_after(
        &mut self,
        ctx: &mut Context<Self>,
        id: BotId,
        patch: BotPatch,
        by: DecidedBy,
        acting: Acting,
    ) -> Reply<Arc<BotView>> {
        let takes = patch.platform_id.is_some() || patch.owner_ids.is_some();
        let waits = if takes {
            self.releases_in_flight()
        } else {
            Vec::new()
        };
        self.after(ctx, waits, move |registry| {
            registry.update_bot(id, patch, by, acting)
        })
    }

    /// 403 unless `owner` is one of the bot's owners, as the registry has accepted them.
    pub(super) fn check_owner(&self, id: BotId, owner: ProfileId) -> Result<(), Rejection> {
        let entry = self
            .book
            .bots
            .get(&id)
            .ok_or_else(|| Self::not_found_bot(id))?;
        if entry.owners.contains(&owner) {
            Ok(())
        } else {
            Err(Rejection::Forbidden(
                "this profile is not an owner of this bot".into(),
            ))
        }
    }

    fn update_bot(
        &mut self,
        id: BotId,
        patch: BotPatch,
        by: DecidedBy,
        acting: Acting,
    ) -> Reply<Arc<BotView>> {
        let owner = match by {
            DecidedBy::Owner(owner) => Some(owner),
            DecidedBy::Admin | DecidedBy::Staff(_) => None,
        };
        let checked = (|| {
            // Before the claims below: a refused edit takes nothing.
            self.refuse_while_failed()?;
            if let Some(owner) = owner {
                self.check_owner(id, owner)?;
            }
            let entry = self
                .book
                .bots
                .get(&id)
                .ok_or_else(|| Self::not_found_bot(id))?;
            if let (Some(owner), Some(owners)) = (owner, &patch.owner_ids) {
                check_first_owner(&entry.owners, owners, owner)?;
            }
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
        let reason = patch.reason.as_ref().map(|r| r.as_str().to_string());
        let acting = acting.with_reason(reason);
        let applied = handle.addr.send(ApplyPatch(patch, by, acting));
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

/// The owners' rule: the list is not empty, and only the first owner changes the first owner.
fn check_first_owner(
    current: &[ProfileId],
    wanted: &[ProfileId],
    asker: ProfileId,
) -> Result<(), Rejection> {
    let Some(first) = wanted.first() else {
        return Err(Rejection::Invalid(
            "owners must name at least one profile".into(),
        ));
    };
    if current.first() != Some(first) && current.first() != Some(&asker) {
        return Err(Rejection::Forbidden(
            "only the first owner may change who the first owner is".into(),
        ));
    }
    Ok(())
}

/// A bot edits its own listing with its token (`PATCH /projects/@me`): the admin API's rules,
/// audited as the bot's own change.
#[derive(Message)]
#[rtype(result = "Result<Arc<BotView>, Rejection>")]
pub struct BotUpdatesItself(pub BotId, pub BotPatch);

impl Handler<BotUpdatesItself> for Registry {
    type Result = Reply<Arc<BotView>>;

    fn handle(
        &mut self,
        BotUpdatesItself(id, patch): BotUpdatesItself,
        ctx: &mut Self::Context,
    ) -> Self::Result {
        let acting = Acting::new(AuditActor::bot(id), AuditAction::BotUpdate);
        // A bot's own edit cannot move its status (its patch has none): `Admin` is only the
        // decider the status table would be asked about.
        self.update_bot_after(ctx, id, patch, DecidedBy::Admin, acting)
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
        reply(self.delist_bot(id, Decider::Admin, Acting::admin(AuditAction::BotDelete)))
    }
}

/// An owner removes the listing (`DELETE /bots/{id}`): the same record as the admin's.
#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct OwnerDelistBot {
    pub bot: BotId,
    pub owner: ProfileId,
}

impl Handler<OwnerDelistBot> for Registry {
    type Result = Reply<()>;

    fn handle(&mut self, remove: OwnerDelistBot, _: &mut Self::Context) -> Self::Result {
        let acting = Acting::new(AuditActor::profile(remove.owner), AuditAction::BotDelete);
        reply(
            self.refuse_while_failed()
                .and_then(|()| self.check_owner(remove.bot, remove.owner))
                .and_then(|()| self.delist_bot(remove.bot, Decider::Owner, acting)),
        )
    }
}

/// An owner rotates the bot's token: only once the listing is approved (a pending listing's
/// token works nowhere yet).
#[derive(Message)]
#[rtype(result = "Result<Token, Rejection>")]
pub struct OwnerRotateToken {
    pub bot: BotId,
    pub owner: ProfileId,
}

impl Handler<OwnerRotateToken> for Registry {
    type Result = Reply<Token>;

    fn handle(&mut self, rotate: OwnerRotateToken, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            self.refuse_while_failed()?;
            self.check_owner(rotate.bot, rotate.owner)?;
            let status = self.handle_of(rotate.bot)?.view().listing.status;
            if status != ListingStatus::Approved {
                return Err(Rejection::Conflict(format!(
                    "the listing is `{}`: its token can be rotated once it is approved",
                    status.name()
                )));
            }
            let acting = Acting::new(
                AuditActor::profile(rotate.owner),
                AuditAction::BotTokenRotate,
            );
            self.rotate_token(rotate.bot, acting)
        })())
    }
}

impl Registry {
    /// Removes the listing if `by` may remove it in its status (the lifecycle table's row).
    fn delist_bot(
        &mut self,
        id: BotId,
        by: Decider,
        acting: Acting,
    ) -> Result<(Durable, ()), Rejection> {
        self.refuse_while_failed()?;
        if !self.book.bots.contains_key(&id) {
            return Err(Self::not_found_bot(id));
        }
        let status = self.handle_of(id)?.view().listing.status;
        status.check_removal(by).map_err(Rejection::Conflict)?;
        let record = Record::BotDelisted(id);
        let durable = self.make_audited(acting, bot_target(id), Vec::new(), record)?;
        Ok((durable, ()))
    }
}

#[derive(Message)]
#[rtype(result = "Result<Token, Rejection>")]
pub struct RotateToken(pub BotId);

impl Handler<RotateToken> for Registry {
    type Result = Reply<Token>;

    fn handle(&mut self, RotateToken(id): RotateToken, _: &mut Self::Context) -> Self::Result {
        reply(self.rotate_token(id, Acting::admin(AuditAction::BotTokenRotate)))
    }
}

impl Registry {
    fn rotate_token(&mut self, id: BotId, acting: Acting) -> Result<(Durable, Token), Rejection> {
        self.refuse_while_failed()?;
        if !self.book.bots.contains_key(&id) {
            return Err(Self::not_found_bot(id));
        }
        let token = Token::generate();
        let record = Record::TokenRotated {
            bot: id,
            token: token.hash(),
        };
        let changes = vec!["token".to_string()];
        Ok((
            self.make_audited(acting, bot_target(id), changes, record)?,
            token,
        ))
    }
}
