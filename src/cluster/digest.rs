//! `GET {base}/admin/cluster/digest`: a SHA-256 over the whole state (every profile, then every
//! bot with its token, each as MessagePack, in id order, then the audit log's chain), equal on
//! two nodes exactly when they hold the same state (each bot's `last_seq`, which only says which
//! record it last took, is left out). Every node hashes its actors' state, read as a snapshot
//! reads it. The audit log is covered by the chain it keeps as entries are appended
//! ([`crate::domain::audit::AuditEntries::chain`]: every entry's id, time, actor, action, target, reason and changed
//! fields, in id order), so a log of millions of entries adds 32 bytes to hash, not a pass.

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::domain::audit::AuditLog;
use crate::domain::profile::Profile;
use crate::persist::state::StoredBot;
use crate::persist::{SnapshotFailed, StateSource};

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Digest {
    /// The last journal record the state holds
    pub applied_seq: u64,
    /// Lowercase hex SHA-256
    pub digest: String,
}

/// The hash of `profiles` and `bots`, each already in id order, and of the audit log whose
/// chain is `audit`
/// ([`crate::domain::audit::AuditEntries::chain`]).
pub fn digest<'a>(
    profiles: impl IntoIterator<Item = &'a Profile>,
    bots: impl IntoIterator<Item = &'a StoredBot>,
    audit: [u8; 32],
) -> String {
    let mut hasher = Sha256::new();
    let mut feed = |tag: u8, bytes: Vec<u8>| {
        hasher.update([tag]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    };
    for profile in profiles {
        feed(b'p', rmp_serde::to_vec(profile).unwrap_or_default());
    }
    for bot in bots {
        // `last_seq` is bookkeeping, not state: a bot listed live keeps 0 until it journals a
        // record of its own, while replay stamps it with its listing's number.
        let mut state = bot.state.clone();
        state.last_seq = 0;
        let bot = StoredBot {
            state,
            token: bot.token,
        };
        feed(b'b', rmp_serde::to_vec(&bot).unwrap_or_default());
    }
    feed(b'a', audit.to_vec());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digest of the state `source` holds: its registry's part, then each bot as its owner
/// hands it over, then `audit`, the node's log.
pub async fn of_source(
    source: &impl StateSource,
    audit: &AuditLog,
) -> Result<String, SnapshotFailed> {
    let captured = source.capture().await?;
    let mut bots = Vec::with_capacity(captured.bots.len());
    for bot in captured.bots {
        if let Some(stored) = bot.read().await? {
            bots.push(stored);
        }
    }
    bots.sort_unstable_by_key(|b| b.state.listing.id);
    let mut profiles = captured.profiles;
    profiles.sort_unstable_by_key(|p| p.id);
    Ok(digest(&profiles, &bots, audit.chain()))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use uuid::Uuid;

    use super::*;
    use crate::domain::audit::{Acting, AuditAction, AuditActor, AuditEntries, AuditEntry};
    use crate::domain::time::Timestamp;

    fn entry(n: u64, reason: Option<&str>) -> AuditEntry {
        Acting::new(
            AuditActor::Profile(Uuid::from_u128(7)),
            AuditAction::BotUpdate,
        )
        .with_reason(reason.map(String::from))
        .entry(
            Uuid::from_u128(u128::from(n % 1000)),
            vec!["name".into(), "tags".into()],
            Timestamp::from_millis(1_790_000_000_000 + n as i64),
        )
    }

    fn log(entries: impl IntoIterator<Item = (u64, AuditEntry)>) -> AuditEntries {
        let mut log = AuditEntries::default();
        for (seq, entry) in entries {
            log.push(seq, &entry);
        }
        log
    }

    fn of(log: &AuditEntries) -> String {
        digest(std::iter::empty(), std::iter::empty(), log.chain())
    }

    /// Two states equal but for one audit entry (one more, a field changed, an id moved, no
    /// reason against an empty one) never share a digest; equal logs always do.
    #[test]
    fn the_digest_covers_every_audit_entry() {
        let base: Vec<(u64, AuditEntry)> = (1..=5).map(|n| (n * 2, entry(n, None))).collect();
        let same = of(&log(base.clone()));
        assert_eq!(of(&log(base.clone())), same);
        assert_ne!(of(&AuditEntries::default()), same);

        let mut more = base.clone();
        more.push((12, entry(6, None)));
        let mut fewer = base.clone();
        fewer.remove(2);
        let mut moved = base.clone();
        moved[4].0 = 11;
        let mut reasoned = base.clone();
        reasoned[1].1.reason = Some(String::new());
        let mut acted = base.clone();
        acted[0].1.actor = AuditActor::Admin;
        let mut action = base.clone();
        action[3].1.action = AuditAction::BotDelete;
        let mut target = base.clone();
        target[3].1.target = Uuid::from_u128(99);
        let mut at = base.clone();
        at[2].1.at = Timestamp::from_millis(1);
        let mut changes = base.clone();
        changes[2].1.changes = vec!["nametags".into()];
        for (what, changed) in [
            ("one more", more),
            ("one fewer", fewer),
            ("an id", moved),
            ("a reason", reasoned),
            ("an actor", acted),
            ("an action", action),
            ("a target", target),
            ("a time", at),
            ("the changes", changes),
        ] {
            assert_ne!(of(&log(changed)), same, "{what} left the digest as it was");
        }
    }

    /// Figures for docs/CLUSTER.md: appending 1,000,000 entries (the chain is kept as they
    /// come) and then the digest's part for the log. Run with
    /// `cargo test --lib digest::tests::audit_digest_at_a_million -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement"]
    fn audit_digest_at_a_million() {
        let entries: Vec<(u64, AuditEntry)> = (1..=1_000_000)
            .map(|n| (n, entry(n, (n % 10 == 0).then_some("spam"))))
            .collect();
        let started = Instant::now();
        let with_chain = log(entries.iter().cloned());
        let appended = started.elapsed();
        let started = Instant::now();
        let digest = of(&with_chain);
        let digested = started.elapsed();
        let label = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        };
        println!(
            "{label}: 1,000,000 audit entries appended in {appended:?} (chain included), \
             digest {digest} in {digested:?}"
        );
    }
}
