//! Building and running the application; tests call [`Application::build`] with port 0.
//!
//! Two paths build an application: [`Application::build`] for a single node over its data
//! directory, and [`Application::build_replicated`] for a cluster node, whose lifecycle
//! ([`node`]) catches up with the stream first. Both start the actors (`actors`) and serve
//! them (`serve`); what touches the data directory is in `data_dir`.

mod actors;
pub mod clock;
mod data_dir;
pub mod node;
pub mod open_files;
mod resume;
mod serve;

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix::{Addr, Arbiter};
use actix_web::dev::Server;
use actix_web::web;

use crate::actors::directory::Directory;
use crate::actors::registry::Registry;
use crate::api::cluster::ClusterHttp;
use crate::api::connection::{Drain, SHUTDOWN_PATIENCE};
use crate::config::{Secret, Settings};
use crate::demo::DemoInfo;
use crate::domain::time::Clock;
use crate::domain::votes::VoterTable;
use crate::persist::journal::Journal;
use crate::persist::lock::DirLock;
use crate::persist::recovery::Recovered;
use crate::persist::{Persistence, Replication};
use crate::shutdown::{self, Trigger};
use crate::telemetry;
pub use actors::Promoter;
use actors::{start_actors, Started};
use data_dir::{claim_data_dir, recover_state};
use serve::{serve, start_api, Api, Served};

/// Why the service did not start.
#[derive(Debug)]
pub enum StartError {
    /// The data directory holds damage the service will not pass over on its own (exit code 2).
    Refused(String),
    /// Another process holds the data directory (exit code 3).
    InUse(String),
    /// An unsafe setup: an admin token too short, a data directory others can write to or
    /// another user owns, a symlink where a file of ours belongs, the classic surface on the
    /// base path (exit code 6).
    Unsafe(String),
    /// The data directory holds files of a newer format or a record this build does not know
    /// (exit code 9): refused even with `--recover`, nothing changed.
    Newer(String),
    Io(std::io::Error),
    /// A setting that cannot be used: the address of `--bind` is taken or not this host's
    /// (exit code 7). The message names the flag and its variable.
    Config(String),
}

impl From<std::io::Error> for StartError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(why)
            | Self::InUse(why)
            | Self::Unsafe(why)
            | Self::Newer(why)
            | Self::Config(why) => f.write_str(why),
            Self::Io(error) => write!(f, "{error}"),
        }
    }
}

/// The service stopped without its last snapshot because the journal had failed (exit code 4).
#[derive(Debug)]
pub struct StoppedAfterJournalFailure(pub String);

impl std::fmt::Display for StoppedAfterJournalFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "stopped without a last snapshot because the journal failed earlier ({}). \
             Every write acknowledged before the failure is in the journal and is replayed at \
             the next start; the writes answered 503 were not stored. Fix the disk (free space, \
             permissions, I/O errors), then start botlist again on the same data directory.",
            self.0
        )
    }
}

impl std::error::Error for StoppedAfterJournalFailure {}

pub struct Application {
    address: SocketAddr,
    base_path: String,
    /// The API's server, whose workers' threads the bots live on (unless `--actor-threads`).
    server: Server,
    /// The first half of its stop: the connections end, the workers and their bots live on.
    drain: Drain,
    /// `/metrics` on its own listener (`--metrics-bind`), and where it is.
    metrics: Option<(SocketAddr, Server)>,
    pub registry: Addr<Registry>,
    pub directory: Arc<Directory>,
    pub persistence: Option<Arc<Persistence>>,
    /// Set when the demo directory was loaded.
    pub demo: Option<DemoInfo>,
    /// The admin token in force (the demo's when `--demo` ran without one).
    pub admin_token: Option<Secret>,
    /// What recovery noticed (torn records, files moved aside).
    pub warnings: Vec<String>,
    /// The voter table of this application's state, which every bot's votes refer to; each
    /// application has its own (`SavedState::voters`).
    pub voters: Arc<VoterTable>,
    /// Stops the background loops (snapshots, webhook deliveries, the limiter's sweep); they
    /// also stop when the application is dropped.
    stop_loops: Trigger,
    /// The access-log and metrics threads, which end with the loops.
    telemetry: telemetry::Threads,
    /// Held for cluster mode: a node that follows starts sending webhooks when it writes.
    promoter: Promoter,
    /// Closed when the application stops, after its last snapshot.
    journal: Journal,
    _arbiters: Vec<Arbiter>,
    /// The data directory's lock, held until the application is dropped or the process ends.
    _lock: Option<DirLock>,
}

