//! `botlist backup` and `botlist restore`, the files' part (docs/BACKUP.md).
//!
//! A backup is a data directory of its own: one snapshot the running server wrote on request,
//! the journal segments from the one that holds the record after it to the newest, each cut
//! back to its last whole record, and a journal head that says the journal was closed there.
//! It is read without the data directory's lock (the server holds it): snapshots are never
//! changed once renamed into place, and a segment only grows, so a copy of it up to its last
//! whole record is a journal that stopped there. It is made in a temporary directory beside
//! the destination, verified by starting from it as a server would, and only then renamed to
//! the destination: a backup cut short (kill -9, a full disk) is never at the name of one.
//!
//! A restore copies a backup into a temporary directory beside the data directory, verifies
//! the copy the same way, and renames it into place: a data directory is whole or absent.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::head::{self, Head};
use super::journal::{self, frame_bytes, HEADER_LEN, MAGIC as JOURNAL_MAGIC};
use super::recovery::{self, StartRefused};
use super::{files, private, snapshot, sync_dir};

/// Why a backup or a restore did not finish; each has its exit code (docs/BACKUP.md).
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// Reading or writing failed, or a file went away while it was copied (exit code 1).
    #[error("{0}")]
    Io(String),
    /// What was read does not verify: damage, or records missing (exit code 2).
    #[error("{0}")]
    Damaged(String),
    /// The destination exists (a backup) or is not empty (a restore) (exit code 8).
    #[error("{0}")]
    Exists(String),
    /// Files of a newer format, or records this build does not know (exit code 9).
    #[error("{0}")]
    Newer(String),
}

/// The data directory's file that holds the key signing vote history cursors (start-up reads
/// it; a backup carries it, so cursors handed out before stay valid after a restore).
pub const CURSOR_KEY_FILE: &str = "history-cursor.key";

fn io_error(what: impl std::fmt::Display, path: &Path, error: io::Error) -> CopyError {
    CopyError::Io(format!("{what} {}: {error}", path.display()))
}

/// What a backup or a restore holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The snapshot's sequence number.
    pub snapshot_seq: u64,
    /// The last journal record it holds.
    pub last_seq: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Bots in the state it starts with.
    pub bots: usize,
}

/// Copies snapshot `snapshot_seq` of `data_dir` and the journal after it into a new directory
/// `to`, verified before it takes that name.
pub fn backup(data_dir: &Path, snapshot_seq: u64, to: &Path) -> Result<Copied, CopyError> {
    into_new_backup(to, |temp| backup_into(data_dir, snapshot_seq, temp))
}

/// Writes a backup at the new path `to`: `write` fills a temporary directory beside it, which
/// is verified and only then renamed to `to`; removed on any error.
fn into_new_backup(
    to: &Path,
    write: impl FnOnce(&Path) -> Result<Copied, CopyError>,
) -> Result<Copied, CopyError> {
    if to.exists() {
        return Err(CopyError::Exists(format!(
            "{} already exists; a backup goes to a new path",
            to.display()
        )));
    }
    let temp = beside(to, "partial")?;
    let result = write(&temp)
        .and_then(|copied| verify(&temp, copied))
        .and_then(|copied| settle(&temp, to).map(|()| copied));
    if result.is_err() {
        let _ = fs::remove_dir_all(&temp);
    }
    result
}

/// Writes a state a caller built (a cluster's newest uploaded snapshot with the stream read
/// to its end, `cluster::backup`) as a backup at `to`: one snapshot, its stream mark, the
/// history cursor key, and no journal, verified before it takes that name like any other backup.
pub fn backup_state(
    state: &super::state::SavedState,
    mark: Option<super::StreamMark>,
    cursor_key: Option<[u8; 32]>,
    to: &Path,
) -> Result<Copied, CopyError> {
    into_new_backup(to, |temp| {
        let written =
            snapshot::write(temp, state).map_err(|e| io_error("cannot write in", temp, e))?;
        let mut bytes = written.bytes;
        if let Some(key) = cursor_key {
            bytes += write_file(&temp.join(CURSOR_KEY_FILE), &key)?;
        }
        if let Some(mark) = mark {
            snapshot::write_mark(temp, state.seq, mark)
                .map_err(|e| io_error("cannot write in", temp, e))?;
        }
        sync_dir(temp).map_err(|e| io_error("cannot sync", temp, e))?;
        Ok(Copied {
            snapshot_seq: state.seq,
            last_seq: state.seq,
            bytes,
            bots: 0,
        })
    })
}

