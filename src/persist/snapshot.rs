//! Snapshot files: the whole directory in MessagePack behind a checked header.
//!
//! `magic "BLSNAPSH" | format version: u32 LE | seq: u64 LE | payload length: u64 LE |
//! crc32 of payload: u32 LE | payload`. Written to a temporary file, fsynced, renamed into place,
//! and the directory fsynced, so a snapshot file is either whole or absent.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::state::DirectoryState;
use super::{sync_dir, FORMAT_VERSION};

pub const MAGIC: &[u8; 8] = b"BLSNAPSH";
pub const HEADER_LEN: usize = 8 + 4 + 8 + 8 + 4;
/// How many snapshots are kept; the journal is kept from the oldest of them on.
pub const KEEP: usize = 3;

pub fn snapshot_name(seq: u64) -> String {
    format!("snapshot-{seq:020}.msgpack")
}

pub fn parse_snapshot_name(name: &str) -> Option<u64> {
    name.strip_prefix("snapshot-")?
        .strip_suffix(".msgpack")?
        .parse()
        .ok()
}

#[derive(Debug, PartialEq, Eq)]
pub enum SnapshotError {
    Io(String),
    /// Damage: the file cannot be used, an older snapshot may be.
    Damaged(String),
    /// Written by a newer botlist: refused, never skipped, so no newer data is dropped.
    NewerVersion(u32),
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "cannot be read: {e}"),
            Self::Damaged(why) => write!(f, "is damaged: {why}"),
            Self::NewerVersion(v) => write!(
                f,
                "was written by a newer botlist (format version {v}; this build reads version {FORMAT_VERSION} and older)"
            ),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub bytes: u64,
}

/// Feeds the CRC while bytes go to the file.
struct Checksummed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes a snapshot; one that fails removes its temporary file, so a full disk is not left
/// fuller by the attempt.
pub fn write(dir: &Path, state: &DirectoryState) -> io::Result<Written> {
    let temp = temp_path(dir, state.seq);
    write_via(&temp, dir, state).inspect_err(|_| {
        if let Err(error) = fs::remove_file(&temp) {
            if error.kind() != io::ErrorKind::NotFound {
                tracing::warn!(file = %temp.display(), %error, "cannot remove a failed snapshot's temporary file");
            }
        }
    })
}

fn temp_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{}{TEMP_SUFFIX}", snapshot_name(seq)))
}

/// What a snapshot being written is called until it is renamed into place.
pub const TEMP_SUFFIX: &str = ".tmp";

/// Removes the temporary files of snapshots cut short (a crash or kill -9 mid-write); they are
/// never read, and at 100k bots each is hundreds of megabytes. Returns what was removed.
pub fn remove_stale_temps(dir: &Path) -> io::Result<Vec<(PathBuf, u64)>> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let is_temp = name
            .strip_suffix(TEMP_SUFFIX)
            .and_then(parse_snapshot_name)
            .is_some();
        if is_temp {
            let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
            fs::remove_file(entry.path())?;
            removed.push((entry.path(), bytes));
        }
    }
    if !removed.is_empty() {
        sync_dir(dir)?;
    }
    Ok(removed)
}

fn write_via(temp: &Path, dir: &Path, state: &DirectoryState) -> io::Result<Written> {
    let path = dir.join(snapshot_name(state.seq));
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(temp)?;
    let mut out = Checksummed {
        inner: BufWriter::with_capacity(1 << 20, file),
        crc: crc32fast::Hasher::new(),
        bytes: 0,
    };
    out.inner.write_all(&[0u8; HEADER_LEN])?;
    rmp_serde::encode::write(&mut out, state).map_err(io::Error::other)?;
    let payload_len = out.bytes;
    let crc = out.crc.finalize();
    let mut file: File = out.inner.into_inner().map_err(|e| e.into_error())?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&header(state.seq, payload_len, crc))?;
    file.sync_all()?;
    drop(file);
    fs::rename(temp, &path)?;
    sync_dir(dir)?;
    Ok(Written {
        path,
        bytes: HEADER_LEN as u64 + payload_len,
    })
}

/// A payload behind a valid header, for tests and fuzzing of the decoder.
pub fn wrap(seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = header(seq, payload.len() as u64, crc32fast::hash(payload));
    out.extend_from_slice(payload);
    out
}

fn header(seq: u64, payload_len: u64, crc: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&payload_len.to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

pub fn read(path: &Path) -> Result<DirectoryState, SnapshotError> {
    let bytes = fs::read(path).map_err(|e| SnapshotError::Io(e.to_string()))?;
    decode(&bytes)
}

/// Checks and decodes a whole snapshot file; never panics and never trusts a length it has
/// not checked against the bytes that are there.
pub fn decode(bytes: &[u8]) -> Result<DirectoryState, SnapshotError> {
    let damaged = |why: &str| SnapshotError::Damaged(why.to_string());
    if bytes.is_empty() {
        return Err(damaged("the file is empty"));
    }
    if bytes.len() < HEADER_LEN {
        return Err(damaged("the header is cut short"));
    }
    if &bytes[..8] != MAGIC {
        return Err(damaged("not a botlist snapshot (bad magic bytes)"));
    }
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let u64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let version = u32_at(8);
    if version > FORMAT_VERSION {
        return Err(SnapshotError::NewerVersion(version));
    }
    if version == 0 {
        return Err(damaged("format version 0 does not exist"));
    }
    let seq = u64_at(12);
    let payload_len = u64_at(20);
    let crc = u32_at(28);
    let payload = &bytes[HEADER_LEN..];
    if payload.len() as u64 != payload_len {
        return Err(SnapshotError::Damaged(format!(
            "the header announces {payload_len} bytes of data, the file has {}",
            payload.len()
        )));
    }
    if crc32fast::hash(payload) != crc {
        return Err(damaged("checksum mismatch"));
    }
    let state: DirectoryState = super::decode(payload)
        .map_err(|e| SnapshotError::Damaged(format!("the data does not decode: {e}")))?;
    if state.seq != seq {
        return Err(damaged(
            "the header and the data disagree on the sequence number",
        ));
    }
    for bot in &state.bots {
        bot.state.votes.validate().map_err(|why| {
            SnapshotError::Damaged(format!("bot {}: {why}", bot.state.listing.id))
        })?;
    }
    Ok(state)
}

/// Snapshot files in `dir`, newest first.
pub fn list(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if let Some(seq) = entry.file_name().to_str().and_then(parse_snapshot_name) {
            found.push((seq, entry.path()));
        }
    }
    found.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_snapshot_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A directory where the snapshot must go makes the final rename fail.
        let target = dir.path().join(snapshot_name(0));
        fs::create_dir(&target).expect("dir");
        fs::write(target.join("in-the-way"), b"x").expect("file");
        write(dir.path(), &DirectoryState::default()).expect_err("the rename fails");
        let names: Vec<String> = fs::read_dir(dir.path())
            .expect("readable")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [snapshot_name(0)], "only what was there before");
    }

    #[test]
    fn stale_temporary_files_are_removed_and_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let stale = temp_path(dir.path(), 7);
        fs::write(&stale, b"half a snapshot").expect("file");
        let other = dir.path().join("notes.tmp");
        fs::write(&other, b"not ours").expect("file");
        let removed = remove_stale_temps(dir.path()).expect("removed");
        assert_eq!(removed, [(stale.clone(), 15)]);
        assert!(!stale.exists() && other.exists());
    }
}
