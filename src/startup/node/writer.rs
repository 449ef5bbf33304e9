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
use crate::cluster::lease::{self, FenceClock, Holder, Lease, Renewal};
use crate::cluster::sink::{self, JetStreamSink, NatsPublisher, Outcome};
use crate::cluster::view::{self, NodeRole};
use crate::cluster::{nats_error, ClusterError};
use crate::config::Role;
use crate::persist::journal::Journal;
use crate::startup::Promoter;
use async_nats::jetstream::kv;

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
    view.set_lease(Arc::clone(&fence), node.cluster.lease_ttl);
    *held.fence.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(&fence));
    let (release_tx, release_rx) = oneshot::channel::<()>();
    *held.release.lock().unwrap_or_else(|p| p.into_inner()) = Some(release_tx);
    node.nats
        .runtime
        .handle
        .spawn(renew(node.clone(), lease, lost_tx.clone(), release_rx));

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

/// Tries the lease every `POLL` until this node holds it (never with `--role follower`), once
/// it has seen the key free twice in a row: a writer whose lease expired while the bucket
/// elected a leader takes it again first (it retries every 250 ms), so an election costs no
/// failover.
async fn wait_for_lease(node: &Node, me: &Holder) -> Lease {
    let mut free_before = false;
    loop {
        if node.cluster.role == Role::Auto {
            let (store, me, ttl) = (node.store.clone(), me.clone(), node.cluster.lease_ttl);
            let taken = node
                .nats
                .runtime
                .run(async move {
                    match store.entry(lease::KEY).await {
                        Ok(Some(entry)) if entry.operation == kv::Operation::Put => Err(false),
                        Ok(_) if free_before => Lease::try_take(&store, &me, ttl).await.ok_or(true),
                        Ok(_) => Err(true),
                        Err(_) => Err(false),
                    }
                })
                .await;
            match taken {
                Ok(lease) => return lease,
                Err(free) => free_before = free,
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

/// Renews the lease every TTL/5 (every 250 ms while renewals fail) until it is lost or handed
/// back. A failed renewal is no loss: while the lease's bucket elects a leader nobody can take
/// the lease, and the writer only pauses (the sink waits while the fence clock has lapsed). The
/// role ends when another node holds the lease, when the lease expired and the stream moved on
/// without this writer, or when nothing was renewed for twice the TTL.
async fn renew(
    node: Node,
    mut lease: Lease,
    lost: mpsc::UnboundedSender<String>,
    mut release: oneshot::Receiver<()>,
) {
    let ttl = node.cluster.lease_ttl;
    let mut last_renewed = std::time::Instant::now();
    let mut failing: Option<String> = None;
    loop {
        let pause = if failing.is_some() {
            RETRY_RENEWAL
        } else {
            ttl / 5
        };
        tokio::select! {
            _ = &mut release => {
                lease.release().await;
                return;
            }
            () = tokio::time::sleep(pause) => {}
        }
        let why = match lease.renew().await {
            Renewal::Renewed => {
                if let Some(why) = failing.take() {
                    tracing::info!(after = ?last_renewed.elapsed(), %why, "the lease is renewed again");
                }
                last_renewed = std::time::Instant::now();
                continue;
            }
            Renewal::TakenOver(why) => {
                lease.clock.revoke();
                let _ = lost.send(format!("another node took the lease ({why})"));
                return;
            }
            Renewal::Gone => match retake(&node, &mut lease).await {
                Ok(()) => {
                    tracing::warn!(
                        epoch = lease.epoch,
                        "the lease expired while NATS could not be reached; took it again"
                    );
                    failing = None;
                    last_renewed = std::time::Instant::now();
                    continue;
                }
                Err(why) if lease.clock.revoked() => {
                    let _ = lost.send(why);
                    return;
                }
                Err(why) => why,
            },
            Renewal::Failed(why) => why,
        };
        if last_renewed.elapsed() >= ttl * 2 {
            lease.clock.revoke();
            let _ = lost.send(format!(
                "the lease was not renewed for {:?} ({why})",
                last_renewed.elapsed()
            ));
            return;
        }
        if failing.is_none() {
            // One line per outage, not one per attempt.
            tracing::warn!(%why, "lease renewal failed; retrying");
        }
        failing = Some(why);
    }
}

/// How soon a failed renewal is tried again.
const RETRY_RENEWAL: Duration = Duration::from_millis(250);

/// Takes the expired lease again, if the stream still ends where this writer left it (or at
/// its own message in flight): then nobody else wrote, and the writer goes on in its epoch.
async fn retake(node: &Node, lease: &mut Lease) -> Result<(), String> {
    let last = catchup::last_stream_seq(&node.nats.js, &node.cluster.stream_name())
        .await
        .map_err(|e| e.to_string())?;
    let mine = node.view.stream_position.get();
    if last > mine + 1 {
        lease.clock.revoke();
        return Err(format!(
            "the lease expired and the stream moved on to {last} past this writer's {mine}"
        ));
    }
    lease.retake().await
}
