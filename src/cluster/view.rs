//! What a node knows about the cluster and shows on `GET /cluster` and in metrics.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::lease::Holder;
use super::sink::StreamPosition;
use crate::persist::journal::Journal;
use crate::persist::StreamMark;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeRole {
    Follower,
    Candidate,
    Writer,
    Fenced,
}

impl NodeRole {
    fn from_u8(value: u8) -> Self {
        match value {
            1 => Self::Candidate,
            2 => Self::Writer,
            3 => Self::Fenced,
            _ => Self::Follower,
        }
    }
}

/// Shared by the node's lifecycle, its HTTP answers and the sink.
pub struct ClusterView {
    pub node_id: String,
    role: AtomicU8,
    epoch: AtomicU64,
    /// On a node that does not write: the last journal record caught up with.
    applied_seq: AtomicU64,
    /// The last stream message this node read or had acknowledged.
    pub stream_position: Arc<StreamPosition>,
    /// The stream's last sequence as last seen.
    stream_last_seq: AtomicU64,
    writer: Mutex<KnownWriter>,
    /// The node's journal: the writer's, or the follower's whose durable sequence is the
    /// applied watermark.
    journal: std::sync::OnceLock<Journal>,
    /// On a node that does not write: the last stream message applied and the epoch by then.
    followed: Mutex<StreamMark>,
    /// What makes the times below: milliseconds after it.
    base: std::time::Instant,
    /// When this node last knew it held everything the stream held (a message with nothing
    /// pending, or the stream's end at or before what it applied); 0 never.
    current_ms: AtomicU64,
    /// Why following the stream fails, since when (cleared by the next message applied).
    follow_problem: Mutex<Option<(std::time::Instant, String)>>,
    /// The writer's fence clock, for `GET /cluster` (lease TTL and last renewal).
    lease: Mutex<
        Option<(
            std::sync::Arc<super::lease::FenceClock>,
            std::time::Duration,
        )>,
    >,
}

/// The writer a node forwards writes to, and where it learned it.
#[derive(Default)]
struct KnownWriter {
    holder: Option<Holder>,
    /// Bumped by every writer learned from the stream (or set by the node itself).
    generation: u64,
    /// The highest epoch whose writer was learned from its epoch message.
    stream_epoch: u64,
}

impl KnownWriter {
    fn replace(&mut self, holder: Option<Holder>) {
        if self.holder != holder {
            tracing::info!(
                was = ?self.holder.as_ref().map(|w| &w.node_id),
                now = ?holder.as_ref().map(|w| &w.node_id),
                "the writer this node forwards to changed"
            );
        }
        self.holder = holder;
    }
}

/// How long following may fail before the node says it is not ready.
pub const STUCK_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// `GET /cluster`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ClusterStatus {
    pub node_id: String,
    /// writer, follower, candidate or fenced
    #[schema(value_type = String)]
    pub role: NodeRole,
    pub epoch: u64,
    pub applied_seq: u64,
    pub durable_seq: u64,
    pub stream_last_seq: u64,
    pub lag_messages: u64,
    #[schema(value_type = Option<Object>)]
    pub writer: Option<Holder>,
    /// How far behind the stream this node may be, in milliseconds: the time since it last knew
    /// it held everything the stream held (0 on a writer holding its lease). `X-Botlist-Lag-Ms`.
    pub lag_ms: u64,
    /// Whether the node serves traffic as it should: false while following the stream has
    /// failed for more than 10 s (`not_ready` says why).
    pub ready: bool,
    pub not_ready: Option<String>,
    /// On the writer: the lease's TTL and how long ago it was last renewed, in milliseconds.
    pub lease_ttl_ms: Option<u64>,
    pub lease_renewed_ms_ago: Option<u64>,
}

