//! The registry actor: lists and delists bots, owns profiles, tokens and platform ids.
//!
//! It is the only writer of the [`Directory`]; every rule that spans bots (unique platform ids,
//! owners that exist, unique usernames) is checked here, one message at a time.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use arc_swap::ArcSwap;
use futures_util::future::{join_all, BoxFuture, FutureExt, Shared};
use tokio::sync::oneshot;

use super::bot::{ApplyPatch, BotActor, Publications, ReadState, Stop};
use super::directory::{BotHandle, Directory};
use super::replicated::{ApplyReplicated, BecomeWriter};
use super::when_durable;
use crate::domain::bot::{BotPatch, BotState, BotView, NewBot};
use crate::domain::ids::{BotId, ProfileId, Snowflake, Token, TokenHash};
use crate::domain::profile::{NewProfile, Profile, ProfilePatch};
use crate::domain::text::ProfileUsername;
use crate::domain::time::Clock;
use crate::domain::votes::VoterTable;
use crate::domain::Rejection;
use crate::persist::journal::{Durable, Journal, Publish};
use crate::persist::state::{Listed, Record, RegistryBook, SavedState, StoredBot};
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
/// change only once it is durable. The bot's platform id is its listing's: the registry holds
/// only its claim on it (see [`PlatformIds`]).
struct Entry {
    handle: Arc<BotHandle>,
    /// The registry owns the token hash; the directory publishes it for authentication.
    token: TokenHash,
    /// Kept here, not read from the bot's view, so that an owner set by a patch the bot has not
    /// applied yet still keeps that profile from being deleted.
    owners: Vec<ProfileId>,
}

/// The platform ids that listed bots have claimed, for the uniqueness rule: the one copy the
/// registry keeps, written when it accepts a listing, an edit or a delisting.
#[derive(Default)]
struct PlatformIds {
    owner: HashMap<Snowflake, BotId>,
    of_bot: HashMap<BotId, Snowflake>,
}

impl PlatformIds {
    fn claim(&mut self, bot: BotId, platform_id: Snowflake) {
        if let Some(old) = self.of_bot.insert(bot, platform_id) {
            self.owner.remove(&old);
        }
        self.owner.insert(platform_id, bot);
    }

    fn release(&mut self, bot: BotId) {
        if let Some(old) = self.of_bot.remove(&bot) {
            self.owner.remove(&old);
        }
    }

    fn of(&self, bot: BotId) -> Option<Snowflake> {
        self.of_bot.get(&bot).copied()
    }

    fn owner(&self, platform_id: Snowflake) -> Option<BotId> {
        self.owner.get(&platform_id).copied()
    }
}

/// Done once a bot has journaled an edit (or refused it).
type Settling = Shared<BoxFuture<'static, ()>>;

/// An edit sent to a bot whose record is not durable yet.
struct EditInFlight {
    /// It gave up a platform id or an owner, which a later change may now take.
    releases: bool,
    done: Settling,
}

/// Starts the actor of each listed bot, with what it needs.
struct BotStarter {
    directory: Arc<Directory>,
    clock: Arc<dyn Clock>,
    journal: Journal,
    dispatcher: Arc<Dispatcher>,
    spawner: BotSpawner,
    /// The state's voter table, which every bot's votes join as it starts (see
    /// `SavedState::voters`).
    voters: Arc<VoterTable>,
}

impl BotStarter {
    fn start(&mut self, mut state: BotState, token: TokenHash) -> Entry {
        // A recovered bot has joined already (a pointer compare); a new one has no voters.
        if let Err(why) = state.votes.attach(&self.voters) {
            tracing::warn!(bot = %state.listing.id, %why, "a bot's votes keep a voter table of their own");
        }
        let id = state.listing.id;
        let owners = state.listing.owner_ids.clone();
        let view = Arc::new(ArcSwap::from_pointee(state.view()));
        let actor = BotActor::new(
            state,
            Arc::clone(&view),
            Arc::clone(&self.directory) as Arc<dyn Publications>,
            Arc::clone(&self.clock),
            self.journal.clone(),
            Arc::clone(&self.dispatcher),
        );
        Entry {
            handle: Arc::new(BotHandle {
                id,
                addr: self.spawner.spawn(actor),
                view,
            }),
            token,
            owners,
        }
    }
}

