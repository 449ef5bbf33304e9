//! The registry actor: lists and delists bots, owns profiles, tokens and platform ids.
//!
//! It is the only writer of the [`Directory`]; every rule that spans bots (unique platform ids,
//! owners that exist, unique usernames) is checked here, one message at a time.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use arc_swap::ArcSwap;

use super::bot::{ApplyPatch, BotActor, Stop};
use super::directory::{BotHandle, Directory};
use crate::domain::bot::{BotPatch, BotState, BotView, NewBot};
use crate::domain::ids::{BotId, ProfileId, Snowflake, Token, TokenHash};
use crate::domain::profile::{NewProfile, Profile, ProfilePatch};
use crate::domain::text::ProfileUsername;
use crate::domain::time::Clock;
use crate::domain::Rejection;

/// Spreads bot actors over a fixed set of arbiters (threads), round robin.
pub struct BotSpawner {
    arbiters: Vec<ArbiterHandle>,
    next: usize,
}

impl BotSpawner {
    /// With no arbiters, bots run on the registry's own thread (tests, tiny directories).
    pub fn new(arbiters: Vec<ArbiterHandle>) -> Self {
        Self { arbiters, next: 0 }
    }

    fn spawn(&mut self, actor: BotActor) -> Addr<BotActor> {
        if self.arbiters.is_empty() {
            return actor.start();
        }
        let arbiter = &self.arbiters[self.next % self.arbiters.len()];
        self.next = self.next.wrapping_add(1);
        BotActor::start_in_arbiter(arbiter, move |_| actor)
    }
}

/// A bot as the registry stores it apart from the bot's own state.
struct Entry {
    platform_id: Snowflake,
    token: TokenHash,
    /// Kept here, not read from the bot's view, so that an owner set by a patch the bot has not
    /// applied yet still keeps that profile from being deleted.
    owners: Vec<ProfileId>,
}

pub struct Registry {
    directory: Arc<Directory>,
    clock: Arc<dyn Clock>,
    spawner: BotSpawner,
    bots: HashMap<BotId, Entry>,
    profiles: HashMap<ProfileId, Profile>,
    usernames: HashMap<ProfileUsername, ProfileId>,
    profile_platform_ids: HashMap<Snowflake, ProfileId>,
}

impl Registry {
    pub fn new(directory: Arc<Directory>, clock: Arc<dyn Clock>, spawner: BotSpawner) -> Self {
        Self {
            directory,
            clock,
            spawner,
            bots: HashMap::new(),
            profiles: HashMap::new(),
            usernames: HashMap::new(),
            profile_platform_ids: HashMap::new(),
        }
    }

    fn list(&mut self, state: BotState, token: TokenHash) -> Arc<BotHandle> {
        let id = state.listing.id;
        let platform_id = state.listing.platform_id;
        let owners = state.listing.owner_ids.clone();
        let view = Arc::new(ArcSwap::from_pointee(state.view()));
        let actor = BotActor::new(state, Arc::clone(&view), Arc::clone(&self.clock));
        let handle = Arc::new(BotHandle {
            id,
            addr: self.spawner.spawn(actor),
            view,
        });
        self.directory
            .insert(Arc::clone(&handle), platform_id, token);
        self.bots.insert(
            id,
            Entry {
                platform_id,
                token,
                owners,
            },
        );
        handle
    }

    fn check_owners(&self, owners: &[ProfileId]) -> Result<(), Rejection> {
        match owners.iter().find(|id| !self.profiles.contains_key(id)) {
            Some(missing) => Err(Rejection::Invalid(format!(
                "owner_ids: no profile with id {missing}"
            ))),
            None => Ok(()),
        }
    }

    fn check_platform_id_free(
        &self,
        platform_id: Snowflake,
        for_bot: Option<BotId>,
    ) -> Result<(), Rejection> {
        match self.directory.platform_id_owner(platform_id) {
            Some(owner) if Some(owner) != for_bot => Err(Rejection::Conflict(format!(
                "platform_id: a bot with platform id {platform_id} is already listed"
            ))),
            _ => Ok(()),
        }
    }

