//! Becoming and being the writer: wait for the free lease, renew it from then on, promote
//! (catch up to the stream's end, claim the next slot with this epoch's first message, turn
//! the follower's journal into the writer's) and write until the role ends.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, watch};

use super::leave::Held;
use super::{Ended, Node, POLL};
use crate::cluster::catchup;
use crate::cluster::follow::Applier;
use crate::cluster::lease::{FenceClock, Holder, Lease};
use crate::cluster::sink::{self, JetStreamSink, NatsPublisher, Outcome};
use crate::cluster::view::{self, NodeRole};
use crate::cluster::{nats_error, ClusterError};
use crate::config::Role;
use crate::persist::journal::Journal;
use crate::startup::Promoter;

/// What taking and holding the writer's role needs.
pub(super) struct Candidacy {
    pub node: Node,
    pub me: Holder,
    pub applier: Arc<tokio::sync::Mutex<Applier>>,
    pub journal: Journal,
    pub promoter: Promoter,
    pub stop_following: watch::Sender<bool>,
    pub step_down: mpsc::UnboundedReceiver<()>,
    pub held: Held,
}

/// Waits for the lease (never, with `--role follower`), promotes, and writes; resolves when
/// the writer's role ends (demoted, stepped down, or the promotion failed).
pub(super) async fn take_role(role: Candidacy) -> Ended {
    let Candidacy {
        node,
        me,
        applier,
        journal,
        promoter,
        stop_following,
        step_down,
        held,
    } = role;
    let lease = wait_for_lease(&node, &me).await;
    let _ = stop_following.send(true);
    let view = &node.view;
    view.set_role(NodeRole::Candidate);
    tracing::info!(epoch = lease.epoch, "took the writer's lease; catching up");
    view.set_epoch(lease.epoch);
    view.set_writer(Some(me.clone()));

    // From here on the lease must be renewed whatever promotion costs.
    let (lost_tx, lost) = mpsc::unbounded_channel::<String>();
    let epoch = lease.epoch;
    let fence = Arc::clone(&lease.clock);
    *held.fence.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&fence));
    let (release_tx, release_rx) = oneshot::channel::<()>();
    *held.release.lock().unwrap_or_else(|p| p.into_inner()) = Some(release_tx);
    let ttl = node.cluster.lease_ttl;
    node.nats
        .runtime
        .handle
        .spawn(renew(lease, ttl, lost_tx.clone(), release_rx));

    let applied = match promote(&node, &applier, &journal, epoch, fence).await {
        Ok(applied) => applied,
        Err(error) => return Ended::Demoted(format!("promotion failed: {error}")),
    };
    promoter.become_writer();
    view.set_role(NodeRole::Writer);
    view::count_failover();
    tracing::info!(epoch, seq = applied, "writing");
    // `lost_tx` lives as long as this: the renewal ending quietly (handed back) is no loss.
    let ended = write(&journal, lost, step_down).await;
    drop(lost_tx);
    ended
}

/// Tries the lease every `POLL` until this node holds it (never with `--role follower`).
async fn wait_for_lease(node: &Node, me: &Holder) -> Lease {
    loop {
        if node.cluster.role == Role::Auto {
            let (store, me, ttl) = (node.store.clone(), me.clone(), node.cluster.lease_ttl);
            let taken = node
                .nats
                .runtime
                .run(async move { Lease::try_take(&store, &me, ttl).await })
                .await;
            if let Some(lease) = taken {
                return lease;
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Catches up to the stream's end, claims the next slot and turns the follower's journal into
/// the writer's, fenced by `fence`. Returns the last record applied.
async fn promote(
    node: &Node,
    applier: &Arc<tokio::sync::Mutex<Applier>>,
    journal: &Journal,
    epoch: u64,
    fence: Arc<FenceClock>,
) -> Result<u64, String> {
    // The follower stops after the message it is applying; the rest is read here.
    let next_stream_seq = claim_slot(node, applier, epoch)
        .await
        .map_err(|error| error.to_string())?;
    let applied = applier.lock().await.applied_seq();
    let sink = JetStreamSink::new(
        NatsPublisher {
            runtime: node.nats.runtime.clone(),
            js: node.nats.js.clone(),
            subject: node.cluster.subject(),
        },
        epoch,
        next_stream_seq,
        fence,
        Arc::clone(&node.view.stream_position),
    )
    .with_deadline(node.cluster.publish_deadline);
    journal
        .promote(Box::new(sink), applied + 1)
        .map_err(|error| error.to_string())?;
    node.view.set_caught_up(applied, next_stream_seq - 1, epoch);
    Ok(applied)
}

/// Writes until the role ends: the lease lost, a step-down asked for, or the journal failed
/// (the stream refused a batch).
async fn write(
    journal: &Journal,
    mut lost: mpsc::UnboundedReceiver<String>,
    mut step_down: mpsc::UnboundedReceiver<()>,
) -> Ended {
    loop {
        tokio::select! {
            lost = lost.recv() => return Ended::Demoted(lost.unwrap_or_default()),
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
    node: &Node,
    applier: &Arc<tokio::sync::Mutex<Applier>>,
    epoch: u64,
) -> Result<u64, ClusterError> {
    let Node { nats, cluster, .. } = node;
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
            if matches!(error, ClusterError::Refused(_) | ClusterError::Newer(_))
                || std::time::Instant::now() >= give_up
            {
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
    lost: mpsc::UnboundedSender<String>,
    mut release: oneshot::Receiver<()>,
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
