//! A node's catch-up at start: the newest snapshot it can use (its own or the cluster's), then
//! the stream read to its end as plain state, before any actor runs.

use std::future::Future;
use std::path::Path;

use async_nats::jetstream::object_store::ObjectStore;

use super::{Node, POLL};
use crate::cluster::catchup::{self, CatchUp};
use crate::cluster::{lease, snapshots, ClusterError};

/// The state at the stream's end, read again after a failure (every `POLL`) until it is;
/// `None` when `stop` resolves first. A record the stream refuses to give is an error.
pub(super) async fn at_start(
    node: &Node,
    snapshot_store: &ObjectStore,
    dir: Option<&Path>,
    stop: &mut (impl Future<Output = ()> + Unpin),
) -> Result<Option<CatchUp>, ClusterError> {
    let Node {
        nats,
        cluster,
        store,
        view,
    } = node;
    let mut caught_up = snapshots::base(nats, cluster, snapshot_store, dir).await?;
    loop {
        let holder = {
            let store = store.clone();
            nats.runtime
                .run(async move { lease::holder(&store).await })
                .await
        };
        view.set_writer(holder);
        let from = std::mem::take(&mut caught_up);
        let (js, name) = (nats.js.clone(), cluster.stream_name());
        let (read, result) = nats
            .runtime
            .run(async move { catchup::read_to(&js, &name, from, None).await })
            .await;
        view.set_caught_up(read.applied_seq(), read.stream_seq, read.epoch);
        match result {
            Ok(()) => return Ok(Some(read)),
            Err(ClusterError::Refused(why)) => return Err(ClusterError::Refused(why)),
            Err(ClusterError::Newer(why)) => return Err(ClusterError::Newer(why)),
            Err(error) => {
                tracing::warn!(%error, "catching up with the stream failed; retrying");
                caught_up = read;
            }
        }
        tokio::select! {
            () = &mut *stop => return Ok(None),
            () = tokio::time::sleep(POLL) => {}
        }
    }
}
