//! The key that signs vote history cursors in cluster mode: one for every node, kept in the
//! bucket `<prefix>_meta`, so that a cursor from one node is valid on another.

use async_nats::jetstream::kv;
use bytes::Bytes;

use super::patiently;
use crate::cluster::{nats_error, ClusterError, Nats};
use crate::config::ClusterSettings;

/// The cluster's key; the first node to ask makes it.
pub(super) async fn shared(
    nats: &Nats,
    cluster: &ClusterSettings,
) -> Result<[u8; 32], ClusterError> {
    patiently("the history cursor key", || read(nats, cluster)).await
}

async fn read(nats: &Nats, cluster: &ClusterSettings) -> Result<[u8; 32], ClusterError> {
    let js = nats.js.clone();
    let bucket = format!("{}_meta", cluster.prefix);
    nats.runtime
        .run(async move {
            let store = match js.get_key_value(bucket.clone()).await {
                Ok(store) => store,
                Err(_) => js
                    .create_key_value(kv::Config {
                        bucket,
                        history: 1,
                        storage: async_nats::jetstream::stream::StorageType::File,
                        num_replicas: 3,
                        ..Default::default()
                    })
                    .await
                    .map_err(nats_error)?,
            };
            let mut fresh = [0u8; 32];
            getrandom::fill(&mut fresh).map_err(nats_error)?;
            // The first node's key wins; the others read it.
            let _ = store
                .create("history-cursor-key", Bytes::copy_from_slice(&fresh))
                .await;
            let value = store
                .get("history-cursor-key")
                .await
                .map_err(nats_error)?
                .ok_or_else(|| nats_error("the history cursor key is missing"))?;
            <[u8; 32]>::try_from(value.as_ref())
                .map_err(|_| nats_error("the history cursor key is not 32 bytes"))
        })
        .await
}
