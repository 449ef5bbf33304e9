//! Durable state: snapshots, the journal, and recovery at startup (docs/PERSISTENCE.md).
//!
//! docs/PERSISTENCE.md describes the files and the guarantees.

pub mod journal;
pub mod lock;
pub mod recovery;
pub mod snapshot;
pub mod state;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use actix::Addr;

use crate::actors::registry::{Capture, Registry};
use journal::Journal;
use snapshot::Written;

/// The format version of snapshot and journal files this build writes (and the newest it reads).
pub const FORMAT_VERSION: u32 = 1;

/// How deep MessagePack may nest in a file: our records need about ten levels. The library's
/// default of 1024 lets a damaged file recurse deep enough to overflow a thread's stack.
const MAX_NESTING: usize = 64;

/// Decodes MessagePack from a file, with nesting bounded.
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, rmp_serde::decode::Error> {
    let mut deserializer = rmp_serde::Deserializer::from_read_ref(bytes);
    deserializer.set_max_depth(MAX_NESTING);
    T::deserialize(&mut deserializer)
}

/// Makes a rename or a new file in `dir` durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Takes snapshots of the running service, one at a time.
pub struct Persistence {
    dir: PathBuf,
    journal: Journal,
    registry: Addr<Registry>,
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl Persistence {
    pub fn new(dir: PathBuf, journal: Journal, registry: Addr<Registry>) -> Self {
        Self {
            dir,
            journal,
            registry,
            one_at_a_time: tokio::sync::Mutex::new(()),
        }
    }

    /// Why the journal stopped taking writes, once it has.
    pub fn journal_failure(&self) -> Option<String> {
        self.journal.failure().map(|error| error.0)
    }

    /// Captures every actor's state and writes it on a blocking thread while requests go on;
    /// then keeps the newest snapshots and the journal they need, and retires the rest.
    pub async fn snapshot(&self) -> Result<Written, String> {
        let _one = self.one_at_a_time.lock().await;
        let started = std::time::Instant::now();
        if let Some(error) = self.journal.failure() {
            return Err(format!("not taking a snapshot: {}", error.0));
        }
        self.journal.request_rotation();
        let state = self
            .registry
            .send(Capture)
            .await
            .map_err(|e| format!("the registry did not answer: {e}"))??;
        // Every change the capture holds is in the journal before the snapshot can stand for
        // it; a change whose record failed (and whose request got a 503) never reaches a file.
        self.journal
            .barrier()
            .wait()
            .await
            .map_err(|e| format!("not taking a snapshot: {}", e.0))?;
        let dir = self.dir.clone();
        let written = tokio::task::spawn_blocking(move || -> io::Result<Written> {
            let written = snapshot::write(&dir, &state)?;
            retire(&dir)?;
            Ok(written)
        })
        .await
        .map_err(|e| format!("the snapshot writer stopped: {e}"))?
        .map_err(|e| format!("the snapshot could not be written: {e}"))?;
        tracing::info!(file = %written.path.display(), bytes = written.bytes, "snapshot written");
        crate::telemetry::snapshot_written(started, written.bytes);
        Ok(written)
    }
}

/// Keeps the newest [`snapshot::KEEP`] snapshots and every journal segment with a record after
/// the oldest of them, so a damaged newest snapshot can fall back to an older one.
fn retire(dir: &Path) -> io::Result<()> {
    let snapshots = snapshot::list(dir)?;
    for (_, path) in snapshots.iter().skip(snapshot::KEEP) {
        fs::remove_file(path)?;
    }
    let Some(&(oldest_kept, _)) = snapshots.iter().take(snapshot::KEEP).next_back() else {
        return Ok(());
    };
    let segments = journal::list(dir)?;
    // A segment's records all come before the next segment's first; the newest is never retired.
    for pair in segments.windows(2) {
        let (_, path) = &pair[0];
        let (next_first, _) = pair[1];
        if next_first <= oldest_kept + 1 {
            fs::remove_file(path)?;
        }
    }
    sync_dir(dir)
}
