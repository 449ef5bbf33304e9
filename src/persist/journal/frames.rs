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

/// The checksum of the first durable build (`8e05296d`, format 1), which left the length out.
/// Its segments carry the same version number as those of the builds after it, so a frame
/// whose checksum is this one is read as theirs: without it, today's build took such a
/// segment's first record for a torn write and dropped every record in it
/// (tests/fixtures/format-v1).
fn legacy_frame_crc(seq: [u8; 8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&seq);
    hasher.update(payload);
    hasher.finalize()
}

pub fn segment_header(first_seq: u64) -> Vec<u8> {
    files::header(MAGIC, FORMAT_VERSION, first_seq, HEADER_LEN)
}

/// Why a frame does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Cut short, a checksum mismatch, an impossible length, a record that breaks its own
    /// rules: damage or a torn write.
    Damaged(String),
    /// The checksum is good but this build cannot decode the record: a newer botlist wrote a
    /// kind of record (or a field's value) this one does not know. Never damage, never a torn
    /// write, never passed over: applying what follows without it would serve a wrong state.
    Unknown(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Damaged(why) => f.write_str(why),
            FrameError::Unknown(why) => write!(
                f,
                "a record this build does not know (written by a newer botlist?): {why}"
            ),
        }
    }
}

impl From<String> for FrameError {
    fn from(why: String) -> Self {
        FrameError::Damaged(why)
    }
}

impl From<&str> for FrameError {
    fn from(why: &str) -> Self {
        FrameError::Damaged(why.to_owned())
    }
}

/// One frame: its sequence number, record and length in bytes.
pub fn read_frame(rest: &[u8]) -> Result<(u64, Record, usize), FrameError> {
    let (seq, payload, end) = frame_bytes(rest)?;
    let record: Record = crate::persist::decode(payload).map_err(|e| unknown_record(payload, e))?;
    if let Record::BotListed { state, .. } = &record {
        state.votes.validate()?;
    }
    Ok((seq, record, end))
}

/// One frame whose checksum is good, without decoding its record: its sequence number, payload
/// and length in bytes. A backup copies frames this way, whatever their kind.
pub fn frame_bytes(rest: &[u8]) -> Result<(u64, &[u8], usize), FrameError> {
    if rest.len() < FRAME_HEADER_LEN {
        return Err("a record header is cut short".into());
    }
    let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
    if len > MAX_RECORD_BYTES {
        return Err(format!("a record claims {len} bytes, more than any record has").into());
    }
    let end = FRAME_HEADER_LEN + len;
    if end > rest.len() {
        return Err("a record is cut short".into());
    }
    let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&rest[8..16]);
    let payload = &rest[FRAME_HEADER_LEN..end];
    if frame_crc([rest[0], rest[1], rest[2], rest[3]], seq, payload) != crc
        && legacy_frame_crc(seq, payload) != crc
    {
        return Err("checksum mismatch".into());
    }
    Ok((u64::from_le_bytes(seq), &rest[FRAME_HEADER_LEN..end], end))
}

/// A record whose checksum is good and which does not decode. The checksum rules out damage,
/// so it was written by a build that knows more: a record kind this build does not know
/// (records are a MessagePack map from the kind's name to its fields), or a new value inside
/// a known one. The message names the kind when it can.
fn unknown_record(payload: &[u8], error: rmp_serde::decode::Error) -> FrameError {
    match record_kind(payload) {
        Some(kind) => FrameError::Unknown(format!("record kind {kind}: {error}")),
        None => FrameError::Unknown(error.to_string()),
    }
}

/// The name of a record's kind (its number, from a writer that numbered them), read from its
/// MessagePack without decoding the rest.
pub fn record_kind(payload: &[u8]) -> Option<String> {
    let mut rest = payload;
    let len = rmp::decode::read_map_len(&mut rest).ok()?;
    if len != 1 {
        return None;
    }
    let mut name = [0u8; 64];
    if let Ok(name) = rmp::decode::read_str(&mut { rest }, &mut name) {
        return Some(name.to_owned());
    }
    rmp::decode::read_int::<u64, _>(&mut rest)
        .ok()
        .map(|n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::ProfileId;
    use crate::persist::journal::{scan_segment, SegmentEnd};

    /// A record of a kind this build does not know, as a newer build would write it: the
    /// kind's name, then its fields.
    fn newer_kind(kind: &str) -> Vec<u8> {
        let mut payload = Vec::new();
        rmp::encode::write_map_len(&mut payload, 1).expect("encodes");
        rmp::encode::write_str(&mut payload, kind).expect("encodes");
        rmp::encode::write_str(&mut payload, "a field this build has never seen").expect("encodes");
        payload
    }

    #[test]
    fn a_frame_of_the_first_build_reads_and_a_damaged_one_does_not() {
        let payload =
            rmp_serde::to_vec(&Record::ProfileDeleted(ProfileId::new_random())).expect("encodes");
        // As `8e05296d` framed it: the checksum over the number and the record only.
        let mut framed = frame(3, &payload);
        let legacy = legacy_frame_crc(3u64.to_le_bytes(), &payload);
        framed[4..8].copy_from_slice(&legacy.to_le_bytes());
        let (seq, _, used) = read_frame(&framed).expect("reads");
        assert_eq!((seq, used), (3, framed.len()));
        let mut flipped = framed;
        *flipped.last_mut().expect("bytes") ^= 1;
        assert!(matches!(read_frame(&flipped), Err(FrameError::Damaged(_))));
    }

    #[test]
    fn a_record_kind_is_its_number_in_the_enum() {
        let record = Record::ProfileDeleted(ProfileId::new_random());
        let payload = rmp_serde::to_vec(&record).expect("encodes");
        assert_eq!(record_kind(&payload).as_deref(), Some("ProfileDeleted"));
    }

    #[test]
    fn a_good_frame_of_an_unknown_kind_is_unknown_not_damage() {
        let framed = frame(7, &newer_kind("ProfileTokenIssued"));
        match read_frame(&framed) {
            Err(FrameError::Unknown(why)) => {
                assert!(why.contains("record kind ProfileTokenIssued"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        let (seq, payload, used) = frame_bytes(&framed).expect("the frame itself is whole");
        assert_eq!((seq, used), (7, framed.len()));
        assert_eq!(record_kind(payload).as_deref(), Some("ProfileTokenIssued"));
        // The same frame with a byte flipped is damage.
        let mut flipped = framed.clone();
        *flipped.last_mut().expect("bytes") ^= 1;
        assert!(matches!(read_frame(&flipped), Err(FrameError::Damaged(_))));
    }

    #[test]
    fn a_segment_ending_in_an_unknown_record_is_not_read_as_torn() {
        let path = std::path::PathBuf::from(segment_name(1));
        let known =
            rmp_serde::to_vec(&Record::ProfileDeleted(ProfileId::new_random())).expect("encodes");
        let mut bytes = segment_header(1);
        bytes.extend_from_slice(&frame(1, &known));
        bytes.extend_from_slice(&frame(2, &newer_kind("Announced")));
        // Zeros after it, as in a segment made ahead: a damaged last record would be torn.
        bytes.extend_from_slice(&[0; 64]);
        let scan = scan_segment(&path, &bytes);
        assert_eq!(scan.records.len(), 1);
        match scan.end {
            SegmentEnd::UnknownRecord { seq, offset, .. } => {
                assert_eq!(seq, 2);
                assert_eq!(offset, (HEADER_LEN + FRAME_HEADER_LEN + known.len()) as u64);
            }
            other => panic!("{other:?}"),
        }
    }
}
