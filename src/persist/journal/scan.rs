//! Reading a segment back: its records, and how it ends (whole, torn by a crash, damaged).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::frames::{
    parse_segment_name, read_frame, FrameError, FRAME_HEADER_LEN, HEADER_LEN, MAGIC, ZEROED_AHEAD,
};
use crate::persist::files::{self, HeaderFault};
use crate::persist::state::Record;

/// How a segment ended when read back.
#[derive(Debug, PartialEq, Eq)]
pub enum SegmentEnd {
    Clean,
    /// The last record was cut short by a crash mid-write: never acknowledged, dropped.
    Torn {
        offset: u64,
        /// The bytes of the torn record that were dropped.
        dropped: u64,
    },
    /// Damage followed by more data: never skipped silently.
    Corrupt {
        offset: u64,
        reason: String,
        /// The highest record number in a good frame after the damage (the one before the
        /// damage when none is found), so that a start knows which numbers were used.
        beyond: u64,
        /// Bytes from the damage to the segment's last byte that is not zero: how many
        /// records could be there that no frame shows.
        unread: u64,
    },
    /// Written by a newer botlist: refused, never passed over.
    NewerVersion(u32),
    /// A record with a good checksum this build cannot decode (a newer botlist wrote a kind of
    /// record it does not know): refused like a newer version, even with `--recover`, never
    /// read as damage or a torn write.
    UnknownRecord {
        offset: u64,
        seq: u64,
        reason: String,
    },
}

#[derive(Debug)]
pub struct SegmentScan {
    pub path: PathBuf,
    /// The format version in its header (0 when the header is unreadable).
    pub version: u32,
    /// The file's length in bytes.
    pub length: u64,
    pub first_seq: u64,
    pub records: Vec<(u64, Record)>,
    pub end: SegmentEnd,
}

/// Reads and checks one segment. A damaged tail of zeros or a record that runs past the end of
/// the file is a torn write; a bad record with data after it is corruption.
pub fn read_segment(path: &Path) -> io::Result<SegmentScan> {
    let bytes = fs::read(path)?;
    Ok(scan_segment(path, &bytes))
}

pub fn scan_segment(path: &Path, bytes: &[u8]) -> SegmentScan {
    let name_seq = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_segment_name)
        .unwrap_or(0);
    let mut scan = SegmentScan {
        path: path.to_path_buf(),
        version: 0,
        length: bytes.len() as u64,
        first_seq: name_seq,
        records: Vec::new(),
        end: SegmentEnd::Clean,
    };
    match check_header(bytes, name_seq) {
        Ok(version) => scan.version = version,
        Err(end) => {
            scan.end = end;
            return scan;
        }
    }
    read_frames(&mut scan, bytes);
    scan
}

/// The segment's format version, or how the segment ends at its header.
fn check_header(bytes: &[u8], name_seq: u64) -> Result<u32, SegmentEnd> {
    let corrupt = |offset: u64, reason: String| SegmentEnd::Corrupt {
        offset,
        reason,
        beyond: name_seq.saturating_sub(1),
        unread: (held(bytes) as u64).saturating_sub(offset),
    };
    match files::read_header(bytes, MAGIC) {
        Ok((version, first)) if first == name_seq => Ok(version),
        Ok(_) => Err(corrupt(
            12,
            "the header's first record number does not match the file name".into(),
        )),
        // A crash between creating the file and writing its header: nothing was acknowledged.
        Err(HeaderFault::CutShort) => Err(SegmentEnd::Torn {
            offset: 0,
            dropped: bytes.len() as u64,
        }),
        Err(HeaderFault::BadMagic) => {
            Err(corrupt(0, "not a botlist journal (bad magic bytes)".into()))
        }
        Err(HeaderFault::Newer(version)) => Err(SegmentEnd::NewerVersion(version)),
        Err(fault @ HeaderFault::NoSuchVersion) => Err(corrupt(8, fault.to_string())),
    }
}

/// Reads the frames after the header into `scan`, and how they end.
fn read_frames(scan: &mut SegmentScan, bytes: &[u8]) {
    let mut offset = HEADER_LEN;
    let mut expected = scan.first_seq;
    while offset < bytes.len() {
        let frame = read_frame(&bytes[offset..]).and_then(|(seq, record, used)| {
            if seq == expected {
                Ok((seq, record, used))
            } else {
                Err(FrameError::Damaged(format!(
                    "record {seq} where record {expected} belongs"
                )))
            }
        });
        match frame {
            Ok((seq, record, used)) => {
                scan.records.push((seq, record));
                offset += used;
                expected = seq + 1;
            }
            Err(FrameError::Unknown(reason)) => {
                scan.end = SegmentEnd::UnknownRecord {
                    offset: offset as u64,
                    seq: expected,
                    reason,
                };
                return;
            }
            Err(FrameError::Damaged(reason)) => {
                scan.end = end_at(
                    &bytes[offset..],
                    offset as u64,
                    expected,
                    reason,
                    scan.version,
                );
                return;
            }
        }
    }
}

/// How a segment ends at a frame that does not read: its zeros (version 5 on, the records end
/// where they start), a torn write, or damage with good records after it.
fn end_at(rest: &[u8], offset: u64, expected: u64, reason: String, version: u32) -> SegmentEnd {
    let written = held(rest);
    if written == 0 && version >= ZEROED_AHEAD {
        return SegmentEnd::Clean;
    }
    // A crash tears only the end: a good record anywhere after the bad bytes means the damage
    // is in the middle, and what follows was acknowledged.
    if later_record(&rest[1..], expected).is_some() {
        SegmentEnd::Corrupt {
            offset,
            reason,
            beyond: highest_after(&rest[1..], expected).unwrap_or(expected - 1),
            unread: written as u64,
        }
    } else {
        SegmentEnd::Torn {
            offset,
            dropped: written as u64,
        }
    }
}

/// Where a valid frame of one of the next few records starts in `rest`, if anywhere.
fn later_record(rest: &[u8], expected: u64) -> Option<usize> {
    (0..rest.len().saturating_sub(FRAME_HEADER_LEN)).find(|&at| {
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&rest[at + 8..at + 16]);
        let seq = u64::from_le_bytes(seq);
        (expected..expected.saturating_add(64)).contains(&seq) && read_frame(&rest[at..]).is_ok()
    })
}

/// The highest record number in the good frames of `rest`: each run of frames is followed
/// frame by frame, and the bytes after a run searched for the next.
fn highest_after(rest: &[u8], mut expected: u64) -> Option<u64> {
    let mut highest = None;
    let mut at = 0;
    while let Some(found) = rest.get(at..).and_then(|r| later_record(r, expected)) {
        at += found;
        while let Ok((seq, _, used)) = read_frame(&rest[at..]) {
            highest = Some(seq);
            expected = seq + 1;
            at += used;
        }
        at += 1;
    }
    highest
}

/// How many bytes of `bytes` are not the zeros a segment is made ahead with.
fn held(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |last| last + 1)
}
