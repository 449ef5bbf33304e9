//! The single-node sink: segment files in the data directory, made ahead with zeros and named
//! by the journal's head (`persist::head`).

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::frames::{segment_header, segment_name, HEADER_LEN};
use super::scan::read_segment;
use super::writer::{io_error, io_error_after_write};
use super::{FsyncMode, JournalError, Sink};
use crate::persist::{head, sync_dir};

/// The file a probe of the disk writes, syncs and removes (`Sink::probe`).
pub const PROBE_FILE: &str = "journal.probe";

/// A segment past this size is closed and a new one started.
const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

/// The length a new segment is made to: its header, then zeros. A segment is written ahead of
/// its records so that its length says how far it was made (the journal's head keeps that
/// length, `super::head`): a start then tells a segment cut short from one that was never
/// longer. It also spares each batch's fdatasync the write of the file's size.
const SEGMENT_START_LENGTH: u64 = 1 << 20;
/// A segment grows by its own length each time, up to this much at once.
const MAX_GROWTH: u64 = 8 << 20;

struct Segment {
    file: BufWriter<File>,
    first_seq: u64,
    /// Bytes of header and records; the rest of the file, up to `length`, is zeros.
    bytes: u64,
    length: u64,
    records: u64,
    /// Where the batch being written began (`bytes`, `records`) and how far its frames can
    /// reach: what [`FileSink::take_back`] zeroes when the batch fails after its write.
    batch: (u64, u64, u64),
}

impl Segment {
    /// Makes the segment to its first length, durably, then names it the newest in the head:
    /// no record is written into a segment the head does not name yet.
    fn create(dir: &Path, first_seq: u64) -> io::Result<Self> {
        let path: PathBuf = dir.join(segment_name(first_seq));
        // A segment of this name exists when the last run wrote no record after starting it
        // (or only a torn one): it holds nothing acknowledged, so it is started over.
        if path.exists() && !read_segment(&path)?.records.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already holds records", path.display()),
            ));
        }
        // 0600 and never through a symlink (see `super::private`).
        let mut file = crate::persist::private::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        file.write_all(&segment_header(first_seq))?;
        write_zeros(&file, HEADER_LEN as u64, SEGMENT_START_LENGTH)?;
        file.sync_all()?;
        sync_dir(dir)?;
        head::Head {
            newest: first_seq,
            length: SEGMENT_START_LENGTH,
            closed: None,
        }
        .write(dir)?;
        file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
        Ok(Self {
            file: BufWriter::with_capacity(1 << 20, file),
            first_seq,
            bytes: HEADER_LEN as u64,
            length: SEGMENT_START_LENGTH,
            records: 0,
            batch: (HEADER_LEN as u64, 0, HEADER_LEN as u64),
        })
    }

    /// Grows the file by zeros, durably, before the head says its new length, so that a crash
    /// at any point leaves the file at least as long as the head says.
    fn make_room(&mut self, dir: &Path, more: u64) -> io::Result<()> {
        let needed = self.bytes + more;
        if needed <= self.length {
            return Ok(());
        }
        let grown = needed.max(self.length + self.length.min(MAX_GROWTH));
        write_zeros(self.file.get_ref(), self.length, grown)?;
        self.file.get_ref().sync_data()?;
        head::Head {
            newest: self.first_seq,
            length: grown,
            closed: None,
        }
        .write(dir)?;
        self.length = grown;
        Ok(())
    }

    /// The last record written into this segment (the one before it when there is none).
    fn last_seq(&self) -> u64 {
        (self.first_seq + self.records).saturating_sub(1)
    }
}