pub struct Registry {
    directory: Arc<Directory>,
    clock: Arc<dyn Clock>,
    journal: Journal,
    starter: BotStarter,
    /// The last journal record of the registry's own (profiles, listing, tokens).
    last_seq: u64,
    /// Profiles and listed bots, changed only by applying the registry's records.
    book: RegistryBook<Entry>,
    bot_platform_ids: PlatformIds,
    /// The registry does not wait for a bot to journal an edit; a change that depends on one
    /// (taking a platform id or deleting a profile that it released) waits for it instead.
    edits: Vec<EditInFlight>,
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
            starter: BotStarter {
                directory: Arc::clone(&directory),
                clock: Arc::clone(&clock),
                journal: journal.clone(),
                dispatcher,
                spawner,
                voters: Arc::default(),
            },
            directory,
            clock,
            journal,
            last_seq: 0,
            book: RegistryBook::default(),
            bot_platform_ids: PlatformIds::default(),
            edits: Vec::new(),
            usernames: HashMap::new(),
            profile_platform_ids: HashMap::new(),
        }
    }

    /// Applies one of the registry's own records to its book, the way replay does: a listed
    /// bot's actor starts here, and its platform id is claimed.
    fn apply(&mut self, record: &Record) {
        let Self {
            book,
            starter,
            bot_platform_ids,
            ..
        } = self;
        let applied = book.apply(record, |state, token| {
            bot_platform_ids.claim(state.listing.id, state.listing.platform_id);
            starter.start(state, token)
        });
        if let Err(why) = applied {
            // Every record the registry makes is one of its own.
            tracing::error!(%why, "a registry change did not apply");
        }
        crate::telemetry::profiles_listed(self.book.profiles.len());
    }

    fn handle_of(&self, id: BotId) -> Result<Arc<BotHandle>, Rejection> {
        self.book
            .bots
            .get(&id)
            .map(|entry| Arc::clone(&entry.handle))
            .ok_or_else(|| Self::not_found_bot(id))
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
        match owners
            .iter()
            .find(|id| !self.book.profiles.contains_key(id))
        {
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
        match self.bot_platform_ids.owner(platform_id) {
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

    fn save_profile(&mut self, profile: Profile, replacing: Option<&Profile>) -> Durable {
        let directory = Arc::clone(&self.directory);
        let shown = Arc::new(profile.clone());
        if let Some(old) = replacing {
            self.unindex_profile(old);
        }
        self.index_profile(&profile);
        let record = Record::ProfileSaved(profile);
        self.apply(&record);
        let (_, durable) = self.commit(
            &record,
            Some(Box::new(move || directory.publish_profile(shown))),
        );
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

/// The application stopped: the registry lets go of everything it holds.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Close;

impl Handler<Close> for Registry {
    type Result = ();

    fn handle(&mut self, _: Close, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// The voter table of the registry's state, which every bot's votes are numbered in.
#[derive(Message)]
#[rtype(result = "Arc<VoterTable>")]
pub struct StateVoters;

impl Handler<StateVoters> for Registry {
    type Result = MessageResult<StateVoters>;

    fn handle(&mut self, _: StateVoters, _: &mut Self::Context) -> Self::Result {
        MessageResult(Arc::clone(&self.starter.voters))
    }
}

/// A whole directory to list at once: a recovered state, or the demo.
#[derive(Message)]
#[rtype(result = "()")]
pub struct LoadState {
    pub state: SavedState,
}

impl Handler<LoadState> for Registry {
    type Result = ();

    fn handle(&mut self, LoadState { state }: LoadState, _: &mut Self::Context) {
        self.last_seq = self.last_seq.max(state.registry_seq);
        // Into a registry with no bot yet, the loaded state's voter table is the one every bot
        // listed from now on joins; otherwise the loaded bots join the registry's.
        if self.book.bots.is_empty() && !state.bots.is_empty() {
            self.starter.voters = state.voters();
        }
        for profile in state.profiles {
            self.index_profile(&profile);
            self.directory.publish_profile(Arc::new(profile.clone()));
            self.book.profiles.insert(profile.id, profile);
        }
        crate::telemetry::profiles_listed(self.book.profiles.len());
        // What was recovered is durable already: it is published at once, as one batch.
        let listed: Vec<_> = state
            .bots
            .into_iter()
            .map(|StoredBot { state, token }| {
                let (id, platform_id) = (state.listing.id, state.listing.platform_id);
                self.bot_platform_ids.claim(id, platform_id);
                let entry = self.starter.start(state, token);
                let handle = Arc::clone(&entry.handle);
                self.book.bots.insert(id, entry);
                (handle, token)
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
        // As few touches of each bot as can be: this runs on the registry's thread at normal
        // priority while requests wait behind it (docs/PERFORMANCE.md). The writer's thread sorts.
        let mut profiles: Vec<Profile> = self.book.profiles.values().cloned().collect();
        profiles.sort_unstable_by_key(|p| p.id);
        let bots = self
            .book
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
            profiles,
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

    fn handle(&mut self, CreateBot(new): CreateBot, ctx: &mut Self::Context) -> Self::Result {
        let waits = self.releases_in_flight();
        self.after(ctx, waits, move |registry| reply(registry.create_bot(new)))
    }
}

impl Listed for Entry {
    fn set_token(&mut self, token: TokenHash) {
        self.token = token;
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
        self.apply(&record);
        let handle = self.handle_of(id)?;
        // Rendered here, so that neither the journal's writer nor a reader renders it.
        handle.view().listing.rendered();
        let directory = Arc::clone(&self.directory);
        let shown = Arc::clone(&handle);
        let (_, durable) = self.commit(
            &record,
            Some(Box::new(move || {
                directory.publish_listed(shown, token_hash)
            })),
        );
        Ok((durable, (handle.view(), token)))
    }

    /// Edits whose records may not be journaled yet and that gave something up: a change that
    /// takes a platform id or deletes a profile waits for them, so that its record never comes
    /// before the edit that allowed it (a crash between the two would otherwise keep both).
    fn releases_in_flight(&mut self) -> Vec<Settling> {
        self.edits.retain(|edit| edit.done.peek().is_none());
        self.edits
            .iter()
            .filter(|edit| edit.releases)
            .map(|edit| edit.done.clone())
            .collect()
    }

    /// Runs `change` once `waits` are done, before the registry takes any other message: the
    /// registry waits only when a change depends on an edit in flight, which is rare.
    fn after<T: Send + 'static>(
        &mut self,
        ctx: &mut Context<Self>,
        waits: Vec<Settling>,
        change: impl FnOnce(&mut Self) -> Reply<T> + 'static,
    ) -> Reply<T> {
        if waits.is_empty() {
            return change(self);
        }
        let (sender, receiver) = oneshot::channel();
        ctx.wait(join_all(waits).into_actor(self).map(move |_, registry, _| {
            let _ = sender.send(change(registry));
        }));
        Box::pin(async move {
            match receiver.await {
                Ok(answer) => answer.await,
                Err(_) => Err(Rejection::NotStored("the directory stopped".into())),
            }
        })
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
        let entry = self
            .book
            .bots
            .get(&id)
            .ok_or_else(|| Self::not_found_bot(id))?;
        let (handle, token) = (Arc::clone(&entry.handle), entry.token);
        self.bot_platform_ids.release(id);
        let record = Record::BotDelisted(id);
        self.apply(&record);
        let directory = Arc::clone(&self.directory);
        let (_, durable) = self.commit(
            &record,
            Some(Box::new(move || {
                directory.publish_delisted(id, token);
                handle.addr.do_send(Stop);
            })),
        );
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
            let old = self
                .book
                .bots
                .get(&id)
                .ok_or_else(|| Self::not_found_bot(id))?
                .token;
            let token = Token::generate();
            let new = token.hash();
            let record = Record::TokenRotated {
                bot: id,
                token: new,
            };
            self.apply(&record);
            let directory = Arc::clone(&self.directory);
            let (_, durable) = self.commit(
                &record,
                Some(Box::new(move || directory.publish_token(id, old, new))),
            );
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
                .book
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
            let profile = self
                .book
                .profiles
                .get(&id)
                .cloned()
                .ok_or_else(|| Self::not_found_profile(id))?;
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
            self.unindex_profile(&profile);
            let record = Record::ProfileDeleted(id);
            self.apply(&record);
            let directory = Arc::clone(&self.directory);
            let (_, durable) = self.commit(
                &record,
                Some(Box::new(move || directory.publish_profile_deleted(id))),
            );
            Ok((durable, ()))
        })()
    }
}

/// Cluster mode, on a node that follows the stream: the registry's own records are applied
/// here, as the writer's registry applied them; a bot's records go on to its actor (an edit
/// also updates the rules' claims, as the writer's registry did when it accepted it).
impl Handler<ApplyReplicated> for Registry {
    type Result = ();

    fn handle(&mut self, replicated: ApplyReplicated, _: &mut Self::Context) {
        let Some(bot) = replicated.record.bot() else {
            let publication = self.apply_replicated(replicated.seq, &replicated.record);
            let _ = replicated.reply.send(publication);
            return;
        };
        // A record of a bot delisted since is passed over, as replay passes over it.
        let Some(entry) = self.book.bots.get_mut(&bot) else {
            let _ = replicated.reply.send(None);
            return;
        };
        if let Record::BotEdited { listing, .. } = &replicated.record {
            entry.owners.clone_from(&listing.owner_ids);
            self.bot_platform_ids.claim(bot, listing.platform_id);
        }
        if let Some(entry) = self.book.bots.get(&bot) {
            entry.handle.addr.do_send(replicated);
        }
    }
}

impl Registry {
    /// One of the registry's records, made by the writer: applied with the claims and indexes
    /// the writer's registry kept, and its publication handed back.
    fn apply_replicated(&mut self, seq: u64, record: &Record) -> Option<Publish> {
        if seq <= self.last_seq {
            return None;
        }
        self.last_seq = seq;
        let directory = Arc::clone(&self.directory);
        match record {
            Record::ProfileSaved(profile) => {
                if let Some(old) = self.book.profiles.get(&profile.id).cloned() {
                    self.unindex_profile(&old);
                }
                self.index_profile(profile);
                self.apply(record);
                let shown = Arc::new(profile.clone());
                Some(Box::new(move || directory.publish_profile(shown)))
            }
            Record::ProfileDeleted(id) => {
                if let Some(old) = self.book.profiles.get(id).cloned() {
                    self.unindex_profile(&old);
                }
                self.apply(record);
                let id = *id;
                Some(Box::new(move || directory.publish_profile_deleted(id)))
            }
            Record::BotListed { state, token } => {
                let (id, token) = (state.listing.id, *token);
                let Self {
                    book,
                    starter,
                    bot_platform_ids,
                    ..
                } = self;
                // Read back from the stream: the derived indexes are rebuilt, as replay does.
                let listed = book.apply(record, |mut state, token| {
                    state.last_seq = seq;
                    state.restore();
                    bot_platform_ids.claim(state.listing.id, state.listing.platform_id);
                    starter.start(state, token)
                });
                if let Err(why) = listed {
                    tracing::error!(%why, "a replicated registry record did not apply");
                }
                let handle = self.handle_of(id).ok()?;
                handle.view().listing.rendered();
                Some(Box::new(move || directory.publish_listed(handle, token)))
            }
            Record::BotDelisted(id) => {
                let entry = self.book.bots.get(id)?;
                let (handle, token, id) = (Arc::clone(&entry.handle), entry.token, *id);
                self.bot_platform_ids.release(id);
                self.apply(record);
                Some(Box::new(move || {
                    directory.publish_delisted(id, token);
                    handle.addr.do_send(Stop);
                }))
            }
            Record::TokenRotated { bot, token } => {
                let (old, bot, new) = (self.book.bots.get(bot)?.token, *bot, *token);
                self.apply(record);
                Some(Box::new(move || directory.publish_token(bot, old, new)))
            }
            _ => None,
        }
    }
}

/// The node took the writer's role: every bot schedules its open deliveries.
impl Handler<BecomeWriter> for Registry {
    type Result = ();

    fn handle(&mut self, _: BecomeWriter, _: &mut Self::Context) {
        for entry in self.book.bots.values() {
            entry.handle.addr.do_send(BecomeWriter);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::domain::time::{ManualClock, Timestamp};
    use crate::persist::journal::{self, FsyncMode};

    fn json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
        serde_json::from_value(value).expect("valid")
    }

    fn new_bot(platform_id: &str) -> NewBot {
        json(serde_json::json!({
            "platform_id": platform_id, "name": "Bot", "username": "bot",
            "short_description": "A bot"
        }))
    }

    /// A registry over a journal in `dir`, with every bot on one arbiter that the test can stop.
    fn registry(dir: &std::path::Path, arbiter: &Arbiter) -> Addr<Registry> {
        registry_and_directory(dir, arbiter).0
    }

    fn registry_and_directory(
        dir: &std::path::Path,
        arbiter: &Arbiter,
    ) -> (Addr<Registry>, Arc<Directory>) {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_790_000_000_000)));
        let directory = Arc::new(Directory::new(clock.now()));
        let journal = Journal::open(dir, 1, FsyncMode::Never).expect("a journal");
        let dispatcher = Dispatcher::new(
            clock.clone(),
            journal.clone(),
            Arc::clone(&directory),
            Duration::from_secs(1),
            false,
        )
        .expect("a client");
        let spawner = BotSpawner::new(vec![arbiter.handle()]);
        let registry = Registry::new(Arc::clone(&directory), clock, journal, dispatcher, spawner);
        (registry.start(), directory)
    }

    /// Holds the bots' thread until the returned sender is dropped: a bot busy for as long as
    /// the test wants, with no sleep.
    fn hold(arbiter: &Arbiter) -> std::sync::mpsc::Sender<()> {
        let (release, held) = std::sync::mpsc::channel::<()>();
        arbiter.spawn_fn(move || {
            let _ = held.recv();
        });
        release
    }

    async fn within<F: std::future::Future>(future: F) -> F::Output {
        tokio::time::timeout(Duration::from_secs(20), future)
            .await
            .expect("answered instead of waiting behind the bot")
    }

    #[actix_web::test]
    async fn the_registry_goes_on_while_a_bot_journals_an_edit() {
        let dir = tempfile::tempdir().expect("a directory");
        let arbiter = Arbiter::new();
        let registry = registry(dir.path(), &arbiter);
        let (view, _) = within(registry.send(CreateBot(new_bot("42"))))
            .await
            .expect("delivered")
            .expect("listed");

        let release = hold(&arbiter);
        let edit = registry.send(UpdateBot(
            view.listing.id,
            json(serde_json::json!({"short_description": "Edited while busy"})),
        ));
        let edit = actix_web::rt::spawn(edit);
        let profile = within(registry.send(CreateProfile(json(
            serde_json::json!({"username": "someone"}),
        ))))
        .await
        .expect("delivered");
        assert!(profile.is_ok(), "{profile:?}");
        assert!(!edit.is_finished());

        drop(release);
        let edited = within(edit).await.expect("ran").expect("delivered");
        assert_eq!(
            edited.expect("edited").listing.short_description.as_str(),
            "Edited while busy"
        );
        arbiter.stop();
    }

    #[actix_web::test]
    async fn a_platform_id_given_up_by_an_edit_is_taken_only_after_that_edit_is_journaled() {
        let dir = tempfile::tempdir().expect("a directory");
        let arbiter = Arbiter::new();
        let registry = registry(dir.path(), &arbiter);
        let (moved, _) = within(registry.send(CreateBot(new_bot("42"))))
            .await
            .expect("delivered")
            .expect("listed");

        let release = hold(&arbiter);
        let edit = actix_web::rt::spawn(registry.send(UpdateBot(
            moved.listing.id,
            json(serde_json::json!({"platform_id": "43"})),
        )));
        let taker = actix_web::rt::spawn(registry.send(CreateBot(new_bot("42"))));
        // The registry runs on this thread: let it take both messages while the bot is held.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        drop(release);
        within(edit)
            .await
            .expect("ran")
            .expect("delivered")
            .expect("edited");
        let (taker, _) = within(taker)
            .await
            .expect("ran")
            .expect("delivered")
            .expect("listed once 42 was free");

        // Replay sees the edit that freed 42 before the listing that took it.
        let order: Vec<&str> = journal::list(dir.path())
            .expect("segments")
            .iter()
            .flat_map(|(_, path)| journal::read_segment(path).expect("readable").records)
            .filter_map(|(_, record)| match record {
                Record::BotEdited { bot, .. } if bot == moved.listing.id => Some("edit"),
                Record::BotListed { state, .. } if state.listing.id == taker.listing.id => {
                    Some("listing")
                }
                _ => None,
            })
            .collect();
        assert_eq!(order, ["edit", "listing"]);
        arbiter.stop();
    }

    #[actix_web::test]
    async fn a_bot_delisted_during_its_edit_leaves_nothing_published() {
        let dir = tempfile::tempdir().expect("a directory");
        let arbiter = Arbiter::new();
        let (registry, directory) = registry_and_directory(dir.path(), &arbiter);
        let (bot, _) = within(registry.send(CreateBot(new_bot("42"))))
            .await
            .expect("delivered")
            .expect("listed");
        let id = bot.listing.id;

        let release = hold(&arbiter);
        let edit = actix_web::rt::spawn(registry.send(UpdateBot(
            id,
            json(serde_json::json!({"platform_id": "43"})),
        )));
        let delisting = actix_web::rt::spawn(registry.send(DelistBot(id)));
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        drop(release);
        let _ = within(edit).await;
        within(delisting)
            .await
            .expect("ran")
            .expect("delivered")
            .expect("delisted");
        assert!(directory.resolve("42").is_none());
        assert!(directory.resolve("43").is_none());
        assert!(directory.get(id).is_none());
        arbiter.stop();
    }
}
