//! What the registry holds beside its records' book: a listed bot's entry, the platform ids
//! claimed, the bot actors it starts; and the rules that span bots, checked against them.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;

use actix::dev::channel::{channel, AddressReceiver};
use actix::prelude::*;
use arc_swap::ArcSwap;
use parking_lot::Mutex;

use super::Registry;
use crate::actors::bot::{BotActor, Publications, Published};
use crate::actors::directory::{BotHandle, Directory};
use crate::domain::bot::{BotState, BotView};
use crate::domain::ids::{BotId, ProfileId, Snowflake, TokenHash};
use crate::domain::profile::Profile;
use crate::domain::text::ProfileUsername;
use crate::domain::time::Clock;
use crate::domain::votes::VoterTable;
use crate::domain::Rejection;
use crate::parallel::{self, Failed};
use crate::persist::journal::Journal;
use crate::persist::state::{Listed, StoredBot};
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

    /// Starts an actor for each of `items`, `make` given it and its `with` on the thread the
    /// actor runs on; as many actors on each arbiter as round robin from [`Self::spawn`]'s
    /// next turn would put there. Every address is made here, at once; each arbiter is sent one
    /// message, and builds and starts its actors itself while this thread goes on.
    /// `start_in_arbiter` sent one message a bot, each a task of its own and a wake-up of the
    /// arbiter, and built every actor on this thread: at a start of 100,000 bots the starting
    /// thread spent about half a second on it alone (docs/PERFORMANCE.md, "Start-up and
    /// snapshots"). The items stay where they are until an arbiter takes them, a run at a time
    /// from the front: moving each (large) state into its arbiter's share here was most of
    /// the starting thread's work once it was alone.
    pub(super) fn spawn_all<T, U, F>(
        &mut self,
        items: Vec<T>,
        with: Vec<U>,
        make: F,
    ) -> Vec<Addr<BotActor>>
    where
        T: Send + 'static,
        U: Send + 'static,
        F: Fn(T, U) -> BotActor + Clone + Send + 'static,
    {
        assert_eq!(items.len(), with.len(), "one `with` for each item");
        if self.arbiters.is_empty() {
            return items
                .into_iter()
                .zip(with)
                .map(|(item, with)| make(item, with).start())
                .collect();
        }
        let total = items.len();
        // actix's own first capacity (`start_in_arbiter`'s); `started` sets the bot's.
        let (addrs, receivers): (Vec<_>, VecDeque<_>) = (0..total)
            .map(|_| {
                let (tx, rx) = channel(16);
                (Addr::new(tx), rx)
            })
            .unzip();
        let pending = Arc::new(Mutex::new(Pending {
            items: VecDeque::from(items),
            with: VecDeque::from(with),
            receivers,
        }));
        let count = self.arbiters.len();
        for (turn, arbiter) in self.arbiters.iter().enumerate() {
            let share = round_robin_share(turn, self.next % count, count, total);
            if share == 0 {
                continue;
            }
            let (pending, make) = (Arc::clone(&pending), make.clone());
            arbiter.spawn_fn(move || {
                let mut run = Vec::with_capacity(SPAWN_RUN.min(share));
                let mut left = share;
                while left > 0 {
                    pending.lock().take(SPAWN_RUN.min(left), &mut run);
                    if run.is_empty() {
                        break;
                    }
                    left -= run.len();
                    for ((item, with), rx) in run.drain(..) {
                        let ctx = Context::with_receiver(rx);
                        actix::spawn(ctx.into_future(make(item, with)));
                    }
                }
            });
        }
        self.next = self.next.wrapping_add(total);
        addrs
    }
}

/// How many actors an arbiter takes from the items at a time: few enough that the arbiters
/// share the lock evenly, enough that taking it costs nothing beside building them.
const SPAWN_RUN: usize = 256;

