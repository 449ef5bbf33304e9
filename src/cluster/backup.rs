//! A cluster's backup without a node (`botlist backup --replicate`): the newest uploaded
//! snapshot the stream continues from, and the stream read from its mark to the end as it was
//! when the backup began, as one state. It is what a node starting on an empty data directory
//! would hold, so it uses that node's code (`snapshots::base`, `catchup::read_to`); nothing is
//! written to NATS but the short-lived consumer that reads the stream.

use super::catchup;
use super::snapshots;
use super::{ClusterError, Nats};
use crate::config::ClusterSettings;
use crate::persist::state::SavedState;
use crate::persist::StreamMark;

/// The cluster's state at the stream's last message when this was called, and where in the
/// stream that is.
pub async fn state_at_end(
    cluster: &ClusterSettings,
) -> Result<(SavedState, StreamMark), ClusterError> {
    let nats = Nats::connect(cluster).await?;
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
    Ok((read.replayer.finish(), mark))
}
