//! A cluster node's lifecycle, in one place: connect and check NATS, serve as a standby
//! (forwarding to the writer) while keeping up with the stream, take the lease when it is
//! free, promote (catch up, claim the next slot with an epoch message, start the actors over
//! the stream's journal), write until stopped or fenced.
//!
//! Demotion is crash-only: a writer that loses its role stops taking writes, lets requests in
//! flight finish, writes no snapshot and exits with code 5, to be restarted as a standby.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::web;
use async_nats::jetstream::kv;
use bytes::Bytes;

use super::catchup::{self, CatchUp};
use super::lease::{self, Holder, Lease};
use super::sink::{self, JetStreamSink, NatsPublisher, Outcome};
use super::view::{self, ClusterView, NodeRole};
use super::{nats_error, ClusterError, ClusterSettings, Nats, Role, PUBLISH_DEADLINE};
use crate::api::cluster::ClusterHttp;
use crate::config::Settings;
use crate::domain::time::Clock;
use crate::persist::journal::{Journal, JournalError};
use crate::persist::recovery::Recovered;
use crate::startup::{Application, StartError};

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

/// How often a standby looks at the lease and the stream.
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

    // Keeping up with the stream while standing by, so a promotion reads only the tail.
    let caught_up = Arc::new(Mutex::new(Some(CatchUp::default())));
    let standby = super::standby::serve(
        listener.try_clone().map_err(nats_error)?,
        Arc::clone(&view),
        Arc::clone(&caught_up),
        super::standby::StandbyOptions {
            token: cluster.token.clone(),
            admin_token: settings.admin_token.clone(),
            base_path: settings.base_path.clone(),
            workers: settings.workers,
        },
    )
    .map_err(nats_error)?;
    let standby_handle = standby.handle();
    actix_web::rt::spawn(standby);
    println!("listening on http://{address}{}", settings.base_path);

    let (stop_watching, watching) = tokio::sync::watch::channel(false);
    nats.runtime.handle.spawn(watch(
        nats.clone(),
        cluster.clone(),
        store.clone(),
        Arc::clone(&view),
        Arc::clone(&caught_up),
        watching,
    ));

    let mut stop = Box::pin(crate::startup::stop_signal());
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
        tokio::select! {
            () = &mut stop => {
                standby_handle.stop(true).await;
                return Ok(Ended::Stopped);
            }
            () = tokio::time::sleep(POLL) => {}
        }
    };
    let _ = stop_watching.send(true);
    tracing::info!(epoch = lease.epoch, "took the writer's lease; catching up");
    view.set_epoch(lease.epoch);
    view.set_writer(Some(me.clone()));

    // From here on the lease must be renewed whatever promotion costs.
    let (lost_tx, mut lost_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let lease_epoch = lease.epoch;
    let fence = Arc::clone(&lease.clock);
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    nats.runtime
        .handle
        .spawn(renew(lease, cluster.lease_ttl, lost_tx.clone(), release_rx));

    let caught = caught_up
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .unwrap_or_default();
    let (caught, next_stream_seq) = match claim_slot(&nats, &cluster, caught, lease_epoch).await {
        Ok(claimed) => claimed,
        Err(error) => {
            standby_handle.stop(true).await;
            return Ok(Ended::Demoted(format!("promotion failed: {error}")));
        }
    };
    let applied = caught.applied_seq();
    view.set_caught_up(applied, next_stream_seq - 1);
    let journal = Journal::with_sink(
        Box::new(JetStreamSink::new(
            NatsPublisher {
                runtime: nats.runtime.clone(),
                js: nats.js.clone(),
                subject: cluster.subject(),
            },
            lease_epoch,
            next_stream_seq,
            Arc::clone(&fence),
            Arc::clone(&view.stream_position),
        )),
        applied + 1,
    )
    .map_err(nats_error)?;
    view.set_journal(journal.clone());
    let recovered = Recovered {
        state: caught.replayer.finish(),
        next_seq: applied + 1,
        warnings: Vec::new(),
    };

    standby_handle.stop(true).await;
    let (step_down_tx, mut step_down_rx) = tokio::sync::mpsc::unbounded_channel();
    let http = web::Data::new(ClusterHttp {
        view: Arc::clone(&view),
        base_path: settings.base_path.clone(),
        step_down: step_down_tx,
        token: crate::domain::ids::TokenHash::of(cluster.token.expose()),
    });
    let app = match Application::build_replicated(
        settings,
        clock,
        recovered,
        journal.clone(),
        listener,
        http,
        history_key,
    )
    .await
    {
        Ok(app) => app,
        Err(StartError::Refused(why) | StartError::InUse(why) | StartError::Unsafe(why)) => {
            return Err(ClusterError::Refused(why))
        }
        Err(StartError::Io(error)) => return Err(nats_error(error)),
    };
    view.set_role(NodeRole::Writer);
    view::count_failover();
    tracing::info!(epoch = lease_epoch, seq = applied, "writing");

    // The journal fails when the stream refuses a batch: that also ends the role.
    let watched = journal.clone();
    let lost_on_failure = lost_tx.clone();
    actix_web::rt::spawn(async move {
        loop {
            if let Some(error) = watched.failure() {
                let _ = lost_on_failure.send(error.to_string());
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });

    let ending: Arc<Mutex<Option<Ended>>> = Arc::new(Mutex::new(None));
    let ended = Arc::clone(&ending);
    let fenced_journal = journal.clone();
    let fenced_view = Arc::clone(&view);
    let fenced_clock = Arc::clone(&fence);
    let shutdown = async move {
        let why = tokio::select! {
            () = stop => Ended::Stopped,
            lost = lost_rx.recv() => Ended::Demoted(lost.unwrap_or_default()),
            _ = step_down_rx.recv() => Ended::Demoted("stepped down on request".into()),
        };
        // No write is acknowledged from here on.
        fenced_clock.revoke();
        fenced_journal.fence(JournalError::Fenced(match &why {
            Ended::Demoted(why) => why.clone(),
            _ => "the node is stopping".into(),
        }));
        fenced_view.set_role(if matches!(why, Ended::Stopped) {
            NodeRole::Follower
        } else {
            NodeRole::Fenced
        });
        if matches!(why, Ended::Demoted(_)) {
            view::count_fenced();
        }
        tracing::warn!(?why, "leaving the writer's role");
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
    match &why {
        Ended::Stopped => {
            let _ = release_tx.send(());
        }
        Ended::Demoted(why) if why.contains("on request") => {
            let _ = release_tx.send(());
        }
        _ => {}
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    if let Err(error) = served {
        if matches!(why, Ended::Stopped) {
            return Ok(Ended::Failed(error.to_string()));
        }
    }
    Ok(why)
}

/// Catches up to the stream's end and claims the next slot with this epoch's first message
/// (no records): an older writer's message still in flight then either landed before it (and
/// is read here) or is refused. Returns the state and the slot of the first record message.
async fn claim_slot(
    nats: &Nats,
    cluster: &ClusterSettings,
    mut caught: CatchUp,
    epoch: u64,
) -> Result<(CatchUp, u64), ClusterError> {
    let give_up = std::time::Instant::now() + PUBLISH_DEADLINE;
    loop {
        let (js, name) = (nats.js.clone(), cluster.stream_name());
        let (read, result) = nats
            .runtime
            .run(async move { catchup::read_to(&js, &name, caught, None).await })
            .await;
        caught = read;
        if let Err(error) = result {
            // A refused record (a gap, damage) stops the promotion; a slow stream is retried.
            if matches!(error, ClusterError::Refused(_)) || std::time::Instant::now() >= give_up {
                return Err(error);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let slot = caught.stream_seq + 1;
        let (js, subject) = (nats.js.clone(), cluster.subject());
        let outcome = nats
            .runtime
            .run(sink::publish(js, subject, slot, epoch, Bytes::new()))
            .await;
        match outcome {
            Outcome::Stored(seq) if seq == slot => {
                caught.epoch = epoch;
                caught.stream_seq = slot;
                return Ok((caught, slot + 1));
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

/// While standing by: who writes, how far the stream is, and the state caught up from it.
/// One ordered consumer follows the stream live (a new one from where the state is, after any
/// failure), so a standby is behind by about one round trip, not by a poll interval.
async fn watch(
    nats: Nats,
    cluster: ClusterSettings,
    store: kv::Store,
    view: Arc<ClusterView>,
    caught_up: Arc<Mutex<Option<CatchUp>>>,
    stop: tokio::sync::watch::Receiver<bool>,
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
            view.set_writer(lease::holder(&store).await);
            if let Ok(last) = catchup::last_stream_seq(&nats.js, &cluster.stream_name()).await {
                view.set_stream_last_seq(last);
                stream_last = last;
            }
        }
        let Some(reader) = messages.as_mut() else {
            let from = caught_up
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|c| c.stream_seq);
            let Some(from) = from else { return };
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
                let behind = caught_up
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_ref()
                    .is_some_and(|c| c.stream_seq < stream_last);
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
        // Applied under the lock, with no await while it is held.
        let applied = {
            let mut slot = caught_up.lock().unwrap_or_else(|p| p.into_inner());
            match slot.as_mut() {
                None => return,
                Some(caught) if stream_seq <= caught.stream_seq => Ok(None),
                // The consumer skipped ahead (it should not): read again from the state.
                Some(caught) if stream_seq != caught.stream_seq + 1 => Err(None),
                Some(caught) => match caught.apply_message(stream_seq, epoch, &next.payload) {
                    Ok(()) => Ok(Some((caught.applied_seq(), caught.stream_seq))),
                    Err(error) => Err(Some(error)),
                },
            }
        };
        match applied {
            Ok(None) => continue,
            Ok(Some((applied_seq, at))) => view.set_caught_up(applied_seq, at),
            Err(error) => {
                if let Some(error) = error {
                    tracing::error!(%error, "a stream message cannot be applied; retrying from the state");
                    tokio::time::sleep(POLL).await;
                }
                messages = None;
                continue;
            }
        }
        view.set_stream_last_seq(stream_seq + pending);
    }
}

/// The key that signs vote history cursors, shared by every node through the bucket
/// `<prefix>_meta`, so a cursor from one node is valid on another.
async fn history_key(nats: &Nats, cluster: &ClusterSettings) -> Result<[u8; 32], ClusterError> {
    // A bucket just created has no leader for a moment ("no responders"): ask again for a while,
    // as the start does while JetStream is not ready.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match read_history_key(nats, cluster).await {
            Err(why) if std::time::Instant::now() < give_up => {
                tracing::warn!(%why, "the history cursor key cannot be read yet; retrying");
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            done => return done,
        }
    }
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