/// How many of `total` items round robin puts on arbiter `turn` of `count`, starting at
/// arbiter `first`.
fn round_robin_share(turn: usize, first: usize, count: usize, total: usize) -> usize {
    let after_first = (turn + count - first) % count;
    total / count + usize::from(after_first < total % count)
}

/// The items [`BotSpawner::spawn_all`] has not handed to an arbiter yet, each with its `with`
/// and its address's receiver.
struct Pending<T, U> {
    items: VecDeque<T>,
    with: VecDeque<U>,
    receivers: VecDeque<AddressReceiver<BotActor>>,
}

type Taken<T, U> = ((T, U), AddressReceiver<BotActor>);

impl<T, U> Pending<T, U> {
    /// The next `most` items (fewer if fewer are left) into `run`, from the front.
    fn take(&mut self, most: usize, run: &mut Vec<Taken<T, U>>) {
        let most = most.min(self.items.len());
        run.extend(
            self.items
                .drain(..most)
                .zip(self.with.drain(..most))
                .zip(self.receivers.drain(..most)),
        );
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
///
/// Keyed as the directory's map of the same ids is (`foldhash` with a seed of each map's own,
/// several times cheaper than SipHash; a start claims every bot's id on the registry's thread
/// alone): a platform id is the client's choice, so a hasher without a secret seed (FxHash)
/// would let a client list bots whose ids all fall in one bucket.
#[derive(Default)]
pub(super) struct PlatformIds {
    owner: HashMap<Snowflake, BotId, foldhash::fast::RandomState>,
    of_bot: HashMap<BotId, Snowflake, foldhash::fast::RandomState>,
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

/// What a bot's actor starts with beside its state: its view, published, and its owners.
pub(super) struct Prepared {
    /// The view `published` holds, for the index (a start builds it from these).
    pub(super) view: Arc<BotView>,
    pub(super) published: Published,
    pub(super) owners: Vec<ProfileId>,
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
    /// Starts the actors of many bots at once (a loaded state), each with what
    /// [`Self::prepare_all`] made of it: the registry's entries at once, the actors built and
    /// started on their arbiters meanwhile (see [`BotSpawner::spawn_all`]).
    pub(super) fn start_all(
        &mut self,
        bots: Vec<StoredBot>,
        prepared: Vec<Prepared>,
    ) -> Vec<Entry> {
        let mut entries = Vec::with_capacity(bots.len());
        let mut views = Vec::with_capacity(bots.len());
        let mut handed = Vec::with_capacity(bots.len());
        for (bot, prepared) in bots.iter().zip(prepared) {
            entries.push((bot.state.listing.id, bot.token, prepared.owners));
            views.push(Arc::clone(&prepared.published));
            handed.push(prepared.published);
        }
        let maker = self.maker();
        let addrs = self
            .spawner
            .spawn_all(bots, handed, move |bot: StoredBot, view| {
                maker((bot.state, view))
            });
        entries
            .into_iter()
            .zip(views)
            .zip(addrs)
            .map(|(((id, token, owners), view), addr)| Entry {
                handle: Arc::new(BotHandle { id, addr, view }),
                token,
                owners,
            })
            .collect()
    }

    pub(super) fn start(&mut self, mut state: BotState, token: TokenHash) -> Entry {
        let Prepared {
            published, owners, ..
        } = Self::prepare(&self.voters, &mut state);
        let id = state.listing.id;
        let actor = self.maker()((state, Arc::clone(&published)));
        Entry {
            handle: Arc::new(BotHandle {
                id,
                addr: self.spawner.spawn(actor),
                view: published,
            }),
            token,
            owners,
        }
    }

    /// What [`Self::prepare`] makes of each of `bots`, in order: each joined to the voter
    /// table here, in order (a pointer compare for a recovered bot, and a join numbers voters
    /// in the table as it goes), then the views and owners made on every core. A start
    /// prepares every bot before the index can be built from their views, and one thread did
    /// it while the other cores waited (docs/PERFORMANCE.md, "Start-up and snapshots").
    pub(super) fn prepare_all(voters: &Arc<VoterTable>, bots: &mut [StoredBot]) -> Vec<Prepared> {
        // Below this a thread costs more than it saves.
        let parts = if bots.len() < 4_096 {
            1
        } else {
            parallel::cores()
        };
        Self::prepare_in_parts(voters, bots, parts)
    }

    fn prepare_in_parts(
        voters: &Arc<VoterTable>,
        bots: &mut [StoredBot],
        parts: usize,
    ) -> Vec<Prepared> {
        for bot in bots.iter_mut() {
            Self::attach(voters, &mut bot.state);
        }
        let made = parallel::map(bots, parts, |bot| {
            Ok::<_, Infallible>(Self::made(&bot.state))
        });
        match made {
            Ok(all) => all,
            Err(Failed::Panicked(payload)) => std::panic::resume_unwind(payload),
            Err(Failed::Item(never)) => match never {},
        }
    }

    /// A bot's state joined to the voter table, its view to publish and its owners.
    fn prepare(voters: &Arc<VoterTable>, state: &mut BotState) -> Prepared {
        Self::attach(voters, state);
        Self::made(state)
    }

    fn attach(voters: &Arc<VoterTable>, state: &mut BotState) {
        // A recovered bot has joined already (a pointer compare); a new one has no voters.
        if let Err(why) = state.votes.attach(voters) {
            tracing::warn!(bot = %state.listing.id, %why, "a bot's votes keep a voter table of their own");
        }
    }

    /// A joined bot's view, published, and its owners.
    fn made(state: &BotState) -> Prepared {
        let view = Arc::new(state.view());
        Prepared {
            published: Arc::new(ArcSwap::new(Arc::clone(&view))),
            view,
            owners: state.listing.owner_ids.clone(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::{self, DemoSize};
    use crate::domain::time::Timestamp;

    #[test]
    fn each_arbiter_takes_as_many_as_round_robin_gives_it() {
        for count in 1..=4 {
            for first in 0..count {
                for total in [0, 1, 2, 3, 7, 100, 101] {
                    let shares: Vec<usize> = (0..count)
                        .map(|turn| round_robin_share(turn, first, count, total))
                        .collect();
                    let dealt: Vec<usize> = (0..count)
                        .map(|turn| (0..total).filter(|i| (first + i) % count == turn).count())
                        .collect();
                    assert_eq!(
                        shares, dealt,
                        "{count} arbiters from {first}, {total} items"
                    );
                }
            }
        }
    }

    #[test]
    fn bots_prepared_in_parts_are_those_prepared_one_by_one_in_order() {
        let size = DemoSize {
            seed: 3,
            bots: 500,
            profiles: 20,
            voters: 400,
            votes: 2_000,
        };
        let state = demo::build(Timestamp::from_millis(1_790_000_000_000), &size).state;
        let voters = state.voters();
        let serial: Vec<Prepared> = state
            .bots
            .clone()
            .iter_mut()
            .map(|bot| BotStarter::prepare(&voters, &mut bot.state))
            .collect();
        for parts in [1, 2, 3, 8] {
            let mut bots = state.bots.clone();
            let prepared = BotStarter::prepare_in_parts(&voters, &mut bots, parts);
            assert_eq!(prepared.len(), serial.len(), "{parts} parts");
            for ((bot, made), one) in bots.iter().zip(&prepared).zip(&serial) {
                assert!(Arc::ptr_eq(&made.view.listing, &bot.state.listing));
                assert!(Arc::ptr_eq(&made.published.load_full(), &made.view));
                assert_eq!(made.owners, one.owners);
                assert_eq!(made.view.listing.id, one.view.listing.id);
                assert_eq!(made.view.vote_count, one.view.vote_count);
                assert_eq!(made.view.server_count, one.view.server_count);
                assert_eq!(made.view.updated_at, one.view.updated_at);
            }
        }
    }
}
