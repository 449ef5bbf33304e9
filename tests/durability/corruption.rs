//! Damaged files: a torn tail is dropped with a warning; other damage is never skipped silently,
//! no file is deleted, and the service falls back, refuses with exit code 2, or recovers on purpose.

use std::fs;
use std::path::{Path, PathBuf};

use reqwest::StatusCode;

use crate::process::{files, named, Server};

/// A data directory with two snapshots and journal records after each, left by a kill -9.
/// Votes 1..=3 come before the first snapshot, 4..=6 between them, 7..=9 after the second.
struct Scene {
    dir: tempfile::TempDir,
    bot: String,
}

fn scene() -> Scene {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &[]);
    let (bot, _) = server.create_bot(77);
    for user in 1..=9u64 {
        assert_eq!(server.vote(&bot, user), StatusCode::CREATED);
        if user == 3 || user == 6 {
            server.snapshot();
        }
    }
    server.kill9();
    Scene { dir, bot }
}

impl Scene {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn snapshots(&self) -> Vec<PathBuf> {
        named(self.path(), "snapshot-")
    }

    fn segments(&self) -> Vec<PathBuf> {
        named(self.path(), "journal-")
    }

    fn refused(&self, extra: &[&str]) -> String {
        self.refused_with(2, extra)
    }

    /// Refused with `code`: 2 for damage, 9 for a newer format (docs/UPGRADING.md).
    fn refused_with(&self, code: i32, extra: &[&str]) -> String {
        match Server::try_start(self.path(), extra) {
            Ok(_) => panic!("the server started on damaged state"),
            Err(refused) => {
                assert_eq!(refused.status.code(), Some(code), "{}", refused.stderr);
                refused.stderr
            }
        }
    }
}

fn flip(path: &Path, at: usize) {
    let mut bytes = fs::read(path).expect("readable");
    bytes[at] ^= 0x5a;
    fs::write(path, bytes).expect("writable");
}

fn name(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .expect("a name")
        .to_owned()
}

#[test]
fn a_torn_last_record_is_dropped_with_a_warning_naming_file_and_offset() {
    let scene = scene();
    let last = scene.segments().pop().expect("a segment");
    // What a crash mid-write leaves in a segment made ahead with zeros: the last record's
    // final bytes never reached the file, which keeps its length.
    let mut bytes = fs::read(&last).expect("readable");
    let end = bytes.iter().rposition(|&b| b != 0).expect("records") + 1;
    bytes[end - 3..end].fill(0);
    fs::write(&last, bytes).expect("written");

    let server = Server::start(scene.path(), &[]);
    assert_eq!(
        server.vote_count(&scene.bot),
        8,
        "the torn ninth vote was never acknowledged"
    );
    let log = server.log();
    assert!(
        log.contains(&name(&last)) && log.contains("at byte"),
        "{log}"
    );
}

#[test]
fn a_flipped_byte_in_the_newest_snapshot_falls_back_to_the_older_one_and_the_journal() {
    let scene = scene();
    let newest = scene.snapshots().pop().expect("a snapshot");
    flip(&newest, 100);

    let server = Server::start(scene.path(), &[]);
    assert_eq!(
        server.vote_count(&scene.bot),
        9,
        "nothing acknowledged is lost"
    );
    let log = server.log();
    assert!(
        log.contains(&name(&newest)) && log.contains("checksum"),
        "{log}"
    );
    assert!(
        files(scene.path())
            .iter()
            .any(|p| name(p) == format!("{}.corrupt", name(&newest))),
        "kept aside, not deleted"
    );
}

#[test]
fn a_flipped_byte_mid_journal_refuses_to_start_and_recover_starts_on_purpose() {
    let scene = scene();
    let segment = scene.segments().pop().expect("a segment");
    // The first record of the last segment: more records follow it, so this is not a torn tail.
    flip(&segment, 20 + 16 + 2);
    let before = files(scene.path());

    let message = scene.refused(&[]);
    assert!(
        message.contains(&name(&segment)) && message.contains("--recover"),
        "{message}"
    );
    assert_eq!(
        files(scene.path()),
        before,
        "no file is deleted or changed by a refused start"
    );

    let server = Server::start(scene.path(), &["--recover"]);
    assert_eq!(
        server.vote_count(&scene.bot),
        6,
        "the last good state: up to the damage"
    );
    assert!(files(scene.path())
        .iter()
        .any(|p| name(p) == format!("{}.corrupt", name(&segment))));
    drop(server);
    let again = Server::start(scene.path(), &[]);
    assert_eq!(
        again.vote_count(&scene.bot),
        6,
        "the recovered state was written down"
    );
}

#[test]
fn a_damaged_length_mid_journal_is_damage_not_a_torn_tail() {
    let scene = scene();
    let segment = scene.segments().pop().expect("a segment");
    // Bit 16 of the first record's length: it now claims to run past the end of the file, as
    // a torn last record would.
    let mut bytes = fs::read(&segment).expect("readable");
    bytes[20 + 2] ^= 0x01;
    fs::write(&segment, bytes).expect("writable");
    let before = files(scene.path());
    let message = scene.refused(&[]);
    assert!(message.contains(&name(&segment)), "{message}");
    assert_eq!(files(scene.path()), before, "nothing is deleted");
}

#[test]
fn an_empty_snapshot_file_is_damage_and_an_empty_journal_segment_is_a_torn_start() {
    let scene = scene();
    let newest = scene.snapshots().pop().expect("a snapshot");
    fs::write(&newest, b"").expect("emptied");
    // What a crash right after creating the next segment's file leaves: its number is the one
    // after the journal's last record.
    let empty_segment = scene.path().join("journal-00000000000000000011.log");
    fs::write(&empty_segment, b"").expect("created");

    let server = Server::start(scene.path(), &[]);
    assert_eq!(server.vote_count(&scene.bot), 9);
    let log = server.log();
    assert!(
        log.contains("empty") && log.contains(&name(&newest)),
        "{log}"
    );
}

#[test]
fn a_snapshot_of_a_newer_format_version_is_refused() {
    let scene = scene();
    let newest = scene.snapshots().pop().expect("a snapshot");
    let mut bytes = fs::read(&newest).expect("readable");
    bytes[8..12].copy_from_slice(&99u32.to_le_bytes());
    fs::write(&newest, bytes).expect("written");

    let message = scene.refused_with(9, &[]);
    assert!(
        message.contains("newer") && message.contains(&name(&newest)),
        "{message}"
    );
    let message = scene.refused_with(9, &["--recover"]);
    assert!(
        message.contains("newer"),
        "--recover does not drop a newer version's data: {message}"
    );
}

#[test]
fn a_missing_journal_segment_is_a_gap_that_refuses_to_start() {
    let scene = scene();
    let snapshots = scene.snapshots();
    fs::remove_file(snapshots.last().expect("a snapshot")).expect("removed");
    let segments = scene.segments();
    // The segment between the two snapshots: the older snapshot cannot be continued.
    let middle = segments.iter().rev().nth(1).expect("two segments").clone();
    fs::remove_file(&middle).expect("removed");
    let message = scene.refused(&[]);
    assert!(
        message.contains("missing") || message.contains("jumps"),
        "{message}"
    );
}