impl ClusterView {
    pub fn new(node_id: String, role: NodeRole) -> Arc<Self> {
        let view = Arc::new(Self {
            node_id,
            role: AtomicU8::new(0),
            epoch: AtomicU64::new(0),
            applied_seq: AtomicU64::new(0),
            stream_position: Arc::new(StreamPosition::default()),
            stream_last_seq: AtomicU64::new(0),
            writer: Mutex::new(KnownWriter::default()),
            journal: std::sync::OnceLock::new(),
            followed: Mutex::new(StreamMark {
                stream_seq: 0,
                epoch: 0,
            }),
            base: std::time::Instant::now(),
            current_ms: AtomicU64::new(0),
            follow_problem: Mutex::new(None),
            lease: Mutex::new(None),
        });
        view.set_role(role);
        view
    }

    pub fn role(&self) -> NodeRole {
        NodeRole::from_u8(self.role.load(Ordering::Acquire))
    }

    pub fn set_role(&self, role: NodeRole) {
        self.role.store(role as u8, Ordering::Release);
        metrics::gauge!("botlist_cluster_role", "role" => "writer")
            .set(f64::from(u8::from(role == NodeRole::Writer)));
        metrics::gauge!("botlist_cluster_role", "role" => "follower")
            .set(f64::from(u8::from(role == NodeRole::Follower)));
        metrics::gauge!("botlist_cluster_role", "role" => "candidate")
            .set(f64::from(u8::from(role == NodeRole::Candidate)));
        metrics::gauge!("botlist_cluster_role", "role" => "fenced")
            .set(f64::from(u8::from(role == NodeRole::Fenced)));
    }

    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    pub fn set_epoch(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::Release);
        metrics::gauge!("botlist_cluster_epoch").set(epoch as f64);
    }

    pub fn set_caught_up(&self, applied_seq: u64, stream_seq: u64, epoch: u64) {
        self.applied_seq.store(applied_seq, Ordering::Release);
        *self.followed.lock().unwrap_or_else(|p| p.into_inner()) = StreamMark { stream_seq, epoch };
        if epoch > self.epoch() {
            self.set_epoch(epoch);
        }
        self.stream_position.set(stream_seq);
        self.publish_progress();
    }

    /// Where this node stands in the stream, for a snapshot's mark: on the writer the last
    /// message acknowledged and its own epoch; elsewhere the last message applied.
    pub fn mark(&self) -> StreamMark {
        if self.role() == NodeRole::Writer {
            return StreamMark {
                stream_seq: self.stream_position.get(),
                epoch: self.epoch(),
            };
        }
        *self.followed.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_stream_last_seq(&self, seq: u64) {
        self.stream_last_seq.fetch_max(seq, Ordering::AcqRel);
        self.publish_progress();
    }

    /// This node's own claim (it took the lease), or a writer known otherwise for certain.
    pub fn set_writer(&self, writer: Option<Holder>) {
        let mut known = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        known.generation += 1;
        known.replace(writer);
    }

    /// Counts the writers learned from the stream (and set by [`Self::set_writer`]): a look
    /// at the lease's bucket notes it before it asks, so that an answer that left the bucket
    /// before a newer writer's epoch message was applied does not undo what that message said.
    pub fn writer_generation(&self) -> u64 {
        self.writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .generation
    }

    /// What the lease's bucket answered (the authority on who holds the lease), asked when the
    /// generation was `asked_at`; ignored when a writer was learned from the stream meanwhile
    /// (the next look asks again). True when it was taken.
    pub fn writer_from_bucket(&self, writer: Option<Holder>, asked_at: u64) -> bool {
        let mut known = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if known.generation != asked_at {
            return false;
        }
        known.replace(writer);
        true
    }

    /// A writer's epoch message was applied: `holder` claimed the stream at `epoch`. Taken when
    /// the epoch is higher than every epoch learned from the stream before (epoch messages are
    /// applied in stream order, and epochs grow along it), so the node never goes back to an
    /// older writer this way. True when it was taken.
    pub fn writer_from_stream(&self, holder: Holder, epoch: u64) -> bool {
        let mut known = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if epoch <= known.stream_epoch {
            return false;
        }
        known.stream_epoch = epoch;
        known.generation += 1;
        known.replace(Some(holder));
        true
    }

    pub fn writer(&self) -> Option<Holder> {
        self.writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .holder
            .clone()
    }

    /// The stream's last sequence as last seen (looked up, or told by a delivered message).
    pub fn stream_last_seq(&self) -> u64 {
        self.stream_last_seq.load(Ordering::Acquire)
    }

    /// Set once, when the node's actors start (read on every request: no lock).
    pub fn set_journal(&self, journal: Journal) {
        let _ = self.journal.set(journal);
    }

    /// The last journal record this node holds: acknowledged on the writer, caught up with on
    /// a node that does not write. `X-Botlist-Seq` shows it.
    pub fn applied_seq(&self) -> u64 {
        match self.journal.get() {
            Some(journal) => journal.durable_seq(),
            None => self.applied_seq.load(Ordering::Acquire),
        }
    }

    /// Runs for every message applied: reads three atomics, never `status()` (which clones the
    /// node's id and the writer's claim and takes three locks), so that following costs the
    /// reads served beside it as little as it can.
    fn publish_progress(&self) {
        let position = self.stream_position.get();
        let stream_last_seq = self.stream_last_seq.load(Ordering::Acquire).max(position);
        metrics::gauge!("botlist_cluster_applied_seq").set(self.applied_seq() as f64);
        metrics::gauge!("botlist_cluster_lag_messages").set((stream_last_seq - position) as f64);
    }

    /// A message was applied (or the stream's end was read at or before what is applied);
    /// `current`: nothing was pending after it. Clears a following problem.
    pub fn heard_from_stream(&self, current: bool) {
        if current {
            let now = self.base.elapsed().as_millis() as u64;
            self.current_ms.fetch_max(now.max(1), Ordering::AcqRel);
        }
        let cleared = self
            .follow_problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((since, why)) = cleared {
            tracing::info!(after = ?since.elapsed(), %why, "following the stream again");
            metrics::gauge!("botlist_cluster_follow_stuck").set(0.0);
        }
    }

    /// Following the stream failed (`why`); true the first time in an outage, when the caller
    /// logs it (one line per outage).
    pub fn following_failed(&self, why: &str) -> bool {
        let mut problem = self
            .follow_problem
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        metrics::counter!("botlist_cluster_follow_failures_total").increment(1);
        match problem.as_mut() {
            Some((_, was)) => {
                why.clone_into(was);
                false
            }
            None => {
                *problem = Some((std::time::Instant::now(), why.to_owned()));
                true
            }
        }
    }

    /// Why the node is not ready for traffic, if it is not: following has failed, or the node
    /// has not known itself current, for longer than [`STUCK_AFTER`].
    pub fn not_ready(&self) -> Option<String> {
        if self.role() == NodeRole::Writer {
            return None;
        }
        let problem = self
            .follow_problem
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Whatever the follower believes of itself: a node that has not known itself current
        // for this long is stuck even when no step failed (a follower that stopped, or a
        // consumer that answers nothing while the stream looks no further than the node).
        let unheard = std::time::Duration::from_millis(self.lag_ms());
        let stuck_for = problem.as_ref().map(|(since, _)| since.elapsed());
        let stuck = stuck_for.is_some_and(|d| d >= STUCK_AFTER) || unheard >= STUCK_AFTER;
        metrics::gauge!("botlist_cluster_follow_stuck").set(f64::from(u8::from(stuck)));
        let why = problem
            .as_ref()
            .map_or("no step failed", |(_, why)| why.as_str());
        stuck.then(|| {
            format!(
                "following the stream has failed for {:?} (not known current for {unheard:?}): {why}",
                stuck_for.unwrap_or(unheard)
            )
        })
    }

    /// The writer's lease, shown by `GET /cluster`.
    pub fn set_lease(
        &self,
        clock: std::sync::Arc<super::lease::FenceClock>,
        ttl: std::time::Duration,
    ) {
        *self.lease.lock().unwrap_or_else(|p| p.into_inner()) = Some((clock, ttl));
    }

    /// How far behind the stream this node may be: 0 on a writer whose lease is valid; else
    /// the time since it last knew it held all the stream held.
    pub fn lag_ms(&self) -> u64 {
        if self.role() == NodeRole::Writer {
            let lease = self.lease.lock().unwrap_or_else(|p| p.into_inner());
            return match lease.as_ref() {
                Some((clock, _)) if !clock.valid() => {
                    clock.since_renewed().map_or(0, |d| d.as_millis() as u64)
                }
                _ => 0,
            };
        }
        let now = self.base.elapsed().as_millis() as u64;
        now.saturating_sub(self.current_ms.load(Ordering::Acquire))
    }

    pub fn status(&self) -> ClusterStatus {
        let applied_seq = self.applied_seq();
        let position = self.stream_position.get();
        let stream_last_seq = self.stream_last_seq.load(Ordering::Acquire).max(position);
        let lease = self.lease.lock().unwrap_or_else(|p| p.into_inner()).clone();
        ClusterStatus {
            node_id: self.node_id.clone(),
            role: self.role(),
            epoch: self.epoch(),
            applied_seq,
            durable_seq: applied_seq,
            stream_last_seq,
            lag_messages: stream_last_seq - position,
            writer: self.writer(),
            lag_ms: self.lag_ms(),
            not_ready: self.not_ready(),
            ready: self.not_ready().is_none(),
            lease_ttl_ms: lease.as_ref().map(|(_, ttl)| ttl.as_millis() as u64),
            lease_renewed_ms_ago: lease
                .as_ref()
                .and_then(|(clock, _)| clock.since_renewed())
                .map(|d| d.as_millis() as u64),
        }
    }
}