    fn check_profile_unique(
        &self,
        username: Option<&ProfileUsername>,
        platform_id: Option<Snowflake>,
        for_profile: Option<ProfileId>,
    ) -> Result<(), Rejection> {
        let taken_by_other =
            |owner: Option<&ProfileId>| owner.is_some_and(|o| Some(*o) != for_profile);
        if let Some(name) = username {
            if taken_by_other(self.usernames.get(name)) {
                return Err(Rejection::Conflict(format!("username: `{name}` is taken")));
            }
        }
        if let Some(platform_id) = platform_id {
            if taken_by_other(self.profile_platform_ids.get(&platform_id)) {
                return Err(Rejection::Conflict(format!(
                    "platform_id: {platform_id} is linked to another profile"
                )));
            }
        }
        Ok(())
    }

    fn index_profile(&mut self, profile: &Profile) {
        self.usernames.insert(profile.username.clone(), profile.id);
        if let Some(platform_id) = profile.platform_id {
            self.profile_platform_ids.insert(platform_id, profile.id);
        }
    }

    fn unindex_profile(&mut self, profile: &Profile) {
        self.usernames.remove(&profile.username);
        if let Some(platform_id) = profile.platform_id {
            self.profile_platform_ids.remove(&platform_id);
        }
    }

    fn not_found_bot(id: BotId) -> Rejection {
        Rejection::NotFound(format!("no bot with id {id}"))
    }

    fn not_found_profile(id: ProfileId) -> Rejection {
        Rejection::NotFound(format!("no profile with id {id}"))
    }
}

impl Actor for Registry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
    }
}

/// A whole directory to list at once: the demo, and later a snapshot being replayed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct LoadDirectory {
    pub profiles: Vec<Profile>,
    pub bots: Vec<(BotState, TokenHash)>,
}

impl Handler<LoadDirectory> for Registry {
    type Result = ();

    fn handle(&mut self, load: LoadDirectory, _: &mut Self::Context) {
        for profile in load.profiles {
            self.index_profile(&profile);
            self.profiles.insert(profile.id, profile);
        }
        for (mut state, token) in load.bots {
            state.votes.reindex();
            self.list(state, token);
        }
        self.directory.publish_listing();
    }
}

#[derive(Message)]
#[rtype(result = "Result<(Arc<BotView>, Token), Rejection>")]
pub struct CreateBot(pub NewBot);

impl Handler<CreateBot> for Registry {
    type Result = Result<(Arc<BotView>, Token), Rejection>;

    fn handle(&mut self, CreateBot(new): CreateBot, _: &mut Self::Context) -> Self::Result {
        self.check_platform_id_free(new.platform_id, None)?;
        self.check_owners(&new.owner_ids)?;
        let token = Token::generate();
        let state = BotState::create(BotId::new_random(), new, self.clock.now());
        let handle = self.list(state, token.hash());
        self.directory.publish_listing();
        Ok((handle.view(), token))
    }
}

#[derive(Message)]
#[rtype(result = "Result<Arc<BotView>, Rejection>")]
pub struct UpdateBot(pub BotId, pub BotPatch);

impl Handler<UpdateBot> for Registry {
    type Result = ResponseFuture<Result<Arc<BotView>, Rejection>>;

