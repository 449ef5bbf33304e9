//! Building and running the application; tests call [`Application::build`] with port 0.

use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, Arbiter};
use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{web, App};

use crate::actors::directory::Directory;
use crate::actors::registry::{BotSpawner, LoadState, Registry};
use crate::api::admin_failures::AdminFailures;
use crate::api::around::Optional;
use crate::api::cluster::{self, ClusterHttp};
use crate::api::connection::{self, ServerOptions};
use crate::api::error::envelope_errors;
use crate::api::http::{self, AllowedMethods};
use crate::api::layer::Layer;
use crate::api::limits::{self, ClientAddress, RateLimiter};
use crate::api::{openapi, routes, AppState};
use crate::config::{Secret, Settings};
use crate::demo::{self, DemoInfo, DemoSize};
use crate::domain::ids::TokenHash;
use crate::domain::time::Clock;
use crate::domain::votes::VoterTable;
use crate::persist::journal::Journal;
use crate::persist::lock::{DirLock, LockError};
use crate::persist::recovery::{self, Recovered};
use crate::persist::snapshot;
use crate::persist::state::SavedState;
use crate::persist::Persistence;
use crate::persist::Replication;
use crate::shutdown::{self, Shutdown, Trigger};
use crate::telemetry;
use crate::webhooks::Dispatcher;

/// Why the service did not start.
#[derive(Debug)]
pub enum StartError {
    /// The data directory holds damage the service will not pass over on its own (exit code 2).
    Refused(String),
    /// Another process holds the data directory (exit code 3).
    InUse(String),
    /// An unsafe setup: an admin token too short, a data directory others can write to or
    /// another user owns, a symlink where a file of ours belongs (exit code 6).
    Unsafe(String),
    Io(std::io::Error),
}

impl From<std::io::Error> for StartError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(why) | Self::InUse(why) | Self::Unsafe(why) => f.write_str(why),
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
    server: Server,
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
struct Started {
    arbiters: Vec<Arbiter>,
    promoter: Promoter,
    journal: Journal,
    directory: Arc<Directory>,
    registry: Addr<Registry>,
    persistence: Option<Arc<Persistence>>,
    demo: Option<DemoInfo>,
    admin_token: Option<Secret>,
    voters: Arc<VoterTable>,
}