/// Counters: forwarded writes, fenced writes, failovers.
pub fn count_forwarded() {
    metrics::counter!("botlist_cluster_forwarded_total").increment(1);
}

pub fn count_fenced() {
    metrics::counter!("botlist_cluster_fenced_total").increment(1);
}

pub fn count_failover() {
    metrics::counter!("botlist_cluster_failovers_total").increment(1);
}

/// A forwarded write that failed: before it was sent (`no_writer`), or after, with its outcome
/// unknown (`outcome_unknown`).
pub fn count_forward_failed(after_sending: bool) {
    let outcome = if after_sending { "unknown" } else { "not_sent" };
    metrics::counter!("botlist_cluster_forward_failed_total", "outcome" => outcome).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(name: &str) -> Holder {
        Holder {
            node_id: name.into(),
            url: format!("http://{name}"),
        }
    }

    #[test]
    fn a_writer_learned_from_the_stream_is_undone_by_no_older_news() {
        let view = ClusterView::new("me".into(), NodeRole::Follower);
        let asked = view.writer_generation();
        assert!(view.writer_from_bucket(Some(holder("a")), asked));
        // A look at the bucket starts; the old writer's key has expired, so it answers none.
        let asked = view.writer_generation();
        // Meanwhile the new writer's epoch message is applied: the node knows it at once.
        assert!(view.writer_from_stream(holder("b"), 7));
        assert_eq!(view.writer(), Some(holder("b")));
        // The look's answer left the bucket before the message: dropped.
        assert!(!view.writer_from_bucket(None, asked));
        assert_eq!(view.writer(), Some(holder("b")));
        // An epoch message of an older (or the same) epoch, as a node catching up applies
        // them, never goes back.
        assert!(!view.writer_from_stream(holder("a"), 5));
        assert!(!view.writer_from_stream(holder("a"), 7));
        assert_eq!(view.writer(), Some(holder("b")));
        // A look asked after the message is the authority: the key names another holder, or
        // none.
        let asked = view.writer_generation();
        assert!(view.writer_from_bucket(Some(holder("c")), asked));
        assert_eq!(view.writer(), Some(holder("c")));
        let asked = view.writer_generation();
        assert!(view.writer_from_bucket(None, asked));
        assert_eq!(view.writer(), None);
        // A newer epoch's message names its writer again.
        assert!(view.writer_from_stream(holder("d"), 9));
        assert_eq!(view.writer(), Some(holder("d")));
    }
}
