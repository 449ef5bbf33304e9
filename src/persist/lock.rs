//! One process per data directory: an exclusive OS lock (`flock`) on `botlist.lock`, held for the
//! life of the process. The kernel drops it when the process ends, however it ends, so kill -9
//! never leaves a stale lock; the pid written inside only names the holder in the refusal.

use std::fs::{File, TryLockError};
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
    /// The directory (or its lock file) is not safe to use (exit code 6).
    #[error("{0}")]
    Unsafe(String),
    #[error("cannot lock the data directory {}: {error}", dir.display())]
    Io {
        dir: PathBuf,
        #[source]
        error: io::Error,
    },
}

impl DirLock {
    /// Takes the lock on `dir` (created 0700 if missing, refused if others can write to it or
    /// another user owns it; see [`super::private`]) without waiting.
    pub fn acquire(dir: &Path) -> Result<Self, LockError> {
        let io_error = |error| LockError::Io {
            dir: dir.to_owned(),
            error,
        };
        let tightened = super::private::claim(dir).map_err(|e| LockError::Unsafe(e.0))?;
        for change in tightened {
            tracing::warn!("{change}: the data directory holds secrets");
        }
        let path = dir.join(LOCK_FILE);
        // Never through a symlink: the pid written below would overwrite the link's target.
        let mut file = super::private::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|error| {
                if super::private::is_symlink_refusal(&error) {
                    LockError::Unsafe(format!(
                        "{} is a symbolic link; botlist never writes through one. Remove it \
                         (rm {}) and start again",
                        path.display(),
                        path.display()
                    ))
                } else {
                    io_error(error)
                }
            })?;
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

    #[test]
    fn a_lock_file_that_is_a_symlink_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().expect("temp dir");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").expect("written");
        let data = dir.path().join("data");
        super::super::private::create_dir(&data).expect("created");
        std::os::unix::fs::symlink(&victim, data.join(LOCK_FILE)).expect("symlink");
        match DirLock::acquire(&data) {
            Err(LockError::Unsafe(why)) => assert!(why.contains("symbolic link"), "{why}"),
            other => panic!("expected Unsafe, got {other:?}"),
        }
        assert_eq!(std::fs::read(&victim).expect("read"), b"keep");
    }
}