/// What a cluster node brings to its application beside the state.
pub struct ClusterNode {
    /// The follower's journal, promoted when the node takes the lease.
    pub journal: Journal,
    pub http: web::Data<ClusterHttp>,
    /// The key that signs vote history cursors, the same on every node.
    pub history_key: [u8; 32],
    /// The node's part in each snapshot (the stream mark, the upload).
    pub replication: Box<dyn Replication>,
}

impl Application {
    /// Recovers the data directory, starts the actors and binds the listener; serving begins
    /// with [`Self::run_until`].
    pub async fn build(settings: Settings, clock: Arc<dyn Clock>) -> Result<Self, StartError> {
        if let Some(token) = &settings.admin_token {
            token.check_admin_token().map_err(StartError::Unsafe)?;
        }
        settings.check_paths().map_err(StartError::Unsafe)?;
        // The port is bound before anything is loaded: a taken address is found at once, not
        // after the demo was built and snapshotted.
        let listener = TcpListener::bind(settings.bind).map_err(|error| {
            StartError::Config(format!(
                "cannot listen on --bind (BOTLIST_BIND) {}: {error}",
                settings.bind
            ))
        })?;
        // The lock comes first: recovery moves and removes files, which only the owner may do.
        let lock = claim_data_dir(&settings)?;
        telemetry::install_metrics();
        let recovered = recover_state(&settings)?;
        let warnings = recovered.warnings.clone();
        let (stop_loops, loops) = shutdown::channel();
        // The HTTP workers first: the bots live on their threads.
        let api = start_api(&settings, listener, None).await?;
        let workers = api.serving.workers.clone();
        let started =
            start_actors(&settings, &clock, recovered, loops.clone(), None, workers).await?;
        let history_key = data_dir::cursor_key(settings.data_dir.as_deref())?;
        let served = serve(&settings, &started, clock, loops, history_key, &api)?;
        Ok(Self::assemble(
            settings.base_path,
            started,
            api,
            served,
            stop_loops,
            warnings,
            lock,
        ))
    }

    /// Cluster mode: the state caught up from the stream (or a snapshot and the stream after
    /// it), the journal (a follower's, promoted when the node takes the lease), and the listener
    /// the node already holds. The data directory, if any, holds this node's snapshots (the
    /// caller holds its lock); no journal file is written there.
    pub async fn build_replicated(
        mut settings: Settings,
        clock: Arc<dyn Clock>,
        recovered: Recovered,
        listener: TcpListener,
        node: ClusterNode,
    ) -> Result<Self, StartError> {
        let ClusterNode {
            journal,
            http: cluster,
            history_key,
            replication,
        } = node;
        settings.demo = false;
        telemetry::install_metrics();
        let (stop_loops, loops) = shutdown::channel();
        // The HTTP workers first: the bots live on their threads.
        let api = start_api(&settings, listener, Some(cluster)).await?;
        let workers = api.serving.workers.clone();
        let started = start_actors(
            &settings,
            &clock,
            recovered,
            loops.clone(),
            Some((journal, replication)),
            workers,
        )
        .await?;
        let served = serve(&settings, &started, clock, loops, history_key, &api)?;
        Ok(Self::assemble(
            settings.base_path,
            started,
            api,
            served,
            stop_loops,
            Vec::new(),
            None,
        ))
    }

    /// The application over its started actors and its bound server.
    fn assemble(
        base_path: String,
        started: Started,
        api: Api,
        (metrics, telemetry): Served,
        stop_loops: Trigger,
        warnings: Vec<String>,
        lock: Option<DirLock>,
    ) -> Self {
        Self {
            address: api.address,
            base_path,
            server: api.serving.server,
            drain: api.serving.drain,
            metrics,
            registry: started.registry,
            directory: started.directory,
            persistence: started.persistence,
            demo: started.demo,
            admin_token: started.admin_token,
            warnings,
            voters: started.voters,
            stop_loops,
            telemetry,
            promoter: started.promoter,
            journal: started.journal,
            _arbiters: started.arbiters,
            _lock: lock,
        }
    }

