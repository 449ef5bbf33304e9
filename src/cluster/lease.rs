//! The writer's lease: the key `writer` in the KV bucket `<prefix>_lease`, whose messages expire
//! after `--lease-ttl`. It gives liveness only (who tries to write); safety comes from the
//! stream's expected-last-sequence check.
//!
//! The epoch is the revision `create` returned: unique and increasing, never "last + 1".
//! The holder renews every TTL/5 and fences itself once no renewal has succeeded for two thirds
//! of the TTL, counted from when the last successful renewal was sent, so it stops writing
//! before any other node can take the lease.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{nats_error, ClusterError, ClusterSettings};

pub const KEY: &str = "writer";

/// Who holds the lease: what `GET /cluster` shows and where followers send writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub node_id: String,
    pub url: String,
}

pub async fn ensure_bucket(
    js: &jetstream::Context,
    settings: &ClusterSettings,
) -> Result<kv::Store, ClusterError> {
    if let Ok(store) = js.get_key_value(settings.lease_bucket()).await {
        return Ok(store);
    }
    js.create_key_value(kv::Config {
        bucket: settings.lease_bucket(),
        history: 1,
        max_age: settings.lease_ttl,
        storage: jetstream::stream::StorageType::File,
        num_replicas: 3,
        ..Default::default()
    })
    .await
    .map_err(nats_error)
}

/// The moment after which the holder must not write: shared by the renewal loop and the sink.
#[derive(Debug)]
pub struct FenceClock {
    base: Instant,
    /// Milliseconds after `base`; 0 while the lease is not held.
    until_ms: AtomicU64,
}

impl Default for FenceClock {
    fn default() -> Self {
        Self {
            base: Instant::now(),
            until_ms: AtomicU64::new(0),
        }
    }
}

impl FenceClock {
    /// A renewal sent at `sent` succeeded: writing is allowed until `sent + 2/3 TTL`.
    pub fn renewed(&self, sent: Instant, ttl: Duration) {
        let until = sent + ttl * 2 / 3;
        let ms = until.saturating_duration_since(self.base).as_millis() as u64;
        self.until_ms.fetch_max(ms.max(1), Ordering::AcqRel);
    }

    /// Whether the holder may still write.
    pub fn valid(&self) -> bool {
        let until = self.until_ms.load(Ordering::Acquire);
        until != 0 && (self.base.elapsed().as_millis() as u64) < until
    }

    /// Never valid again.
    pub fn revoke(&self) {
        self.until_ms.store(0, Ordering::Release);
    }
}

/// A held lease.
pub struct Lease {
    store: kv::Store,
    value: Bytes,
    revision: u64,
    ttl: Duration,
    pub epoch: u64,
    pub clock: Arc<FenceClock>,
}

/// Why a renewal failed.
pub enum Lost {
    /// Someone else's revision is there: another node took the lease.
    TakenOver(String),
    /// No renewal succeeded for two thirds of the TTL.
    Expired(String),
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TakenOver(why) => write!(f, "another node took the lease ({why})"),
            Self::Expired(why) => write!(f, "the lease could not be renewed in time ({why})"),
        }
    }
}

impl Lease {
    /// One attempt to take the free lease.
    pub async fn try_take(store: &kv::Store, me: &Holder, ttl: Duration) -> Option<Lease> {
        let value = Bytes::from(serde_json::to_vec(me).ok()?);
        let sent = Instant::now();
        match store.create(KEY, value.clone()).await {
            Ok(revision) => {
                let clock = Arc::new(FenceClock::default());
                clock.renewed(sent, ttl);
                Some(Lease {
                    store: store.clone(),
                    value,
                    revision,
                    ttl,
                    epoch: revision,
                    clock,
                })
            }
            Err(_) => None,
        }
    }

    /// Renews once; on success the fence clock moves on.
    pub async fn renew(&mut self) -> Result<(), Lost> {
        let sent = Instant::now();
        let attempt = tokio::time::timeout(
            self.ttl / 3,
            self.store.update(KEY, self.value.clone(), self.revision),
        )
        .await;
        match attempt {
            Ok(Ok(revision)) => {
                self.revision = revision;
                self.clock.renewed(sent, self.ttl);
                Ok(())
            }
            Ok(Err(error)) if error.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                self.clock.revoke();
                Err(Lost::TakenOver(error.to_string()))
            }
            Ok(Err(error)) => self.expired_unless_valid(error.to_string()),
            Err(_) => self.expired_unless_valid("renewal timed out".into()),
        }
    }

    fn expired_unless_valid(&self, why: String) -> Result<(), Lost> {
        if self.clock.valid() {
            tracing::warn!(%why, "lease renewal failed; retrying");
            Ok(())
        } else {
            Err(Lost::Expired(why))
        }
    }

    /// Hands the lease back (SIGTERM, step-down) so another node takes it at once.
    pub async fn release(self) {
        self.clock.revoke();
        let _ = self
            .store
            .delete_expect_revision(KEY, Some(self.revision))
            .await;
    }
}

/// The current holder, if any.
pub async fn holder(store: &kv::Store) -> Option<Holder> {
    match store.get(KEY).await {
        Ok(Some(value)) => serde_json::from_slice(&value).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_clock_allows_two_thirds_of_the_ttl_from_the_send_time() {
        let clock = FenceClock::default();
        assert!(!clock.valid(), "not held yet");
        let ttl = Duration::from_millis(300);
        clock.renewed(Instant::now(), ttl);
        assert!(clock.valid());
        // A renewal sent long ago does not move the fence back, nor forward past its own.
        clock.renewed(Instant::now() - ttl, ttl);
        assert!(clock.valid());
        clock.revoke();
        assert!(!clock.valid());
    }
}
