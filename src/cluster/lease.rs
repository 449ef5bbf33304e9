//! The writer's lease: the key `writer` in the KV bucket `<prefix>_lease`, whose messages expire
//! after `--lease-ttl`. It gives liveness only (who tries to write); safety comes from the
//! stream's expected-last-sequence check.
//!
//! The epoch is the revision `create` returned: unique and increasing, never "last + 1".
//! The holder renews every TTL/5 (at once again, every 250 ms, after a failed attempt) and
//! *pauses* once no renewal has succeeded for two thirds of the TTL, counted from when the last
//! successful renewal was sent: it acknowledges nothing until a renewal succeeds again. It
//! gives the role up (exit 5) only when the lease really may have passed to another node:
//! another holder is in the key, or the key expired and someone else wrote since. A NATS
//! election (the bucket's leader or the meta leader dying) is ridden out: nobody can take the
//! lease while the bucket has no leader, and the writer renews through the new one.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// The lease is lost for good: never valid again.
    revoked: AtomicBool,
    /// When the last renewal succeeded (milliseconds after `base`), for `GET /cluster`.
    renewed_ms: AtomicU64,
}

impl Default for FenceClock {
    fn default() -> Self {
        Self {
            base: Instant::now(),
            until_ms: AtomicU64::new(0),
            revoked: AtomicBool::new(false),
            renewed_ms: AtomicU64::new(0),
        }
    }
}

impl FenceClock {
    /// A renewal sent at `sent` succeeded: writing is allowed until `sent + 2/3 TTL`.
    pub fn renewed(&self, sent: Instant, ttl: Duration) {
        let until = sent + ttl * 2 / 3;
        let ms = until.saturating_duration_since(self.base).as_millis() as u64;
        self.until_ms.fetch_max(ms.max(1), Ordering::AcqRel);
        let now = self.base.elapsed().as_millis() as u64;
        self.renewed_ms.fetch_max(now.max(1), Ordering::AcqRel);
    }

    /// Whether the holder may still write.
    pub fn valid(&self) -> bool {
        let until = self.until_ms.load(Ordering::Acquire);
        until != 0
            && !self.revoked.load(Ordering::Acquire)
            && (self.base.elapsed().as_millis() as u64) < until
    }

    /// Whether the lease is lost for good (as opposed to lapsed, waiting for a renewal).
    pub fn revoked(&self) -> bool {
        self.revoked.load(Ordering::Acquire)
    }

    /// Never valid again.
    pub fn revoke(&self) {
        self.revoked.store(true, Ordering::Release);
    }

    /// How long ago the last renewal succeeded; `None` before the first.
    pub fn since_renewed(&self) -> Option<Duration> {
        let at = self.renewed_ms.load(Ordering::Acquire);
        (at != 0).then(|| {
            Duration::from_millis((self.base.elapsed().as_millis() as u64).saturating_sub(at))
        })
    }
}

/// What the key holds: the holder, and a claim drawn when this process took the lease. A
/// renewal whose answer was lost may still have been stored; the claim is how the holder
/// knows the revision it then finds for its own, where a restarted process of the same node
/// (same id, same URL) would not pass for it. Readers of the key see a [`Holder`].
#[derive(Serialize)]
struct Claim<'a> {
    #[serde(flatten)]
    holder: &'a Holder,
    claim: String,
}

