//! Reading the journal stream into a [`Replayer`]: how a node that is about to write learns
//! every record the writers before it stored, and how a standby keeps up meanwhile.
//!
//! Each message is judged by its `Botlist-Epoch` header: a message of an epoch older than one
//! already seen is void (a stale writer's, never acknowledged) and skipped. Records already
//! applied are skipped (a batch is resent whole); a record past the next one is a gap and is
//! refused, never passed over.

use std::time::Duration;

use async_nats::jetstream::{self, consumer};
use futures_util::future::BoxFuture;
use futures_util::StreamExt;

use super::{nats_error, ClusterError, EPOCH_HEADER};
use crate::persist::journal::{read_frame, FrameError};
use crate::persist::state::{Record, Replayer, SavedState};

/// State built from the stream so far.
pub struct CatchUp {
    pub replayer: Replayer,
    /// The last stream message read.
    pub stream_seq: u64,
    /// The newest writer epoch seen.
    pub epoch: u64,
    /// Messages skipped as void.
    pub void_messages: u64,
}

impl Default for CatchUp {
    fn default() -> Self {
        Self {
            replayer: Replayer::new(SavedState::default()),
            stream_seq: 0,
            epoch: 0,
            void_messages: 0,
        }
    }
}

impl CatchUp {
    /// The last journal record applied.
    pub fn applied_seq(&self) -> u64 {
        self.replayer.seq()
    }

    /// Applies one stream message.
    pub fn apply_message(
        &mut self,
        stream_seq: u64,
        epoch: u64,
        payload: &[u8],
    ) -> Result<(), ClusterError> {
        let judged = judge(stream_seq, epoch, self.epoch, self.replayer.seq(), payload)?;
        self.stream_seq = stream_seq;
        match judged {
            Judged::Void => self.void_messages += 1,
            Judged::Records(records) => {
                self.epoch = epoch;
                for (seq, record) in records {
                    self.replayer.apply(seq, record);
                }
            }
        }
        Ok(())
    }
}

/// What a stream message means to a node that has applied records up to `applied` and seen
/// writer epochs up to `seen_epoch`.
pub enum Judged {
    /// A stale writer's message, never acknowledged: skipped.
    Void,
    /// The records it holds past `applied`, in order (none for an epoch message, or for a
    /// batch already applied).
    Records(Vec<(u64, Record)>),
}

/// Judges one stream message by its epoch and reads its records: damage and gaps are refused,
/// never passed over. The one rule for every node that applies the stream.
pub fn judge(
    stream_seq: u64,
    epoch: u64,
    seen_epoch: u64,
    applied: u64,
    payload: &[u8],
) -> Result<Judged, ClusterError> {
    if epoch < seen_epoch {
        return Ok(Judged::Void);
    }
    let mut records = Vec::new();
    let mut next = applied + 1;
    let mut offset = 0;
    while offset < payload.len() {
        let (seq, record, used) = read_frame(&payload[offset..]).map_err(|why| match why {
            FrameError::Damaged(why) => ClusterError::Refused(format!(
                "stream message {stream_seq} holds a damaged record: {why}"
            )),
            FrameError::Unknown(_) => ClusterError::Newer(format!(
                "stream message {stream_seq} holds {why}. This node stopped rather than misapply it: upgrade it to the botlist that writes the stream (docs/UPGRADING.md)"
            )),
        })?;
        offset += used;
        if seq > next {
            return Err(ClusterError::Refused(format!(
                "stream message {stream_seq} jumps from record {} to {seq}: records are missing",
                next - 1
            )));
        }
        if seq == next {
            records.push((seq, record));
            next += 1;
        }
    }
    Ok(Judged::Records(records))
}

/// What stream messages are read into: a [`CatchUp`] (plain state, at start) or a follower's
/// live actors (`cluster::follow::Applier`).
pub trait Target: Send {
    /// The last stream message applied.
    fn stream_seq(&self) -> u64;
    fn apply<'a>(
        &'a mut self,
        stream_seq: u64,
        epoch: u64,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ClusterError>>;
}

impl Target for CatchUp {
    fn stream_seq(&self) -> u64 {
        self.stream_seq
    }

