//! The data directory of a single node: its lock, the state recovered from it, the key that
//! signs vote history cursors, and the snapshots taken into it (periodic, and on request
//! through the API's [`TakeSnapshot`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::StartError;
use crate::api::admin::snapshot::{SnapshotTaken, TakeSnapshot};
use crate::config::Settings;
use crate::persist::lock::{DirLock, LockError};
use crate::persist::recovery::{self, Recovered, StartRefused};
use crate::persist::snapshot;
use crate::persist::state::SavedState;
use crate::persist::Persistence;
use crate::shutdown::Shutdown;

/// Takes the data directory's lock and clears what a crash during a snapshot left behind.
pub(super) fn claim_data_dir(settings: &Settings) -> Result<Option<DirLock>, StartError> {
    let Some(dir) = &settings.data_dir else {
        return Ok(None);
    };
    let lock = DirLock::acquire(dir).map_err(|e| match e {
        LockError::Held { .. } => StartError::InUse(e.to_string()),
        LockError::Unsafe(why) => StartError::Unsafe(why),
        LockError::Io { error, .. } => StartError::Io(error),
    })?;
    for (file, bytes) in snapshot::remove_stale_temps(dir)? {
        tracing::warn!(
            "removed {} ({bytes} bytes): a snapshot cut short by a crash; the snapshots and journal before it are intact",
            file.display()
        );
    }
    Ok(Some(lock))
}

/// The newest good snapshot with the journal after it; an empty state without a data directory.
pub(super) fn recover_state(settings: &Settings) -> Result<Recovered, StartError> {
    let recovered = match &settings.data_dir {
        Some(dir) => recovery::recover(dir, settings.recover).map_err(|refused| match refused {
            StartRefused::Damaged(why) => StartError::Refused(why.0),
            StartRefused::Newer(why) => StartError::Newer(why),
        })?,
        None => Recovered {
            state: SavedState::default(),
            next_seq: 1,
            warnings: Vec::new(),
        },
    };
    for warning in &recovered.warnings {
        tracing::warn!("{warning}");
    }
    Ok(recovered)
}

/// The key that signs vote history cursors: read from the data directory (or made and written
/// there), so cursors outlive a restart. Without a data directory the key lives as long as the
/// process.
pub(super) fn cursor_key(data_dir: Option<&Path>) -> std::io::Result<[u8; 32]> {
    match data_dir {
        Some(dir) => load_or_create_key(dir),
        None => random_key(),
    }
}

/// The file in the data directory that holds the cursor key, so cursors outlive a restart.
const KEY_FILE: &str = "history-cursor.key";

fn random_key() -> std::io::Result<[u8; 32]> {
    let mut key = [0; 32];
    getrandom::fill(&mut key).map_err(std::io::Error::other)?;
    Ok(key)
}

fn load_or_create_key(dir: &Path) -> std::io::Result<[u8; 32]> {
    let path = dir.join(KEY_FILE);
    match std::fs::read(&path) {
        Ok(bytes) if bytes.len() == 32 => {
            let mut key = [0; 32];
            key.copy_from_slice(&bytes);
            return Ok(key);
        }
        Ok(_) => tracing::warn!(
            "{} is not a 32-byte key; a new one is made, and history cursors given before are refused",
            path.display()
        ),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    let key = random_key()?;
    let temp = dir.join(format!("{KEY_FILE}.tmp"));
    {
        use std::io::Write;
        // New, 0600, and never through a symlink: a link planted at the temporary name would
        // otherwise get the key written into its target.
        let mut file = crate::persist::private::create_new(&temp)?;
        file.write_all(&key)?;
        file.sync_all()?;
    }
    std::fs::rename(&temp, &path)?;
    if let Ok(dir) = std::fs::File::open(dir) {
        // The rename is durable once the directory is; a failure here only risks a new key.
        let _ = dir.sync_all();
    }
    Ok(key)
}

impl TakeSnapshot for Persistence {
    fn take(&self) -> BoxFuture<'_, Result<SnapshotTaken, String>> {
        Box::pin(async move {
            self.snapshot()
                .await
                .map(|written| SnapshotTaken {
                    path: written.path,
                    bytes: written.bytes,
                })
                .map_err(|error| error.to_string())
        })
    }
}

pub(super) fn spawn_periodic_snapshots(
    persistence: Arc<Persistence>,
    every: Duration,
    mut stop: Shutdown,
) {
    actix_web::rt::spawn(async move {
        let mut ticks = actix_web::rt::time::interval(every);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = stop.requested() => return,
            }
            if let Err(error) = persistence.snapshot().await {
                tracing::error!(%error, "periodic snapshot failed");
            }
        }
    });
}
