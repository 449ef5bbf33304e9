//! What the registry holds beside its records' book: a listed bot's entry, the platform ids
//! claimed, the bot actors it starts; and the rules that span bots, checked against them.

use std::collections::HashMap;
use std::sync::Arc;

use actix::dev::channel::{channel, AddressReceiver};
use actix::prelude::*;
use arc_swap::ArcSwap;

use super::Registry;
use crate::actors::bot::{BotActor, Publications, Published};
use crate::actors::directory::{BotHandle, Directory};
use crate::domain::bot::BotState;
use crate::domain::ids::{BotId, ProfileId, Snowflake, TokenHash};
use crate::domain::profile::Profile;
use crate::domain::text::ProfileUsername;
use crate::domain::time::Clock;
use crate::domain::votes::VoterTable;
use crate::domain::Rejection;
use crate::persist::journal::Journal;
use crate::persist::state::Listed;
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

    pub(super) fn spawn(&mut self, actor: BotActor) -> Addr<BotActor> {
        if self.arbiters.is_empty() {
            return actor.start();
        }
        let arbiter = &self.arbiters[self.next % self.arbiters.len()];
        self.next = self.next.wrapping_add(1);
        BotActor::start_in_arbiter(arbiter, move |_| actor)
    }

    /// Starts an actor for each of `items`, spread round robin as [`Self::spawn`] spreads
    /// them, each made by `make` on the thread it runs on. Every address is made here, at
    /// once; each arbiter gets its whole share in one message and builds and starts its actors
    /// itself, while this thread goes on. `start_in_arbiter` sent one message a bot, each a
    /// task of its own and a wake-up of the arbiter, and built every actor on this thread: at
    /// a start of 100,000 bots the starting thread spent about half a second on it alone
    /// (docs/PERFORMANCE.md, "Start-up and snapshots"). `items` is taken as an iterator so
    /// that each (large) state is moved once, into its arbiter's share.
    pub(super) fn spawn_all<T, F>(
        &mut self,
        items: impl ExactSizeIterator<Item = T>,
        make: F,
    ) -> Vec<Addr<BotActor>>
    where
        T: Send + 'static,
        F: Fn(T) -> BotActor + Clone + Send + 'static,
    {
        if self.arbiters.is_empty() {
            return items.map(|item| make(item).start()).collect();
        }
        let count = self.arbiters.len();
        let mut shares: Vec<Vec<(AddressReceiver<BotActor>, T)>> = (0..count)
            .map(|_| Vec::with_capacity(items.len() / count + 1))
            .collect();
        let addrs = items
            .map(|item| {
                // actix's own first capacity (`start_in_arbiter`'s); `started` sets the bot's.
                let (tx, rx) = channel(16);
                shares[self.next % count].push((rx, item));
                self.next = self.next.wrapping_add(1);
                Addr::new(tx)
            })
            .collect();
        for (arbiter, share) in self.arbiters.iter().zip(shares) {
            if share.is_empty() {
                continue;
            }
            let make = make.clone();
            arbiter.spawn_fn(move || {
                for (rx, item) in share {
                    let ctx = Context::with_receiver(rx);
                    actix::spawn(ctx.into_future(make(item)));
                }
            });
        }
        addrs
    }
}

/// A bot as the registry stores it apart from the bot's own state. Entries change as soon as
/// the registry accepts a change, so its rules see what it has accepted; the directory shows a
/// change only once it is durable. The bot's platform id is its listing's: the registry holds
/// only its claim on it (see [`PlatformIds`]).
pub(super) struct Entry {
    pub(super) handle: Arc<BotHandle>,
    /// The registry owns the token hash; the directory publishes it for authentication.
    pub(super) token: TokenHash,
    /// Kept here, not read from the bot's view, so that an owner set by a patch the bot has not
    /// applied yet still keeps that profile from being deleted.
    pub(super) owners: Vec<ProfileId>,
}

/// The platform ids that listed bots have claimed, for the uniqueness rule: the one copy the
/// registry keeps, written when it accepts a listing, an edit or a delisting.
#[derive(Default)]
pub(super) struct PlatformIds {
    owner: HashMap<Snowflake, BotId>,
    of_bot: HashMap<BotId, Snowflake>,
}

impl PlatformIds {
    pub(super) fn claim(&mut self, bot: BotId, platform_id: Snowflake) {
        if let Some(old) = self.of_bot.insert(bot, platform_id) {
            self.owner.remove(&old);
        }
        self.owner.insert(platform_id, bot);
    }

