//! The journal's head: which segment is the newest, how long it was made, and, after a clean
//! stop, the last record it holds.
//!
//! Without it a start cannot tell a newest segment that was removed, or cut short, from a
//! directory that never had those records: the files that remain look whole. The writer keeps
//! three promises that make the head a proof (docs/PERSISTENCE.md, "The journal's head"):
//! - a segment is made to its full length (zeros after the header) and synced before the head
//!   names it, and no record is written into a segment before the head names it;
//! - a segment grows only by zeros that are synced before the head says the new length, so a
//!   segment the head names is never shorter than the head says, whatever crash came;
//! - `closed` is written only at a clean stop, after the last record is durable.
//!
//! `journal.head`: `magic "BLJHEAD_" | format version u32 | newest segment's first seq u64 |
//! its length u64 | closed u64 (the last record, u64::MAX while the journal is open) |
//! CRC-32 u32 of everything before it`, little-endian, written through `journal.head.tmp`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::files::{self, HeaderFault, HEADER_START};
use super::{sync_dir, FORMAT_VERSION};

pub const FILE: &str = "journal.head";
const TEMP: &str = "journal.head.tmp";
const MAGIC: &[u8; 8] = b"BLJHEAD_";
const LEN: usize = HEADER_START + 8 + 8 + 4;
const OPEN: u64 = u64::MAX;

/// What the head says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// The first record number of the newest segment (its file name).
    pub newest: u64,
    /// The newest segment's file is at least this long.
    pub length: u64,
    /// After a clean stop, the last record in the journal; `None` while it is written.
    pub closed: Option<u64>,
}

/// The head as found at start-up.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    Missing,
    Damaged(String),
    Newer(u32),
    Good(Head),
}

pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

impl Head {
    fn encode(&self) -> Vec<u8> {
        let mut out = files::header(MAGIC, FORMAT_VERSION, self.newest, LEN);
        out.extend_from_slice(&self.length.to_le_bytes());
        out.extend_from_slice(&self.closed.unwrap_or(OPEN).to_le_bytes());
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Replaces the head durably: whole or not at all, whatever crash comes.
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let temp = dir.join(TEMP);
        // Never through a planted link, and whatever a crash left at the name is replaced.
        let mut file = super::private::create_new(&temp)?;
        file.write_all(&self.encode())?;
        file.sync_all()?;
        fs::rename(&temp, path(dir))?;
        sync_dir(dir)
    }
}

/// Reads the head of `dir`.
pub fn read(dir: &Path) -> io::Result<Found> {
    match fs::read(path(dir)) {
        Ok(bytes) => Ok(decode(&bytes)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Found::Missing),
        Err(error) => Err(error),
    }
}

fn decode(bytes: &[u8]) -> Found {
    let newest = match files::read_header(bytes, MAGIC) {
        Ok((_, newest)) => newest,
        Err(HeaderFault::Newer(version)) => return Found::Newer(version),
        Err(fault) => return Found::Damaged(fault.to_string()),
    };
    if bytes.len() != LEN {
        return Found::Damaged(format!("it is {} bytes long, not {LEN}", bytes.len()));
    }
    let crc = files::u32_at(bytes, LEN - 4);
    if crc32fast::hash(&bytes[..LEN - 4]) != crc {
        return Found::Damaged("checksum mismatch".into());
    }
    let closed = files::u64_at(bytes, HEADER_START + 8);
    Found::Good(Head {
        newest,
        length: files::u64_at(bytes, HEADER_START),
        closed: (closed != OPEN).then_some(closed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_reads_back_as_written_and_any_flipped_byte_is_damage() {
        let dir = tempfile::tempdir().expect("a directory");
        for head in [
            Head {
                newest: 42,
                length: 1 << 20,
                closed: None,
            },
            Head {
                newest: 7,
                length: 4096,
                closed: Some(6),
            },
        ] {
            head.write(dir.path()).expect("written");
            assert_eq!(read(dir.path()).expect("read"), Found::Good(head));
            let bytes = head.encode();
            for at in 0..bytes.len() {
                let mut flipped = bytes.clone();
                flipped[at] ^= 0x10;
                assert!(
                    !matches!(decode(&flipped), Found::Good(_)),
                    "a flip at byte {at} went unseen"
                );
            }
            assert!(matches!(decode(&bytes[..LEN - 1]), Found::Damaged(_)));
        }
        fs::remove_file(path(dir.path())).expect("removed");
        assert_eq!(read(dir.path()).expect("read"), Found::Missing);
    }
}
