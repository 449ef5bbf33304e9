//! [`JetStreamSink`]: the journal's sink in cluster mode. Each group-commit batch becomes one
//! NATS message (more when it is over [`super::BATCH_BYTES`]) whose payload is the journal's own
//! frames; clients only ever see journal sequence numbers, stream sequences are transport.
//!
//! Message `k` carries `Nats-Msg-Id: <epoch>.<k>`, `Nats-Expected-Last-Sequence: k-1` and
//! `Botlist-Epoch`. One message is in flight at a time and a retry resends the same message
//! with the same headers, so a record is never renumbered and never stored twice. A batch is
//! acknowledged only when the ack says `sequence == k` (the ack chain): the stream up to `k` is
//! then exactly this writer's memory. `WrongLastSequence` (another writer's record took the
//! slot), a wrong ack, the publish deadline, or the lease's fence time passing fail the batch
//! and every later one: the node then exits 5.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::{self};
use bytes::Bytes;

use super::lease::FenceClock;
use super::lease::Holder;
use super::{NatsRuntime, BATCH_BYTES, EPOCH_HEADER, WRITER_HEADER};
use crate::persist::journal::{JournalError, Sink};

/// The stream position the writer has reached, for `GET /cluster` and metrics.
#[derive(Debug, Default)]
pub struct StreamPosition(AtomicU64);

impl StreamPosition {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    pub fn set(&self, seq: u64) {
        self.0.store(seq, Ordering::Release);
    }
}

/// What a publish attempt answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Stored in slot `k` (or found there by the duplicate check).
    Stored(u64),
    /// The stream's last sequence was not `k - 1`: another writer wrote.
    WrongLastSequence,
    /// Worth resending as it is (timeout, connection lost, no leader yet).
    Transient(String),
    /// Resending cannot help.
    Fatal(String),
}

/// Sends one message and waits for its ack; replaceable in tests.
pub trait Publisher: Send + 'static {
    fn publish(&mut self, stream_seq: u64, epoch: u64, payload: Bytes) -> Outcome;
}

/// The real publisher: async-nats on the NATS runtime, blocked on from the writer thread.
pub struct NatsPublisher {
    pub runtime: NatsRuntime,
    pub js: jetstream::Context,
    pub subject: String,
}

impl Publisher for NatsPublisher {
    fn publish(&mut self, stream_seq: u64, epoch: u64, payload: Bytes) -> Outcome {
        let js = self.js.clone();
        let subject = self.subject.clone();
        self.runtime
            .block_on(publish(js, subject, stream_seq, epoch, payload, None))
    }
}

/// How long one publication waits for its ack before it is sent again (the same message, so
/// a resend of one already stored is answered as a duplicate with its slot). An ack comes in
/// milliseconds; one that does not come was lost (seen as a nats-server resumed after a
/// stop: the resend was stored at once), and JetStream's own 5 s wait held every write that
/// long, 5 s without a 2xx in the seeded fault schedule.
pub const ACK_ATTEMPT: Duration = Duration::from_secs(1);

/// Sends message `stream_seq` of `epoch` expecting the stream to end at `stream_seq - 1`, and
/// waits for its ack.
/// `writer`: on an epoch message only, the holder it names (`WRITER_HEADER`).
pub async fn publish(
    js: jetstream::Context,
    subject: String,
    stream_seq: u64,
    epoch: u64,
    payload: Bytes,
    writer: Option<&Holder>,
) -> Outcome {
    let mut message = PublishMessage::build()
        .payload(payload)
        .message_id(format!("{epoch}.{stream_seq}"))
        .expected_last_sequence(stream_seq - 1)
        .header(EPOCH_HEADER, epoch.to_string().as_str());
    if let Some(named) = writer.and_then(|w| serde_json::to_string(w).ok()) {
        message = message.header(WRITER_HEADER, named.as_str());
    }
    let ack = match js.send_publish(subject, message).await {
        Ok(ack) => match tokio::time::timeout(ACK_ATTEMPT, ack).await {
            Ok(ack) => ack,
            Err(_) => return Outcome::Transient(format!("no ack within {ACK_ATTEMPT:?}")),
        },
        Err(error) => Err(error),
    };
    match ack {
        Ok(ack) => Outcome::Stored(ack.sequence),
        Err(error) => match error.kind() {
            PublishErrorKind::WrongLastSequence => Outcome::WrongLastSequence,
            PublishErrorKind::MaxPayloadExceeded => Outcome::Fatal(error.to_string()),
            _ => Outcome::Transient(error.to_string()),
        },
    }
}

pub struct JetStreamSink<P> {
    publisher: P,
    epoch: u64,
    /// The stream slot the next message must land in.
    next_stream_seq: u64,
    fence: Arc<FenceClock>,
    position: Arc<StreamPosition>,
    deadline: Duration,
}

