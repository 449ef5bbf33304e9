//! Snapshots in cluster mode. Every node with a data directory writes its own, as a single node
//! does, with the stream mark beside each (`persist::StreamMark`): the last stream message whose
//! records the snapshot holds, and the writer epoch by then. The writer also uploads each of its
//! snapshots to the Object Store bucket `<prefix>_snapshots`, keeps the newest two there, and
//! purges the stream below the older one's mark, so the stream does not grow without bound.
//!
//! A node starts from the newest base it can continue from the stream: its own newest snapshot
//! if the stream still holds the message after its mark, else the newest uploaded one, else the
//! empty state if nothing was ever purged.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_nats::jetstream::object_store::{self, ObjectMetadata, ObjectStore};
use async_nats::jetstream::stream::StorageType;
use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use tokio::io::AsyncReadExt;

use super::catchup::CatchUp;
use super::view::{ClusterView, NodeRole};
use super::{nats_error, ClusterError, ClusterSettings, Nats};
use crate::persist::snapshot::{self, Written};
use crate::persist::state::{Replayer, SavedState};
use crate::persist::{Replication, StreamMark};

/// Uploaded snapshots kept; the stream is kept from the older one's mark on.
pub const KEEP_UPLOADED: usize = 2;

/// The object name of the uploaded snapshot of journal record `seq`.
fn object_name(seq: u64) -> String {
    format!("snapshot-{seq:020}")
}

/// The snapshot bucket, created when there is none.
pub async fn bucket(nats: &Nats, cluster: &ClusterSettings) -> Result<ObjectStore, ClusterError> {
    let (js, name) = (nats.js.clone(), cluster.snapshot_bucket());
    nats.runtime
        .run(async move {
            match js.get_object_store(&name).await {
                Ok(store) => Ok(store),
                Err(_) => js
                    .create_object_store(object_store::Config {
                        bucket: name,
                        storage: StorageType::File,
                        num_replicas: 3,
                        ..Default::default()
                    })
                    .await
                    .map_err(nats_error),
            }
        })
        .await
}

/// The node's part in each snapshot it writes.
pub struct ClusterSnapshots {
    pub nats: Nats,
    pub cluster: ClusterSettings,
    pub view: Arc<ClusterView>,
    pub store: ObjectStore,
}

impl Replication for ClusterSnapshots {
    fn mark(&self) -> StreamMark {
        self.view.mark()
    }

    fn written(&self, written: Written, seq: u64, mark: StreamMark) -> BoxFuture<'static, ()> {
        if self.view.role() != NodeRole::Writer {
            return Box::pin(std::future::ready(()));
        }
        let (nats, cluster, store) = (self.nats.clone(), self.cluster.clone(), self.store.clone());
        Box::pin(async move {
            let shared = nats
                .runtime
                .run(share(nats.js.clone(), cluster, store, written, seq, mark))
                .await;
            match shared {
                Ok(purged_below) => {
                    tracing::info!(
                        seq,
                        purged_below,
                        "snapshot uploaded; stream purged below it"
                    )
                }
                Err(error) => tracing::warn!(%error, seq, "the snapshot was not uploaded"),
            }
        })
    }
}

/// Uploads the snapshot, keeps the newest [`KEEP_UPLOADED`], and purges the stream below the
/// oldest kept one's mark. Returns the first stream message kept.
async fn share(
    js: async_nats::jetstream::Context,
    cluster: ClusterSettings,
    store: ObjectStore,
    written: Written,
    seq: u64,
    mark: StreamMark,
) -> Result<u64, ClusterError> {
    let mut file = tokio::fs::File::open(&written.path)
        .await
        .map_err(nats_error)?;
    let metadata = HashMap::from([
        ("seq".to_owned(), seq.to_string()),
        ("stream_seq".to_owned(), mark.stream_seq.to_string()),
        ("epoch".to_owned(), mark.epoch.to_string()),
    ]);
    store
        .put(
            ObjectMetadata {
                name: object_name(seq),
                metadata,
                ..Default::default()
            },
            &mut file,
        )
        .await
        .map_err(nats_error)?;
    let mut uploaded = uploaded(&store).await?;
    uploaded.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
    for (old, _) in uploaded.iter().skip(KEEP_UPLOADED) {
        store.delete(object_name(*old)).await.map_err(nats_error)?;
    }
    let Some((_, oldest)) = uploaded.iter().take(KEEP_UPLOADED).next_back() else {
        return Ok(0);
    };
    let keep_from = oldest.stream_seq + 1;
    let stream = js
        .get_stream(cluster.stream_name())
        .await
        .map_err(nats_error)?;
    stream
        .purge()
        .sequence(keep_from)
        .await
        .map_err(nats_error)?;
    Ok(keep_from)
}