/// Writes zeros from `from` up to `to` without moving the file's cursor.
fn write_zeros(file: &File, from: u64, to: u64) -> io::Result<()> {
    let zeros = vec![0u8; 64 << 10];
    let mut at = from;
    while at < to {
        let n = zeros.len().min((to - at) as usize);
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// The single-node sink: segment files in the data directory, rotated past 64 MiB or on request.
pub struct FileSink {
    dir: PathBuf,
    segment: Segment,
    mode: FsyncMode,
}

impl FileSink {
    pub fn create(dir: &Path, next_seq: u64, mode: FsyncMode) -> io::Result<Self> {
        Ok(Self {
            dir: dir.to_path_buf(),
            segment: Segment::create(dir, next_seq)?,
            mode,
        })
    }
}

impl Sink for FileSink {
    fn commit(
        &mut self,
        frames: &[&[u8]],
        first_seq: u64,
        requested: bool,
        sync: bool,
    ) -> Result<(), JournalError> {
        let rotate = self.segment.records > 0 && (requested || self.segment.bytes >= SEGMENT_BYTES);
        if rotate {
            self.sync()?;
            let old = std::mem::replace(
                &mut self.segment,
                Segment::create(&self.dir, first_seq).map_err(io_error)?,
            );
            // No longer the newest: the next segment's first number says where it ends, so its
            // zeros are only taken space.
            let _ = old.file.get_ref().set_len(old.bytes);
        }
        let more: u64 = frames.iter().map(|f| f.len() as u64).sum();
        self.segment.batch = (
            self.segment.bytes,
            self.segment.records,
            self.segment.bytes + more,
        );
        self.segment.make_room(&self.dir, more).map_err(io_error)?;
        for frame in frames {
            self.segment
                .file
                .write_all(frame)
                .map_err(io_error_after_write)?;
            self.segment.bytes += frame.len() as u64;
            crate::telemetry::journal_written(frame.len());
            self.segment.records += 1;
        }
        self.segment.file.flush().map_err(io_error_after_write)?;
        if sync {
            self.sync().map_err(|error| match error {
                JournalError::Write(error) => JournalError::MaybeWritten(error),
                other => other,
            })?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), JournalError> {
        crate::telemetry::timed_fsync(|| self.segment.file.get_ref().sync_data()).map_err(io_error)
    }

    /// Says in the head where the journal ends, so that a next start can tell the newest
    /// segment's last records from records that were never written.
    fn close(&mut self) -> Result<(), JournalError> {
        self.segment.file.flush().map_err(io_error)?;
        self.sync()?;
        head::Head {
            newest: self.segment.first_seq,
            length: self.segment.length,
            closed: Some(self.segment.last_seq()),
        }
        .write(&self.dir)
        .map_err(io_error)
    }

    fn mode(&self) -> FsyncMode {
        self.mode
    }

    /// Writes 4 KiB to a new file in the data directory (`journal.probe`), syncs it and removes
    /// it: a new block must be found (a full disk refuses it), written and synced (a failing
    /// or read-only one refuses that). The segments are not touched.
    fn probe(&mut self) -> io::Result<()> {
        let path = self.dir.join(PROBE_FILE);
        let written = crate::persist::private::create_new(&path).and_then(|mut file| {
            file.write_all(&[0u8; 4096])?;
            file.sync_all()
        });
        let removed = std::fs::remove_file(&path);
        written.and(removed)
    }

    /// Zeroes the failed batch's bytes (the segment's unwritten part is zeros, so a scan ends
    /// there), makes that durable and writes on from where the batch began. Whatever the
    /// buffer still held of the batch is dropped, never written later.
    fn take_back(&mut self) -> io::Result<()> {
        let (start, records, end) = self.segment.batch;
        let fresh = BufWriter::with_capacity(1 << 20, self.segment.file.get_ref().try_clone()?);
        // `into_parts` drops the buffer without writing it (a drop would flush it).
        let _ = std::mem::replace(&mut self.segment.file, fresh).into_parts();
        let file = self.segment.file.get_ref();
        write_zeros(file, start, end.min(self.segment.length))?;
        crate::telemetry::timed_fsync(|| file.sync_data())?;
        self.segment.file.seek(SeekFrom::Start(start))?;
        self.segment.bytes = start;
        self.segment.records = records;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_writes_syncs_and_removes_its_file_and_leaves_the_segment_alone() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut sink = FileSink::create(dir.path(), 1, FsyncMode::Always).expect("sink");
        let segment = dir.path().join(segment_name(1));
        let before = std::fs::read(&segment).expect("segment");
        sink.probe().expect("a writable directory takes the probe");
        assert!(!dir.path().join(PROBE_FILE).exists());
        assert_eq!(std::fs::read(&segment).expect("segment"), before);
        // A directory that cannot take a new file refuses the probe.
        drop(sink);
        let gone = tempfile::tempdir().expect("temp dir");
        let mut sink = FileSink::create(gone.path(), 1, FsyncMode::Always).expect("sink");
        std::fs::remove_dir_all(gone.path()).expect("removed");
        assert!(sink.probe().is_err());
    }
}
