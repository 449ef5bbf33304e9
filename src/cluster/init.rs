//! `botlist cluster init --replicate URL --from DIR`: seeds a new cluster from a single-node
//! data directory. The directory is recovered as a start would recover it (newest good
//! snapshot, then the journal), and its state is written into the empty stream as records the
//! followers already know: every profile as `ProfileSaved`, then every bot, whole, as
//! `BotListed`, numbered from 1. The cluster's journal numbering therefore starts over; the
//! data directory itself is left as it was. The directory's history cursor key, when it has
//! one, becomes the cluster's (`meta::put_back_key`), so cursors handed out by the server (or
//! the cluster) the directory was restored from stay valid.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::lease::FenceClock;
use super::sink::{JetStreamSink, NatsPublisher, StreamPosition};
use super::{catchup, meta, ClusterError, ClusterSettings, Nats};
use crate::persist::backup::CURSOR_KEY_FILE;
use crate::persist::journal::{frame, Sink, MAX_RECORD_BYTES};
use crate::persist::recovery;
use crate::persist::state::{Record, StoredBot};

/// What was written.
#[derive(Debug)]
pub struct Seeded {
    pub profiles: usize,
    pub bots: usize,
    pub records: u64,
    /// Whether the directory's history cursor key became the cluster's.
    pub cursor_key: bool,
}

pub async fn seed(
    settings: ClusterSettings,
    from: std::path::PathBuf,
) -> Result<Seeded, ClusterError> {
    let recovered = recovery::recover(&from, false).map_err(|refused| match refused {
        recovery::StartRefused::Damaged(why) => ClusterError::Refused(why.0),
        recovery::StartRefused::Newer(why) => ClusterError::Newer(why),
    })?;
    for warning in &recovered.warnings {
        tracing::warn!("{warning}");
    }
    let nats = Nats::connect(&settings).await?;
    let (js, name) = (nats.js.clone(), settings.stream_name());
    let last = nats
        .runtime
        .run(async move { catchup::last_stream_seq(&js, &name).await })
        .await?;
    if last != 0 {
        return Err(ClusterError::Refused(format!(
            "the stream {} already holds {last} messages: a cluster is seeded only once, into an empty stream",
            settings.stream_name()
        )));
    }
    // Before the stream gets a record: a cluster whose nodes already made another key is
    // refused with nothing written.
    let cursor_key = match directory_key(&from) {
        Some(key) => {
            meta::put_back_key(&nats, &settings, key).await?;
            true
        }
        None => false,
    };
    let state = recovered.state;
    let (profiles, bots) = (state.profiles.len(), state.bots.len());
    let mut frames = Vec::with_capacity(profiles + bots);
    let records =
        state
            .profiles
            .into_iter()
            .map(Record::ProfileSaved)
            .chain(
                state
                    .bots
                    .into_iter()
                    .map(|StoredBot { state, token }| Record::BotListed {
                        state: Box::new(state),
                        token,
                    }),
            );
    for (index, record) in records.enumerate() {
        let seq = index as u64 + 1;
        let payload = rmp_serde::to_vec(&record)
            .map_err(|e| ClusterError::Refused(format!("record {seq} does not encode: {e}")))?;
        if payload.len() > MAX_RECORD_BYTES {
            return Err(ClusterError::Refused(format!(
                "record {seq} is {} bytes, over the {MAX_RECORD_BYTES} a record may have",
                payload.len()
            )));
        }
        frames.push(frame(seq, &payload));
    }
    let written = frames.len() as u64;
    // Epoch 0: every writer's epoch (a KV revision) is greater.
    let fence = Arc::new(FenceClock::default());
    fence.renewed(Instant::now(), Duration::from_secs(24 * 3600));
    let publisher = NatsPublisher {
        runtime: nats.runtime.clone(),
        js: nats.js.clone(),
        subject: settings.subject(),
    };
    let publish = std::thread::spawn(move || {
        let mut sink =
            JetStreamSink::new(publisher, 0, 1, fence, Arc::new(StreamPosition::default()));
        let slices: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        sink.commit(&slices, 1, false, true)
    });
    publish
        .join()
        .map_err(|_| ClusterError::Nats("the seeding thread panicked".into()))?
        .map_err(|e| ClusterError::Nats(e.to_string()))?;
    Ok(Seeded {
        profiles,
        bots,
        records: written,
        cursor_key,
    })
}

/// The directory's history cursor key; none when it has no file of 32 bytes (a start would
/// make a new one too).
fn directory_key(dir: &std::path::Path) -> Option<[u8; 32]> {
    let path = dir.join(CURSOR_KEY_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let key = <[u8; 32]>::try_from(bytes.as_slice()).ok();
            if key.is_none() {
                tracing::warn!(
                    "{} is not a 32-byte key; the cluster makes its own, and history cursors given before are refused",
                    path.display()
                );
            }
            key
        }
        Err(_) => None,
    }
}
