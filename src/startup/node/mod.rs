//! A cluster node's lifecycle, in one place: connect and check NATS, catch up with the stream
//! (`catch_up`), start the actors over that state and follow the stream live (`follow`:
//! serving reads, forwarding writes to the writer), take the lease when it is free, promote
//! (apply the stream to its end, claim the next slot with an epoch message, turn the follower's
//! journal into the writer's) and write until stopped or fenced (`writer`), then leave
//! (`leave`).
//!
//! Demotion is crash-only: a writer that loses its role stops taking writes, lets requests in
//! flight finish, writes no snapshot and exits with code 5, to be restarted as a follower.
//!
//! The replication core it puts together is `crate::cluster`; the HTTP face it hands the
//! application is `crate::api::cluster`.

mod catch_up;
mod cursor_key;
mod follow;
mod leave;
mod writer;

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::web;
use async_nats::jetstream::kv;
use async_nats::jetstream::object_store::ObjectStore;

use super::{Application, ClusterNode, StartError};
use crate::api::cluster::forward::Forwarder;
use crate::api::cluster::ClusterHttp;
use crate::cluster::catchup::CatchUp;
use crate::cluster::follow::{Applier, Position};
use crate::cluster::lease::{self, Holder};
use crate::cluster::snapshots::{self, ClusterSnapshots};
use crate::cluster::view::{ClusterView, NodeRole};
use crate::cluster::{nats_error, ClusterError, Nats, START_ATTEMPT};
use crate::config::{ClusterSettings, Role, Settings};
use crate::domain::ids::TokenHash;
use crate::domain::time::Clock;
use crate::persist::journal::Journal;
use crate::persist::lock::DirLock;
use crate::persist::recovery::Recovered;
use leave::Held;
use writer::Candidacy;

/// How a node's run ended; `main` turns it into the exit code.
#[derive(Debug)]
pub enum Ended {
    /// SIGTERM or SIGINT: the lease was handed back.
    Stopped,
    /// The node lost the writer's role (or handed it over): exit 5.
    Demoted(String),
    /// Refused to start (exit 2).
    Refused(String),
    /// Refused to start for a setting that cannot be used (exit 7).
    Config(String),
    /// Met a record or a file of a format this build does not know, at start or in the
    /// stream: stopped rather than misapply it (exit 9).
    Newer(String),
    Failed(String),
}

/// How often a follower looks at the lease and the stream.
const POLL: Duration = Duration::from_millis(500);

/// What every part of a node's life shares: the connection, the settings, the lease's bucket
/// and what this node knows of the cluster.
#[derive(Clone)]
struct Node {
    nats: Nats,
    cluster: ClusterSettings,
    /// The lease's bucket.
    store: kv::Store,
    view: Arc<ClusterView>,
}

/// Runs a cluster node until its role ends. `loaded` is called once, when the state is loaded and the node's application built (the
/// binary puts its allocator back to its serving settings there, as a single node does).
pub async fn run(
    settings: Settings,
    cluster: ClusterSettings,
    clock: Arc<dyn Clock>,
    loaded: fn(),
) -> Ended {
    match run_inner(settings, cluster, clock, loaded).await {
        Ok(ended) => ended,
        Err(ClusterError::Refused(why)) => Ended::Refused(why),
        Err(ClusterError::Newer(why)) => Ended::Newer(why),
        Err(ClusterError::Config(why)) => Ended::Config(why),
        Err(error) => Ended::Failed(error.to_string()),
    }
}

