//! The bytes of a journal segment: its name, its header and its frames.

use std::io;
use std::path::{Path, PathBuf};

use crate::persist::files::{self, Numbered};
use crate::persist::state::Record;
use crate::persist::FORMAT_VERSION;

pub const MAGIC: &[u8; 8] = b"BLJOURNL";
/// The first format version whose segments are made ahead with zeros and named by the head.
pub const ZEROED_AHEAD: u32 = 5;
pub const HEADER_LEN: usize = 8 + 4 + 8;
pub const FRAME_HEADER_LEN: usize = 4 + 4 + 8;
/// No record is near this; a length above it is damage, not data.
pub const MAX_RECORD_BYTES: usize = 4 * 1024 * 1024;

/// Journal segments: `journal-<first seq>.log`.
pub const SEGMENTS: Numbered = Numbered::new("journal-", ".log");

pub fn segment_name(first_seq: u64) -> String {
    SEGMENTS.name(first_seq)
}

/// The first sequence number in a segment's file name.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    SEGMENTS.parse(name)
}

/// Journal segments in `dir`, oldest first.
pub fn list(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    SEGMENTS.list(dir)
}

pub fn frame(seq: u64, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
    out.extend_from_slice(&len);
    out.extend_from_slice(&frame_crc(len, seq.to_le_bytes(), payload).to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The CRC covers the length too, so a damaged length is caught, not read as a torn end.
fn frame_crc(len: [u8; 4], seq: [u8; 8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len);
    hasher.update(&seq);
    hasher.update(payload);
    hasher.finalize()
}

pub fn segment_header(first_seq: u64) -> Vec<u8> {
    files::header(MAGIC, FORMAT_VERSION, first_seq, HEADER_LEN)
}

/// One frame: its sequence number, record and length in bytes.
pub fn read_frame(rest: &[u8]) -> Result<(u64, Record, usize), String> {
    if rest.len() < FRAME_HEADER_LEN {
        return Err("a record header is cut short".into());
    }
    let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
    if len > MAX_RECORD_BYTES {
        return Err(format!(
            "a record claims {len} bytes, more than any record has"
        ));
    }
    let end = FRAME_HEADER_LEN + len;
    if end > rest.len() {
        return Err("a record is cut short".into());
    }
    let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&rest[8..16]);
    if frame_crc(
        [rest[0], rest[1], rest[2], rest[3]],
        seq,
        &rest[FRAME_HEADER_LEN..end],
    ) != crc
    {
        return Err("checksum mismatch".into());
    }
    let record: Record = crate::persist::decode(&rest[FRAME_HEADER_LEN..end])
        .map_err(|e| format!("a record with a good checksum does not decode: {e}"))?;
    if let Record::BotListed { state, .. } = &record {
        state.votes.validate()?;
    }
    Ok((u64::from_le_bytes(seq), record, end))
}
