//! The registry actor: lists and delists bots, owns profiles, tokens and platform ids.
//!
//! It is the only writer of the [`Directory`]; every rule that spans bots (unique platform ids,
//! owners that exist, unique usernames) is checked here, one message at a time.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use arc_swap::ArcSwap;

use futures_util::future::BoxFuture;

use super::bot::{ApplyPatch, BotActor, ReadState, Stop};
use super::directory::{BotHandle, Directory};
use super::when_durable;
use crate::domain::bot::{BotPatch, BotState, BotView, NewBot};
use crate::domain::ids::{BotId, ProfileId, Snowflake, Token, TokenHash};
use crate::domain::profile::{NewProfile, Profile, ProfilePatch};
use crate::domain::text::ProfileUsername;
use crate::domain::time::Clock;
use crate::domain::Rejection;
use crate::persist::journal::{Durable, Journal, Publish};
use crate::persist::state::{DirectoryState, Record, StoredBot};
use crate::persist::{BotSource, Captured, SnapshotFailed, StateSource};
use crate::webhooks::Dispatcher;

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

/// A bot as the registry stores it apart from the bot's own state. Entries change as soon as
/// the registry accepts a change, so its rules see what it has accepted; the directory shows a
/// change only once it is durable.
struct Entry {
    handle: Arc<BotHandle>,
    platform_id: Snowflake,
    token: TokenHash,
    /// Kept here, not read from the bot's view, so that an owner set by a patch the bot has not
    /// applied yet still keeps that profile from being deleted.
    owners: Vec<ProfileId>,
}

pub struct Registry {
    directory: Arc<Directory>,
    clock: Arc<dyn Clock>,
    journal: Journal,
    dispatcher: Arc<Dispatcher>,
    spawner: BotSpawner,
    /// The last journal record of the registry's own (profiles, listing, tokens).
    last_seq: u64,
    bots: HashMap<BotId, Entry>,
    /// The platform id each listed bot has claimed, for the uniqueness rule.
    bot_platform_ids: HashMap<Snowflake, BotId>,
    profiles: HashMap<ProfileId, Profile>,
    usernames: HashMap<ProfileUsername, ProfileId>,
    profile_platform_ids: HashMap<Snowflake, ProfileId>,
}

impl Registry {
    pub fn new(
        directory: Arc<Directory>,
        clock: Arc<dyn Clock>,
        journal: Journal,
        dispatcher: Arc<Dispatcher>,
        spawner: BotSpawner,
    ) -> Self {
        Self {
            directory,
            clock,
            journal,
            dispatcher,
            spawner,
            last_seq: 0,
            bots: HashMap::new(),
            bot_platform_ids: HashMap::new(),
            profiles: HashMap::new(),
            usernames: HashMap::new(),
            profile_platform_ids: HashMap::new(),
        }
    }

    /// Starts the bot's actor and records the bot as listed; readers see it once it is
    /// published.
    fn list(&mut self, state: BotState, token: TokenHash) -> Arc<BotHandle> {
        let id = state.listing.id;
        let platform_id = state.listing.platform_id;
        let owners = state.listing.owner_ids.clone();
        let view = Arc::new(ArcSwap::from_pointee(state.view()));
        let actor = BotActor::new(
            state,
            Arc::clone(&view),
            Arc::clone(&self.directory),
            Arc::clone(&self.clock),
            self.journal.clone(),
            Arc::clone(&self.dispatcher),
        );
        let handle = Arc::new(BotHandle {
            id,
            addr: self.spawner.spawn(actor),
            view,
        });
        self.bots.insert(
            id,
            Entry {
                handle: Arc::clone(&handle),
                platform_id,
                token,
                owners,
            },
        );
        self.bot_platform_ids.insert(platform_id, id);
        handle
    }

