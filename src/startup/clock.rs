//! The clock the binary runs on: the system clock, or (for tests of the real binary only) the
//! system clock moved by an offset read from a file.
//!
//! Tests in process move time with [`crate::domain::time::ManualClock`]; a test that runs the
//! real binary (a kill -9 across the end of a voter's 12-hour window, a writer killed in a
//! cluster) has no handle on it. `BOTLIST_TEST_CLOCK_OFFSET_FILE=PATH` names a file holding a
//! signed whole number of milliseconds; the clock is the system clock plus that number, the
//! file read again at most every [`REREAD`] while the process runs, so a test moves the time
//! of every node it started by writing one file (atomically: write another file and rename).
//! Unset (the default, and the only setting for production) the clock is the system clock,
//! unchanged. It is a variable, not a flag, so `--help` does not offer it; docs/PERSISTENCE.md
//! ("Moving a real process's clock in tests") says so.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::domain::time::{Clock, SystemClock, Timestamp};

/// The variable that names the offset file.
pub const OFFSET_FILE_VAR: &str = "BOTLIST_TEST_CLOCK_OFFSET_FILE";

/// How stale the offset may be: a test that writes the file waits at least this long (plus a
/// tick of whatever reads the clock) before it counts on the new time.
pub const REREAD: Duration = Duration::from_millis(50);

/// The clock for this process: the system clock unless `BOTLIST_TEST_CLOCK_OFFSET_FILE` is
/// set; `Err` says why a set variable cannot be used (the file cannot be read or does not
/// hold a whole number of milliseconds), which refuses the start.
pub fn from_env() -> Result<Arc<dyn Clock>, String> {
    match std::env::var_os(OFFSET_FILE_VAR) {
        None => Ok(Arc::new(SystemClock)),
        Some(path) => {
            let clock = OffsetClock::open(PathBuf::from(path))?;
            eprintln!(
                "botlist: {OFFSET_FILE_VAR} is set: the clock is the system clock moved by {} ms \
                 read from {} (a test setting; never set it in production)",
                clock.current().offset_ms,
                clock.path.display()
            );
            Ok(Arc::new(clock))
        }
    }
}

struct Read {
    at: Instant,
    offset_ms: i64,
}

/// The system clock plus an offset in milliseconds read from a file.
pub struct OffsetClock {
    path: PathBuf,
    last: Mutex<Read>,
}

impl OffsetClock {
    pub fn open(path: PathBuf) -> Result<Self, String> {
        let offset_ms = read_offset(&path)?;
        Ok(Self {
            path,
            last: Mutex::new(Read {
                at: Instant::now(),
                offset_ms,
            }),
        })
    }

    /// The offset, read again when the last read is older than [`REREAD`]; a file that
    /// cannot be read then (being replaced) keeps the last offset.
    fn current(&self) -> std::sync::MutexGuard<'_, Read> {
        // The guarded values are plain numbers, valid whatever a panicking holder did.
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.at.elapsed() >= REREAD {
            if let Ok(offset_ms) = read_offset(&self.path) {
                last.offset_ms = offset_ms;
            }
            last.at = Instant::now();
        }
        last
    }
}

impl Clock for OffsetClock {
    fn now(&self) -> Timestamp {
        let offset_ms = self.current().offset_ms;
        let now = SystemClock.now();
        Timestamp::from_millis(now.millis().saturating_add(offset_ms))
    }
}

fn read_offset(path: &Path) -> Result<i64, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("{OFFSET_FILE_VAR}: cannot read {}: {error}", path.display()))?;
    text.trim().parse().map_err(|_| {
        format!(
            "{OFFSET_FILE_VAR}: {} does not hold a whole number of milliseconds",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_follows_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("offset");
        std::fs::write(&path, "3600000\n").expect("written");
        let clock = OffsetClock::open(path.clone()).expect("opens");
        let ahead = clock.now().millis() - SystemClock.now().millis();
        assert!((3_599_000..=3_600_000).contains(&ahead), "{ahead}");

        std::fs::write(&path, "-5000").expect("written");
        std::thread::sleep(REREAD + Duration::from_millis(10));
        let behind = clock.now().millis() - SystemClock.now().millis();
        assert!((-5_000..=-4_000).contains(&behind), "{behind}");

        // A file being replaced (unreadable for a moment) keeps the last offset.
        std::fs::remove_file(&path).expect("removed");
        std::thread::sleep(REREAD + Duration::from_millis(10));
        let kept = clock.now().millis() - SystemClock.now().millis();
        assert!((-5_000..=-4_000).contains(&kept), "{kept}");
    }

    #[test]
    fn a_file_that_is_not_a_number_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("offset");
        std::fs::write(&path, "soon").expect("written");
        let refused = OffsetClock::open(path.clone()).err().expect("refused");
        assert!(refused.contains("whole number"), "{refused}");
        let missing = OffsetClock::open(dir.path().join("none"))
            .err()
            .expect("refused");
        assert!(missing.contains("cannot read"), "{missing}");
    }
}