impl<'a> Claim<'a> {
    fn new(holder: &'a Holder) -> Self {
        let mut random = [0u8; 8];
        let _ = getrandom::fill(&mut random);
        Self {
            holder,
            claim: random.iter().map(|b| format!("{b:02x}")).collect(),
        }
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

/// What one renewal attempt found.
pub enum Renewal {
    Renewed,
    /// NATS did not answer (an election, a lost connection): try again soon.
    Failed(String),
    /// The key is gone (it expired while the bucket could not be reached): nobody holds it.
    Gone,
    /// Someone else's revision is there: another node took the lease.
    TakenOver(String),
}

/// One renewal attempt waits at most this long (less with a short TTL), so that an attempt
/// sent to a server that died is followed by another through the one the client reconnects to.
const ATTEMPT: Duration = Duration::from_secs(1);

impl Lease {
    /// One attempt to take the free lease.
    pub async fn try_take(store: &kv::Store, me: &Holder, ttl: Duration) -> Option<Lease> {
        let value = Bytes::from(serde_json::to_vec(&Claim::new(me)).ok()?);
        let sent = Instant::now();
        let revision = store.create(KEY, value.clone()).await.ok()?;
        Some(Self::held(store, value, revision, sent, ttl))
    }

    /// One attempt to take the lease from an earlier process of this node, still named in the
    /// key at `revision` (the caller has found that process gone). The write is conditional
    /// on `revision`: any renewal or takeover since makes it fail.
    pub async fn try_take_back(
        store: &kv::Store,
        me: &Holder,
        ttl: Duration,
        revision: u64,
    ) -> Option<Lease> {
        let value = Bytes::from(serde_json::to_vec(&Claim::new(me)).ok()?);
        let sent = Instant::now();
        let revision = store.update(KEY, value.clone(), revision).await.ok()?;
        Some(Self::held(store, value, revision, sent, ttl))
    }

    /// The lease just written at `revision`, its first renewal counted from `sent`; the epoch
    /// is that revision.
    fn held(store: &kv::Store, value: Bytes, revision: u64, sent: Instant, ttl: Duration) -> Lease {
        let clock = Arc::new(FenceClock::default());
        clock.renewed(sent, ttl);
        Lease {
            store: store.clone(),
            value,
            revision,
            ttl,
            epoch: revision,
            clock,
        }
    }

    /// Renews once; on success the fence clock moves on.
    pub async fn renew(&mut self) -> Renewal {
        let sent = Instant::now();
        let attempt = tokio::time::timeout(
            ATTEMPT.min(self.ttl / 3),
            self.store.update(KEY, self.value.clone(), self.revision),
        )
        .await;
        match attempt {
            Ok(Ok(revision)) => {
                self.revision = revision;
                self.clock.renewed(sent, self.ttl);
                Renewal::Renewed
            }
            Ok(Err(error)) if error.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                // Expired, or another holder's: which one decides whether the role goes on.
                match tokio::time::timeout(ATTEMPT, self.store.entry(KEY)).await {
                    Ok(Ok(None)) => Renewal::Gone,
                    Ok(Ok(Some(entry))) if entry.operation != kv::Operation::Put => Renewal::Gone,
                    Ok(Ok(Some(entry))) if entry.value == self.value => {
                        // This holder's own bytes, claim and all: an earlier renewal timed
                        // out here but was stored. Renew from its revision; the fence clock
                        // moves only with a renewal whose answer came back.
                        self.revision = entry.revision;
                        Renewal::Failed(format!(
                            "a renewal that timed out was stored (revision {}); renewing from it",
                            entry.revision
                        ))
                    }
                    Ok(Ok(Some(entry))) => Renewal::TakenOver(format!(
                        "revision {} is {}",
                        entry.revision,
                        String::from_utf8_lossy(&entry.value)
                    )),
                    Ok(Err(error)) => Renewal::Failed(error.to_string()),
                    Err(_) => Renewal::Failed("reading the lease timed out".into()),
                }
            }
            Ok(Err(error)) => Renewal::Failed(error.to_string()),
            Err(_) => Renewal::Failed("renewal timed out".into()),
        }
    }

    /// Takes the lease again after it expired unseen (the bucket was unreachable for longer
    /// than the TTL). The caller has checked that nobody wrote to the stream since; the epoch
    /// stays this writer's, so its messages keep their numbering.
    pub async fn retake(&mut self) -> Result<(), String> {
        let sent = Instant::now();
        match tokio::time::timeout(ATTEMPT, self.store.create(KEY, self.value.clone())).await {
            Ok(Ok(revision)) => {
                self.revision = revision;
                self.clock.renewed(sent, self.ttl);
                Ok(())
            }
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("taking the lease again timed out".into()),
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

/// The current holder, if any; an error when the bucket did not answer.
pub async fn current_holder(store: &kv::Store) -> Result<Option<Holder>, ClusterError> {
    match store.get(KEY).await {
        Ok(Some(value)) => Ok(serde_json::from_slice(&value).ok()),
        Ok(None) => Ok(None),
        Err(error) => Err(nats_error(error)),
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
    fn a_revoked_clock_stays_revoked_and_a_lapsed_one_can_be_renewed() {
        let clock = FenceClock::default();
        let ttl = Duration::from_millis(3);
        clock.renewed(Instant::now(), ttl);
        // The fence clock is the process's monotonic clock, not the injected one: let 2 ms pass.
        std::thread::sleep(Duration::from_millis(10));
        assert!(!clock.valid() && !clock.revoked(), "lapsed");
        clock.renewed(Instant::now(), Duration::from_secs(60));
        assert!(clock.valid(), "renewed again");
        assert!(clock.since_renewed().is_some());
        clock.revoke();
        clock.renewed(Instant::now(), Duration::from_secs(60));
        assert!(!clock.valid() && clock.revoked());
    }

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
