//! A cluster node's lifecycle, in one place: connect and check NATS, catch up with the stream,
//! start the actors over that state and follow the stream live (serving reads, forwarding
//! writes to the writer), take the lease when it is free, promote (apply the stream to its end,
//! claim the next slot with an epoch message, turn the follower's journal into the writer's),
//! write until stopped or fenced.
//!
//! Demotion is crash-only: a writer that loses its role stops taking writes, lets requests in
//! flight finish, writes no snapshot and exits with code 5, to be restarted as a follower.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::web;
use async_nats::jetstream::kv;
use bytes::Bytes;

use super::catchup;
use super::follow::{Applier, Position};
use super::forward::Forwarder;
use super::lease::{self, FenceClock, Holder, Lease};
use super::sink::{self, JetStreamSink, NatsPublisher, Outcome};
use super::view::{self, ClusterView, NodeRole};
use super::{nats_error, ClusterError, ClusterSettings, Nats, Role};
use crate::api::cluster::ClusterHttp;
use crate::config::Settings;
use crate::domain::time::Clock;
use crate::persist::journal::{Journal, JournalError};
use crate::persist::recovery::Recovered;
use crate::startup::{Application, ClusterNode, Promoter, StartError};

/// How a node's run ended; `main` turns it into the exit code.
#[derive(Debug)]
pub enum Ended {
    /// SIGTERM or SIGINT: the lease was handed back.
    Stopped,
    /// The node lost the writer's role (or handed it over): exit 5.
    Demoted(String),
    /// Refused to start (exit 2).
    Refused(String),
    Failed(String),
}

/// How often a follower looks at the lease and the stream.
const POLL: Duration = Duration::from_millis(500);

pub async fn run(settings: Settings, cluster: ClusterSettings, clock: Arc<dyn Clock>) -> Ended {
    match run_inner(settings, cluster, clock).await {
        Ok(ended) => ended,
        Err(ClusterError::Refused(why)) => Ended::Refused(why),
        Err(error) => Ended::Failed(error.to_string()),
    }
}

