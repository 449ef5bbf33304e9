//! Snapshot files: the whole directory in MessagePack behind a checked header.
//!
//! `magic "BLSNAPSH" | format version: u32 LE | seq: u64 LE | payload length: u64 LE |
//! crc32 of payload: u32 LE | payload`. Written to a temporary file, fsynced, renamed into place,
//! and the directory fsynced, so a snapshot file is either whole or absent.

use std::fs::{self, File};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::codec::{self, SnapshotNumbers, SnapshotVoters};
use super::files::{self, HeaderFault, Numbered};
use super::state::{SavedState, StoredBot};
use super::{sync_dir, FORMAT_VERSION};
use crate::domain::audit::{AuditEntries, AuditEntry, AuditLog};
use crate::domain::profile::Profile;
use crate::domain::votes::{Voter, VoterTable};
use crate::parallel::{self, Failed};

pub const MAGIC: &[u8; 8] = b"BLSNAPSH";
pub const HEADER_LEN: usize = 8 + 4 + 8 + 8 + 4;
/// How many snapshots are kept; the journal is kept from the oldest of them on.
pub const KEEP: usize = 3;

/// Snapshot files: `snapshot-<seq>.msgpack`.
pub const SNAPSHOTS: Numbered = Numbered::new("snapshot-", ".msgpack");

pub fn snapshot_name(seq: u64) -> String {
    SNAPSHOTS.name(seq)
}

pub fn parse_snapshot_name(name: &str) -> Option<u64> {
    SNAPSHOTS.parse(name)
}

