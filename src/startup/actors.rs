//! The actors over a recovered state: the registry and the bots on the HTTP workers' threads
//! (or threads of their own, with `--actor-threads`), the webhook
//! dispatcher (started at once, or when a cluster node that follows becomes the writer), the
//! demo when asked for, and the snapshots of the state.

use std::sync::Arc;

use actix::{Actor, Addr, Arbiter, ArbiterHandle};

use super::data_dir::spawn_periodic_snapshots;
use super::StartError;
use crate::actors::directory::Directory;
use crate::actors::registry::{BotSpawner, LoadState, Registry, StateVoters};
use crate::config::{Secret, Settings};
use crate::demo::{self, DemoInfo, DemoSize};
use crate::domain::time::Clock;
use crate::domain::votes::VoterTable;
use crate::persist::journal::Journal;
use crate::persist::recovery::Recovered;
use crate::persist::state::SavedState;
use crate::persist::{Persistence, Replication};
use crate::shutdown::Shutdown;
use crate::webhooks::Dispatcher;

/// What a cluster node that follows the stream starts when it becomes the writer: the webhook
/// deliveries, which only the writer sends.
#[derive(Clone)]
pub struct Promoter {
    dispatcher: Arc<Dispatcher>,
    /// The dispatcher's hold on the application's stop, until it starts; `None` once started
    /// (or when it started with the application).
    loops: Arc<std::sync::Mutex<Option<Shutdown>>>,
    registry: Addr<Registry>,
}

impl Promoter {
    /// The journal has been promoted: deliveries go out from now on.
    pub fn become_writer(&self) {
        let loops = self
            .loops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(loops) = loops {
            self.dispatcher.start(loops);
        }
        self.registry
            .do_send(crate::actors::replicated::BecomeWriter);
    }
}

/// The actors and what they publish, started over a recovered state.
pub(super) struct Started {
    pub(super) arbiters: Vec<Arbiter>,
    pub(super) promoter: Promoter,
    pub(super) journal: Journal,
    pub(super) directory: Arc<Directory>,
    pub(super) registry: Addr<Registry>,
    pub(super) persistence: Option<Arc<Persistence>>,
    pub(super) demo: Option<DemoInfo>,
    pub(super) admin_token: Option<Secret>,
    pub(super) voters: Arc<VoterTable>,
}

/// The actors before any state is loaded: their threads, the directory, the registry, and what
/// starts the webhook deliveries.
struct Actors {
    arbiters: Vec<Arbiter>,
    directory: Arc<Directory>,
    registry: Addr<Registry>,
    promoter: Promoter,
}

/// Starts the registry and the bots over the recovered state (or the demo), and the loops that
/// deliver webhooks and take periodic snapshots.
pub(super) async fn start_actors(
    settings: &Settings,
    clock: &Arc<dyn Clock>,
    recovered: Recovered,
    loops: Shutdown,
    replicated: Option<(Journal, Box<dyn Replication>)>,
    workers: Vec<ArbiterHandle>,
) -> Result<Started, StartError> {
    let (journal, replication) = match replicated {
        Some((journal, replication)) => (Some(journal), Some(replication)),
        None => (None, None),
    };
    let journal = open_journal(settings, recovered.next_seq, journal)?;
    let journal_handle = journal.clone();
    let Actors {
        arbiters,
        directory,
        registry,
        promoter,
    } = spawn_actors(settings, clock, &journal, &loops, workers)?;
    let was_empty = recovered.state.bots.is_empty() && recovered.state.profiles.is_empty();
    let mut state = recovered.state;
    // The recovered audit log, before any record: each audited record's entry joins it next.
    directory.audit.restore(std::mem::take(&mut state.audit));
    journal.keep_audit(Arc::clone(&directory.audit));
    load(&registry, state).await?;
    // A single node's journal takes writes again once its disk does; a cluster's sink has no
    // probe (docs/PERSISTENCE.md).
    if let (Some(dir), None) = (&settings.data_dir, &replication) {
        super::resume::spawn_resume(
            dir.clone(),
            journal.clone(),
            registry.clone(),
            loops.clone(),
        );
    }
    let persistence = settings.data_dir.clone().map(|dir| {
        let persistence = Persistence::new(dir, journal, registry.clone());
        Arc::new(match replication {
            Some(replication) => persistence.with_replication(replication),
            None => persistence,
        })
    });
    let (demo, admin_token) = load_demo(settings, clock, &registry, was_empty).await?;
    // A fresh demo, or files moved aside: write the state down before anything else.
    if demo.is_some() || !recovered.warnings.is_empty() {
        if let Some(persistence) = &persistence {
            persistence
                .snapshot()
                .await
                .map_err(std::io::Error::other)?;
        }
    }
    let voters = registry
        .send(StateVoters)
        .await
        .map_err(std::io::Error::other)?;
    if let (Some(persistence), Some(every)) = (&persistence, settings.snapshot_interval) {
        spawn_periodic_snapshots(Arc::clone(persistence), every, loops);
    }
    Ok(Started {
        arbiters,
        promoter,
        journal: journal_handle,
        directory,
        registry,
        persistence,
        demo,
        admin_token,
        voters,
    })
}

