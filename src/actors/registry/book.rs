//! What the registry holds beside its records' book: a listed bot's entry, the platform ids
//! claimed, the bot actors it starts; and the rules that span bots, checked against them.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use arc_swap::ArcSwap;

use super::Registry;
use crate::actors::bot::{BotActor, Publications};
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
    pub(super) fn start(&mut self, mut state: BotState, token: TokenHash) -> Entry {
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