impl<P: Publisher> JetStreamSink<P> {
    pub fn new(
        publisher: P,
        epoch: u64,
        next_stream_seq: u64,
        fence: Arc<FenceClock>,
        position: Arc<StreamPosition>,
    ) -> Self {
        position.set(next_stream_seq - 1);
        Self {
            publisher,
            epoch,
            next_stream_seq,
            fence,
            position,
            deadline: Duration::from_secs(10),
        }
    }

    /// How long a batch is resent before the writer gives up (`--publish-deadline`).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    fn fenced(why: impl Into<String>) -> JournalError {
        JournalError::Fenced(why.into())
    }

    /// The message was sent at least once and its fate is not known: it may be in the stream.
    fn unconfirmed(why: impl Into<String>) -> JournalError {
        JournalError::Unconfirmed(why.into())
    }

    /// Waits while the lease has lapsed (its renewals fail, as while NATS elects a leader) for
    /// it to be renewed again; fails once it is lost for good or at `give_up`. Nothing is sent
    /// or acknowledged meanwhile.
    fn wait_for_lease(&self, give_up: Instant) -> Result<(), String> {
        let mut waited = false;
        while !self.fence.valid() {
            if self.fence.revoked() {
                return Err("the lease was lost".into());
            }
            if Instant::now() >= give_up {
                return Err(format!(
                    "the lease was not renewed within the publish deadline ({:?})",
                    self.deadline
                ));
            }
            if !waited {
                tracing::warn!("the lease's renewal is late; holding writes until it is renewed");
                waited = true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Publishes one message into slot `next_stream_seq`, resending until the deadline.
    fn send(&mut self, payload: Bytes) -> Result<(), JournalError> {
        let k = self.next_stream_seq;
        let give_up = Instant::now() + self.deadline;
        let mut sent = false;
        loop {
            if let Err(why) = self.wait_for_lease(give_up) {
                return Err(if sent {
                    Self::unconfirmed(why)
                } else {
                    Self::fenced(why)
                });
            }
            sent = true;
            match self.publisher.publish(k, self.epoch, payload.clone()) {
                Outcome::Stored(seq) if seq == k => break,
                Outcome::Stored(seq) => {
                    return Err(Self::fenced(format!(
                        "the stream stored message {k} in slot {seq}"
                    )))
                }
                Outcome::WrongLastSequence => {
                    return Err(Self::fenced(format!(
                        "slot {k} holds another writer's message"
                    )))
                }
                Outcome::Fatal(why) => return Err(Self::fenced(why)),
                Outcome::Transient(why) => {
                    if Instant::now() >= give_up {
                        return Err(Self::unconfirmed(format!(
                            "no acknowledgement within {:?}: {why}",
                            self.deadline
                        )));
                    }
                    tracing::warn!(%why, slot = k, "resending a journal message");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        // The ack arrived, but after the fence time another node may already hold the lease:
        // nothing is acknowledged past it.
        // It is stored, though: the next writer applies it, so its writes are not refused.
        if let Err(why) = self.wait_for_lease(give_up) {
            return Err(Self::unconfirmed(format!(
                "the acknowledgement came after the lease's fence time, and then {why}"
            )));
        }
        self.next_stream_seq = k + 1;
        self.position.set(k);
        Ok(())
    }
}

impl<P: Publisher> Sink for JetStreamSink<P> {
    fn commit(
        &mut self,
        frames: &[&[u8]],
        _first_seq: u64,
        _rotate: bool,
        _sync: bool,
    ) -> Result<(), JournalError> {
        let mut payload = Vec::new();
        let mut stored_some = false;
        // Once a part of the batch is stored, a later part's failure leaves the batch's fate
        // unknown as a whole.
        let mut send = |sink: &mut Self, payload: Vec<u8>| match sink.send(Bytes::from(payload)) {
            Ok(()) => {
                stored_some = true;
                Ok(())
            }
            Err(JournalError::Fenced(why)) if stored_some => Err(Self::unconfirmed(why)),
            Err(error) => Err(error),
        };
        for frame in frames {
            if !payload.is_empty() && payload.len() + frame.len() > BATCH_BYTES {
                send(self, std::mem::take(&mut payload))?;
            }
            payload.extend_from_slice(frame);
        }
        if !payload.is_empty() {
            send(self, payload)?;
        }
        Ok(())
    }

    /// Every acknowledged message is already stored with fsync on the stream's replicas.
    fn sync(&mut self) -> Result<(), JournalError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::Mutex;

    /// Answers from a script and records what was sent.
    struct Scripted {
        answers: VecDeque<Outcome>,
        sent: Arc<Mutex<Vec<(u64, u64, usize)>>>,
    }

    impl Publisher for Scripted {
        fn publish(&mut self, stream_seq: u64, epoch: u64, payload: Bytes) -> Outcome {
            self.sent
                .lock()
                .unwrap()
                .push((stream_seq, epoch, payload.len()));
            self.answers
                .pop_front()
                .unwrap_or(Outcome::Stored(stream_seq))
        }
    }

    /// What the scripted publisher was asked: (slot, epoch, payload bytes).
    type Sent = Arc<Mutex<Vec<(u64, u64, usize)>>>;

    fn sink(answers: Vec<Outcome>) -> (JetStreamSink<Scripted>, Sent, Arc<FenceClock>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let fence = Arc::new(FenceClock::default());
        fence.renewed(Instant::now(), Duration::from_secs(60));
        let sink = JetStreamSink::new(
            Scripted {
                answers: answers.into(),
                sent: Arc::clone(&sent),
            },
            7,
            5,
            Arc::clone(&fence),
            Arc::new(StreamPosition::default()),
        );
        (sink, sent, fence)
    }

    #[test]
    fn a_batch_is_one_message_in_the_next_slot_with_the_epoch() {
        let (mut sink, sent, _) = sink(vec![]);
        sink.commit(&[b"ab", b"cd"], 1, false, true).unwrap();
        sink.commit(&[b"e"], 3, false, true).unwrap();
        assert_eq!(*sent.lock().unwrap(), vec![(5, 7, 4), (6, 7, 1)]);
        assert_eq!(sink.position.get(), 6);
    }

    #[test]
    fn a_barrier_sends_nothing() {
        let (mut sink, sent, _) = sink(vec![]);
        sink.commit(&[], 1, false, true).unwrap();
        assert!(sent.lock().unwrap().is_empty());
    }

    #[test]
    fn transient_failures_resend_the_same_slot() {
        let (mut sink, sent, _) = sink(vec![
            Outcome::Transient("timed out".into()),
            Outcome::Transient("no responders".into()),
        ]);
        sink.commit(&[b"x"], 1, false, true).unwrap();
        let slots: Vec<u64> = sent.lock().unwrap().iter().map(|s| s.0).collect();
        assert_eq!(slots, vec![5, 5, 5]);
    }

    #[test]
    fn another_writers_record_in_the_slot_fences() {
        let (mut sink, _, _) = sink(vec![Outcome::WrongLastSequence]);
        let error = sink.commit(&[b"x"], 1, false, true).unwrap_err();
        assert!(matches!(error, JournalError::Fenced(_)), "{error}");
    }

    #[test]
    fn an_ack_for_another_slot_breaks_the_chain() {
        let (mut sink, _, _) = sink(vec![Outcome::Stored(9)]);
        assert!(sink.commit(&[b"x"], 1, false, true).is_err());
    }

    #[test]
    fn the_deadline_fences() {
        let (sink, _, _) = sink(
            (0..1000)
                .map(|_| Outcome::Transient("down".into()))
                .collect(),
        );
        let mut sink = sink.with_deadline(Duration::from_millis(120));
        assert!(sink.commit(&[b"x"], 1, false, true).is_err());
    }

    #[test]
    fn nothing_is_sent_past_the_fence_time() {
        let (mut sink, sent, fence) = sink(vec![]);
        fence.revoke();
        let error = sink.commit(&[b"x"], 1, false, true).unwrap_err();
        assert!(
            matches!(error, JournalError::Fenced(_)),
            "never sent: {error}"
        );
        assert!(sent.lock().unwrap().is_empty());
    }

    #[test]
    fn a_batch_sent_and_never_confirmed_may_have_been_stored() {
        // The deadline passed while the stream did not answer.
        let (sink, _, _) = sink(
            (0..1000)
                .map(|_| Outcome::Transient("timed out".into()))
                .collect(),
        );
        let mut sink = sink.with_deadline(Duration::from_millis(100));
        let error = sink.commit(&[b"x"], 1, false, true).unwrap_err();
        assert!(matches!(error, JournalError::Unconfirmed(_)), "{error}");
        // Refused outright: another writer's record is in the slot, so this one is not.
        let (mut sink, _, _) = super::tests::sink(vec![Outcome::WrongLastSequence]);
        let error = sink.commit(&[b"x"], 1, false, true).unwrap_err();
        assert!(matches!(error, JournalError::Fenced(_)), "{error}");
        // A batch whose first part was stored and whose second was refused.
        let (mut sink, _, _) =
            super::tests::sink(vec![Outcome::Stored(5), Outcome::WrongLastSequence]);
        let big = vec![0u8; BATCH_BYTES - 10];
        let error = sink.commit(&[&big, &big], 1, false, true).unwrap_err();
        assert!(matches!(error, JournalError::Unconfirmed(_)), "{error}");
    }

    #[test]
    fn a_large_batch_is_split_at_the_batch_size() {
        let (mut sink, sent, _) = sink(vec![]);
        let big = vec![0u8; BATCH_BYTES - 10];
        sink.commit(&[&big, &big, b"z"], 1, false, true).unwrap();
        let sizes: Vec<usize> = sent.lock().unwrap().iter().map(|s| s.2).collect();
        assert_eq!(sizes, vec![BATCH_BYTES - 10, BATCH_BYTES - 9]);
    }
}
