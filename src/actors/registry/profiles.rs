//! The messages that create, edit and delete profiles.

use actix::prelude::*;

use super::{reply, Registry, Reply};
use uuid::Uuid;

use crate::domain::audit::{changed_fields, profile_target, set_fields, Acting, AuditAction};
use crate::domain::ids::{ProfileId, Token};
use crate::domain::people::{ProfileToken, Scope};
use crate::domain::profile::{NewProfile, Profile, ProfilePatch};
use crate::domain::text::TokenLabel;
use crate::domain::Rejection;
use crate::persist::journal::Durable;
use crate::persist::state::Record;

#[derive(Message)]
#[rtype(result = "Result<Profile, Rejection>")]
pub struct CreateProfile(pub NewProfile);

impl Handler<CreateProfile> for Registry {
    type Result = Reply<Profile>;

    fn handle(&mut self, CreateProfile(new): CreateProfile, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            self.refuse_while_failed()?;
            self.check_profile_unique(Some(&new.username), new.platform_id, None)?;
            let profile = Profile::create(ProfileId::new_random(), new, self.clock.now());
            let acting = Acting::admin(AuditAction::ProfileCreate);
            let (target, changes) = (profile_target(profile.id), set_fields(&profile));
            let record = Record::ProfileSaved(profile.clone());
            Ok((self.make_audited(acting, target, changes, record)?, profile))
        })())
    }
}

#[derive(Message)]
#[rtype(result = "Result<Profile, Rejection>")]
pub struct UpdateProfile(pub ProfileId, pub ProfilePatch);

impl Handler<UpdateProfile> for Registry {
    type Result = Reply<Profile>;

    fn handle(
        &mut self,
        UpdateProfile(id, patch): UpdateProfile,
        _: &mut Self::Context,
    ) -> Self::Result {
        reply((|| {
            self.refuse_while_failed()?;
            let old = self
                .book
                .profiles
                .get(&id)
                .ok_or_else(|| Self::not_found_profile(id))?;
            let mut updated = old.clone();
            updated.apply(patch);
            let changes = changed_fields(old, &updated)
                .into_iter()
                .map(api_field_name)
                .collect();
            self.check_profile_unique(Some(&updated.username), updated.platform_id, Some(id))?;
            let acting = Acting::admin(AuditAction::ProfileUpdate);
            let record = Record::ProfileSaved(updated.clone());
            let durable = self.make_audited(acting, profile_target(id), changes, record)?;
            Ok((durable, updated))
        })())
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct DeleteProfile(pub ProfileId);

impl Handler<DeleteProfile> for Registry {
    type Result = Reply<()>;

    fn handle(
        &mut self,
        DeleteProfile(id): DeleteProfile,
        ctx: &mut Self::Context,
    ) -> Self::Result {
        let waits = self.releases_in_flight();
        self.after(ctx, waits, move |registry| {
            reply(registry.delete_profile(id))
        })
    }
}

impl Registry {
    fn delete_profile(&mut self, id: ProfileId) -> Result<(Durable, ()), Rejection> {
        (|| {
            self.refuse_while_failed()?;
            if !self.book.profiles.contains_key(&id) {
                return Err(Self::not_found_profile(id));
            }
            let owned = self
                .book
                .bots
                .values()
                .filter(|bot| bot.owners.contains(&id))
                .count();
            if owned > 0 {
                return Err(Rejection::Conflict(format!(
                    "profile {id} owns {owned} listed bot(s); remove it from their owner_ids first"
                )));
            }
            let acting = Acting::admin(AuditAction::ProfileDelete);
            let record = Record::ProfileDeleted(id);
            Ok((
                self.make_audited(acting, profile_target(id), Vec::new(), record)?,
                (),
            ))
        })()
    }
}

/// At most this many tokens per profile: a login that issues one per session without revoking
/// any is a bug that should surface, not a list that grows without end.
pub const MAX_TOKENS_PER_PROFILE: usize = 50;

/// Issues a token to a profile (`POST /admin/users/{id}/tokens`): the secret is answered once,
/// the record keeps its hash.
#[derive(Message)]
#[rtype(result = "Result<(ProfileToken, Token), Rejection>")]
pub struct IssueProfileToken {
    pub profile: ProfileId,
    pub scopes: Vec<Scope>,
    pub label: TokenLabel,
    pub expires_in: Option<u64>,
}

impl Handler<IssueProfileToken> for Registry {
    type Result = Reply<(ProfileToken, Token)>;

    fn handle(&mut self, issue: IssueProfileToken, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            self.refuse_while_failed()?;
            let profile = self
                .book
                .profiles
                .get(&issue.profile)
                .ok_or_else(|| Self::not_found_profile(issue.profile))?;
            if profile.tokens.len() >= MAX_TOKENS_PER_PROFILE {
                return Err(Rejection::Conflict(format!(
                    "profile {} has {MAX_TOKENS_PER_PROFILE} tokens, the most it may hold; revoke one first",
                    issue.profile
                )));
            }
            let now = self.clock.now();
            let secret = Token::generate_for_profile();
            let token = ProfileToken {
                id: Uuid::new_v4(),
                hash: secret.hash(),
                scopes: issue.scopes,
                label: issue.label,
                created_at: now,
                expires_at: issue.expires_in.map(|seconds| {
                    // Bounded by `MAX_EXPIRES_IN`, so the sum cannot overflow.
                    now.plus(chrono::Duration::seconds(seconds as i64))
                }),
            };
            let mut changes = vec!["scopes".to_string(), "label".to_string()];
            if token.expires_at.is_some() {
                changes.push("expires_at".into());
            }
            let (acting, target) = (Acting::admin(AuditAction::TokenIssue), token.id);
            let record = Record::ProfileTokenIssued {
                profile: issue.profile,
                token: token.clone(),
            };
            Ok((
                self.make_audited(acting, target, changes, record)?,
                (token, secret),
            ))
        })())
    }
}

/// Revokes a profile's token (`DELETE /admin/users/{id}/tokens/{token_id}`): refused from the
/// moment its record is applied, on every node.
#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct RevokeProfileToken {
    pub profile: ProfileId,
    pub token: Uuid,
}

impl Handler<RevokeProfileToken> for Registry {
    type Result = Reply<()>;

    fn handle(&mut self, revoke: RevokeProfileToken, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            self.refuse_while_failed()?;
            let profile = self
                .book
                .profiles
                .get(&revoke.profile)
                .ok_or_else(|| Self::not_found_profile(revoke.profile))?;
            if !profile.tokens.iter().any(|token| token.id == revoke.token) {
                return Err(Rejection::NotFound(format!(
                    "profile {} has no token with id {}",
                    revoke.profile, revoke.token
                )));
            }
            let record = Record::ProfileTokenRevoked {
                profile: revoke.profile,
                token: revoke.token,
            };
            let acting = Acting::admin(AuditAction::TokenRevoke);
            Ok((
                self.make_audited(acting, revoke.token, Vec::new(), record)?,
                (),
            ))
        })())
    }
}

/// A stored profile's field as the API names it: the audit's changed fields are the names a
/// reader of `PATCH /admin/users/{id}` knows (`mod`, not the stored `moderator`).
fn api_field_name(stored: String) -> String {
    match stored.as_str() {
        "moderator" => "mod".into(),
        _ => stored,
    }
}
