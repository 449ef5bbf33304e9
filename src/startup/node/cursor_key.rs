//! The key that signs vote history cursors in cluster mode: one for every node, kept in the
//! bucket `<prefix>_meta` (`cluster::meta`), so that a cursor from one node is valid on another.

use super::patiently;
use crate::cluster::{meta, ClusterError, Nats};
use crate::config::ClusterSettings;

/// The cluster's key; the first node to ask makes it.
pub(super) async fn shared(
    nats: &Nats,
    cluster: &ClusterSettings,
) -> Result<[u8; 32], ClusterError> {
    patiently("the history cursor key", || meta::shared_key(nats, cluster)).await
}
