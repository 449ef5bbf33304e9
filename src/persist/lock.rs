//! One process per data directory: an exclusive OS lock (`flock`) on `botlist.lock`, held for the
//! life of the process. The kernel drops it when the process ends, however it ends, so kill -9
//! never leaves a stale lock; the pid written inside only names the holder in the refusal.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "botlist.lock";

/// Held while the data directory is ours; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the directory.
    #[error("the data directory {} is in use by another botlist process{}; one process at a time owns a data directory. Stop that process or use another --data-dir", dir.display(), pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default())]
    Held { dir: PathBuf, pid: Option<u32> },
    #[error("cannot lock the data directory {}: {error}", dir.display())]
    Io {
        dir: PathBuf,
        #[source]
        error: io::Error,
    },
}

impl DirLock {
    /// Takes the lock on `dir` (created if missing) without waiting.
    pub fn acquire(dir: &Path) -> Result<Self, LockError> {
        let io_error = |error| LockError::Io {
            dir: dir.to_owned(),
            error,
        };
        std::fs::create_dir_all(dir).map_err(io_error)?;
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_error)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(LockError::Held {
                    dir: dir.to_owned(),
                    pid: text.trim().parse().ok(),
                });
            }
            Err(TryLockError::Error(error)) => return Err(io_error(error)),
        }
        // The pid is for the message a second process prints; the lock itself is the flock.
        file.set_len(0).map_err(io_error)?;
        file.seek(SeekFrom::Start(0)).map_err(io_error)?;
        writeln!(file, "{}", std::process::id()).map_err(io_error)?;
        file.sync_all().map_err(io_error)?;
        Ok(Self { _file: file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = DirLock::acquire(dir.path()).expect("first lock");
        match DirLock::acquire(dir.path()) {
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected Held, got {other:?}"),
        }
        let message = DirLock::acquire(dir.path()).expect_err("held").to_string();
        assert!(
            message.contains(&dir.path().display().to_string()) && message.contains("pid"),
            "{message}"
        );
        drop(first);
        DirLock::acquire(dir.path()).expect("free again");
    }
}