    /// Journals a registry change, to be published once durable. Called before the bot
    /// concerned can journal anything of its own, so a bot's records always come after the
    /// record that listed it.
    fn commit(&mut self, record: &Record, publish: Option<Publish>) -> (u64, Durable) {
        let (seq, durable) = self.journal.submit_then(record, publish);
        self.last_seq = self.last_seq.max(seq);
        (seq, durable)
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
        match self.bot_platform_ids.get(&platform_id) {
            Some(owner) if Some(*owner) != for_bot => Err(Rejection::Conflict(format!(
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

    fn save_profile(&mut self, profile: Profile, replacing: Option<&Profile>) -> Durable {
        let directory = Arc::clone(&self.directory);
        let shown = Arc::new(profile.clone());
        let (_, durable) = self.commit(
            &Record::ProfileSaved(profile.clone()),
            Some(Box::new(move || directory.publish_profile(shown))),
        );
        if let Some(old) = replacing {
            self.unindex_profile(old);
        }
        self.index_profile(&profile);
        self.profiles.insert(profile.id, profile);
        crate::telemetry::profiles_listed(self.profiles.len());
        durable
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

/// A whole directory to list at once: a recovered state, or the demo.
#[derive(Message)]
#[rtype(result = "()")]
pub struct LoadDirectory {
    pub state: DirectoryState,
}

impl Handler<LoadDirectory> for Registry {
    type Result = ();

    fn handle(&mut self, LoadDirectory { state }: LoadDirectory, _: &mut Self::Context) {
        self.last_seq = self.last_seq.max(state.registry_seq);
        for profile in state.profiles {
            self.index_profile(&profile);
            self.directory.publish_profile(Arc::new(profile.clone()));
            self.profiles.insert(profile.id, profile);
        }
        crate::telemetry::profiles_listed(self.profiles.len());
        // What was recovered is durable already: it is published at once, as one batch.
        let listed: Vec<_> = state
            .bots
            .into_iter()
            .map(|StoredBot { mut state, token }| {
                state.restore();
                let platform_id = state.listing.platform_id;
                (self.list(state, token), platform_id, token)
            })
            .collect();
        self.directory.publish_recovered(listed);
    }
}

/// The registry's part of a snapshot. The bots are read afterwards, one message each while
/// requests go on, and written as they come; what changes meanwhile is in the journal after
/// `seq`, and replay skips what a bot already has.
#[derive(Message)]
#[rtype(result = "Captured")]
pub struct Capture;

impl Handler<Capture> for Registry {
    type Result = MessageResult<Capture>;

    fn handle(&mut self, _: Capture, _: &mut Self::Context) -> Self::Result {
        let bots = self
            .bots
            .values()
            .map(|entry| {
                Box::new(ListedBot {
                    handle: Arc::clone(&entry.handle),
                    token: entry.token,
                    directory: Arc::clone(&self.directory),
                }) as Box<dyn BotSource>
            })
            .collect();
        MessageResult(Captured {
            seq: self.journal.last_seq(),
            registry_seq: self.last_seq,
            profiles: self.profiles.values().cloned().collect(),
            bots,
        })
    }
}

/// Snapshots read the state from the registry and its bots.
impl StateSource for Addr<Registry> {
    fn capture(&self) -> BoxFuture<'static, Result<Captured, SnapshotFailed>> {
        let asked = self.send(Capture);
        Box::pin(async move {
            asked
                .await
                .map_err(|e| SnapshotFailed::RegistryGone(e.to_string()))
        })
    }
}

/// A listed bot as a snapshot reads it: its actor's state and its token.
struct ListedBot {
    handle: Arc<BotHandle>,
    token: TokenHash,
    directory: Arc<Directory>,
}

impl BotSource for ListedBot {
    fn id(&self) -> BotId {
        self.handle.id
    }

    fn read(&self) -> BoxFuture<'static, Result<Option<StoredBot>, SnapshotFailed>> {
        let asked = self.handle.addr.send(ReadState);
        let (bot, token, directory) = (self.handle.id, self.token, Arc::clone(&self.directory));
        Box::pin(async move {
            match asked.await {
                Ok(state) => Ok(Some(StoredBot { state, token })),
                // Delisted meanwhile: its actor stopped.
                Err(_) if directory.get(bot).is_none() => Ok(None),
                Err(error) => Err(SnapshotFailed::BotGone {
                    bot,
                    why: error.to_string(),
                }),
            }
        })
    }
}

type Reply<T> = ResponseFuture<Result<T, Rejection>>;

/// The answer to a registry write: refused at once, or given once its record is durable.
fn reply<T: Send + 'static>(outcome: Result<(Durable, T), Rejection>) -> Reply<T> {
    match outcome {
        Ok((durable, value)) => when_durable(durable, value),
        Err(rejection) => Box::pin(async move { Err(rejection) }),
    }
}

#[derive(Message)]
#[rtype(result = "Result<(Arc<BotView>, Token), Rejection>")]
pub struct CreateBot(pub NewBot);

impl Handler<CreateBot> for Registry {
    type Result = Reply<(Arc<BotView>, Token)>;

    fn handle(&mut self, CreateBot(new): CreateBot, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            self.check_platform_id_free(new.platform_id, None)?;
            self.check_owners(&new.owner_ids)?;
            let token = Token::generate();
            let state = BotState::create(BotId::new_random(), new, self.clock.now());
            let record = Record::BotListed {
                state: Box::new(state.clone()),
                token: token.hash(),
            };
            // The actor starts first, but nobody can reach it before its listing is published,
            // so its own records still come after this one. Until it journals one, its
            // `last_seq` stays 0: replay has nothing of its own to skip.
            let (platform_id, token_hash) = (state.listing.platform_id, token.hash());
            let handle = self.list(state, token_hash);
            let directory = Arc::clone(&self.directory);
            let shown = Arc::clone(&handle);
            let (_, durable) = self.commit(
                &record,
                Some(Box::new(move || {
                    directory.publish_listed(shown, platform_id, token_hash)
                })),
            );
            Ok((durable, (handle.view(), token)))
        })())
    }
}

#[derive(Message)]
#[rtype(result = "Result<Arc<BotView>, Rejection>")]
pub struct UpdateBot(pub BotId, pub BotPatch);

impl Handler<UpdateBot> for Registry {
    type Result = AtomicResponse<Self, Result<Arc<BotView>, Rejection>>;