/// Why a snapshot file is not used; the message names the reason, the I/O error is kept.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot be read: {0}")]
    Io(#[from] io::Error),
    /// Damage: the file cannot be used, an older snapshot may be.
    #[error("is damaged: {0}")]
    Damaged(String),
    /// Written by a newer botlist: refused, never skipped, so no newer data is dropped.
    #[error("was written by a newer botlist (format version {0}; this build reads version {FORMAT_VERSION} and older)")]
    NewerVersion(u32),
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

/// MessagePack: a 4-element array, as a [`SavedState`] is encoded (format versions 1 and 2).
#[cfg(test)]
const STATE_ARRAY: u8 = 0x94;
/// MessagePack: the 5-element array of a version 3 payload.
const PARTS_ARRAY: u8 = 0x95;
/// MessagePack: an array of six parts (the five, then the audit log's entries).
const PARTS_ARRAY_AUDITED: u8 = 0x96;
/// Audit log entries per part of the audit log's part.
const AUDIT_PER_PART: usize = 65_536;
/// MessagePack: an array with a 32-bit big-endian length after it.
const ARRAY32: u8 = 0xdd;
/// Voters per part of the voter table: the parts are decoded on as many threads.
const VOTERS_PER_PART: usize = 16_384;

/// Writes a snapshot bot by bot, so that no copy of the whole directory is ever built.
///
/// The payload (format version 3) is a MessagePack array of five parts: `seq`, `registry_seq`,
/// the profiles, the bots, and the voter table. Profiles, each bot and each part of the voter
/// table are MessagePack binaries holding their own encoding, so a reader finds where each bot
/// starts without decoding the ones before it and decodes them on every core. Rings hold numbers
/// into the voter table, which is written after the bots, once every voter is known.
///
/// The bots' array takes the 32-bit length form whatever its size (valid MessagePack), so its
/// header can be filled in once the bots are counted; the CRC is put together from the parts
/// before, in and after that header.
pub struct SnapshotWriter {
    dir: PathBuf,
    seq: u64,
    temp: PathBuf,
    out: Checksummed<BufWriter<File>>,
    /// The CRC of the payload before the bots' array header, and where that header is.
    before_bots: crc32fast::Hasher,
    bots_at: u64,
    bots: u32,
    voters: SnapshotVoters,
    /// Each bot is encoded here first, to be written behind its length.
    buffer: Vec<u8>,
    /// The audit log, written last, once every record the snapshot stands for is published.
    audit: Option<Arc<AuditLog>>,
}

impl SnapshotWriter {
    /// Starts the temporary file with the state's numbers and profiles.
    pub fn create(
        dir: &Path,
        seq: u64,
        registry_seq: u64,
        profiles: &[Profile],
    ) -> io::Result<Self> {
        let temp = temp_path(dir, seq);
        // New, 0600, and never through a symlink (see `super::private`).
        let file = super::private::create_new(&temp)?;
        Self::start(dir, seq, registry_seq, profiles, temp.clone(), file)
            .inspect_err(|_| remove_temp(&temp))
    }

    fn start(
        dir: &Path,
        seq: u64,
        registry_seq: u64,
        profiles: &[Profile],
        temp: PathBuf,
        file: File,
    ) -> io::Result<Self> {
        let mut inner = BufWriter::with_capacity(1 << 20, file);
        inner.write_all(&[0u8; HEADER_LEN])?;
        let mut out = Checksummed {
            inner,
            crc: crc32fast::Hasher::new(),
            bytes: 0,
        };
        // The parts' array header, filled in by `finish` (five parts, or six with an audit
        // log); its CRC is taken there.
        out.inner.write_all(&[PARTS_ARRAY])?;
        out.bytes += 1;
        rmp_serde::encode::write(&mut out, &seq).map_err(io::Error::other)?;
        rmp_serde::encode::write(&mut out, &registry_seq).map_err(io::Error::other)?;
        let profiles = rmp_serde::to_vec(profiles).map_err(io::Error::other)?;
        write_bin(&mut out, &profiles)?;
        let before_bots = std::mem::replace(&mut out.crc, crc32fast::Hasher::new());
        let bots_at = out.bytes;
        // The bots' array header, filled in by `finish`; not in any CRC part yet.
        out.inner.write_all(&[ARRAY32, 0, 0, 0, 0])?;
        out.bytes += 5;
        Ok(Self {
            dir: dir.to_path_buf(),
            seq,
            temp,
            out,
            before_bots,
            bots_at,
            bots: 0,
            voters: SnapshotVoters::default(),
            buffer: Vec::new(),
            audit: None,
        })
    }

    pub fn bot(&mut self, bot: &StoredBot) -> io::Result<()> {
        self.bots = self
            .bots
            .checked_add(1)
            .ok_or_else(|| io::Error::other("more bots than a snapshot holds"))?;
        self.buffer.clear();
        codec::encode_numbered(&mut self.buffer, bot, &mut self.voters)
            .map_err(io::Error::other)?;
        write_bin(&mut self.out, &self.buffer)
    }

    /// The audit log to write after the voter table: every entry it holds when the snapshot is
    /// finished (given once the journal's barrier has passed, so that it holds the entry of
    /// every record up to the snapshot's number; later ones are passed over by replay).
    pub fn audit(&mut self, log: Arc<AuditLog>) {
        self.audit = Some(log);
    }

    /// The audit log's part, a chunk at a time under the log's lock; `false` when there is
    /// nothing to write (the snapshot then has five parts, as before the log existed).
    fn write_audit(&mut self) -> io::Result<bool> {
        let Some(log) = self.audit.take() else {
            return Ok(false);
        };
        let len = log.len();
        if len == 0 {
            return Ok(false);
        }
        let parts = len.div_ceil(AUDIT_PER_PART);
        rmp::encode::write_array_len(&mut self.out, parts as u32)?;
        for part in 0..parts {
            let from = part * AUDIT_PER_PART;
            let entries = log.entries(from, (from + AUDIT_PER_PART).min(len));
            let encoded = rmp_serde::to_vec(&entries).map_err(io::Error::other)?;
            write_bin(&mut self.out, &encoded)?;
        }
        Ok(true)
    }

    /// The voter table, after the last bot: every voter a ring holds, in number order.
    fn write_voters(&mut self) -> io::Result<()> {
        let voters = self.voters.voters();
        let parts = voters.chunks(VOTERS_PER_PART);
        rmp::encode::write_array_len(&mut self.out, parts.len() as u32)?;
        for part in parts {
            let part: Vec<&Voter> = part.iter().map(|voter| &**voter).collect();
            let encoded = rmp_serde::to_vec(&part).map_err(io::Error::other)?;
            write_bin(&mut self.out, &encoded)?;
        }
        Ok(())
    }

    /// Fills in the headers, makes the file durable and renames it into place; a snapshot that
    /// fails here removes its temporary file, so a full disk is not left fuller by the attempt.
    pub fn finish(self) -> io::Result<Written> {
        let temp = self.temp.clone();
        self.complete().inspect_err(|_| remove_temp(&temp))
    }

    fn complete(mut self) -> io::Result<Written> {
        self.write_voters()?;
        let parts_header = if self.write_audit()? {
            PARTS_ARRAY_AUDITED
        } else {
            PARTS_ARRAY
        };
        let mut bots_header = [ARRAY32, 0, 0, 0, 0];
        bots_header[1..].copy_from_slice(&self.bots.to_be_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&[parts_header]);
        crc.combine(&self.before_bots);
        let mut header_crc = crc32fast::Hasher::new();
        header_crc.update(&bots_header);
        crc.combine(&header_crc);
        crc.combine(&self.out.crc);
        let payload_len = self.out.bytes;
        let mut file: File = self.out.inner.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
        file.write_all(&[parts_header])?;
        file.seek(SeekFrom::Start(HEADER_LEN as u64 + self.bots_at))?;
        file.write_all(&bots_header)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header(self.seq, payload_len, crc.finalize()))?;
        file.sync_all()?;
        drop(file);
        let path = self.dir.join(snapshot_name(self.seq));
        fs::rename(&self.temp, &path)?;
        sync_dir(&self.dir)?;
        Ok(Written {
            path,
            bytes: HEADER_LEN as u64 + payload_len,
        })
    }

    /// Gives up: the temporary file is removed, nothing else was touched.
    pub fn abandon(self) {
        let temp = self.temp.clone();
        drop(self);
        let _ = fs::remove_file(temp);
    }
}

