//! What snapshots and journal segments share: numbered file names, and the header each file
//! starts with (`magic | format version: u32 LE | seq: u64 LE`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::FORMAT_VERSION;

/// The common start of every file's header: magic, format version, sequence number.
pub const HEADER_START: usize = 8 + 4 + 8;

/// A kind of file in the data directory named by a sequence number: `<prefix><seq:020><suffix>`.
pub struct Numbered {
    prefix: &'static str,
    suffix: &'static str,
}

impl Numbered {
    pub const fn new(prefix: &'static str, suffix: &'static str) -> Self {
        Self { prefix, suffix }
    }

    pub fn name(&self, seq: u64) -> String {
        format!("{}{seq:020}{}", self.prefix, self.suffix)
    }

    /// The sequence number in a file name of this kind.
    pub fn parse(&self, name: &str) -> Option<u64> {
        name.strip_prefix(self.prefix)?
            .strip_suffix(self.suffix)?
            .parse()
            .ok()
    }

    /// The files of this kind in `dir`, oldest (lowest number) first.
    pub fn list(&self, dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
        let mut found = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if let Some(seq) = entry.file_name().to_str().and_then(|n| self.parse(n)) {
                found.push((seq, entry.path()));
            }
        }
        found.sort();
        Ok(found)
    }
}

/// Renames a file the service will not use to `<name>.corrupt`: kept for inspection, never
/// read again, never deleted. Returns the new path.
pub fn set_aside(path: &Path) -> io::Result<PathBuf> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".corrupt");
    fs::rename(path, &aside)?;
    Ok(PathBuf::from(aside))
}

/// The start of a header of this build's format version.
pub fn header(magic: &[u8; 8], version: u32, seq: u64, capacity: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity.max(HEADER_START));
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out
}

/// Why a file's header is not one this build reads.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderFault {
    #[error("the header is cut short")]
    CutShort,
    #[error("bad magic bytes")]
    BadMagic,
    /// Written by a newer botlist: refused, never passed over.
    #[error("format version {0} is newer than this build's {FORMAT_VERSION}")]
    Newer(u32),
    #[error("format version 0 does not exist")]
    NoSuchVersion,
}

/// Checks the start of a header and gives its format version and sequence number.
pub fn read_header(bytes: &[u8], magic: &[u8; 8]) -> Result<(u32, u64), HeaderFault> {
    if bytes.len() < HEADER_START {
        return Err(HeaderFault::CutShort);
    }
    if &bytes[..8] != magic {
        return Err(HeaderFault::BadMagic);
    }
    let version = u32_at(bytes, 8);
    if version > FORMAT_VERSION {
        return Err(HeaderFault::Newer(version));
    }
    if version == 0 {
        return Err(HeaderFault::NoSuchVersion);
    }
    Ok((version, u64_at(bytes, 12)))
}

/// The little-endian u32 at `at`; the caller has checked the length.
pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

/// The little-endian u64 at `at`; the caller has checked the length.
pub fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// Bytes an unprivileged writer may still use on the file system holding `dir` (statvfs), for
/// the `botlist_data_dir_available_bytes` gauge; `None` if it cannot be read.
pub fn available_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string and `stat` room for one statvfs, which the
    // call fills when it returns 0.
    let stat = unsafe {
        if libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) != 0 {
            return None;
        }
        stat.assume_init()
    };
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}