    /// Atomic: the registry takes no other message until the bot has applied and journaled
    /// the edit, so a listing or profile deletion that the moved platform id or owners allow is
    /// never journaled before the edit that allowed it.
    fn handle(&mut self, UpdateBot(id, patch): UpdateBot, _: &mut Self::Context) -> Self::Result {
        let checked = (|| {
            if !self.bots.contains_key(&id) {
                return Err(Self::not_found_bot(id));
            }
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
            let mut moved: Option<Publish> = None;
            if let Some(new) = patch.platform_id.filter(|new| *new != entry.platform_id) {
                let old = std::mem::replace(&mut entry.platform_id, new);
                self.bot_platform_ids.remove(&old);
                self.bot_platform_ids.insert(new, id);
                let directory = Arc::clone(&self.directory);
                moved = Some(Box::new(move || {
                    directory.publish_platform_id(id, old, new)
                }));
            }
            let entry = self
                .bots
                .get_mut(&id)
                .ok_or_else(|| Self::not_found_bot(id))?;
            if let Some(owners) = &patch.owner_ids {
                entry.owners.clone_from(owners);
            }
            Ok((Arc::clone(&entry.handle), moved))
        })();
        // The bot journals the edit itself, in order with its votes and stats, and publishes the
        // moved platform id with it; the message is queued here, in the handler, so edits reach
        // the bot in the order they were checked.
        let applied = checked.map(|(handle, moved)| handle.addr.send(ApplyPatch(patch, moved)));
        AtomicResponse::new(Box::pin(
            async move { applied?.await.map_err(|_| Self::not_found_bot(id))? }.into_actor(self),
        ))
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct DelistBot(pub BotId);

impl Handler<DelistBot> for Registry {
    type Result = Reply<()>;

    fn handle(&mut self, DelistBot(id): DelistBot, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            if !self.bots.contains_key(&id) {
                return Err(Self::not_found_bot(id));
            }
            let entry = self
                .bots
                .remove(&id)
                .ok_or_else(|| Self::not_found_bot(id))?;
            self.bot_platform_ids.remove(&entry.platform_id);
            let directory = Arc::clone(&self.directory);
            let (_, durable) = self.commit(
                &Record::BotDelisted(id),
                Some(Box::new(move || {
                    directory.publish_delisted(id, entry.platform_id, entry.token);
                    entry.handle.addr.do_send(Stop);
                })),
            );
            Ok((durable, ()))
        })())
    }
}

#[derive(Message)]
#[rtype(result = "Result<Token, Rejection>")]
pub struct RotateToken(pub BotId);

impl Handler<RotateToken> for Registry {
    type Result = Reply<Token>;

    fn handle(&mut self, RotateToken(id): RotateToken, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            let old = self
                .bots
                .get(&id)
                .ok_or_else(|| Self::not_found_bot(id))?
                .token;
            let token = Token::generate();
            let new = token.hash();
            let directory = Arc::clone(&self.directory);
            let (_, durable) = self.commit(
                &Record::TokenRotated {
                    bot: id,
                    token: new,
                },
                Some(Box::new(move || directory.publish_token(id, old, new))),
            );
            if let Some(entry) = self.bots.get_mut(&id) {
                entry.token = new;
            }
            Ok((durable, token))
        })())
    }
}

#[derive(Message)]
#[rtype(result = "Result<Profile, Rejection>")]
pub struct CreateProfile(pub NewProfile);

impl Handler<CreateProfile> for Registry {
    type Result = Reply<Profile>;

    fn handle(&mut self, CreateProfile(new): CreateProfile, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            self.check_profile_unique(Some(&new.username), new.platform_id, None)?;
            let profile = Profile::create(ProfileId::new_random(), new, self.clock.now());
            Ok((self.save_profile(profile.clone(), None), profile))
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
            let current = self
                .profiles
                .get(&id)
                .ok_or_else(|| Self::not_found_profile(id))?
                .clone();
            let mut updated = current.clone();
            updated.apply(patch);
            self.check_profile_unique(Some(&updated.username), updated.platform_id, Some(id))?;
            Ok((self.save_profile(updated.clone(), Some(&current)), updated))
        })())
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct DeleteProfile(pub ProfileId);

impl Handler<DeleteProfile> for Registry {
    type Result = Reply<()>;

    fn handle(&mut self, DeleteProfile(id): DeleteProfile, _: &mut Self::Context) -> Self::Result {
        reply((|| {
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
            let directory = Arc::clone(&self.directory);
            let (_, durable) = self.commit(
                &Record::ProfileDeleted(id),
                Some(Box::new(move || directory.publish_profile_deleted(id))),
            );
            if let Some(profile) = self.profiles.remove(&id) {
                self.unindex_profile(&profile);
            }
            crate::telemetry::profiles_listed(self.profiles.len());
            Ok((durable, ()))
        })())
    }
}