async fn run_inner(
    settings: Settings,
    cluster: ClusterSettings,
    clock: Arc<dyn Clock>,
    loaded: fn(),
) -> Result<Ended, ClusterError> {
    // Before anything sets a gauge (the catch-up at start sets the epoch and sequences).
    crate::telemetry::install_metrics();
    // The port first: a taken address is a setting found at once, before NATS is reached.
    let (listener, address, me) = listen(&settings, &cluster)?;
    let nats = Nats::connect(&cluster).await?;
    let view = ClusterView::new(
        me.node_id.clone(),
        match cluster.role {
            Role::Auto => NodeRole::Candidate,
            Role::Follower => NodeRole::Follower,
        },
    );
    let store = patiently("the lease's bucket", || {
        lease::ensure_bucket(&nats.js, &cluster)
    })
    .await?;
    let history_key = cursor_key::shared(&nats, &cluster).await?;
    let snapshot_store =
        patiently("the snapshot bucket", || snapshots::bucket(&nats, &cluster)).await?;
    // The data directory holds this node's snapshots: one node per directory.
    let _lock = lock_data_dir(&settings)?;
    let node = Node {
        nats,
        cluster,
        store,
        view,
    };
    let mut stop = Box::pin(super::stop_signal());

    // 1. Catch up with the stream as plain state. The node answers nothing meanwhile (clients
    // wait in the listen queue): a node that is not caught up is not ready for traffic.
    let dir = settings.data_dir.as_deref();
    let Some(caught) = catch_up::at_start(&node, &snapshot_store, dir, &mut stop).await? else {
        return Ok(Ended::Stopped);
    };

    // 2. Live actors over that state, applying the stream from there and serving reads; then
    // 3. take the lease when it is free, and write until the role ends.
    let applied = caught.applied_seq();
    let base_path = settings.base_path.clone();
    let start = Start {
        settings,
        clock,
        caught,
        listener,
        history_key,
        snapshot_store,
    };
    let following = start_following(&node, start).await?;
    loaded();
    tracing::info!(
        seq = applied,
        "caught up; serving reads and following the stream"
    );
    println!("listening on http://{address}{base_path}");
    Ok(live(node, me, following, stop).await)
}

/// Follows the stream, takes the lease when it is free and writes, until the node is stopped
/// or its role ends; then leaves.
async fn live(
    node: Node,
    me: Holder,
    following: Following,
    stop: impl std::future::Future<Output = ()> + 'static,
) -> Ended {
    let Following {
        app,
        applier,
        journal,
        step_down,
    } = following;
    let (stop_following, follow_stop) = tokio::sync::watch::channel(false);
    let (overtaken_tx, overtaken) = tokio::sync::mpsc::unbounded_channel::<Ended>();
    let follower = node.nats.runtime.handle.spawn(follow::follow(
        node.clone(),
        Arc::clone(&applier),
        follow_stop,
        overtaken_tx.clone(),
    ));
    node.nats
        .runtime
        .handle
        .spawn(follow::supervise(follower, overtaken_tx));
    let held = Held::default();
    let role = writer::take_role(Candidacy {
        node: node.clone(),
        me,
        applier,
        journal: journal.clone(),
        promoter: app.promoter(),
        stop_following,
        step_down,
        held: held.clone(),
    });
    let ending: Arc<Mutex<Option<Ended>>> = Arc::new(Mutex::new(None));
    let shutdown = leave::when_done(
        stop,
        role,
        overtaken,
        journal,
        held.clone(),
        Arc::clone(&node.view),
        Arc::clone(&ending),
    );
    let served = app.run_until(shutdown).await;
    let why = ending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .unwrap_or(Ended::Stopped);
    leave::hand_back(&why, &held).await;
    if let Err(error) = served {
        if matches!(why, Ended::Stopped) {
            return Ended::Failed(error.to_string());
        }
    }
    why
}

/// Binds `--bind` and works out how the other nodes reach this one: `--advertise-url`, else
/// the bound address (refused when that is unspecified, like 0.0.0.0).
fn listen(
    settings: &Settings,
    cluster: &ClusterSettings,
) -> Result<(TcpListener, SocketAddr, Holder), ClusterError> {
    let listener = TcpListener::bind(settings.bind).map_err(|e| {
        ClusterError::Config(format!(
            "cannot listen on --bind (BOTLIST_BIND) {}: {e}",
            settings.bind
        ))
    })?;
    let address = listener.local_addr().map_err(nats_error)?;
    let url = match &cluster.advertise_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None if address.ip().is_unspecified() => {
            return Err(ClusterError::Config(format!(
            "--bind {address} does not say where other nodes reach this one: give --advertise-url"
        )))
        }
        None => format!("http://{address}"),
    };
    let me = Holder {
        node_id: cluster
            .node_id
            .clone()
            .unwrap_or_else(|| address.to_string()),
        url,
    };
    Ok((listener, address, me))
}

/// The data directory's lock, with what a crash during a snapshot left behind cleared away.
fn lock_data_dir(settings: &Settings) -> Result<Option<DirLock>, ClusterError> {
    let Some(dir) = &settings.data_dir else {
        return Ok(None);
    };
    let lock = DirLock::acquire(dir).map_err(|e| ClusterError::Refused(e.to_string()))?;
    for (file, bytes) in crate::persist::snapshot::remove_stale_temps(dir).map_err(nats_error)? {
        tracing::warn!(
            "removed {} ({bytes} bytes): a snapshot cut short by a crash",
            file.display()
        );
    }
    Ok(Some(lock))
}