async fn run_inner(
    settings: Settings,
    cluster: ClusterSettings,
    clock: Arc<dyn Clock>,
) -> Result<Ended, ClusterError> {
    // Before anything sets a gauge (the catch-up at start sets the epoch and sequences).
    crate::telemetry::install_metrics();
    let nats = Nats::connect(&cluster).await?;
    let listener = TcpListener::bind(settings.bind)
        .map_err(|e| ClusterError::Refused(format!("cannot listen on {}: {e}", settings.bind)))?;
    let address = listener.local_addr().map_err(nats_error)?;
    let url = match &cluster.advertise_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None if address.ip().is_unspecified() => {
            return Err(ClusterError::Refused(format!(
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
    let view = ClusterView::new(
        me.node_id.clone(),
        match cluster.role {
            Role::Auto => NodeRole::Candidate,
            Role::Follower => NodeRole::Follower,
        },
    );
    let store = lease::ensure_bucket(&nats.js, &cluster).await?;
    let history_key = history_key(&nats, &cluster).await?;
    let snapshot_store = patiently("the snapshot bucket", || {
        super::snapshots::bucket(&nats, &cluster)
    })
    .await?;
    // The data directory holds this node's snapshots: one node per directory.
    let _lock = match &settings.data_dir {
        Some(dir) => {
            let lock = crate::persist::lock::DirLock::acquire(dir)
                .map_err(|e| ClusterError::Refused(e.to_string()))?;
            for (file, bytes) in
                crate::persist::snapshot::remove_stale_temps(dir).map_err(nats_error)?
            {
                tracing::warn!(
                    "removed {} ({bytes} bytes): a snapshot cut short by a crash",
                    file.display()
                );
            }
            Some(lock)
        }
        None => None,
    };
    let mut stop = Box::pin(crate::startup::stop_signal());

    // 1. Catch up with the stream as plain state. The node answers nothing meanwhile (clients
    // wait in the listen queue): a node that is not caught up is not ready for traffic.
    let mut caught_up = super::snapshots::base(
        &nats,
        &cluster,
        &snapshot_store,
        settings.data_dir.as_deref(),
    )
    .await?;
    let caught = loop {
        let holder = {
            let store = store.clone();
            nats.runtime
                .run(async move { lease::holder(&store).await })
                .await
        };
        view.set_writer(holder);
        let from = std::mem::take(&mut caught_up);
        let (js, name) = (nats.js.clone(), cluster.stream_name());
        let (read, result) = nats
            .runtime
            .run(async move { catchup::read_to(&js, &name, from, None).await })
            .await;
        view.set_caught_up(read.applied_seq(), read.stream_seq, read.epoch);
        match result {
            Ok(()) => break read,
            Err(ClusterError::Refused(why)) => return Err(ClusterError::Refused(why)),
            Err(error) => {
                tracing::warn!(%error, "catching up with the stream failed; retrying");
                caught_up = read;
            }
        }
        tokio::select! {
            () = &mut stop => return Ok(Ended::Stopped),
            () = tokio::time::sleep(POLL) => {}
        }
    };

    // 2. Live actors over that state, applying the stream from there and serving reads.
    let applied = caught.applied_seq();
    let position = Position {
        stream_seq: caught.stream_seq,
        epoch: caught.epoch,
        void_messages: caught.void_messages,
    };
    let journal = Journal::follower(applied + 1);
    view.set_journal(journal.clone());
    let recovered = Recovered {
        state: caught.replayer.finish(),
        next_seq: applied + 1,
        warnings: Vec::new(),
    };
    let (step_down_tx, step_down_rx) = tokio::sync::mpsc::unbounded_channel();
    let app_base_path = settings.base_path.clone();
    let http = web::Data::new(ClusterHttp {
        view: Arc::clone(&view),
        base_path: settings.base_path.clone(),
        step_down: step_down_tx,
        token: crate::domain::ids::TokenHash::of(cluster.token.expose()),
        min_seq_wait: cluster.min_seq_wait,
        forwarder: Arc::new(
            Forwarder::new(Arc::clone(&view), cluster.token.clone()).map_err(nats_error)?,
        ),
    });
    let replication = Box::new(super::snapshots::ClusterSnapshots {
        nats: nats.clone(),
        cluster: cluster.clone(),
        view: Arc::clone(&view),
        store: snapshot_store,
    });
    let node = ClusterNode {
        journal: journal.clone(),
        http,
        history_key,
        replication,
    };
    let app = match Application::build_replicated(settings, clock, recovered, listener, node).await
    {
        Ok(app) => app,
        Err(StartError::Refused(why) | StartError::InUse(why) | StartError::Unsafe(why)) => {
            return Err(ClusterError::Refused(why))
        }
        Err(StartError::Io(error)) => return Err(nats_error(error)),
    };
    let applier = Arc::new(tokio::sync::Mutex::new(Applier::new(
        app.registry.clone(),
        journal.clone(),
        Arc::clone(&view),
        position,
    )));
    tracing::info!(
        seq = applied,
        "caught up; serving reads and following the stream"
    );
    println!("listening on http://{address}{}", app_base_path);

    let (stop_following, following) = tokio::sync::watch::channel(false);
    let (overtaken_tx, mut overtaken) = tokio::sync::mpsc::unbounded_channel::<String>();
    nats.runtime.handle.spawn(follow(
        nats.clone(),
        cluster.clone(),
        store.clone(),
        Arc::clone(&view),
        Arc::clone(&applier),
        following,
        overtaken_tx,
    ));

    // 3. Take the lease when it is free, and write until the role ends.
    let release: Arc<Mutex<Option<tokio::sync::oneshot::Sender<()>>>> = Arc::new(Mutex::new(None));
    // The writer's fence clock, once it holds the lease: revoked the moment the role ends.
    let fence: Arc<Mutex<Option<Arc<FenceClock>>>> = Arc::new(Mutex::new(None));
    let role = take_role(Candidacy {
        nats: nats.clone(),
        cluster: cluster.clone(),
        me,
        view: Arc::clone(&view),
        store,
        applier,
        journal: journal.clone(),
        promoter: app.promoter(),
        stop_following,
        step_down: step_down_rx,
        release: Arc::clone(&release),
        fence: Arc::clone(&fence),
    });

    let ending: Arc<Mutex<Option<Ended>>> = Arc::new(Mutex::new(None));
    let ended = Arc::clone(&ending);
    let fenced_journal = journal.clone();
    let fenced_clock = Arc::clone(&fence);
    let fenced_view = Arc::clone(&view);
    let shutdown = async move {
        let why = tokio::select! {
            () = stop => Ended::Stopped,
            why = role => why,
            Some(why) = overtaken.recv() => Ended::Demoted(why),
        };
        let was_writer = fenced_view.role() == NodeRole::Writer;
        // No write is acknowledged from here on, and no last snapshot is written. A node asked
        // to stop finishes its requests in flight and writes its last snapshot instead.
        if let Ended::Demoted(why) | Ended::Refused(why) | Ended::Failed(why) = &why {
            if let Some(clock) = fenced_clock
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
            {
                clock.revoke();
            }
            fenced_journal.fence(JournalError::Fenced(why.clone()));
        }
        fenced_view.set_role(match (&why, was_writer) {
            (Ended::Demoted(_), true) => NodeRole::Fenced,
            _ => NodeRole::Follower,
        });
        if was_writer && matches!(why, Ended::Demoted(_)) {
            view::count_fenced();
        }
        tracing::warn!(?why, "leaving the cluster");
        *ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    };
    let served = app.run_until(shutdown).await;
    let why = ending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .unwrap_or(Ended::Stopped);
    // Handing the lease back lets another node take it at once; a node that lost it has
    // nothing to hand back.
    let hand_back = match &why {
        Ended::Stopped => true,
        Ended::Demoted(why) => why.contains("on request"),
        _ => false,
    };
    if hand_back {
        if let Some(release) = release.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = release.send(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if let Err(error) = served {
        if matches!(why, Ended::Stopped) {
            return Ok(Ended::Failed(error.to_string()));
        }
    }
    Ok(why)
}

/// What taking and holding the writer's role needs.
struct Candidacy {
    nats: Nats,
    cluster: ClusterSettings,
    me: Holder,
    view: Arc<ClusterView>,
    store: kv::Store,
    applier: Arc<tokio::sync::Mutex<Applier>>,
    journal: Journal,
    promoter: Promoter,
    stop_following: tokio::sync::watch::Sender<bool>,
    step_down: tokio::sync::mpsc::UnboundedReceiver<()>,
    release: Arc<Mutex<Option<tokio::sync::oneshot::Sender<()>>>>,
    fence: Arc<Mutex<Option<Arc<FenceClock>>>>,
}

/// Waits for the lease (never, with `--role follower`), promotes, and writes; resolves when
/// the writer's role ends (demoted, stepped down, or the promotion failed).
async fn take_role(role: Candidacy) -> Ended {
    let Candidacy {
        nats,
        cluster,
        me,
        view,
        store,
        applier,
        journal,
        promoter,
        stop_following,
        mut step_down,
        release,
        fence: fence_slot,
    } = role;
    let lease = loop {
        if cluster.role == Role::Auto {
            let (store, me, ttl) = (store.clone(), me.clone(), cluster.lease_ttl);
            let taken = nats
                .runtime
                .run(async move { Lease::try_take(&store, &me, ttl).await })
                .await;
            if let Some(lease) = taken {
                break lease;
            }
        }
        tokio::time::sleep(POLL).await;
    };
    let _ = stop_following.send(true);
    view.set_role(NodeRole::Candidate);
    tracing::info!(epoch = lease.epoch, "took the writer's lease; catching up");
    view.set_epoch(lease.epoch);
    view.set_writer(Some(me.clone()));

    // From here on the lease must be renewed whatever promotion costs.
    let (lost_tx, mut lost_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let lease_epoch = lease.epoch;
    let fence = Arc::clone(&lease.clock);
    *fence_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&fence));
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    *release.lock().unwrap_or_else(|p| p.into_inner()) = Some(release_tx);
    nats.runtime
        .handle
        .spawn(renew(lease, cluster.lease_ttl, lost_tx.clone(), release_rx));

    // The follower stops after the message it is applying; the rest is read here.
    let next_stream_seq = match claim_slot(&nats, &cluster, &applier, lease_epoch).await {
        Ok(next) => next,
        Err(error) => return Ended::Demoted(format!("promotion failed: {error}")),
    };
    let applied = applier.lock().await.applied_seq();
    let sink = JetStreamSink::new(
        NatsPublisher {
            runtime: nats.runtime.clone(),
            js: nats.js.clone(),
            subject: cluster.subject(),
        },
        lease_epoch,
        next_stream_seq,
        Arc::clone(&fence),
        Arc::clone(&view.stream_position),
    )
    .with_deadline(cluster.publish_deadline);
    if let Err(error) = journal.promote(Box::new(sink), applied + 1) {
        return Ended::Demoted(format!("promotion failed: {error}"));
    }
    view.set_caught_up(applied, next_stream_seq - 1, lease_epoch);
    promoter.become_writer();
    view.set_role(NodeRole::Writer);
    view::count_failover();
    tracing::info!(epoch = lease_epoch, seq = applied, "writing");

    // The journal fails when the stream refuses a batch: that also ends the role.
    loop {
        tokio::select! {
            lost = lost_rx.recv() => return Ended::Demoted(lost.unwrap_or_default()),
            _ = step_down.recv() => return Ended::Demoted("stepped down on request".into()),
            () = tokio::time::sleep(Duration::from_millis(50)) => {
                if let Some(error) = journal.failure() {
                    return Ended::Demoted(error.to_string());
                }
            }
        }
    }
}

/// Catches up to the stream's end and claims the next slot with this epoch's first message
/// (no records): an older writer's message still in flight then either landed before it (and
/// is applied here) or is refused. Returns the slot of the first record message.
async fn claim_slot(
    nats: &Nats,
    cluster: &ClusterSettings,
    applier: &Arc<tokio::sync::Mutex<Applier>>,
    epoch: u64,
) -> Result<u64, ClusterError> {
    let give_up = std::time::Instant::now() + cluster.publish_deadline;
    loop {
        let (js, name, reading) = (nats.js.clone(), cluster.stream_name(), Arc::clone(applier));
        let result = nats
            .runtime
            .run(async move {
                let mut applier = reading.lock().await;
                catchup::read_into(&js, &name, &mut *applier, None).await
            })
            .await;
        if let Err(error) = result {
            // A refused record (a gap, damage) stops the promotion; a slow stream is retried.
            if matches!(error, ClusterError::Refused(_)) || std::time::Instant::now() >= give_up {
                return Err(error);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let slot = applier.lock().await.position.stream_seq + 1;
        let (js, subject) = (nats.js.clone(), cluster.subject());
        let outcome = nats
            .runtime
            .run(sink::publish(js, subject, slot, epoch, Bytes::new()))
            .await;
        match outcome {
            Outcome::Stored(seq) if seq == slot => {
                let mut applier = applier.lock().await;
                applier.position.epoch = epoch;
                applier.position.stream_seq = slot;
                return Ok(slot + 1);
            }
            Outcome::Stored(seq) => {
                return Err(nats_error(format!(
                    "the epoch message for slot {slot} was stored in slot {seq}"
                )))
            }
            Outcome::WrongLastSequence => continue,
            Outcome::Fatal(why) => return Err(nats_error(why)),
            Outcome::Transient(why) => {
                if std::time::Instant::now() >= give_up {
                    return Err(nats_error(why));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Renews the lease every TTL/5 until it is lost or handed back.
async fn renew(
    mut lease: Lease,
    ttl: Duration,
    lost: tokio::sync::mpsc::UnboundedSender<String>,
    mut release: tokio::sync::oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut release => {
                lease.release().await;
                return;
            }
            () = tokio::time::sleep(ttl / 5) => {}
        }
        // A renewal that comes too late (the process was stopped) must not count.
        if !lease.clock.valid() {
            let _ = lost.send("the lease expired before it was renewed".into());
            return;
        }
        if let Err(why) = lease.renew().await {
            let _ = lost.send(why.to_string());
            return;
        }
    }
}

/// While following: who writes, how far the stream is, and every message applied by the
/// actors as it arrives. One ordered consumer follows the stream live (a new one from where the
/// actors are, after any failure), so a follower is behind by about one round trip.
async fn follow(
    nats: Nats,
    cluster: ClusterSettings,
    store: kv::Store,
    view: Arc<ClusterView>,
    applier: Arc<tokio::sync::Mutex<Applier>>,
    stop: tokio::sync::watch::Receiver<bool>,
    overtaken: tokio::sync::mpsc::UnboundedSender<String>,
) {
    let mut messages: Option<async_nats::jetstream::consumer::pull::Ordered> = None;
    let mut looked = tokio::time::Instant::now() - POLL;
    // The stream's end as last looked up, and when a message last arrived: a consumer that
    // delivers nothing while the stream is ahead (its server died) is replaced.
    let mut stream_last = 0;
    let mut last_message = tokio::time::Instant::now();
    loop {
        if *stop.borrow() {
            return;
        }
        if looked.elapsed() >= POLL {
            looked = tokio::time::Instant::now();
            let writer = lease::holder(&store).await;
            // Following a writer; a candidate while there is none and this node may take over.
            let role = match (&writer, cluster.role) {
                (None, Role::Auto) => NodeRole::Candidate,
                _ => NodeRole::Follower,
            };
            view.set_writer(writer);
            if *stop.borrow() {
                return;
            }
            view.set_role(role);
            if let Ok(last) = catchup::last_stream_seq(&nats.js, &cluster.stream_name()).await {
                view.set_stream_last_seq(last);
                stream_last = last;
            }
        }
        let Some(reader) = messages.as_mut() else {
            let from = applier.lock().await.position.stream_seq;
            match catchup::follow(&nats.js, &cluster.stream_name(), from).await {
                Ok(reader) => messages = Some(reader),
                Err(error) => {
                    tracing::warn!(%error, "cannot follow the stream; retrying");
                    tokio::time::sleep(POLL).await;
                }
            }
            continue;
        };
        let next = match tokio::time::timeout(POLL, futures_util::StreamExt::next(reader)).await {
            Err(_) => {
                let behind = applier.lock().await.position.stream_seq < stream_last;
                if behind && last_message.elapsed() >= POLL * 2 {
                    tracing::warn!("the stream's consumer stalled; following it anew");
                    messages = None;
                }
                continue;
            }
            Ok(Some(Ok(message))) => message,
            Ok(Some(Err(error))) => {
                tracing::warn!(%error, "following the stream failed; starting over from the state");
                messages = None;
                continue;
            }
            Ok(None) => {
                messages = None;
                continue;
            }
        };
        last_message = tokio::time::Instant::now();
        let Ok(info) = next.info() else {
            messages = None;
            continue;
        };
        let (stream_seq, pending) = (info.stream_sequence, info.pending);
        let epoch = catchup::epoch_of(&next);
        // The promotion takes the applier between messages, never in the middle of one.
        if *stop.borrow() {
            return;
        }
        let mut applying = applier.lock().await;
        let applied = if stream_seq <= applying.position.stream_seq {
            Ok(())
        } else if stream_seq != applying.position.stream_seq + 1 {
            // The consumer skipped ahead (it should not): read again from the state.
            Err(None)
        } else {
            applying
                .apply_message(stream_seq, epoch, &next.payload)
                .await
                .map_err(Some)
        };
        drop(applying);
        if let Err(error) = applied {
            if let Some(error) = error {
                // The stream was purged past this node (it fell behind the oldest uploaded
                // snapshot): it restarts from that snapshot.
                let at = applier.lock().await.position.stream_seq;
                if let Ok(first) = catchup::first_stream_seq(&nats.js, &cluster.stream_name()).await
                {
                    if first > at + 1 {
                        let _ = overtaken.send(format!(
                            "the stream was purged below message {first}, past this node's {at}"
                        ));
                        return;
                    }
                }
                tracing::error!(%error, "a stream message cannot be applied; retrying from the state");
                tokio::time::sleep(POLL).await;
            }
            messages = None;
            continue;
        }
        view.set_stream_last_seq(stream_seq + pending);
    }
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
        match ask().await {
            Err(ClusterError::Nats(why)) if std::time::Instant::now() < give_up => {
                tracing::warn!(%why, "{what} cannot be reached yet; retrying");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            done => return done,
        }
    }
}

/// The key that signs vote history cursors, shared by every node through the bucket
/// `<prefix>_meta`, so a cursor from one node is valid on another.
async fn history_key(nats: &Nats, cluster: &ClusterSettings) -> Result<[u8; 32], ClusterError> {
    patiently("the history cursor key", || read_history_key(nats, cluster)).await
}

async fn read_history_key(
    nats: &Nats,
    cluster: &ClusterSettings,
) -> Result<[u8; 32], ClusterError> {
    let js = nats.js.clone();
    let bucket = format!("{}_meta", cluster.prefix);
    nats.runtime
        .run(async move {
            let store = match js.get_key_value(bucket.clone()).await {
                Ok(store) => store,
                Err(_) => js
                    .create_key_value(kv::Config {
                        bucket,
                        history: 1,
                        storage: async_nats::jetstream::stream::StorageType::File,
                        num_replicas: 3,
                        ..Default::default()
                    })
                    .await
                    .map_err(nats_error)?,
            };
            let mut fresh = [0u8; 32];
            getrandom::fill(&mut fresh).map_err(nats_error)?;
            // The first node's key wins; the others read it.
            let _ = store
                .create("history-cursor-key", Bytes::copy_from_slice(&fresh))
                .await;
            let value = store
                .get("history-cursor-key")
                .await
                .map_err(nats_error)?
                .ok_or_else(|| nats_error("the history cursor key is missing"))?;
            <[u8; 32]>::try_from(value.as_ref())
                .map_err(|_| nats_error("the history cursor key is not 32 bytes"))
        })
        .await
}