    /// Room for `more` claims without growing the maps one doubling at a time (a start).
    pub(super) fn reserve(&mut self, more: usize) {
        self.owner.reserve(more);
        self.of_bot.reserve(more);
    }

    pub(super) fn release(&mut self, bot: BotId) {
        if let Some(old) = self.of_bot.remove(&bot) {
            self.owner.remove(&old);
        }
    }

    pub(super) fn of(&self, bot: BotId) -> Option<Snowflake> {
        self.of_bot.get(&bot).copied()
    }

    pub(super) fn owner(&self, platform_id: Snowflake) -> Option<BotId> {
        self.owner.get(&platform_id).copied()
    }
}

/// Starts the actor of each listed bot, with what it needs.
pub(super) struct BotStarter {
    pub(super) directory: Arc<Directory>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) journal: Journal,
    pub(super) dispatcher: Arc<Dispatcher>,
    pub(super) spawner: BotSpawner,
    /// The state's voter table, which every bot's votes join as it starts (see
    /// `SavedState::voters`).
    pub(super) voters: Arc<VoterTable>,
}

impl BotStarter {
    /// Starts the actors of many bots at once (a loaded state): the registry's entries at
    /// once, the actors built and started on their arbiters meanwhile (see
    /// [`BotSpawner::spawn_all`]).
    pub(super) fn start_all(
        &mut self,
        bots: impl ExactSizeIterator<Item = (BotState, TokenHash)>,
    ) -> Vec<Entry> {
        let mut entries = Vec::with_capacity(bots.len());
        let voters = &self.voters;
        let actors = bots.map(|(state, token)| {
            let (state, view, owners) = Self::prepare(voters, state);
            entries.push((state.listing.id, Arc::clone(&view), token, owners));
            (state, view)
        });
        let addrs = self.spawner.spawn_all(actors, self.maker());
        entries
            .into_iter()
            .zip(addrs)
            .map(|((id, view, token, owners), addr)| Entry {
                handle: Arc::new(BotHandle { id, addr, view }),
                token,
                owners,
            })
            .collect()
    }

    pub(super) fn start(&mut self, state: BotState, token: TokenHash) -> Entry {
        let (state, view, owners) = Self::prepare(&self.voters, state);
        let id = state.listing.id;
        let actor = self.maker()((state, Arc::clone(&view)));
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

    /// A bot's state joined to the voter table, its view to publish and its owners.
    fn prepare(
        voters: &Arc<VoterTable>,
        mut state: BotState,
    ) -> (BotState, Published, Vec<ProfileId>) {
        // A recovered bot has joined already (a pointer compare); a new one has no voters.
        if let Err(why) = state.votes.attach(voters) {
            tracing::warn!(bot = %state.listing.id, %why, "a bot's votes keep a voter table of their own");
        }
        let owners = state.listing.owner_ids.clone();
        let view = Arc::new(ArcSwap::from_pointee(state.view()));
        (state, view, owners)
    }

    /// What builds a bot's actor over its state and view, on whichever thread runs it.
    fn maker(&self) -> impl Fn((BotState, Published)) -> BotActor + Clone + Send + 'static {
        let directory = Arc::clone(&self.directory) as Arc<dyn Publications>;
        let (clock, journal) = (Arc::clone(&self.clock), self.journal.clone());
        let dispatcher = Arc::clone(&self.dispatcher);
        move |(state, view)| {
            BotActor::new(
                state,
                view,
                Arc::clone(&directory),
                Arc::clone(&clock),
                journal.clone(),
                Arc::clone(&dispatcher),
            )
        }
    }
}

impl Listed for Entry {
    fn set_token(&mut self, token: TokenHash) {
        self.token = token;
    }
}

impl Registry {
    pub(super) fn check_owners(&self, owners: &[ProfileId]) -> Result<(), Rejection> {
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

    pub(super) fn check_platform_id_free(
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

    pub(super) fn check_profile_unique(
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

    pub(super) fn index_profile(&mut self, profile: &Profile) {
        self.usernames.insert(profile.username.clone(), profile.id);
        if let Some(platform_id) = profile.platform_id {
            self.profile_platform_ids.insert(platform_id, profile.id);
        }
    }

    pub(super) fn unindex_profile(&mut self, profile: &Profile) {
        self.usernames.remove(&profile.username);
        if let Some(platform_id) = profile.platform_id {
            self.profile_platform_ids.remove(&platform_id);
        }
    }
}