    fn handle(&mut self, UpdateBot(id, patch): UpdateBot, _: &mut Self::Context) -> Self::Result {
        let checked = (|| {
            let handle = self
                .directory
                .get(id)
                .ok_or_else(|| Self::not_found_bot(id))?;
            if let Some(owners) = &patch.owner_ids {
                self.check_owners(owners)?;
            }
            if let Some(new) = patch.platform_id {
                self.check_platform_id_free(new, Some(id))?;
            }
            let entry = self
                .bots
                .get_mut(&id)
                .ok_or_else(|| Self::not_found_bot(id))?;
            // Both move now, before the bot applies the patch, so that a request in the meantime
            // (another bot taking the platform id, deleting a new owner) is judged on them.
            if let Some(new) = patch.platform_id {
                self.directory.move_platform_id(id, entry.platform_id, new);
                entry.platform_id = new;
            }
            if let Some(owners) = &patch.owner_ids {
                entry.owners.clone_from(owners);
            }
            Ok(handle)
        })();
        Box::pin(async move {
            let handle = checked?;
            handle
                .addr
                .send(ApplyPatch(patch))
                .await
                .map_err(|_| Self::not_found_bot(id))
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct DelistBot(pub BotId);

impl Handler<DelistBot> for Registry {
    type Result = Result<(), Rejection>;

    fn handle(&mut self, DelistBot(id): DelistBot, _: &mut Self::Context) -> Self::Result {
        let entry = self
            .bots
            .remove(&id)
            .ok_or_else(|| Self::not_found_bot(id))?;
        let handle = self.directory.get(id);
        self.directory.remove(id, entry.platform_id, entry.token);
        self.directory.publish_listing();
        if let Some(handle) = handle {
            handle.addr.do_send(Stop);
        }
        Ok(())
    }
}

#[derive(Message)]
#[rtype(result = "Result<Token, Rejection>")]
pub struct RotateToken(pub BotId);

impl Handler<RotateToken> for Registry {
    type Result = Result<Token, Rejection>;

    fn handle(&mut self, RotateToken(id): RotateToken, _: &mut Self::Context) -> Self::Result {
        let entry = self
            .bots
            .get_mut(&id)
            .ok_or_else(|| Self::not_found_bot(id))?;
        let token = Token::generate();
        self.directory.replace_token(id, entry.token, token.hash());
        entry.token = token.hash();
        Ok(token)
    }
}

#[derive(Message)]
#[rtype(result = "Option<Profile>")]
pub struct GetProfile(pub ProfileId);

impl Handler<GetProfile> for Registry {
    type Result = Option<Profile>;

    fn handle(&mut self, GetProfile(id): GetProfile, _: &mut Self::Context) -> Self::Result {
        self.profiles.get(&id).cloned()
    }
}

#[derive(Message)]
#[rtype(result = "Result<Profile, Rejection>")]
pub struct CreateProfile(pub NewProfile);

impl Handler<CreateProfile> for Registry {
    type Result = Result<Profile, Rejection>;

    fn handle(&mut self, CreateProfile(new): CreateProfile, _: &mut Self::Context) -> Self::Result {
        self.check_profile_unique(Some(&new.username), new.platform_id, None)?;
        let profile = Profile::create(ProfileId::new_random(), new, self.clock.now());
        self.index_profile(&profile);
        self.profiles.insert(profile.id, profile.clone());
        Ok(profile)
    }
}

#[derive(Message)]
#[rtype(result = "Result<Profile, Rejection>")]
pub struct UpdateProfile(pub ProfileId, pub ProfilePatch);

impl Handler<UpdateProfile> for Registry {
    type Result = Result<Profile, Rejection>;

    fn handle(
        &mut self,
        UpdateProfile(id, patch): UpdateProfile,
        _: &mut Self::Context,
    ) -> Self::Result {
        let current = self
            .profiles
            .get(&id)
            .ok_or_else(|| Self::not_found_profile(id))?;
        let mut updated = current.clone();
        updated.apply(patch);
        self.check_profile_unique(Some(&updated.username), updated.platform_id, Some(id))?;
        let old = current.clone();
        self.unindex_profile(&old);
        self.index_profile(&updated);
        self.profiles.insert(id, updated.clone());
        Ok(updated)
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct DeleteProfile(pub ProfileId);

impl Handler<DeleteProfile> for Registry {
    type Result = Result<(), Rejection>;

    fn handle(&mut self, DeleteProfile(id): DeleteProfile, _: &mut Self::Context) -> Self::Result {
        if !self.profiles.contains_key(&id) {
            return Err(Self::not_found_profile(id));
        }
        let owned = self
            .bots
            .values()
            .filter(|bot| bot.owners.contains(&id))
            .count();
        if owned > 0 {
            return Err(Rejection::Conflict(format!(
                "profile {id} owns {owned} listed bot(s); remove it from their owner_ids first"
            )));
        }
        if let Some(profile) = self.profiles.remove(&id) {
            self.unindex_profile(&profile);
        }
        Ok(())
    }
}
