//! The data directory is private to the user the server runs as: it holds webhook secrets in
//! plain text and the key that signs history cursors. The directory is created 0700 and every
//! file 0600; a directory that group or others can write to, or that another user owns, is
//! refused (as PostgreSQL refuses a group- or world-accessible data directory). Files are opened
//! with `O_NOFOLLOW`, and those that must be new are created as new, so a symlink planted in the
//! directory never has its target overwritten.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of the data directory and of the directories it is created in.
pub const DIR_MODE: u32 = 0o700;
/// The mode of every file in the data directory.
pub const FILE_MODE: u32 = 0o600;

/// Why the data directory is not used (exit code 6).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unsafe(pub String);

/// Creates `dir` (and missing parents) 0700 if it is not there.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Options that never follow a symlink at the last component and create files 0600.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE).custom_flags(libc::O_NOFOLLOW);
    options
}

/// Creates `path` as a new file, 0600, for writing. Whatever is at that name (a temporary file
/// a crash left, or a symlink) is removed first: removing a symlink removes the link, never its
/// target, and `create_new` then refuses anything that appeared in between.
pub fn create_new(path: &Path) -> io::Result<File> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    options().write(true).create_new(true).open(path)
}

/// Whether an open failed because the last component is a symlink (`O_NOFOLLOW`'s ELOOP).
pub fn is_symlink_refusal(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::ELOOP)
}

/// Creates the data directory if missing, refuses one that is unsafe, and makes a safe one
/// private: a directory or file others could read (left by an older botlist, or made by hand)
/// gets mode 0700 or 0600. Returns what it changed, for warnings.
pub fn claim(dir: &Path) -> Result<Vec<String>, Unsafe> {
    let io_error = |e: io::Error| {
        Unsafe(format!(
            "cannot use the data directory {}: {e}",
            dir.display()
        ))
    };
    create_dir(dir).map_err(io_error)?;
    // The directory itself may be a symlink (to another disk): what counts is where it leads.
    let meta = fs::metadata(dir).map_err(io_error)?;
    // SAFETY: geteuid only reads the process's effective user id.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(Unsafe(format!(
            "the data directory {} is owned by user id {}, not by the user botlist runs as ({me}); \
             another user could read its secrets or change its state. Give it to this user \
             (chown {me} {}) or use another --data-dir",
            dir.display(),
            meta.uid(),
            dir.display()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(Unsafe(format!(
            "the data directory {} has mode {mode:04o}: group or others can write to it, and so \
             could change the service's state or plant links. Make it private (chmod 700 {}) \
             and check its files, or use another --data-dir",
            dir.display(),
            dir.display()
        )));
    }
    let mut changed = Vec::new();
    if mode & 0o077 != 0 {
        fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)).map_err(io_error)?;
        changed.push(format!(
            "the data directory {} had mode {mode:04o}; it is now 0700",
            dir.display()
        ));
    }
    for entry in fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        // Not through a symlink, and only the files this user owns.
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.file_type().is_file() || meta.uid() != me {
            continue;
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o077 != 0 {
            fs::set_permissions(entry.path(), Permissions::from_mode(FILE_MODE))
                .map_err(io_error)?;
            changed.push(format!(
                "{} had mode {mode:04o}; it is now 0600",
                entry.path().display()
            ));
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).expect("metadata").mode() & 0o7777
    }

    #[test]
    fn created_directories_are_0700_and_new_files_0600_whatever_the_umask() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("a").join("b");
        create_dir(&dir).expect("created");
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&root.path().join("a")), 0o700);
        let file = dir.join("f");
        create_new(&file)
            .expect("created")
            .write_all(b"x")
            .expect("written");
        assert_eq!(mode(&file), 0o600);
    }

    #[test]
    fn create_new_replaces_a_symlink_and_never_writes_its_target() {
        let root = tempfile::tempdir().expect("temp dir");
        let victim = root.path().join("victim");
        fs::write(&victim, b"keep").expect("written");
        let link = root.path().join("file.tmp");
        std::os::unix::fs::symlink(&victim, &link).expect("symlink");
        create_new(&link)
            .expect("created")
            .write_all(b"new")
            .expect("written");
        assert_eq!(fs::read(&victim).expect("read"), b"keep");
        assert_eq!(fs::read(&link).expect("read"), b"new");
        assert!(!fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink());
    }

    #[test]
    fn options_refuse_to_open_through_a_symlink() {
        let root = tempfile::tempdir().expect("temp dir");
        let victim = root.path().join("victim");
        fs::write(&victim, b"keep").expect("written");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).expect("symlink");
        let error = options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&link)
            .expect_err("refused");
        assert!(is_symlink_refusal(&error), "{error}");
        assert_eq!(fs::read(&victim).expect("read"), b"keep");
    }

    #[test]
    fn a_writable_directory_is_refused_and_a_readable_one_made_private() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("data");
        create_dir(&dir).expect("created");
        fs::set_permissions(&dir, Permissions::from_mode(0o770)).expect("chmod");
        let refusal = claim(&dir).expect_err("refused").0;
        assert!(refusal.contains("chmod 700"), "{refusal}");
        fs::set_permissions(&dir, Permissions::from_mode(0o755)).expect("chmod");
        let file = dir.join("old");
        fs::write(&file, b"x").expect("written");
        fs::set_permissions(&file, Permissions::from_mode(0o644)).expect("chmod");
        let changed = claim(&dir).expect("claimed");
        assert_eq!(changed.len(), 2, "{changed:?}");
        assert_eq!((mode(&dir), mode(&file)), (0o700, 0o600));
        assert!(claim(&dir).expect("claimed").is_empty());
    }
}
