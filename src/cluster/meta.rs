//! The cluster's `<prefix>_meta` bucket: the key that signs vote history cursors, one for every
//! node, so that a cursor from one node is valid on another. A node reads it at start (the
//! first one makes it, `shared_key`); `botlist backup --replicate` copies it into the backup
//! (`existing_key`, which writes nothing) and `botlist cluster init` puts a backup's key back
//! into a new cluster (`put_back_key`), so cursors handed out before a backup stay valid after
//! a restore from it.

use async_nats::jetstream::{self, kv};
use bytes::Bytes;

use super::{nats_error, ClusterError, Nats};
use crate::config::ClusterSettings;

/// The key's name in the bucket.
const KEY: &str = "history-cursor-key";

fn bucket_name(cluster: &ClusterSettings) -> String {
    format!("{}_meta", cluster.prefix)
}

/// The cluster's key; the first node to ask makes it.
pub async fn shared_key(nats: &Nats, cluster: &ClusterSettings) -> Result<[u8; 32], ClusterError> {
    let js = nats.js.clone();
    let bucket = bucket_name(cluster);
    nats.runtime
        .run(async move {
            let store = open_or_create(&js, bucket).await?;
            let mut fresh = [0u8; 32];
            getrandom::fill(&mut fresh).map_err(nats_error)?;
            // The first node's key wins; the others read it.
            let _ = store.create(KEY, Bytes::copy_from_slice(&fresh)).await;
            read(&store)
                .await?
                .ok_or_else(|| nats_error("the history cursor key is missing"))
        })
        .await
}

/// The cluster's key if it has one (no node has started when it has none); creates nothing.
pub async fn existing_key(
    nats: &Nats,
    cluster: &ClusterSettings,
) -> Result<Option<[u8; 32]>, ClusterError> {
    let js = nats.js.clone();
    let bucket = bucket_name(cluster);
    nats.runtime
        .run(async move {
            // A missing bucket is told apart from a failed request by its stream's error code.
            match js.get_stream(format!("KV_{bucket}")).await {
                Ok(_) => {}
                Err(error) if stream_not_found(&error) => return Ok(None),
                Err(error) => return Err(nats_error(error)),
            }
            let store = js.get_key_value(bucket).await.map_err(nats_error)?;
            read(&store).await
        })
        .await
}

/// Puts `key` into the bucket of a cluster that has none. A cluster that already has this key
/// is left as it is (a seeding run again); one with another key is refused: its nodes started
/// before the seeding and sign with theirs, which is never replaced under them.
pub async fn put_back_key(
    nats: &Nats,
    cluster: &ClusterSettings,
    key: [u8; 32],
) -> Result<(), ClusterError> {
    let js = nats.js.clone();
    let bucket = bucket_name(cluster);
    nats.runtime
        .run(async move {
            let store = open_or_create(&js, bucket.clone()).await?;
            let _ = store.create(KEY, Bytes::copy_from_slice(&key)).await;
            match read(&store).await? {
                Some(held) if held == key => Ok(()),
                Some(_) => Err(ClusterError::Refused(format!(
                    "the bucket {bucket} already holds another history cursor key (nodes of this \
                     cluster started before it was seeded): seed a cluster before starting its \
                     nodes, or delete history-cursor.key from the directory to seed it without \
                     the key (cursors handed out before are then refused)"
                ))),
                None => Err(nats_error("the history cursor key is missing")),
            }
        })
        .await
}

async fn open_or_create(
    js: &jetstream::Context,
    bucket: String,
) -> Result<kv::Store, ClusterError> {
    match js.get_key_value(bucket.clone()).await {
        Ok(store) => Ok(store),
        Err(_) => js
            .create_key_value(kv::Config {
                bucket,
                history: 1,
                storage: jetstream::stream::StorageType::File,
                num_replicas: 3,
                ..Default::default()
            })
            .await
            .map_err(nats_error),
    }
}

async fn read(store: &kv::Store) -> Result<Option<[u8; 32]>, ClusterError> {
    let Some(value) = store.get(KEY).await.map_err(nats_error)? else {
        return Ok(None);
    };
    <[u8; 32]>::try_from(value.as_ref())
        .map(Some)
        .map_err(|_| nats_error("the history cursor key is not 32 bytes"))
}

fn stream_not_found(error: &jetstream::context::GetStreamError) -> bool {
    matches!(
        error.kind(),
        jetstream::context::GetStreamErrorKind::JetStream(e)
            if e.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND
    )
}