/// What the application of a node that caught up is built from.
struct Start {
    settings: Settings,
    clock: Arc<dyn Clock>,
    caught: CatchUp,
    listener: TcpListener,
    history_key: [u8; 32],
    snapshot_store: ObjectStore,
}

/// A node serving reads over the state it caught up with, and following the stream.
struct Following {
    app: Application,
    /// Applies the stream's messages to the actors: the follower's, then the promotion's.
    applier: Arc<tokio::sync::Mutex<Applier>>,
    /// The follower's journal, promoted when the node takes the lease.
    journal: Journal,
    /// Pulled by the admin step-down route.
    step_down: tokio::sync::mpsc::UnboundedReceiver<()>,
}

/// Starts the application over the state caught up with: the actors, a follower's journal,
/// the cluster's HTTP face and the node's part in snapshots.
async fn start_following(node: &Node, start: Start) -> Result<Following, ClusterError> {
    let Start {
        settings,
        clock,
        caught,
        listener,
        history_key,
        snapshot_store,
    } = start;
    let applied = caught.applied_seq();
    let position = Position {
        stream_seq: caught.stream_seq,
        epoch: caught.epoch,
        void_messages: caught.void_messages,
    };
    let journal = Journal::follower(applied + 1);
    node.view.set_journal(journal.clone());
    let recovered = Recovered {
        state: caught.replayer.finish(),
        next_seq: applied + 1,
        warnings: Vec::new(),
    };
    let (step_down_tx, step_down) = tokio::sync::mpsc::unbounded_channel();
    let http = web::Data::new(ClusterHttp {
        view: Arc::clone(&node.view),
        base_path: settings.base_path.clone(),
        classic_base_path: settings.classic_base_path.clone(),
        step_down: step_down_tx,
        token: TokenHash::of(node.cluster.token.expose()),
        min_seq_wait: node.cluster.min_seq_wait,
        max_lag: node.cluster.max_lag,
        forwarder: Arc::new(
            Forwarder::new(
                Arc::clone(&node.view),
                node.cluster.token.clone(),
                node.cluster.publish_deadline + Duration::from_secs(5),
            )
            .map_err(nats_error)?,
        ),
    });
    let replication = Box::new(ClusterSnapshots {
        nats: node.nats.clone(),
        cluster: node.cluster.clone(),
        view: Arc::clone(&node.view),
        store: snapshot_store,
    });
    let cluster_node = ClusterNode {
        journal: journal.clone(),
        http,
        history_key,
        replication,
    };
    let app = Application::build_replicated(settings, clock, recovered, listener, cluster_node)
        .await
        .map_err(|error| match error {
            StartError::Refused(why) | StartError::InUse(why) | StartError::Unsafe(why) => {
                ClusterError::Refused(why)
            }
            StartError::Config(why) => ClusterError::Config(why),
            StartError::Newer(why) => ClusterError::Newer(why),
            StartError::Io(error) => nats_error(error),
        })?;
    let applier = Arc::new(tokio::sync::Mutex::new(Applier::new(
        app.registry.clone(),
        journal.clone(),
        Arc::clone(&node.view),
        position,
    )));
    Ok(Following {
        app,
        applier,
        journal,
        step_down,
    })
}

/// Asks `what` again for up to 30 s while JetStream answers "no responders" (a bucket just
/// created has no leader for a moment).
async fn patiently<T, F, Fut>(what: &str, ask: F) -> Result<T, ClusterError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, ClusterError>>,
{
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        // A request the servers never answer (no meta leader elected yet, or two nodes making
        // the same bucket at once) would hold the start for the client's 5 s timeout, twice
        // seen as 10 s; each attempt gets `START_ATTEMPT`, and every step here is idempotent.
        let asked = tokio::time::timeout(START_ATTEMPT, ask())
            .await
            .unwrap_or_else(|_| Err(nats_error(format!("no answer within {START_ATTEMPT:?}"))));
        match asked {
            Err(ClusterError::Nats(why)) if std::time::Instant::now() < give_up => {
                tracing::warn!(%why, "{what} cannot be reached yet; retrying");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            done => return done,
        }
    }
}
