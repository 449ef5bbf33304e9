//! Following the stream: who writes, how far the stream is, and every message applied by the
//! actors as it arrives. One ordered consumer follows the stream live (a new one from where the
//! actors are, after any failure), so a follower is behind by about one round trip.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer::pull::Ordered;
use async_nats::jetstream::Message;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{Ended, Node, POLL};
use crate::cluster::follow::Applier;
use crate::cluster::lease;
use crate::cluster::view::NodeRole;
use crate::cluster::{catchup, ClusterError};
use crate::config::Role;

/// What became of one message.
enum Applied {
    /// Applied (or applied before): on to the next.
    Next,
    /// Follow the stream anew, from the state.
    Again,
    /// The node stops following.
    Stop,
}

/// Follows until `stop` is set (the node takes the writer's role) or the stream is purged
/// past this node, which `overtaken` is told.
pub(super) async fn follow(
    node: Node,
    applier: Arc<tokio::sync::Mutex<Applier>>,
    stop: watch::Receiver<bool>,
    overtaken: mpsc::UnboundedSender<Ended>,
) {
    let mut messages: Option<Ordered> = None;
    let consumers = catchup::Consumers::new(&node.view.node_id);
    // The lease and the stream's end are looked up in a task of their own: a look that waits
    // on NATS (up to a second per request) never holds up the message that names a new writer,
    // and a message being applied never holds up a look.
    let _looking = Looking(tokio::spawn(keep_looking(node.clone(), stop.clone())));
    // When a message last arrived: a consumer that delivers nothing while the stream is ahead
    // (its server died) is replaced.
    let mut last_message = Instant::now();
    loop {
        if *stop.borrow() {
            tracing::debug!("stopped following: the node takes the writer's role");
            return;
        }
        let Some(reader) = messages.as_mut() else {
            messages = open_reader(&node, &applier, &consumers).await;
            continue;
        };
        let next = match tokio::time::timeout(POLL, futures_util::StreamExt::next(reader)).await {
            Err(_) => {
                let stream_last = node.view.stream_last_seq();
                let behind = applier.lock().await.position.stream_seq < stream_last;
                // The stream's end as last looked up may be old (looking it up fails while
                // the consumer answers nothing): not having known itself current for a while
                // is reason enough to follow anew.
                let unheard = Duration::from_millis(node.view.lag_ms()) >= POLL * 4;
                if (behind || unheard) && last_message.elapsed() >= POLL * 2 {
                    if node.view.following_failed(
                        "the stream's consumer delivered nothing while the stream was ahead",
                    ) {
                        tracing::warn!("the stream's consumer stalled; following it anew");
                    }
                    tracing::debug!(stream_last, "the consumer stalled again");
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
                tracing::debug!("the consumer ended; following anew");
                messages = None;
                continue;
            }
        };
        last_message = Instant::now();
        match apply(&node, &applier, &stop, &next, &overtaken).await {
            Applied::Next => {}
            Applied::Again => messages = None,
            Applied::Stop => return,
        }
    }
}

/// The follower's looking task: ends with the follower (or when it stops).
struct Looking(tokio::task::JoinHandle<()>);

impl Drop for Looking {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Looks at the lease and the stream's end every `POLL` until the node stops following.
async fn keep_looking(node: Node, stop: watch::Receiver<bool>) {
    loop {
        let started = Instant::now();
        if look_around(&node, &stop).await.is_none() {
            return;
        }
        tokio::time::sleep_until(started + POLL).await;
    }
}

/// Who writes (this node is a candidate while no one does, if it may take over), and the
/// stream's last message when it could be read. `None` once the node stops following.
async fn look_around(node: &Node, stop: &watch::Receiver<bool>) -> Option<Option<u64>> {
    // While the bucket cannot be read (an election, a lost connection) the writer known last
    // is still the one to forward to: only a bucket that answers says there is none. A
    // writer's epoch message applied while the bucket is asked is newer than its answer.
    let generation = node.view.writer_generation();
    let asked = if node.cluster.lease_unread {
        Ok(Err(ClusterError::Nats(
            "a test's node that never reads the lease".into(),
        )))
    } else {
        tokio::time::timeout(POLL * 2, lease::current_holder(&node.store)).await
    };
    if let Ok(Ok(writer)) = asked {
        // Following a writer; a candidate while there is none and this node may take over.
        let role = match (&writer, node.cluster.role) {
            (None, Role::Auto) => NodeRole::Candidate,
            _ => NodeRole::Follower,
        };
        node.view.writer_from_bucket(writer, generation);
        if *stop.borrow() {
            return None;
        }
        node.view.set_role(role);
    }
    if *stop.borrow() {
        return None;
    }
    let last = tokio::time::timeout(
        POLL * 2,
        catchup::last_stream_seq(&node.nats.js, &node.cluster.stream_name()),
    )
    .await
    .unwrap_or_else(|_| Err(crate::cluster::ClusterError::Nats("timed out".into())));
    let last = match last {
        Ok(last) => Some(last),
        Err(error) => {
            let why = format!("the stream's state cannot be read: {error}");
            if node.view.following_failed(&why) {
                tracing::warn!(%why, "following the stream is interrupted");
            }
            tracing::debug!(%why, "looking the stream up failed");
            None
        }
    };
    if let Some(last) = last {
        node.view.set_stream_last_seq(last);
        if last <= node.view.stream_position.get() {
            // Nothing to apply: the node is as current as the stream said a moment ago.
            node.view.heard_from_stream(true);
        }
    }
    Some(last)
}

/// A consumer from the message after the actors' state, once the consumers this node made
/// before are deleted; `None` after a failure (and a pause), which the view records (readiness,
/// a metric and one log line per outage say why).
async fn open_reader(
    node: &Node,
    applier: &tokio::sync::Mutex<Applier>,
    consumers: &catchup::Consumers,
) -> Option<Ordered> {
    let from = applier.lock().await.position.stream_seq;
    let stream = node.cluster.stream_name();
    let deleted = consumers.clean_up(&node.nats.js, &stream).await;
    if deleted > 0 {
        tracing::info!(
            deleted,
            "deleted the stream consumers this node made before"
        );
    }
    let opened = tokio::time::timeout(
        POLL * 4,
        catchup::follow(&node.nats.js, &stream, from, consumers.next()),
    )
    .await
    .unwrap_or_else(|_| {
        Err(crate::cluster::ClusterError::Nats(
            "creating the consumer timed out".into(),
        ))
    });
    match opened {
        Ok(reader) => Some(reader),
        Err(error) => {
            if node.view.following_failed(&error.to_string()) {
                tracing::warn!(%error, "cannot follow the stream; retrying every 0.5 s until it can");
            }
            tracing::debug!(%error, from, "opening a consumer failed");
            tokio::time::sleep(POLL).await;
            None
        }
    }
}

/// Applies `next` when it is the message after the state.
async fn apply(
    node: &Node,
    applier: &tokio::sync::Mutex<Applier>,
    stop: &watch::Receiver<bool>,
    next: &Message,
    overtaken: &mpsc::UnboundedSender<Ended>,
) -> Applied {
    let Ok(info) = next.info() else {
        tracing::debug!("a message without its stream information; following anew");
        return Applied::Again;
    };
    let (stream_seq, pending) = (info.stream_sequence, info.pending);
    if node.cluster.missing.is_some_and(|m| m.contains(stream_seq)) {
        return Applied::Next;
    }
    let epoch = catchup::epoch_of(next);
    // The promotion takes the applier between messages, never in the middle of one.
    if *stop.borrow() {
        return Applied::Stop;
    }
    let mut applying = applier.lock().await;
    let applied = if stream_seq <= applying.position.stream_seq {
        Ok(())
    } else if stream_seq != applying.position.stream_seq + 1 {
        // The consumer skipped ahead: the server that hosts it holds a copy of the stream
        // without the messages before this one (a nats-server restarted and still catching
        // up). Following anew could land on the same copy again and again, so the missing
        // messages are asked of the stream's leader, then this one is applied.
        match fill_gap(node, &mut applying, stream_seq).await {
            Ok(()) => applying
                .apply_message(stream_seq, epoch, &next.payload)
                .await
                .map_err(Some),
            Err(error) => Err(Some(error)),
        }
    } else {
        applying
            .apply_message(stream_seq, epoch, &next.payload)
            .await
            .map_err(Some)
    };
    // The epoch the message was applied in: a void message (an older writer's) leaves it.
    let current_epoch = applying.position.epoch;
    drop(applying);
    let Err(error) = applied else {
        node.view.set_stream_last_seq(stream_seq + pending);
        node.view.heard_from_stream(pending == 0);
        if epoch == current_epoch {
            learn_writer(node, next, epoch);
        }
        return Applied::Next;
    };
    if let Some(ClusterError::Newer(why)) = error {
        // A record this build does not know: a newer botlist writes the stream. Applying
        // the rest without it would serve a wrong state, and retrying cannot help.
        let _ = overtaken.send(Ended::Newer(why));
        return Applied::Stop;
    }
    if let Some(error) = error {
        // The stream was purged past this node (it fell behind the oldest uploaded
        // snapshot): it restarts from that snapshot.
        let at = applier.lock().await.position.stream_seq;
        let name = node.cluster.stream_name();
        if let Ok(first) = catchup::first_stream_seq(&node.nats.js, &name).await {
            if first > at + 1 {
                let _ = overtaken.send(Ended::Demoted(format!(
                    "the stream was purged below message {first}, past this node's {at}"
                )));
                return Applied::Stop;
            }
        }
        tracing::error!(%error, "a stream message cannot be applied; retrying from the state");
        tokio::time::sleep(POLL).await;
    }
    Applied::Again
}

/// A writer's epoch message names it: this node forwards writes there from now on, without
/// waiting for its next look at the lease (which may come a second or more later). The new
/// writer stored this message before it acknowledged any write, so a client that saw a write
/// of the new writer's acknowledged and sends the next through this node finds it known once
/// this node has applied the first.
fn learn_writer(node: &Node, message: &Message, epoch: u64) {
    let Some(writer) = catchup::writer_of(message) else {
        return;
    };
    if node.view.writer_from_stream(writer.clone(), epoch) {
        tracing::debug!(epoch, writer = %writer.node_id, "learned the writer from its epoch message");
    }
}

/// The most messages a skipped-ahead consumer's gap is filled with one by one; a larger gap
/// is followed anew from the state.
const MAX_GAP: u64 = 4096;

/// Applies the stream's messages from the one after the state up to `upto` (not included),
/// each read from the stream's leader.
async fn fill_gap(node: &Node, applying: &mut Applier, upto: u64) -> Result<(), ClusterError> {
    let from = applying.position.stream_seq + 1;
    tracing::debug!(
        from,
        upto,
        "the consumer skipped ahead; reading the gap from the stream's leader"
    );
    if upto - from > MAX_GAP {
        return Err(ClusterError::Nats(format!(
            "the consumer skipped from {from} to {upto}"
        )));
    }
    let name = node.cluster.stream_name();
    for seq in from..upto {
        let read = tokio::time::timeout(POLL * 2, catchup::message_at(&node.nats.js, &name, seq));
        let (epoch, payload) = read
            .await
            .map_err(|_| ClusterError::Nats(format!("reading message {seq} timed out")))??;
        applying.apply_message(seq, epoch, &payload).await?;
    }
    Ok(())
}

/// Waits for the follower's task: one that panicked ends the node (a supervisor starts it
/// again from its state), where it would otherwise serve ever staler reads, saying nothing.
pub(super) async fn supervise(
    follower: tokio::task::JoinHandle<()>,
    overtaken: mpsc::UnboundedSender<Ended>,
) {
    let Err(error) = follower.await else {
        return;
    };
    if !error.is_panic() {
        return;
    }
    let payload = error.into_panic();
    let why = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    tracing::error!(%why, "following the stream panicked; the node stops");
    let _ = overtaken.send(Ended::Failed(format!(
        "following the stream panicked: {why}"
    )));
}
