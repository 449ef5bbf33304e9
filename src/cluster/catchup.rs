//! Reading the journal stream into a [`Replayer`]: how a node that is about to write learns
//! every record the writers before it stored, and how a standby keeps up meanwhile.
//!
//! Each message is judged by its `Botlist-Epoch` header: a message of an epoch older than one
//! already seen is void (a stale writer's, never acknowledged) and skipped. Records already
//! applied are skipped (a batch is resent whole); a record past the next one is a gap and is
//! refused, never passed over.

use std::time::Duration;

use async_nats::jetstream::{self, consumer};
use futures_util::StreamExt;

use super::{nats_error, ClusterError, EPOCH_HEADER};
use crate::persist::journal::read_frame;
use crate::persist::state::{DirectoryState, Replayer};

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
            replayer: Replayer::new(DirectoryState::default()),
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
        self.stream_seq = stream_seq;
        if epoch < self.epoch {
            self.void_messages += 1;
            return Ok(());
        }
        self.epoch = epoch;
        let mut offset = 0;
        while offset < payload.len() {
            let (seq, record, used) = read_frame(&payload[offset..]).map_err(|why| {
                ClusterError::Refused(format!(
                    "stream message {stream_seq} holds a damaged record: {why}"
                ))
            })?;
            offset += used;
            let next = self.replayer.seq() + 1;
            if seq > next {
                return Err(ClusterError::Refused(format!(
                    "stream message {stream_seq} jumps from record {} to {seq}: records are missing",
                    next - 1
                )));
            }
            if seq == next {
                self.replayer.apply(seq, record);
            }
        }
        Ok(())
    }
}

/// The stream's last sequence now.
pub async fn last_stream_seq(js: &jetstream::Context, stream: &str) -> Result<u64, ClusterError> {
    let stream = js.get_stream(stream).await.map_err(nats_error)?;
    let info = stream.get_info().await.map_err(nats_error)?;
    Ok(info.state.last_sequence)
}

/// Reads every message after `from.stream_seq` up to the stream's last sequence as it is when
/// this starts (or `until`, when given).
pub async fn read_to(
    js: &jetstream::Context,
    stream_name: &str,
    mut from: CatchUp,
    until: Option<u64>,
) -> Result<CatchUp, ClusterError> {
    let last = match until {
        Some(until) => until,
        None => last_stream_seq(js, stream_name).await?,
    };
    if last <= from.stream_seq {
        return Ok(from);
    }
    let stream = js.get_stream(stream_name).await.map_err(nats_error)?;
    let reader = stream
        .create_consumer(consumer::pull::OrderedConfig {
            deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                start_sequence: from.stream_seq + 1,
            },
            ..Default::default()
        })
        .await
        .map_err(nats_error)?;
    let mut messages = reader.messages().await.map_err(nats_error)?;
    while from.stream_seq < last {
        let message = tokio::time::timeout(Duration::from_secs(10), messages.next())
            .await
            .map_err(|_| nats_error("the stream stopped delivering during catch-up"))?
            .ok_or_else(|| nats_error("the stream ended during catch-up"))?
            .map_err(nats_error)?;
        let stream_seq = message.info().map_err(nats_error)?.stream_sequence;
        let epoch = message
            .headers
            .as_ref()
            .and_then(|h| h.get(EPOCH_HEADER))
            .and_then(|v| v.as_str().parse::<u64>().ok())
            .unwrap_or(0);
        from.apply_message(stream_seq, epoch, &message.payload)?;
    }
    Ok(from)
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
}
