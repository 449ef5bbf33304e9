//! `GET {base}/admin/cluster/digest`: a SHA-256 over the whole state (every profile, then every
//! bot with its token, each as MessagePack, in id order), equal on two nodes exactly when they
//! hold the same state (each bot's `last_seq`, which only says which record it last took, is left
//! out). Every node hashes its actors' state, read as a snapshot reads it.

use serde::Serialize;
use sha2::{Digest as _, Sha256};

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

/// The hash of `profiles` and `bots`, each already in id order.
pub fn digest<'a>(
    profiles: impl IntoIterator<Item = &'a Profile>,
    bots: impl IntoIterator<Item = &'a StoredBot>,
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
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digest of the state `source` holds: its registry's part, then each bot as its owner
/// hands it over.
pub async fn of_source(source: &impl StateSource) -> Result<String, SnapshotFailed> {
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
    Ok(digest(&profiles, &bots))
}
