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
    let (lost_tx, mut lost) = mpsc::unbounded_channel::<String>();
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

    // A stream without a leader (a nats-server died) holds the promotion up, not ends it: it
    // retries for as long as the lease is renewed, and the renewal says when that stops.
    let promoted = tokio::select! {
        promoted = promote(&node, &me, &applier, &journal, epoch, fence) => promoted,
        lost = lost.recv() => Err(format!("the lease was lost: {}", lost.unwrap_or_default())),
    };
    let applied = match promoted {
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
/// failover. A key that expired (rather than handed back) while its last holder still answers
/// as the writer is left to it for up to a TTL more: a bucket's election can outlast the TTL
/// (one nats-server leading the stream and the bucket died; measured 8 s against the default
/// 7 s), and the holder then takes the key again as soon as it can read it. A holder that does
/// not answer (killed, its box gone) costs no wait. A key that names this node's id was
/// written by an earlier process of this node (this one has not taken it): when that process
/// no longer answers as the writer, it is taken back at once rather than after the TTL, so a
/// writer restarted by its supervisor (killed, crashed) writes again as soon as it has caught
/// up.
async fn wait_for_lease(node: &Node, me: &Holder) -> Lease {
    let mut free_before = false;
    let mut last_holder: Option<Holder> = None;
    let mut deferring_since: Option<std::time::Instant> = None;
    let mut warned = false;
    let client = reqwest::Client::new();
    loop {
        if node.cluster.role == Role::Auto {
            let looked = look(node).await;
            let free = matches!(looked, Look::Released | Look::Expired);
            let attempt = match looked {
                Look::Held(Some(holder), revision) if holder.node_id == me.node_id => {
                    deferring_since = None;
                    if !still_the_writer(&client, &holder.url).await {
                        Attempt::TakeBack(revision)
                    } else {
                        if !warned {
                            tracing::warn!(url = %holder.url, node_id = %me.node_id, "another live process writes under this node's id; --node-id must name one process");
                            warned = true;
                        }
                        Attempt::Wait
                    }
                }
                Look::Held(holder, _) => {
                    last_holder = holder.or(last_holder);
                    deferring_since = None;
                    Attempt::Wait
                }
                Look::Unread => Attempt::Wait,
                Look::Released if free_before => Attempt::Take,
                Look::Released => Attempt::Wait,
                Look::Expired if !free_before => Attempt::Wait,
                Look::Expired => match last_holder.as_ref().filter(|h| h.node_id != me.node_id) {
                    None => Attempt::Take,
                    Some(holder) => {
                        let since = *deferring_since.get_or_insert_with(std::time::Instant::now);
                        let defer = since.elapsed() < node.cluster.lease_ttl
                            && still_the_writer(&client, &holder.url).await;
                        if defer {
                            tracing::debug!(holder = %holder.node_id, "the lease expired; its holder still answers as the writer");
                            Attempt::Wait
                        } else {
                            Attempt::Take
                        }
                    }
                },
            };
            if let Some(lease) = attempt_lease(node, me, attempt).await {
                return lease;
            }
            free_before = free;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What one look at the key leads a candidate to do.
enum Attempt {
    Wait,
    /// The key is free: create it.
    Take,
    /// The key names this node at this revision, written by a process that is gone.
    TakeBack(u64),
}

async fn attempt_lease(node: &Node, me: &Holder, attempt: Attempt) -> Option<Lease> {
    let (store, me, ttl) = (node.store.clone(), me.clone(), node.cluster.lease_ttl);
    match attempt {
        Attempt::Wait => None,
        Attempt::Take => {
            node.nats
                .runtime
                .run(async move { Lease::try_take(&store, &me, ttl).await })
                .await
        }
        Attempt::TakeBack(revision) => {
            let lease = node
                .nats
                .runtime
                .run(async move { Lease::try_take_back(&store, &me, ttl, revision).await })
                .await;
            if lease.is_some() {
                tracing::info!(
                    revision,
                    "the lease named this node, held by an earlier process of it that no longer answers; taken back"
                );
            }
            lease
        }
    }
}

/// What one look at the lease's key found.
enum Look {
    /// Someone holds it (who, when the value reads as a holder), at this revision.
    Held(Option<Holder>, u64),
    /// Handed back (a delete marker): the holder left on purpose.
    Released,
    /// No value: it expired, or was never taken.
    Expired,
    /// The bucket did not answer.
    Unread,
}

async fn look(node: &Node) -> Look {
    let store = node.store.clone();
    node.nats
        .runtime
        .run(async move {
            match store.entry(lease::KEY).await {
                Ok(Some(entry)) if entry.operation == kv::Operation::Put => {
                    Look::Held(serde_json::from_slice(&entry.value).ok(), entry.revision)
                }
                Ok(Some(_)) => Look::Released,
                Ok(None) => Look::Expired,
                Err(_) => Look::Unread,
            }
        })
        .await
}

/// Whether the node at `url` answers `GET /cluster` as the writer, within half a second.
async fn still_the_writer(client: &reqwest::Client, url: &str) -> bool {
    let asked = client
        .get(format!("{}/cluster", url.trim_end_matches('/')))
        .timeout(Duration::from_millis(500))
        .send()
        .await;
    let Ok(answer) = asked else {
        return false;
    };
    let Ok(status) = answer.json::<serde_json::Value>().await else {
        return false;
    };
    status["role"] == "writer"
}

/// Catches up to the stream's end, claims the next slot and turns the follower's journal into
/// the writer's, fenced by `fence`. Returns the last record applied.
async fn promote(
    node: &Node,
    me: &Holder,
    applier: &Arc<tokio::sync::Mutex<Applier>>,
    journal: &Journal,
    epoch: u64,
    fence: Arc<FenceClock>,
) -> Result<u64, String> {
    // The follower stops after the message it is applying; the rest is read here.
    let next_stream_seq = claim_slot(node, me, applier, epoch)
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
/// (no records; it names this node in `WRITER_HEADER`, so followers forward writes here as
/// soon as they apply it): an older writer's message still in flight then either landed
/// before it (and is applied here) or is refused. Returns the slot of the first record message. A stream
/// that cannot be read or written is tried again every 100 ms without a deadline: the caller
/// ends the promotion when the lease is lost. (It gave up after `--publish-deadline` once:
/// a stream whose leader and meta leader died together answered nothing for 13 s, so the
/// node that had taken the lease exited just as the stream came back, and writes waited for
/// a third node.)
async fn claim_slot(
    node: &Node,
    me: &Holder,
    applier: &Arc<tokio::sync::Mutex<Applier>>,
    epoch: u64,
) -> Result<u64, ClusterError> {
    let Node { nats, cluster, .. } = node;
    let started = std::time::Instant::now();
    let mut warned = false;
    let mut slow = |why: &dyn std::fmt::Display| {
        if !warned && started.elapsed() >= cluster.publish_deadline {
            warned = true;
            tracing::warn!(after = ?started.elapsed(), %why, "the promotion waits for the stream");
        } else {
            tracing::debug!(%why, "claiming the stream's next slot failed; retrying");
        }
    };
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
            if matches!(error, ClusterError::Refused(_) | ClusterError::Newer(_)) {
                return Err(error);
            }
            slow(&error);
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let slot = applier.lock().await.position.stream_seq + 1;
        let (js, subject, named) = (nats.js.clone(), cluster.subject(), me.clone());
        // The message names this node: followers that apply it forward writes here at once.
        let outcome = nats
            .runtime
            .run(async move {
                sink::publish(js, subject, slot, epoch, Bytes::new(), Some(&named)).await
            })
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
                slow(&why);
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
    let taken = std::time::Instant::now();
    let mut last_renewed = taken;
    let mut failing: Option<String> = None;
    // Set when the lease was taken again before the stream's end could be read: it is read at
    // the following renewals instead.
    let mut unchecked = false;
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
        let blackout = node.cluster.blackout;
        let renewal = if blackout.is_some_and(|b| b.covers(taken.elapsed())) {
            Renewal::Failed("a test's blackout of the lease's bucket".into())
        } else {
            lease.renew().await
        };
        let why = match renewal {
            Renewal::Renewed => {
                if let Some(why) = failing.take() {
                    tracing::info!(after = ?last_renewed.elapsed(), %why, "the lease is renewed again");
                }
                last_renewed = std::time::Instant::now();
                if unchecked {
                    match stream_moved(&node).await {
                        Ok(Some(why)) => {
                            lease.clock.revoke();
                            let _ = lost.send(why);
                            return;
                        }
                        Ok(None) => unchecked = false,
                        Err(why) => tracing::debug!(%why, "the stream's end is still unread"),
                    }
                }
                continue;
            }
            Renewal::TakenOver(why) => {
                lease.clock.revoke();
                let _ = lost.send(format!("another node took the lease ({why})"));
                return;
            }
            Renewal::Gone => match retake(&node, &mut lease).await {
                Ok(checked) => {
                    tracing::warn!(
                        epoch = lease.epoch,
                        checked,
                        "the lease expired while NATS could not be reached; took it again"
                    );
                    failing = None;
                    unchecked = !checked;
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
        tracing::debug!(%why, "a lease renewal failed");
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
/// `Ok(false)` when the stream's end could not be read (its leader is being elected too, as
/// when one nats-server led both): the lease is taken anyway, because waiting for the stream
/// would hand the role to a node that only needs the bucket, and it is safe: every message
/// this writer sends expects the stream to end at its own last one, so a stream another
/// writer moved refuses it and the node leaves (exit 5). The end is read at the following
/// renewals, so that a moved stream ends the role even with no write to find it.
async fn retake(node: &Node, lease: &mut Lease) -> Result<bool, String> {
    let checked = match stream_moved(node).await {
        Ok(Some(why)) => {
            lease.clock.revoke();
            return Err(why);
        }
        Ok(None) => true,
        Err(why) => {
            tracing::debug!(%why, "the stream's end cannot be read; taking the lease again first");
            false
        }
    };
    lease.retake().await?;
    Ok(checked)
}

/// Why the role is over, if another writer moved the stream past this writer's last message.
async fn stream_moved(node: &Node) -> Result<Option<String>, String> {
    let name = node.cluster.stream_name();
    let reading = catchup::last_stream_seq(&node.nats.js, &name);
    let last = tokio::time::timeout(Duration::from_secs(1), reading)
        .await
        .map_err(|_| "reading the stream's end timed out".to_string())?
        .map_err(|e| e.to_string())?;
    let mine = node.view.stream_position.get();
    Ok((last > mine + 1).then(|| {
        format!("the lease expired and the stream moved on to {last} past this writer's {mine}")
    }))
}