/// Writes MessagePack binary: its length, then the bytes.
fn write_bin(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| io::Error::other("a part over 4 GiB"))?;
    rmp::encode::write_bin_len(out, len)?;
    out.write_all(bytes)
}

/// Writes a whole state as a snapshot; one that fails leaves no temporary file.
pub fn write(dir: &Path, state: &SavedState) -> io::Result<Written> {
    let mut writer = SnapshotWriter::create(dir, state.seq, state.registry_seq, &state.profiles)?;
    for bot in &state.bots {
        if let Err(error) = writer.bot(bot) {
            writer.abandon();
            return Err(error);
        }
    }
    if !state.audit.is_empty() {
        let log = AuditLog::default();
        log.restore(state.audit.clone());
        writer.audit(Arc::new(log));
    }
    writer.finish()
}

fn remove_temp(temp: &Path) {
    if let Err(error) = fs::remove_file(temp) {
        if error.kind() != io::ErrorKind::NotFound {
            tracing::warn!(file = %temp.display(), %error, "cannot remove a failed snapshot's temporary file");
        }
    }
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

/// A payload behind a valid header, for tests and fuzzing of the decoder.
pub fn wrap(seq: u64, payload: &[u8]) -> Vec<u8> {
    wrap_version(FORMAT_VERSION, seq, payload)
}

/// As [`wrap`], with the header of an older format version.
pub fn wrap_version(version: u32, seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = header_of(version, seq, payload.len() as u64, crc32fast::hash(payload));
    out.extend_from_slice(payload);
    out
}

fn header(seq: u64, payload_len: u64, crc: u32) -> Vec<u8> {
    header_of(FORMAT_VERSION, seq, payload_len, crc)
}

fn header_of(version: u32, seq: u64, payload_len: u64, crc: u32) -> Vec<u8> {
    let mut out = files::header(MAGIC, version, seq, HEADER_LEN);
    out.extend_from_slice(&payload_len.to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

pub fn read(path: &Path) -> Result<SavedState, SnapshotError> {
    let file = File::open(path)?;
    match Mapped::of(&file) {
        Some(mapped) => decode(mapped.bytes()),
        None => decode(&fs::read(path)?),
    }
}

/// A snapshot file mapped into memory, read-only: reading a large file into a buffer of its own
/// zeroes fresh pages and copies the bytes on one core before any decoding thread can begin
/// (docs/PERFORMANCE.md has the figures); mapped, the page cache's pages are read where they
/// are.
///
/// Snapshot files are written whole under a temporary name and renamed into place, and never
/// changed after: the data directory's lock keeps other botlist processes out, and removing a
/// snapshot (retiring it) leaves a mapping whole. Where mapping fails, the file is read.
struct Mapped {
    at: *mut libc::c_void,
    len: usize,
}

impl Mapped {
    #[cfg(target_os = "linux")]
    fn of(file: &File) -> Option<Self> {
        use std::os::fd::AsRawFd;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return None;
        }
        // SAFETY: a new read-only private mapping of a file we hold open; no pointer is passed
        // in, and the result is checked before use.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        (at != libc::MAP_FAILED).then_some(Self { at, len })
    }

    #[cfg(not(target_os = "linux"))]
    fn of(_: &File) -> Option<Self> {
        None
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `at` is a live mapping of `len` readable bytes until `self` is dropped, and
        // the file is not changed while mapped (see the type's comment).
        unsafe { std::slice::from_raw_parts(self.at.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: unmaps exactly the mapping made in `of`, which nothing borrows any more.
        unsafe {
            libc::munmap(self.at, self.len);
        }
    }
}

/// Checks and decodes a whole snapshot file; never panics and never trusts a length it has
/// not checked against the bytes that are there.
pub fn decode(bytes: &[u8]) -> Result<SavedState, SnapshotError> {
    let damaged = |why: &str| SnapshotError::Damaged(why.to_string());
    if bytes.is_empty() {
        return Err(damaged("the file is empty"));
    }
    let (version, seq) = files::read_header(bytes, MAGIC).map_err(|fault| match fault {
        HeaderFault::Newer(version) => SnapshotError::NewerVersion(version),
        HeaderFault::BadMagic => damaged("not a botlist snapshot (bad magic bytes)"),
        fault => SnapshotError::Damaged(fault.to_string()),
    })?;
    if bytes.len() < HEADER_LEN {
        return Err(damaged("the header is cut short"));
    }
    let payload_len = files::u64_at(bytes, 20);
    let crc = files::u32_at(bytes, 28);
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
    let state = match version {
        1 | 2 => decode_whole(payload)?,
        _ => decode_parts(payload)?,
    };
    if state.seq != seq {
        return Err(damaged(
            "the header and the data disagree on the sequence number",
        ));
    }
    Ok(state)
}

fn undecodable(why: impl std::fmt::Display) -> SnapshotError {
    SnapshotError::Damaged(format!("the data does not decode: {why}"))
}

/// Format versions 1 and 2: the payload is one [`SavedState`], voters in full in each ring,
/// taken into the state's voter table.
fn decode_whole(payload: &[u8]) -> Result<SavedState, SnapshotError> {
    let mut state: SavedState = super::decode(payload).map_err(undecodable)?;
    let voters = state.voters();
    for bot in &mut state.bots {
        let damaged = |why| SnapshotError::Damaged(format!("bot {}: {why}", bot.state.listing.id));
        bot.state.votes.attach(&voters).map_err(damaged)?;
        restore(bot)?;
    }
    Ok(state)
}

/// Rebuilds a bot's derived indexes once, and checks its ring with them.
fn restore(bot: &mut StoredBot) -> Result<(), SnapshotError> {
    bot.state.restore();
    bot.state
        .votes
        .validate()
        .map_err(|why| SnapshotError::Damaged(format!("bot {}: {why}", bot.state.listing.id)))
}

/// Where each part of a version 3 payload is; nothing decoded yet.
struct Parts<'a> {
    seq: u64,
    registry_seq: u64,
    profiles: &'a [u8],
    bots: Vec<&'a [u8]>,
    voters: Vec<&'a [u8]>,
    /// The audit log's entries in parts; none in a snapshot of five parts.
    audit: Vec<&'a [u8]>,
}

impl<'a> Parts<'a> {
    fn find(payload: &'a [u8]) -> Result<Self, String> {
        use rmp::decode::{read_array_len, read_int};
        let mut rest = payload;
        let rd = &mut rest;
        let fault = |e: &dyn std::fmt::Display| e.to_string();
        let count = read_array_len(rd).map_err(|e| fault(&e))?;
        if count != 5 && count != 6 {
            return Err("not the five (or six) parts of a snapshot".into());
        }
        let seq: u64 = read_int(rd).map_err(|e| fault(&e))?;
        let registry_seq: u64 = read_int(rd).map_err(|e| fault(&e))?;
        let profiles = bin(rd)?;
        // Each bot takes at least one byte: a count above what is left is damage, not a size.
        let bots = read_array_len(rd).map_err(|e| fault(&e))? as usize;
        let bots = (0..bots.min(rd.len()))
            .map(|_| bin(rd))
            .collect::<Result<Vec<_>, _>>()?;
        let voters = read_array_len(rd).map_err(|e| fault(&e))? as usize;
        let voters = (0..voters.min(rd.len()))
            .map(|_| bin(rd))
            .collect::<Result<Vec<_>, _>>()?;
        let audit = if count == 6 {
            let parts = read_array_len(rd).map_err(|e| fault(&e))? as usize;
            (0..parts.min(rd.len()))
                .map(|_| bin(rd))
                .collect::<Result<Vec<_>, _>>()?
        } else {
            Vec::new()
        };
        if !rd.is_empty() {
            return Err(format!("{} bytes after the last part", rd.len()));
        }
        Ok(Self {
            seq,
            registry_seq,
            profiles,
            bots,
            voters,
            audit,
        })
    }
}

/// The bytes of a MessagePack binary, checked against what is there.
fn bin<'a>(rd: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let len = rmp::decode::read_bin_len(rd).map_err(|e| e.to_string())? as usize;
    if len > rd.len() {
        return Err("a part runs past the end of the data".into());
    }
    let (part, rest) = rd.split_at(len);
    *rd = rest;
    Ok(part)
}

/// Format version 3: the voter table first, then the bots, each part on as many cores as there
/// are (the parts are independent once the voters are known).
fn decode_parts(payload: &[u8]) -> Result<SavedState, SnapshotError> {
    let parts = Parts::find(payload).map_err(undecodable)?;
    let profiles: Vec<Profile> = super::decode(parts.profiles).map_err(undecodable)?;
    let decoded = decode_voters(&parts.voters)?;
    let voters = Arc::new(VoterTable::with_capacity(decoded.len()));
    let numbers = file_voters(decoded, &voters)?;
    let bots = map_in_parallel(&parts.bots, |bot| {
        let mut bot = codec::decode_numbered(bot, &voters, &numbers).map_err(undecodable)?;
        restore(&mut bot)?;
        Ok(bot)
    })?;
    Ok(SavedState {
        seq: parts.seq,
        registry_seq: parts.registry_seq,
        profiles,
        bots,
        audit: decode_audit(&parts.audit)?,
    })
}

/// The audit log's entries, part by part, in the order they were written (record order).
fn decode_audit(parts: &[&[u8]]) -> Result<AuditEntries, SnapshotError> {
    let mut entries = AuditEntries::default();
    for part in parts {
        let part: Vec<(u64, AuditEntry)> = super::decode(part).map_err(undecodable)?;
        for (seq, entry) in &part {
            if !entries.push(*seq, entry) {
                return Err(undecodable("audit log entries out of order"));
            }
        }
    }
    Ok(entries)
}

/// Decodes a snapshot's voter table and numbers its voters in `table` (see [`file_voters`]).
#[cfg(test)]
fn number_voters(parts: &[&[u8]], table: &VoterTable) -> Result<SnapshotNumbers, SnapshotError> {
    file_voters(decode_voters(parts)?, table)
}

/// A snapshot's voter table, in order, decoded on every core.
fn decode_voters(parts: &[&[u8]]) -> Result<Vec<Arc<Voter>>, SnapshotError> {
    in_parallel(parts, |share| {
        let mut voters = Vec::new();
        for part in share {
            let part: Vec<Voter> = super::decode(part).map_err(undecodable)?;
            voters.extend(part.into_iter().map(Arc::new));
        }
        Ok(voters)
    })
}

/// Numbers the voters of a snapshot's table in the state's table: the numbers given in a row
/// first (so that at a start, when that table is empty, a ring's or a history's number in the
/// snapshot is the state's), then each voter filed in the table's index, on every core.
fn file_voters(
    voters: Vec<Arc<Voter>>,
    table: &VoterTable,
) -> Result<SnapshotNumbers, SnapshotError> {
    let base = table.reserve(&voters);
    let too_many = || undecodable("more voters than a table holds");
    let runs = voters
        .chunks(VOTERS_PER_PART)
        .enumerate()
        .map(|(run, voters)| {
            let first = u32::try_from(run * VOTERS_PER_PART)
                .ok()
                .and_then(|at| base.checked_add(at))
                .ok_or_else(too_many)?;
            Ok((first, voters))
        })
        .collect::<Result<Vec<_>, SnapshotError>>()?;
    let numbers = in_parallel(&runs, |share| {
        Ok(share
            .iter()
            .flat_map(|&(first, voters)| table.file(first, voters))
            .collect())
    })?;
    Ok(SnapshotNumbers::from(numbers))
}

/// Maps `items` in order, `each` given contiguous shares of them (sixteen a core), the results
/// of each share joined in order.
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    each: impl Fn(&[T]) -> Result<Vec<R>, SnapshotError> + Sync,
) -> Result<Vec<R>, SnapshotError> {
    let cores = parallel::cores();
    let shares: Vec<&[T]> = items
        .chunks(items.len().div_ceil(cores * 16).max(1))
        .collect();
    let done = map_in_parts(&shares, cores, |share| each(share))?;
    Ok(done.into_iter().flatten().collect())
}

/// Maps each of `items` to one result, in order, on every core ([`parallel::map`]).
fn map_in_parallel<T: Sync, R: Send>(
    items: &[T],
    each: impl Fn(&T) -> Result<R, SnapshotError> + Sync,
) -> Result<Vec<R>, SnapshotError> {
    map_in_parts(items, parallel::cores(), each)
}

fn map_in_parts<T: Sync, R: Send>(
    items: &[T],
    cores: usize,
    each: impl Fn(&T) -> Result<R, SnapshotError> + Sync,
) -> Result<Vec<R>, SnapshotError> {
    parallel::map(items, cores, each).map_err(|failed| match failed {
        Failed::Item(error) => error,
        Failed::Panicked(_) => undecodable("a decoding thread panicked"),
    })
}

/// The format version in a snapshot's header when it is newer than this build's, read without
/// the rest of the file; `None` for every other file (damaged ones are judged when read).
pub fn newer_version(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut header = [0u8; files::HEADER_START];
    fs::File::open(path).ok()?.read_exact(&mut header).ok()?;
    match files::read_header(&header, MAGIC) {
        Err(HeaderFault::Newer(version)) => Some(version),
        _ => None,
    }
}

/// Snapshot files in `dir`, newest first.
pub fn list(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut found = SNAPSHOTS.list(dir)?;
    found.reverse();
    Ok(found)
}

/// Cluster mode: a snapshot's stream mark, `snapshot-<seq>.mark` beside it (JSON). Written once
/// the snapshot itself is durable; a snapshot without one is not used by a cluster node.
pub const MARKS: Numbered = Numbered::new("snapshot-", ".mark");

pub fn write_mark(dir: &Path, seq: u64, mark: super::StreamMark) -> io::Result<()> {
    let path = dir.join(MARKS.name(seq));
    let temp = dir.join(format!("{}.tmp", MARKS.name(seq)));
    let _ = fs::remove_file(&temp);
    let mut file = super::private::create_new(&temp)?;
    file.write_all(&serde_json::to_vec(&mark).map_err(io::Error::other)?)?;
    file.sync_all()?;
    fs::rename(&temp, &path)?;
    super::sync_dir(dir)
}

/// The mark of snapshot `seq`, if it has one that reads.
pub fn read_mark(dir: &Path, seq: u64) -> Option<super::StreamMark> {
    let bytes = fs::read(dir.join(MARKS.name(seq))).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn remove_mark(dir: &Path, seq: u64) -> io::Result<()> {
    match fs::remove_file(dir.join(MARKS.name(seq))) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::{self, DemoSize};
    use crate::domain::time::Timestamp;

    /// A generated directory of this many bots and votes, from this many voters.
    fn generated(seed: u64, bots: usize, voters: u64, votes: usize) -> SavedState {
        let size = DemoSize {
            seed,
            bots,
            profiles: 10,
            voters,
            votes,
        };
        demo::build(Timestamp::from_millis(1_790_000_000_000), &size).state
    }

    #[test]
    fn a_streamed_snapshot_decodes_to_the_state_encoded_whole() {
        let mut state = generated(7, 40, 2_000, 5_000);
        state.seq = 41;
        state.registry_seq = 40;
        let whole = rmp_serde::to_vec(&state).expect("encodes");
        assert_eq!(
            whole[0], STATE_ARRAY,
            "a SavedState is encoded as a 4-element array"
        );

        let dir = tempfile::tempdir().expect("a directory");
        let written = write(dir.path(), &state).expect("written");
        let back = read(&written.path).expect("a good snapshot");
        assert_eq!(rmp_serde::to_vec(&back).expect("encodes"), whole);
        assert!(!dir
            .path()
            .join(format!("{}.tmp", snapshot_name(41)))
            .exists());

        let empty = SavedState::default();
        let written = write(dir.path(), &empty).expect("written");
        let back = read(&written.path).expect("a good snapshot");
        assert!(back.bots.is_empty() && back.profiles.is_empty());
    }

    #[test]
    fn a_version_2_snapshot_reads_as_the_same_state() {
        let mut state = generated(11, 70, 500, 4_000);
        state.seq = 9;
        let whole = rmp_serde::to_vec(&state).expect("encodes");
        let old = decode(&wrap_version(2, 9, &whole)).expect("a version 2 file reads");
        assert_eq!(rmp_serde::to_vec(&old).expect("encodes"), whole);

        let dir = tempfile::tempdir().expect("a directory");
        let written = write(dir.path(), &state).expect("written");
        let bytes = fs::read(&written.path).expect("read");
        assert_eq!(bytes[8..12], FORMAT_VERSION.to_le_bytes());
        assert!(
            bytes.len() < HEADER_LEN + whole.len(),
            "the voter table stores each voter once: {} against {}",
            bytes.len(),
            HEADER_LEN + whole.len()
        );
        let new = decode(&bytes).expect("a version 3 file reads");
        assert_eq!(rmp_serde::to_vec(&new).expect("encodes"), whole);
        // Rings read from either hold their state's copy of each voter (two states share
        // none: each has a voter table of its own).
        let first = |state: &SavedState| {
            state
                .bots
                .iter()
                .find_map(|bot| bot.state.votes.recent_voters().next().map(|(v, _)| v))
                .expect("a voter")
        };
        assert_eq!(first(&old), first(&new));
        let table = |state: &SavedState| {
            let voter = first(state);
            let number = state.voters().number(&voter);
            state.voters().get(number).expect("the state's copy")
        };
        assert!(Arc::ptr_eq(&first(&old), &table(&old)));
        assert!(Arc::ptr_eq(&first(&new), &table(&new)));
        assert!(!Arc::ptr_eq(&first(&old), &first(&new)));
    }

    #[test]
    fn a_voter_number_past_the_table_is_damage() {
        let state = generated(3, 4, 20, 40);
        let dir = tempfile::tempdir().expect("a directory");
        let mut writer =
            SnapshotWriter::create(dir.path(), 0, 0, &state.profiles).expect("created");
        for bot in &state.bots {
            writer.bot(bot).expect("written");
        }
        // Forget the voters: every number the rings hold points past an empty table.
        writer.voters = SnapshotVoters::default();
        let written = writer.finish().expect("finished");
        let error = read(&written.path).expect_err("refused");
        assert!(
            matches!(&error, SnapshotError::Damaged(why) if why.contains("voter table")),
            "{error}"
        );
    }

    #[test]
    fn a_voter_table_is_numbered_in_a_row_unless_its_voters_are_known() {
        let voters: Vec<Voter> = (0..40u64)
            .map(|i| Voter {
                id: crate::domain::ids::Snowflake::from_u64(978_000_000_000_000_000 + i),
                username: crate::domain::text::VoterName::parse(format!("row{i}")).expect("valid"),
                avatar: None,
            })
            .collect();
        let parts: Vec<Vec<u8>> = voters
            .chunks(15)
            .map(|part| rmp_serde::to_vec(part).expect("encodes"))
            .collect();
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let table = VoterTable::new();

        let fresh = number_voters(&parts, &table).expect("decodes");
        assert!(fresh.in_row(), "new voters are numbered in a row");
        for (i, voter) in (0..).zip(&voters) {
            let number = fresh.get(i).expect("numbered");
            assert_eq!(table.get(number).as_deref(), Some(voter));
        }
        assert_eq!(fresh.get(40), None);

        // Read again (an older snapshot after a damaged newer one): the voters keep their
        // numbers (in a row from the first base), and the entries reserved for them hold the
        // table's copies.
        let again = number_voters(&parts, &table).expect("decodes");
        for i in 0..40 {
            assert_eq!(again.get(i), fresh.get(i));
        }
        let shared = table.get(fresh.get(0).expect("numbered")).expect("a voter");
        assert_eq!(
            Arc::strong_count(&shared),
            4,
            "the list twice, the index, this test"
        );
    }

    #[test]
    fn a_failed_snapshot_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A directory where the snapshot must go makes the final rename fail.
        let target = dir.path().join(snapshot_name(0));
        fs::create_dir(&target).expect("dir");
        fs::write(target.join("in-the-way"), b"x").expect("file");
        write(dir.path(), &SavedState::default()).expect_err("the rename fails");
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

    #[test]
    fn mapping_in_place_gives_each_result_in_order_on_any_number_of_cores() {
        let items: Vec<u64> = (0..1_000).collect();
        for cores in [1, 2, 3, 8] {
            let mapped = map_in_parts(&items, cores, |n| Ok(format!("bot {n}"))).expect("mapped");
            let serial: Vec<String> = items.iter().map(|n| format!("bot {n}")).collect();
            assert_eq!(mapped, serial, "{cores} cores");
        }
    }

    #[test]
    fn a_failed_mapping_names_the_first_failure_and_drops_every_result_made() {
        let made = Arc::new(());
        let items: Vec<u64> = (0..5_000).collect();
        for cores in [2, 3, 8] {
            let failed = map_in_parts(&items, cores, |&n| {
                if n == 1_234 || n == 4_321 {
                    return Err(undecodable(format!("item {n}")));
                }
                Ok(Arc::clone(&made))
            })
            .expect_err("an item fails");
            assert!(failed.to_string().contains("item 1234"), "{failed}");
            assert_eq!(
                Arc::strong_count(&made),
                1,
                "{cores} cores: every result dropped"
            );
        }
    }
}