    /// The application's journal (tests: its threads end with the application).
    pub fn journal(&self) -> Journal {
        self.journal.clone()
    }

    /// What starts the writer's work once a cluster node that followed takes the role.
    pub fn promoter(&self) -> Promoter {
        self.promoter.clone()
    }

    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// `http://HOST:PORT/api/v1`, with the real bound port.
    pub fn base_url(&self) -> String {
        format!("http://{}{}", self.address, self.base_path)
    }

    /// `http://HOST:PORT` of the metrics listener, when `/metrics` has one of its own.
    pub fn metrics_url(&self) -> Option<String> {
        self.metrics
            .as_ref()
            .map(|(address, _)| format!("http://{address}"))
    }

    /// Serves until `shutdown` resolves (the process's signals: [`stop_signal`]): then stops
    /// accepting, lets requests in flight finish, stops the background loops, writes a last
    /// snapshot, and only then stops the HTTP workers, whose threads the bots live on.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + 'static,
    ) -> std::io::Result<()> {
        // A node that never wrote has a dispatcher that never started: nothing to wait for.
        drop(self.promoter);
        let handle = self.server.handle();
        let metrics = self.metrics.map(|(_, server)| {
            let handle = server.handle();
            actix_web::rt::spawn(server);
            handle
        });
        let mut server = actix_web::rt::spawn(self.server);
        tokio::select! {
            () = shutdown => {}
            // The server ends only when stopped; should it end first, the stop goes on as
            // asked, and the last snapshot says what was lost with its workers.
            ended = &mut server => {
                tracing::error!(?ended, "the HTTP server ended by itself; stopping");
            }
        }
        tracing::info!("stopping: finishing requests in flight, then a last snapshot");
        if let Some(metrics) = metrics {
            metrics.stop(true).await;
        }
        // No new connection; those open finish their answer and end. The workers, and the bots
        // on their threads, live on until after the last snapshot.
        let drained = self.drain.drain(&handle, SHUTDOWN_PATIENCE).await;
        if !drained {
            tracing::warn!(
                "requests still in flight {} s after the stop; their connections are closed",
                SHUTDOWN_PATIENCE.as_secs()
            );
        }
        // The loops end at once; a webhook attempt in flight within its timeout; a periodic
        // snapshot under way when it is written.
        if self.stop_loops.stopped(LOOPS_PATIENCE).await {
            // They have let go of their `Shutdown`: what is left is their threads' last breath.
            let telemetry = self.telemetry;
            let _ = actix_web::rt::task::spawn_blocking(move || telemetry.join()).await;
        } else {
            tracing::warn!(
                "background work still running {} s after the stop; stopping without it",
                LOOPS_PATIENCE.as_secs()
            );
        }
        let last_snapshot = match &self.persistence {
            // After a journal failure no snapshot may be taken (it could hold the change that
            // failed); what was acknowledged is in the journal and is replayed at the next start.
            Some(persistence) => match persistence.journal_failure() {
                Some(why) => Err(std::io::Error::other(StoppedAfterJournalFailure(why))),
                None => persistence
                    .snapshot()
                    .await
                    .map(|_| ())
                    .map_err(std::io::Error::other),
            },
            None => Ok(()),
        };
        // Now the workers end, and the bots with their threads: a connection still open after
        // the patience is closed rather than waited for again.
        handle.stop(drained).await;
        let _ = server.await;
        // Nothing the application started outlives it: the registry lets go, the bots'
        // threads stop, and the journal's threads end once what was queued is written.
        let _ = self.registry.send(crate::actors::registry::Close).await;
        let (journal, arbiters) = (self.journal, self._arbiters);
        let _ = actix_web::rt::task::spawn_blocking(move || {
            for arbiter in &arbiters {
                arbiter.stop();
            }
            for arbiter in arbiters {
                let _ = arbiter.join();
            }
            journal.close();
        })
        .await;
        last_snapshot
    }
}

/// How long a stop waits for the background loops and the work they started.
const LOOPS_PATIENCE: Duration = Duration::from_secs(60);

/// SIGINT or SIGTERM: how the process is told to stop.
pub async fn stop_signal() {
    use actix_web::rt::signal::unix::{signal, SignalKind};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        tracing::error!("cannot listen for SIGINT and SIGTERM");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}