/// Every uploaded snapshot: its record number and mark.
async fn uploaded(store: &ObjectStore) -> Result<Vec<(u64, StreamMark)>, ClusterError> {
    let mut list = store.list().await.map_err(nats_error)?;
    let mut found = Vec::new();
    while let Some(info) = list.next().await {
        let info = info.map_err(nats_error)?;
        let number = |key: &str| info.metadata.get(key).and_then(|v| v.parse::<u64>().ok());
        if let (Some(seq), Some(stream_seq), Some(epoch)) =
            (number("seq"), number("stream_seq"), number("epoch"))
        {
            found.push((seq, StreamMark { stream_seq, epoch }));
        }
    }
    Ok(found)
}

/// What a node starts catching up from: see the module's documentation.
pub async fn base(
    nats: &Nats,
    cluster: &ClusterSettings,
    store: &ObjectStore,
    dir: Option<&Path>,
) -> Result<CatchUp, ClusterError> {
    let (js, name) = (nats.js.clone(), cluster.stream_name());
    let (first, last) = nats
        .runtime
        .run(async move {
            let mut stream = js.get_stream(name).await.map_err(nats_error)?;
            let info = stream.info().await.map_err(nats_error)?;
            Ok::<_, ClusterError>((info.state.first_sequence, info.state.last_sequence))
        })
        .await?;
    let continues =
        move |mark: &StreamMark| mark.stream_seq + 1 >= first && mark.stream_seq <= last;
    if let Some(dir) = dir {
        if let Some((mark, state)) = newest_local(dir) {
            if continues(&mark) {
                tracing::info!(
                    seq = state.seq,
                    stream_seq = mark.stream_seq,
                    "starting from this node's snapshot"
                );
                return Ok(from_state(state, mark));
            }
            tracing::warn!(
                stream_seq = mark.stream_seq,
                first,
                last,
                "this node's snapshot cannot be continued from the stream; trying the uploaded ones"
            );
        }
    }
    let store = store.clone();
    let (found, damaged) = nats
        .runtime
        .run(async move { newest_uploaded(&store, continues).await })
        .await?;
    if let Some((mark, state)) = found {
        tracing::info!(
            seq = state.seq,
            stream_seq = mark.stream_seq,
            "starting from the uploaded snapshot"
        );
        return Ok(from_state(state, mark));
    }
    if first <= 1 {
        return Ok(CatchUp::default());
    }
    if !damaged.is_empty() {
        // The stream was purged below these: without one of them, acknowledged records are gone.
        return Err(ClusterError::Refused(format!(
            "no uploaded snapshot that the stream continues from can be read ({}) and the stream \
             starts at message {first}; restore the snapshot bucket {} from a backup",
            damaged.join("; "),
            cluster.snapshot_bucket()
        )));
    }
    Err(ClusterError::Refused(format!(
        "the stream starts at message {first} and no snapshot continues to it; restore the \
         snapshot bucket {} or seed a new cluster with `botlist cluster init`",
        cluster.snapshot_bucket()
    )))
}

/// The newest uploaded snapshot that the stream continues from and that reads; a damaged one is
/// named and the next older tried (the stream is kept from the older one's mark on). Also the
/// damaged ones, for a refusal when none reads.
async fn newest_uploaded(
    store: &ObjectStore,
    continues: impl Fn(&StreamMark) -> bool,
) -> Result<(Option<(StreamMark, SavedState)>, Vec<String>), ClusterError> {
    let mut found = uploaded(store).await?;
    found.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
    let mut damaged = Vec::new();
    for (seq, mark) in found.into_iter().filter(|(_, mark)| continues(mark)) {
        let name = object_name(seq);
        let mut bytes = Vec::new();
        let read = match store.get(&name).await {
            Ok(mut object) => object
                .read_to_end(&mut bytes)
                .await
                .map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match read.and_then(|_| snapshot::decode(&bytes).map_err(|e| e.to_string())) {
            Ok(state) => return Ok((Some((mark, state)), damaged)),
            Err(why) => {
                tracing::warn!(
                    "the uploaded snapshot {name} cannot be used: {why}; trying an older one"
                );
                damaged.push(format!("{name}: {why}"));
            }
        }
    }
    Ok((None, damaged))
}

/// This node's newest snapshot that has a mark and reads. A damaged one is set aside as
/// `*.corrupt` (never deleted by the retention of later snapshots) and an older one tried.
fn newest_local(dir: &Path) -> Option<(StreamMark, SavedState)> {
    for (seq, path) in snapshot::list(dir).ok()? {
        let Some(mark) = snapshot::read_mark(dir, seq) else {
            continue;
        };
        match snapshot::read(&path) {
            Ok(state) => return Some((mark, state)),
            Err(error) => {
                tracing::warn!("{} {error}; trying an older one", path.display());
                set_aside(&path);
            }
        }
    }
    None
}

fn set_aside(path: &Path) {
    match crate::persist::files::set_aside(path) {
        Ok(aside) => tracing::warn!("moved {} aside as {}", path.display(), aside.display()),
        Err(error) => tracing::warn!(%error, "could not move {} aside", path.display()),
    }
}

fn from_state(state: SavedState, mark: StreamMark) -> CatchUp {
    CatchUp {
        replayer: Replayer::new(state),
        stream_seq: mark.stream_seq,
        epoch: mark.epoch,
        void_messages: 0,
    }
}