    fn apply<'a>(
        &'a mut self,
        stream_seq: u64,
        epoch: u64,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ClusterError>> {
        Box::pin(std::future::ready(
            self.apply_message(stream_seq, epoch, payload),
        ))
    }
}

/// An ordered consumer from the message after `stream_seq`, for a node that follows live,
/// named `name` (see [`Consumers`]).
pub async fn follow(
    js: &jetstream::Context,
    stream_name: &str,
    stream_seq: u64,
    name: String,
) -> Result<consumer::pull::Ordered, ClusterError> {
    let stream = js.get_stream(stream_name).await.map_err(nats_error)?;
    stream
        .create_consumer(consumer::pull::OrderedConfig {
            name: Some(name),
            deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                start_sequence: stream_seq + 1,
            },
            ..Default::default()
        })
        .await
        .map_err(nats_error)?
        .messages()
        .await
        .map_err(nats_error)
}

/// The names of the consumers this process makes on the stream: `<prefix><serial>` (the
/// client's own re-creations add `_<n>`), with a prefix unique to the process. Before it makes
/// another, a node deletes every consumer it made before: a consumer whose creation timed out
/// while JetStream elected a leader may exist all the same, and leaked consumers pile up to
/// the server's limits (10026, "maximum consumers limit reached") while they wait to expire.
pub struct Consumers {
    prefix: String,
    serial: std::sync::atomic::AtomicU64,
}

impl Consumers {
    pub fn new(node_id: &str) -> Self {
        let mut random = [0u8; 4];
        let _ = getrandom::fill(&mut random);
        let node: String = node_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        let tag: String = random.iter().map(|b| format!("{b:02x}")).collect();
        Self {
            prefix: format!("botlist_{node}_{tag}_"),
            serial: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A name for the next consumer.
    pub fn next(&self) -> String {
        let serial = self
            .serial
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}{serial}", self.prefix)
    }

    /// Deletes every consumer of the stream this process made (best effort); how many.
    pub async fn clean_up(&self, js: &jetstream::Context, stream_name: &str) -> usize {
        let Ok(stream) = js.get_stream(stream_name).await else {
            return 0;
        };
        let mut names = stream.consumer_names();
        let mut mine = Vec::new();
        let listing = async {
            while let Some(Ok(name)) = names.next().await {
                if name.starts_with(&self.prefix) {
                    mine.push(name);
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(2), listing)
            .await
            .is_err()
        {
            return 0;
        }
        let mut deleted = 0;
        for name in mine {
            let deleting = stream.delete_consumer(&name);
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(1), deleting).await {
                deleted += 1;
            }
        }
        deleted
    }
}

/// The writer epoch a message carries (0 for one seeded by `cluster init`).
pub fn epoch_of(message: &jetstream::Message) -> u64 {
    epoch_in(message.headers.as_ref())
}

/// The writer epoch in a message's headers (0 when there is none).
pub fn epoch_in(headers: Option<&async_nats::HeaderMap>) -> u64 {
    headers
        .and_then(|h| h.get(EPOCH_HEADER))
        .and_then(|v| v.as_str().parse::<u64>().ok())
        .unwrap_or(0)
}

/// The writer an epoch message names (`None` on any other message, or a value that does not
/// read as a holder).
pub fn writer_of(message: &jetstream::Message) -> Option<super::lease::Holder> {
    let value = message.headers.as_ref()?.get(super::WRITER_HEADER)?;
    serde_json::from_str(value.as_str()).ok()
}

/// Stream message `seq`, its epoch and payload, asked of the stream's leader (not a replica's
/// copy, as a consumer or a direct get may read).
pub async fn message_at(
    js: &jetstream::Context,
    stream_name: &str,
    seq: u64,
) -> Result<(u64, bytes::Bytes), ClusterError> {
    let stream = js.get_stream(stream_name).await.map_err(nats_error)?;
    let message = stream.get_raw_message(seq).await.map_err(nats_error)?;
    Ok((epoch_in(Some(&message.headers)), message.payload))
}

/// The stream's first sequence now (past 1 once it was purged).
pub async fn first_stream_seq(js: &jetstream::Context, stream: &str) -> Result<u64, ClusterError> {
    let stream = js.get_stream(stream).await.map_err(nats_error)?;
    let info = stream.get_info().await.map_err(nats_error)?;
    Ok(info.state.first_sequence)
}

/// The stream's last sequence now.
pub async fn last_stream_seq(js: &jetstream::Context, stream: &str) -> Result<u64, ClusterError> {
    let stream = js.get_stream(stream).await.map_err(nats_error)?;
    let info = stream.get_info().await.map_err(nats_error)?;
    Ok(info.state.last_sequence)
}

/// Reads every message after `from.stream_seq` up to the stream's last sequence as it is when
/// this starts (or `until`, when given). On a failure the state keeps what was applied.
pub async fn read_to(
    js: &jetstream::Context,
    stream_name: &str,
    mut from: CatchUp,
    until: Option<u64>,
) -> (CatchUp, Result<(), ClusterError>) {
    let result = read_into(js, stream_name, &mut from, until).await;
    (from, result)
}

/// As [`read_to`], into any [`Target`].
pub async fn read_into<T: Target>(
    js: &jetstream::Context,
    stream_name: &str,
    from: &mut T,
    until: Option<u64>,
) -> Result<(), ClusterError> {
    let last = match until {
        Some(until) => until,
        None => last_stream_seq(js, stream_name).await?,
    };
    if last <= from.stream_seq() {
        return Ok(());
    }
    let stream = js.get_stream(stream_name).await.map_err(nats_error)?;
    let reader = stream
        .create_consumer(consumer::pull::OrderedConfig {
            deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                start_sequence: from.stream_seq() + 1,
            },
            ..Default::default()
        })
        .await
        .map_err(nats_error)?;
    let mut messages = reader.messages().await.map_err(nats_error)?;
    while from.stream_seq() < last {
        let message = tokio::time::timeout(Duration::from_secs(3), messages.next())
            .await
            .map_err(|_| nats_error("the stream stopped delivering during catch-up"))?
            .ok_or_else(|| nats_error("the stream ended during catch-up"))?
            .map_err(nats_error)?;
        let stream_seq = message.info().map_err(nats_error)?.stream_sequence;
        if stream_seq <= from.stream_seq() {
            continue;
        }
        from.apply(stream_seq, epoch_of(&message), &message.payload)
            .await?;
    }
    Ok(())
}

/// Generated changes, as a writer journals them, for the property tests here and in
/// `cluster::follow`.
#[cfg(test)]
pub(crate) mod ops {
    use proptest::prelude::*;

