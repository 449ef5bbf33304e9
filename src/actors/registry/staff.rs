//! Staff's writes (CONTRACT section 14): decisions, certification and featuring go through the
//! one edit path (`update_bot_after`, journaled as `Record::BotEdited` with its decision), a
//! claim and a review's removal through the bot, a vote ban as the registry's own record. Each checks here, in order
//! with every other registry message, that the staff member still holds the role: a profile
//! that lost `mod`/`admin` is refused even if its request passed the API's check a moment
//! before.

use std::sync::Arc;

use actix::prelude::*;

use super::{reply, Registry, Reply};
use crate::actors::bot::{ClaimListing, RemoveReview};
use crate::actors::Answer;
use crate::domain::audit::{profile_target, Acting, AuditAction, AuditActor};
use crate::domain::bot::{BotPatch, BotView, Claim, DecidedBy};
use crate::domain::ids::{BotId, ProfileId};
use crate::domain::reviews::{Removal, Remover};
use crate::domain::staff::{StaffAction, StaffRole, VoteBan};
use crate::domain::text::DecisionReason;
use crate::domain::Rejection;
use crate::persist::state::Record;

/// A staff member's action on a listing.
#[derive(Message)]
#[rtype(result = "Result<Arc<BotView>, Rejection>")]
pub struct StaffActOnBot {
    pub bot: BotId,
    pub staff: ProfileId,
    pub action: StaffAction,
    /// For `deny` and `delist`.
    pub reason: Option<DecisionReason>,
}

impl Handler<StaffActOnBot> for Registry {
    type Result = Reply<Arc<BotView>>;

    fn handle(&mut self, act: StaffActOnBot, ctx: &mut Self::Context) -> Self::Result {
        if let Err(refused) = self
            .check_staff(act.staff, act.action.role())
            .and_then(|()| self.handle_of(act.bot))
        {
            return Box::pin(async move { Err(refused) });
        }
        let patch = match act.action {
            StaffAction::Claim => return self.claim(act.bot, act.staff),
            StaffAction::Approve | StaffAction::Deny | StaffAction::Delist => BotPatch {
                status: act.action.status(),
                reason: act.reason,
                ..BotPatch::default()
            },
            StaffAction::Certify | StaffAction::Uncertify => BotPatch {
                certified: Some(act.action == StaffAction::Certify),
                ..BotPatch::default()
            },
            StaffAction::Feature | StaffAction::Unfeature => BotPatch {
                featured: Some(act.action == StaffAction::Feature),
                ..BotPatch::default()
            },
        };
        let acting = Acting::new(AuditActor::profile(act.staff), act.action.audit_action());
        self.update_bot_after(ctx, act.bot, patch, DecidedBy::Staff(act.staff), acting)
    }
}

impl Registry {
    /// 403 unless `staff` is a profile that holds `role` now.
    fn check_staff(&self, staff: ProfileId, role: StaffRole) -> Result<(), Rejection> {
        match self.book.profiles.get(&staff) {
            Some(profile) if role.held_by(profile) => Ok(()),
            _ => Err(Rejection::Forbidden(format!(
                "this profile is not staff: this needs {}",
                role.name()
            ))),
        }
    }

    /// The bot checks that the listing is pending (in order with its edits) and journals it.
    fn claim(&mut self, bot: BotId, staff: ProfileId) -> Reply<Arc<BotView>> {
        let claim = Claim {
            profile_id: staff,
            at: self.clock.now(),
        };
        let handle = match self.handle_of(bot) {
            Ok(handle) => handle,
            Err(refused) => return Box::pin(async move { Err(refused) }),
        };
        let acting = Acting::new(AuditActor::profile(staff), AuditAction::BotClaim);
        let claimed = handle.addr.send(ClaimListing(claim, acting));
        Box::pin(async move { claimed.await.map_err(|_| Self::not_found_bot(bot))? })
    }
}

/// A profile's vote ban set (`ban`) or lifted (`None`) by a staff member.
#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct SetVoteBan {
    pub profile: ProfileId,
    pub staff: ProfileId,
    pub ban: Option<VoteBan>,
}

impl Handler<SetVoteBan> for Registry {
    type Result = Reply<()>;

    fn handle(&mut self, set: SetVoteBan, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            self.refuse_while_failed()?;
            self.check_staff(set.staff, StaffRole::Staff)?;
            let now = self.clock.now();
            let profile = self
                .book
                .profiles
                .get(&set.profile)
                .ok_or_else(|| Self::not_found_profile(set.profile))?;
            let banned = profile
                .vote_ban
                .as_ref()
                .is_some_and(|ban| ban.holds_at(now));
            if set.ban.is_none() && !banned {
                return Err(Rejection::Conflict(
                    "this profile is not banned from voting".into(),
                ));
            }
            let action = match set.ban {
                Some(_) => AuditAction::VoteBan,
                None => AuditAction::VoteUnban,
            };
            let reason = set.ban.as_ref().map(|ban| ban.reason.as_str().to_owned());
            let entry = Acting::new(AuditActor::profile(set.staff), action)
                .with_reason(reason)
                .entry(profile_target(set.profile), vec!["vote_ban".into()], now);
            let record = Record::audited(
                entry,
                Record::VoteBanSet {
                    profile: set.profile,
                    ban: set.ban,
                    by: set.staff,
                },
            );
            Ok((self.make(record)?, ()))
        })())
    }
}

/// A review removed by a staff member, with a reason: the role is checked here, in order with
/// the changes of profiles (as for every staff write), then the bot removes it in order with
/// its other reviews' writes and journals the removal with its audit entry.
#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct StaffRemoveReview {
    pub bot: BotId,
    pub staff: ProfileId,
    pub review: uuid::Uuid,
    pub reason: DecisionReason,
}

impl Handler<StaffRemoveReview> for Registry {
    type Result = Reply<()>;

    fn handle(&mut self, remove: StaffRemoveReview, _: &mut Self::Context) -> Self::Result {
        let handle = match self
            .check_staff(remove.staff, StaffRole::Staff)
            .and_then(|()| self.handle_of(remove.bot))
        {
            Ok(handle) => handle,
            Err(refused) => return Box::pin(async move { Err(refused) }),
        };
        let (answer, answered) = Answer::pair();
        let told = handle.tell(RemoveReview {
            review: remove.review,
            removal: Removal {
                by: Remover::Staff(remove.staff),
                reason: Some(remove.reason),
            },
            answer,
        });
        Box::pin(async move {
            told?;
            answered.wait().await
        })
    }
}