impl Application {
    /// Recovers the data directory, starts the actors and binds the listener; serving begins
    /// with [`Self::run_until`].
    pub async fn build(settings: Settings, clock: Arc<dyn Clock>) -> Result<Self, StartError> {
        if let Some(token) = &settings.admin_token {
            token.check_admin_token().map_err(StartError::Unsafe)?;
        }
        // The lock comes first: recovery moves and removes files, which only the owner may do.
        let lock = claim_data_dir(&settings)?;
        telemetry::install_metrics();
        let recovered = recover_state(&settings)?;
        let warnings = recovered.warnings.clone();
        let (stop_loops, loops) = shutdown::channel();
        let started = start_actors(&settings, &clock, recovered, loops.clone(), None).await?;
        let served = serve(&settings, &started, clock, loops, None, None)?;
        Ok(Self::assemble(
            settings.base_path,
            started,
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
        let started = start_actors(
            &settings,
            &clock,
            recovered,
            loops.clone(),
            Some((journal, replication)),
        )
        .await?;
        let served = serve(
            &settings,
            &started,
            clock,
            loops,
            Some(listener),
            Some((cluster, history_key)),
        )?;
        Ok(Self::assemble(
            settings.base_path,
            started,
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
        (address, server, metrics, telemetry): Served,
        stop_loops: Trigger,
        warnings: Vec<String>,
        lock: Option<DirLock>,
    ) -> Self {
        Self {
            address,
            base_path,
            server,
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
    /// accepting, lets requests in flight finish, stops the background loops and writes a last
    /// snapshot.
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
        actix_web::rt::spawn(async move {
            shutdown.await;
            tracing::info!("stopping: finishing requests in flight, then a last snapshot");
            if let Some(metrics) = metrics {
                metrics.stop(true).await;
            }
            handle.stop(true).await;
        });
        self.server.await?;
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

/// Takes the data directory's lock and clears what a crash during a snapshot left behind.
fn claim_data_dir(settings: &Settings) -> Result<Option<DirLock>, StartError> {
    let Some(dir) = &settings.data_dir else {
        return Ok(None);
    };
    let lock = DirLock::acquire(dir).map_err(|e| match e {
        LockError::Held { .. } => StartError::InUse(e.to_string()),
        LockError::Unsafe(why) => StartError::Unsafe(why),
        LockError::Io { error, .. } => StartError::Io(error),
    })?;
    for (file, bytes) in snapshot::remove_stale_temps(dir)? {
        tracing::warn!(
            "removed {} ({bytes} bytes): a snapshot cut short by a crash; the snapshots and journal before it are intact",
            file.display()
        );
    }
    Ok(Some(lock))
}

/// The newest good snapshot with the journal after it; an empty state without a data directory.
fn recover_state(settings: &Settings) -> Result<Recovered, StartError> {
    let recovered = match &settings.data_dir {
        Some(dir) => {
            recovery::recover(dir, settings.recover).map_err(|r| StartError::Refused(r.0))?
        }
        None => Recovered {
            state: SavedState::default(),
            next_seq: 1,
            warnings: Vec::new(),
        },
    };
    for warning in &recovered.warnings {
        tracing::warn!("{warning}");
    }
    Ok(recovered)
}

/// Starts the registry and the bots over the recovered state (or the demo), and the loops that
/// deliver webhooks and take periodic snapshots.
async fn start_actors(
    settings: &Settings,
    clock: &Arc<dyn Clock>,
    recovered: Recovered,
    loops: Shutdown,
    replicated: Option<(Journal, Box<dyn Replication>)>,
) -> Result<Started, StartError> {
    let (journal, replication) = match replicated {
        Some((journal, replication)) => (Some(journal), Some(replication)),
        None => (None, None),
    };
    let journal = match (journal, &settings.data_dir) {
        (Some(journal), _) => journal,
        (None, Some(dir)) => Journal::open_with_fault(
            dir,
            recovered.next_seq,
            settings.fsync,
            settings.journal_fault,
        )?,
        (None, None) => Journal::in_memory(recovered.next_seq),
    };
    let journal_handle = journal.clone();
    let arbiters: Vec<Arbiter> = (0..settings.actor_threads)
        .map(|_| Arbiter::new())
        .collect();
    let directory = Arc::new(Directory::new(clock.now()));
    directory
        .vote_history_retention
        .set(settings.vote_history.retention);
    directory.weekend.set(settings.weekend_multiplier);
    let spawner = BotSpawner::new(arbiters.iter().map(Arbiter::handle).collect());
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
    let was_empty = recovered.state.bots.is_empty() && recovered.state.profiles.is_empty();
    load(&registry, recovered.state).await?;
    let persistence = settings.data_dir.clone().map(|dir| {
        let persistence = Persistence::new(dir, journal, registry.clone());
        Arc::new(match replication {
            Some(replication) => persistence.with_replication(replication),
            None => persistence,
        })
    });

    let mut admin_token = settings.admin_token.clone();
    let mut demo = None;
    if settings.demo && was_empty {
        let built = demo::build(clock.now(), &DemoSize::default());
        load(&registry, built.state).await?;
        admin_token.get_or_insert_with(|| Secret::from(demo::DEMO_ADMIN_TOKEN));
        demo = Some(built.info);
    }
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
        .send(crate::actors::registry::StateVoters)
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

/// The metrics listener, when there is one: its address and its server.
type MetricsServer = Option<(SocketAddr, Server)>;

/// What [`serve`] binds: the address, the API's server, the metrics listener and the telemetry
/// threads.
type Served = (SocketAddr, Server, MetricsServer, telemetry::Threads);

/// Binds the listener (and the metrics listener) and builds the HTTP server over the started
/// actors.
fn serve(
    settings: &Settings,
    started: &Started,
    clock: Arc<dyn Clock>,
    loops: Shutdown,
    listener: Option<TcpListener>,
    cluster: Option<(web::Data<ClusterHttp>, [u8; 32])>,
) -> std::io::Result<Served> {
    let limiter = RateLimiter::new(settings.rate_limit, Arc::clone(&clock)).map(Arc::new);
    if let Some(limiter) = &limiter {
        limits::spawn_sweeper(Arc::clone(limiter), loops.clone());
    }
    let history = Arc::new(match &cluster {
        Some((_, key)) => {
            crate::api::history::History::with_key(settings.vote_history.clone(), *key)
        }
        None => crate::api::history::History::new(
            settings.vote_history.clone(),
            settings.data_dir.as_deref(),
        )?,
    });
    let cluster = cluster.map(|(cluster, _)| cluster);
    let listener = match listener {
        Some(listener) => listener,
        None => TcpListener::bind(settings.bind)?,
    };
    let cluster_on = cluster.is_some();
    let address = listener.local_addr()?;
    // This application's access-log and metrics threads, which end when it stops.
    let access_log = Arc::new(telemetry::AccessLog::default());
    let telemetry = telemetry::Threads::start(&access_log, address.port(), &loops);
    let openapi_document = serde_json::to_value(openapi::document(&settings.base_path))
        .map_err(std::io::Error::other)?;
    let openapi_json = serde_json::to_vec(&openapi_document).map_err(std::io::Error::other)?;
    let layer = Layer::new(
        Arc::clone(&access_log),
        Arc::new(AllowedMethods::from_openapi(&openapi_document)),
    );
    let cors_origins = settings.cors_origins.clone();
    let cors_on = !cors_origins.is_empty();
    let state = web::Data::new(AppState {
        directory: Arc::clone(&started.directory),
        registry: started.registry.clone(),
        clock: Arc::clone(&clock),
        admin_token: started
            .admin_token
            .as_ref()
            .map(|token| TokenHash::of(token.expose())),
        openapi_json: openapi_json.into(),
        persistence: started.persistence.clone(),
        limiter,
        client_address: ClientAddress::new(settings.trust_forwarded_for, settings.trusted_proxies),
        admin_failures: AdminFailures::new(Arc::clone(&clock)),
        request_timeout: settings.request_timeout,
        allow_private_webhooks: settings.allow_private_webhooks,
        history,
        access_log,
    });
    let base_path = settings.base_path.clone();
    let metrics = match settings.metrics_bind {
        Some(bind) => Some(serve_metrics(bind, state.clone())?),
        None => None,
    };
    let metrics_on_api = metrics.is_none();
    // actix-web's HttpServer, but over connections that stop reading a refused body; signals
    // are ours: actix's own would stop the whole actor system before the last snapshot.
    let server = connection::serve(
        listener,
        ServerOptions {
            workers: settings.workers,
            max_connections: (settings.max_connections / settings.workers.max(1)).max(1),
            client_request_timeout: settings.request_timeout,
            client_disconnect_timeout: Duration::from_secs(1),
            keep_alive: settings.keep_alive,
        },
        move || {
            // Innermost first: each `wrap` goes around all the ones before it.
            App::new()
                .app_data(state.clone())
                .wrap(Optional::new(cluster_on, || from_fn(cluster::consistency)))
                .wrap(Optional::new(cors_on, || {
                    http::cors(&cors_origins).unwrap_or_default()
                }))
                .wrap(Optional::new(cors_on, || from_fn(http::cors_refusals)))
                .wrap(Optional::new(cluster_on, || {
                    from_fn(cluster::forward_writes)
                }))
                .wrap(layer.clone())
                .configure(|cfg| {
                    if let Some(cluster) = &cluster {
                        cfg.app_data(cluster.clone())
                            .configure(cluster::routes(&base_path));
                    }
                })
                .configure(routes(&base_path, metrics_on_api))
        },
    )?;
    Ok((address, server, metrics, telemetry))
}

/// `GET /metrics` alone on its own address (`--metrics-bind`), so an operator can keep it on a
/// private interface; everything else there is 404.
fn serve_metrics(
    bind: SocketAddr,
    state: web::Data<AppState>,
) -> std::io::Result<(SocketAddr, Server)> {
    let listener = TcpListener::bind(bind)?;
    let address = listener.local_addr()?;
    let server = actix_web::HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .route("/metrics", web::get().to(crate::api::health::metrics))
            .default_service(web::to(crate::api::routes::no_route))
            .wrap(from_fn(envelope_errors))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)?
    .run();
    Ok((address, server))
}

async fn load(registry: &Addr<Registry>, state: SavedState) -> std::io::Result<()> {
    registry
        .send(LoadState { state })
        .await
        .map_err(|e| std::io::Error::other(format!("loading the directory failed: {e}")))
}

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

fn spawn_periodic_snapshots(persistence: Arc<Persistence>, every: Duration, mut stop: Shutdown) {
    actix_web::rt::spawn(async move {
        let mut ticks = actix_web::rt::time::interval(every);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = stop.requested() => return,
            }
            if let Err(error) = persistence.snapshot().await {
                tracing::error!(%error, "periodic snapshot failed");
            }
        }
    });
}