/// The journal a cluster node brings, else the data directory's, else one in memory.
fn open_journal(
    settings: &Settings,
    next_seq: u64,
    replicated: Option<Journal>,
) -> std::io::Result<Journal> {
    Ok(match (replicated, &settings.data_dir) {
        (Some(journal), _) => journal,
        (None, Some(dir)) => Journal::open_with_fault(
            dir,
            next_seq,
            settings.fsync,
            settings.journal_fault.clone(),
        )?,
        (None, None) => Journal::in_memory(next_seq),
    })
}

/// The actors' threads, the directory and the registry, with the webhook dispatcher started
/// unless the journal follows a cluster's stream. Every bot actor, at the start and after it
/// (created over the API, applied from a cluster's stream, restored), is started by the
/// registry's spawner on the HTTP workers' threads (`workers`): a write then costs no wake-up
/// of a thread of its own between the request and its bot (docs/PERFORMANCE.md, "The writes,
/// thread by thread"). `--actor-threads N` gives them N threads of their own instead.
fn spawn_actors(
    settings: &Settings,
    clock: &Arc<dyn Clock>,
    journal: &Journal,
    loops: &Shutdown,
    workers: Vec<ArbiterHandle>,
) -> std::io::Result<Actors> {
    let arbiters: Vec<Arbiter> = (0..settings.actor_threads)
        .map(|_| Arbiter::new())
        .collect();
    let spawner = BotSpawner::new(if arbiters.is_empty() {
        workers
    } else {
        arbiters.iter().map(Arbiter::handle).collect()
    });
    let directory = Arc::new(Directory::new(clock.now()));
    directory
        .vote_history_retention
        .set(settings.vote_history.retention);
    directory.weekend.set(settings.weekend_multiplier);
    let dispatcher = Dispatcher::new(
        Arc::clone(clock),
        journal.clone(),
        Arc::clone(&directory),
        settings.webhook_timeout,
        settings.allow_private_webhooks,
    )
    .map_err(std::io::Error::other)?;
    // A cluster node that follows the stream sends no webhook until it writes.
    let follows = journal.follows();
    if !follows {
        dispatcher.start(loops.clone());
    }
    let registry = Registry::new(
        Arc::clone(&directory),
        Arc::clone(clock),
        journal.clone(),
        Arc::clone(&dispatcher),
        spawner,
    )
    .start();
    let promoter = Promoter {
        dispatcher,
        loops: Arc::new(std::sync::Mutex::new(follows.then(|| loops.clone()))),
        registry: registry.clone(),
    };
    Ok(Actors {
        arbiters,
        directory,
        registry,
        promoter,
    })
}

/// The demo directory, loaded when asked for and nothing was recovered, and the admin token in
/// force (the demo's when none was given).
async fn load_demo(
    settings: &Settings,
    clock: &Arc<dyn Clock>,
    registry: &Addr<Registry>,
    was_empty: bool,
) -> std::io::Result<(Option<DemoInfo>, Option<Secret>)> {
    let mut admin_token = settings.admin_token.clone();
    let mut demo = None;
    if settings.demo && was_empty {
        let weekend = crate::domain::weekend::WeekendRule::new(settings.weekend_multiplier);
        let built = demo::build_weighted(clock.now(), &DemoSize::default(), &weekend);
        load(registry, built.state).await?;
        admin_token.get_or_insert_with(|| Secret::from(demo::DEMO_ADMIN_TOKEN));
        demo = Some(built.info);
    }
    Ok((demo, admin_token))
}

async fn load(registry: &Addr<Registry>, state: SavedState) -> std::io::Result<()> {
    registry
        .send(LoadState { state })
        .await
        .map_err(|e| std::io::Error::other(format!("loading the directory failed: {e}")))
}