    use crate::domain::bot::{BotState, NewBot};
    use crate::domain::ids::{BotId, Snowflake};
    use crate::domain::text::VoterName;
    use crate::domain::time::Timestamp;
    use crate::domain::votes::Voter;
    use crate::persist::state::Record;

    /// One change: list bot `b`, or a vote of user `u` for bot `b` `m` minutes in.
    #[derive(Clone, Debug)]
    pub enum Op {
        List(u8),
        Vote(u8, u16, u16),
    }

    pub fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..4).prop_map(Op::List),
            (0u8..4, 0u16..40, 0u16..2000).prop_map(|(b, u, m)| Op::Vote(b, u, m)),
        ]
    }

    pub fn bot_id(b: u8) -> BotId {
        BotId::from_random_bytes([b + 1; 16])
    }

    pub fn record(op: &Op) -> Record {
        let start = Timestamp::from_millis(1_790_000_000_000);
        match *op {
            Op::List(b) => {
                let new: NewBot = serde_json::from_value(serde_json::json!({
                    "platform_id": (1000 + u64::from(b)).to_string(),
                    "name": format!("Bot {b}"),
                    "username": format!("bot{b}"),
                    "short_description": "property",
                }))
                .expect("a valid bot");
                let listed = Record::BotListed {
                    state: Box::new(BotState::create(bot_id(b), new, start)),
                    token: crate::domain::ids::TokenHash::of(format!("t{b}")),
                };
                // A management change: it carries its audit entry, as the admin API's does.
                let acting = crate::domain::audit::Acting::admin(
                    crate::domain::audit::AuditAction::BotCreate,
                );
                let target = crate::domain::audit::bot_target(bot_id(b));
                Record::audited(acting.entry(target, vec!["name".into()], start), listed)
            }
            Op::Vote(b, u, m) => Record::Voted {
                bot: bot_id(b),
                voter: Voter {
                    id: Snowflake::from_u64(1_000_000 + u64::from(u)),
                    username: VoterName::parse(format!("u{u}")).expect("valid"),
                    avatar: None,
                },
                at: Timestamp::from_millis(1_790_000_000_000 + i64::from(m) * 60_000),
                weight: 1 + u32::from(u % 2),
            },
        }
    }

    /// One message of a generated stream, and whether the follower snapshots and restarts after
    /// applying it.
    pub struct Message {
        pub stream_seq: u64,
        pub epoch: u64,
        pub payload: Vec<u8>,
        pub snapshot_after: bool,
    }

    pub fn batch(records: &[(u64, Record)]) -> Vec<u8> {
        records
            .iter()
            .map(|(seq, record)| {
                crate::persist::journal::frame(*seq, &rmp_serde::to_vec(record).expect("encodes"))
            })
            .collect::<Vec<_>>()
            .concat()
    }

    /// The stream a writer's `records` make: batches cut where `cuts` says, each batch of more
    /// than one frame stored twice (applied once), epoch 1 until `failover_at` records are in,
    /// then a failover's empty epoch-2 message and a stale epoch-1 writer's message (void,
    /// whatever it holds); the first message once `snapshot_at` records are in is followed by
    /// a snapshot and a restart.
    pub fn stream(
        records: &[(u64, Record)],
        cuts: &[usize],
        snapshot_at: usize,
        failover_at: usize,
    ) -> Vec<Message> {
        let mut messages = Vec::new();
        let (mut at, mut epoch, mut snapshotted) = (0, 1, false);
        let push = |messages: &mut Vec<Message>, epoch: u64, payload: Vec<u8>| {
            let stream_seq = messages.len() as u64 + 1;
            messages.push(Message {
                stream_seq,
                epoch,
                payload,
                snapshot_after: false,
            });
        };
        let mut cut = cuts.iter().cycle();
        while at < records.len() {
            let take = (*cut.next().expect("cycle")).min(records.len() - at);
            let payload = batch(&records[at..at + take]);
            if take > 1 {
                push(&mut messages, epoch, payload.clone());
            }
            push(&mut messages, epoch, payload);
            at += take;
            if epoch == 1 && at >= failover_at {
                epoch = 2;
                push(&mut messages, 2, Vec::new());
                let stale = batch(&[(at as u64 + 1, record(&Op::List(3)))]);
                push(&mut messages, 1, stale);
            }
            if !snapshotted && at >= snapshot_at {
                snapshotted = true;
                if let Some(last) = messages.last_mut() {
                    last.snapshot_after = true;
                }
            }
        }
        messages
    }

    /// The records of `ops` as a writer journals them (a bot is listed once, a user votes once
    /// per bot), numbered from 1.
    pub fn journaled(ops: &[Op]) -> Vec<(u64, Record)> {
        let mut seen = std::collections::HashSet::new();
        ops.iter()
            .filter(|op| match op {
                Op::List(b) => seen.insert((*b, None)),
                Op::Vote(b, u, _) => seen.insert((*b, Some(*u))),
            })
            .enumerate()
            .map(|(i, op)| (i as u64 + 1, record(op)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::journal::frame;
    use crate::persist::state::Record;

    fn profile_record(n: u64) -> Vec<u8> {
        let id = crate::domain::ids::ProfileId::from_random_bytes([n as u8; 16]);
        rmp_serde::to_vec(&Record::ProfileDeleted(id)).unwrap()
    }

    #[test]
    fn void_epochs_are_skipped_and_resent_batches_apply_once() {
        let mut catch_up = CatchUp::default();
        let batch: Vec<u8> = [frame(1, &profile_record(1)), frame(2, &profile_record(2))].concat();
        catch_up.apply_message(1, 3, &batch).unwrap();
        assert_eq!(catch_up.applied_seq(), 2);
        // The same frames again (a resend that was stored twice cannot happen, but a batch
        // overlapping what is applied must not apply twice).
        catch_up.apply_message(2, 3, &batch).unwrap();
        assert_eq!(catch_up.applied_seq(), 2);
        // An older epoch's message after a newer one: void.
        catch_up
            .apply_message(3, 2, &frame(3, &profile_record(3)))
            .unwrap();
        assert_eq!((catch_up.applied_seq(), catch_up.void_messages), (2, 1));
        // A gap is refused.
        assert!(catch_up
            .apply_message(4, 3, &frame(9, &profile_record(9)))
            .is_err());
    }

    #[test]
    fn a_record_this_build_does_not_know_stops_the_node_instead_of_being_applied() {
        let mut unknown = Vec::new();
        rmp::encode::write_map_len(&mut unknown, 1).unwrap();
        rmp::encode::write_str(&mut unknown, "AnnouncementPosted").unwrap();
        rmp::encode::write_nil(&mut unknown).unwrap();
        let batch: Vec<u8> = [frame(1, &profile_record(1)), frame(2, &unknown)].concat();
        match judge(5, 1, 1, 0, &batch) {
            Err(ClusterError::Newer(why)) => {
                assert!(why.contains("stream message 5"), "{why}");
                assert!(why.contains("AnnouncementPosted"), "{why}");
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("applied a record it does not know"),
        }
        // Damage stays damage.
        let mut damaged = frame(1, &profile_record(1));
        *damaged.last_mut().unwrap() ^= 1;
        assert!(matches!(
            judge(6, 1, 1, 0, &damaged),
            Err(ClusterError::Refused(_))
        ));
    }

    mod property {
        use proptest::prelude::*;

        use super::super::ops::{journaled, op, stream};
        use super::super::CatchUp;
        use crate::cluster::digest::digest;
        use crate::persist::state::{Replayer, SavedState};

        fn state_digest(state: SavedState) -> String {
            let audit = state.audit.chain();
            let mut replayer = Replayer::new(state);
            let (profiles, bots) = replayer.parts();
            digest(profiles, bots, audit)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            /// The records a writer applied, sent as the stream carries them (batches of any
            /// size, a batch resent, a stale writer's message after a failover's epoch message)
            /// and applied by a follower that took a snapshot on the way, give the same state.
            #[test]
            fn a_follower_from_the_stream_holds_the_writers_state(
                ops in prop::collection::vec(op(), 1..60),
                cuts in prop::collection::vec(1usize..8, 1..30),
                snapshot_at in 0usize..60,
                failover_at in 0usize..60,
            ) {
                let records = journaled(&ops);
                // The writer's own state: every record applied in order.
                let mut writer = Replayer::new(SavedState::default());
                for (seq, record) in &records {
                    writer.apply(*seq, record.clone());
                }
                let writer_digest = state_digest(writer.finish());

                let mut follower = CatchUp::default();
                for message in stream(&records, &cuts, snapshot_at, failover_at) {
                    follower
                        .apply_message(message.stream_seq, message.epoch, &message.payload)
                        .expect("applies");
                    if message.snapshot_after {
                        // A snapshot and a restart from it.
                        let seen = follower.epoch;
                        let state = std::mem::take(&mut follower).replayer.finish();
                        let bytes = rmp_serde::to_vec(&state).expect("encodes");
                        let mut decoded: SavedState =
                            rmp_serde::from_slice(&bytes).expect("decodes");
                        // The log, as a snapshot's sixth part carries it.
                        decoded.audit = state.audit;
                        let state = decoded;
                        follower = CatchUp {
                            replayer: Replayer::new(state),
                            stream_seq: message.stream_seq,
                            epoch: seen,
                            void_messages: 0,
                        };
                    }
                }
                prop_assert_eq!(follower.applied_seq(), records.len() as u64);
                prop_assert_eq!(state_digest(follower.replayer.finish()), writer_digest);
            }
        }
    }
}