/// Copies the backup `from` into the data directory `to`, which must be missing or empty;
/// the copy is verified before it takes that name.
pub fn restore(from: &Path, to: &Path) -> Result<Copied, CopyError> {
    match fs::read_dir(to).map(|mut entries| entries.next().is_some()) {
        Ok(true) => {
            return Err(CopyError::Exists(format!(
                "{} is not empty; restore into a new or empty directory",
                to.display()
            )))
        }
        Ok(false) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error("cannot read", to, error)),
    }
    if !from.is_dir() || snapshot::list(from).map_or(true, |s| s.is_empty()) {
        return Err(CopyError::Damaged(format!(
            "{} is not a backup: it holds no snapshot",
            from.display()
        )));
    }
    let temp = beside(to, "restoring")?;
    let result = restore_into(from, &temp)
        .and_then(|copied| verify(&temp, copied))
        .and_then(|copied| settle(&temp, to).map(|()| copied));
    if result.is_err() {
        let _ = fs::remove_dir_all(&temp);
    }
    result
}

/// A new private directory beside `path`, named after it and this process.
fn beside(path: &Path, what: &str) -> Result<PathBuf, CopyError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| CopyError::Io(format!("{} names no directory", path.display())))?;
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    private::create_dir(&parent).map_err(|e| io_error("cannot create", &parent, e))?;
    let temp = parent.join(format!(".{name}.{what}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&temp);
    private::create_dir(&temp).map_err(|e| io_error("cannot create", &temp, e))?;
    Ok(temp)
}

/// Renames the verified `temp` to `to` (an empty directory there is replaced), durably.
fn settle(temp: &Path, to: &Path) -> Result<(), CopyError> {
    fs::rename(temp, to).map_err(|e| io_error("cannot rename the copy to", to, e))?;
    let parent = match to.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    sync_dir(parent).map_err(|e| io_error("cannot sync", parent, e))
}

/// Starts from the copy as a server would (read-only but for what a start sets aside, which
/// a good copy never has): it must start without a warning, at the last record copied or later.
fn verify(dir: &Path, copied: Copied) -> Result<Copied, CopyError> {
    let recovered = recovery::recover(dir, false).map_err(|refused| match refused {
        StartRefused::Damaged(why) => {
            CopyError::Damaged(format!("the copy does not verify: {why}"))
        }
        StartRefused::Newer(why) => CopyError::Newer(why),
    })?;
    if let Some(warning) = recovered.warnings.first() {
        return Err(CopyError::Damaged(format!(
            "the copy does not verify: {warning}"
        )));
    }
    if recovered.next_seq <= copied.last_seq {
        return Err(CopyError::Damaged(format!(
            "the copy does not verify: it starts at record {}, not {}",
            recovered.next_seq - 1,
            copied.last_seq
        )));
    }
    Ok(Copied {
        bots: recovered.state.bots.len(),
        ..copied
    })
}

fn backup_into(data_dir: &Path, snapshot_seq: u64, temp: &Path) -> Result<Copied, CopyError> {
    let name = snapshot::SNAPSHOTS.name(snapshot_seq);
    let source = data_dir.join(&name);
    let bytes = fs::read(&source).map_err(|e| gone("the snapshot", &source, e))?;
    let mut total = write_file(&temp.join(&name), &bytes)?;
    drop(bytes);
    for extra in [
        snapshot::MARKS.name(snapshot_seq),
        CURSOR_KEY_FILE.to_owned(),
    ] {
        if let Ok(bytes) = fs::read(data_dir.join(&extra)) {
            total += write_file(&temp.join(extra), &bytes)?;
        }
    }
    let (last_seq, journal_bytes) = copy_journal(data_dir, snapshot_seq, temp)?;
    sync_dir(temp).map_err(|e| io_error("cannot sync", temp, e))?;
    Ok(Copied {
        snapshot_seq,
        last_seq,
        bytes: total + journal_bytes,
        bots: 0,
    })
}

fn gone(what: &str, path: &Path, error: io::Error) -> CopyError {
    if error.kind() == io::ErrorKind::NotFound {
        CopyError::Io(format!(
            "{what} {} was retired while it was copied (snapshots were taken meanwhile); run the backup again",
            path.display()
        ))
    } else {
        io_error("cannot read", path, error)
    }
}

/// Copies every segment with a record after `after`, each up to its last whole record, and
/// writes a head that closes the journal there. Returns the last record and the bytes written.
fn copy_journal(data_dir: &Path, after: u64, temp: &Path) -> Result<(u64, u64), CopyError> {
    let segments = journal::list(data_dir).map_err(|e| io_error("cannot list", data_dir, e))?;
    // A segment's records end where the next one's begin: the first needed is the last that
    // starts at or before the record after the snapshot.
    let start = segments
        .iter()
        .rposition(|(first, _)| *first <= after + 1)
        .unwrap_or(0);
    let needed = &segments[start..];
    let Some((first, _)) = needed.first() else {
        return Err(CopyError::Damaged(format!(
            "{} holds no journal segment",
            data_dir.display()
        )));
    };
    if *first > after + 1 {
        return Err(CopyError::Damaged(format!(
            "records {} to {} are in no journal segment of {}",
            after + 1,
            first - 1,
            data_dir.display()
        )));
    }
    let (mut expected, mut written, mut newest) = (*first, 0, (*first, 0));
    for (index, (first, path)) in needed.iter().enumerate() {
        if *first != expected {
            return Err(CopyError::Damaged(format!(
                "{} starts at record {first} where record {expected} belongs",
                path.display()
            )));
        }
        let bytes = fs::read(path).map_err(|e| gone("the journal segment", path, e))?;
        let is_last = index + 1 == needed.len();
        let end = whole_records(path, &bytes, &mut expected, is_last)?;
        written += write_file(&temp.join(journal::segment_name(*first)), &bytes[..end])?;
        newest = (*first, end as u64);
    }
    let last = expected - 1;
    Head {
        newest: newest.0,
        length: newest.1,
        closed: Some(last),
    }
    .write(temp)
    .map_err(|e| io_error("cannot write", &head::path(temp), e))?;
    Ok((last.max(after), written))
}

/// Where the whole records of a segment end. Frames are checked (length, checksum, number),
/// not decoded: a record of a kind this build does not know is copied like any other, and
/// the verification names it. Past the last whole record the newest segment holds zeros or a
/// record still being written; any other segment holds nothing more.
fn whole_records(
    path: &Path,
    bytes: &[u8],
    expected: &mut u64,
    is_last: bool,
) -> Result<usize, CopyError> {
    match files::read_header(bytes, JOURNAL_MAGIC) {
        Ok(_) => {}
        Err(files::HeaderFault::Newer(version)) => {
            return Err(CopyError::Newer(format!(
                "{} was written by a newer botlist (format version {version}); back it up with that botlist",
                path.display()
            )))
        }
        Err(fault) => {
            return Err(CopyError::Damaged(format!("{}: {fault}", path.display())));
        }
    }
    let mut at = HEADER_LEN;
    while let Ok((seq, _, used)) = frame_bytes(&bytes[at..]) {
        if seq != *expected {
            break;
        }
        at += used;
        *expected += 1;
    }
    if !is_last && bytes[at..].iter().any(|&b| b != 0) {
        return Err(CopyError::Damaged(format!(
            "{} is damaged at byte {at} (record {}), with data after it",
            path.display(),
            expected
        )));
    }
    Ok(at)
}

fn restore_into(from: &Path, temp: &Path) -> Result<Copied, CopyError> {
    let entries = fs::read_dir(from).map_err(|e| io_error("cannot read", from, e))?;
    let mut total = 0;
    for entry in entries {
        let entry = entry.map_err(|e| io_error("cannot read", from, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_state_file(name) {
            continue;
        }
        let bytes =
            fs::read(entry.path()).map_err(|e| io_error("cannot read", &entry.path(), e))?;
        total += write_file(&temp.join(name), &bytes)?;
    }
    sync_dir(temp).map_err(|e| io_error("cannot sync", temp, e))?;
    let snapshot_seq = snapshot::list(temp)
        .ok()
        .and_then(|s| s.first().map(|(seq, _)| *seq))
        .unwrap_or(0);
    let last_seq = match head::read(temp) {
        Ok(head::Found::Good(Head {
            closed: Some(closed),
            ..
        })) => closed,
        _ => snapshot_seq,
    };
    Ok(Copied {
        snapshot_seq,
        last_seq,
        bytes: total,
        bots: 0,
    })
}

/// The files a data directory's state is made of (not its lock, not what was set aside).
fn is_state_file(name: &str) -> bool {
    snapshot::parse_snapshot_name(name).is_some()
        || snapshot::MARKS.parse(name).is_some()
        || journal::parse_segment_name(name).is_some()
        || name == head::FILE
        || name == CURSOR_KEY_FILE
}

/// Writes `bytes` to a new private file and syncs it.
fn write_file(path: &Path, bytes: &[u8]) -> Result<u64, CopyError> {
    let mut file = private::create_new(path).map_err(|e| io_error("cannot create", path, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error("cannot write", path, e))?;
    Ok(bytes.len() as u64)
}
