//! A cluster's backup without a node (`botlist backup --replicate`): the newest uploaded
//! snapshot the stream continues from, and the stream read from its mark to the end as it was
//! when the backup began, as one state. It is what a node starting on an empty data directory
//! would hold, so it uses that node's code (`snapshots::base`, `catchup::read_to`); nothing is
//! written to NATS but the short-lived consumer that reads the stream. The cluster's history
//! cursor key (`meta`) goes with it, so cursors handed out before stay valid after a restore.

use super::catchup;
use super::meta;
use super::snapshots;
use super::{ClusterError, Nats};
use crate::config::ClusterSettings;
use crate::persist::state::SavedState;
use crate::persist::StreamMark;

/// What a cluster backup holds.
pub struct ClusterState {
    pub state: SavedState,
    /// Where in the stream the state is.
    pub mark: StreamMark,
    /// The key that signs vote history cursors; none when no node ever started.
    pub cursor_key: Option<[u8; 32]>,
}

/// The cluster's state at the stream's last message when this was called, where in the
/// stream that is, and its history cursor key.
pub async fn state_at_end(cluster: &ClusterSettings) -> Result<ClusterState, ClusterError> {
    let nats = Nats::connect(cluster).await?;
    let cursor_key = meta::existing_key(&nats, cluster).await?;
    let store = snapshots::bucket(&nats, cluster).await?;
    let base = snapshots::base(&nats, cluster, &store, None).await?;
    let (js, name) = (nats.js.clone(), cluster.stream_name());
    let (read, result) = nats
        .runtime
        .run(async move { catchup::read_to(&js, &name, base, None).await })
        .await;
    result?;
    let mark = StreamMark {
        stream_seq: read.stream_seq,
        epoch: read.epoch,
    };
    Ok(ClusterState {
        state: read.replayer.finish(),
        mark,
        cursor_key,
    })
}
