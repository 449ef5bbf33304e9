//! Upgrades without a trap (docs/UPGRADING.md): files and records of a newer botlist are
//! refused before anything is changed, with their own exit code, even with `--recover`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use botlist::persist::journal::{self, frame, frame_bytes, HEADER_LEN};

use crate::process::{named, Server};

/// The exit code of a start refused for a newer format or an unknown record.
const NEWER: i32 = 9;

/// Every file's bytes but the lock's, which a start rewrites with its pid.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    crate::process::files(dir)
        .into_iter()
        .filter(|p| !p.ends_with("botlist.lock"))
        .map(|p| {
            let bytes = std::fs::read(&p).expect("readable");
            (p, bytes)
        })
        .collect()
}

/// A record of a kind this build does not know, as a newer build would write it.
fn newer_record() -> Vec<u8> {
    let mut payload = Vec::new();
    rmp::encode::write_map_len(&mut payload, 1).expect("encodes");
    rmp::encode::write_str(&mut payload, "AnnouncementPosted").expect("encodes");
    rmp::encode::write_str(&mut payload, "a field this build has never seen").expect("encodes");
    payload
}

/// Writes a record of an unknown kind after the last record of the newest segment, where a
/// newer build would have: into the zeros the segment was made with, so its length (and the
/// head's proof) is unchanged.
fn append_unknown_record(dir: &Path) -> u64 {
    let (_, newest) = journal::list(dir)
        .expect("listed")
        .pop()
        .expect("a segment");
    let mut bytes = std::fs::read(&newest).expect("readable");
    let first =
        journal::parse_segment_name(newest.file_name().and_then(|n| n.to_str()).expect("a name"))
            .expect("a segment's name");
    let (mut at, mut next) = (HEADER_LEN, first);
    while let Ok((seq, _, used)) = frame_bytes(&bytes[at..]) {
        at += used;
        next = seq + 1;
    }
    let framed = frame(next, &newer_record());
    assert!(bytes[at..].len() >= framed.len() && bytes[at..].iter().all(|&b| b == 0));
    bytes[at..at + framed.len()].copy_from_slice(&framed);
    std::fs::write(&newest, bytes).expect("written");
    next
}

#[test]
fn a_record_this_build_does_not_know_refuses_the_start_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start(dir.path(), &[]);
    let (bot, _) = server.create_bot(4100);
    for user in 0..5 {
        assert!(server.vote(&bot, 41_000 + user).is_success());
    }
    server.kill9();
    let seq = append_unknown_record(dir.path());
    let before = contents(dir.path());

    for extra in [&[][..], &["--recover"][..]] {
        let refused = match Server::try_start(dir.path(), extra) {
            Ok(_) => panic!("started over a record it does not know ({extra:?})"),
            Err(refused) => refused,
        };
        assert_eq!(refused.status.code(), Some(NEWER), "{}", refused.stderr);
        let holds = format!("holds record {seq}");
        for said in [
            holds.as_str(),
            "AnnouncementPosted",
            "does not know",
            "Nothing was changed",
            "docs/UPGRADING.md",
        ] {
            assert!(refused.stderr.contains(said), "{said}: {}", refused.stderr);
        }
        assert_eq!(contents(dir.path()), before, "nothing changed ({extra:?})");
    }
}

#[test]
fn a_snapshot_of_a_newer_format_refuses_the_start_even_with_recover() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start(dir.path(), &[]);
    let (bot, _) = server.create_bot(4200);
    assert!(server.vote(&bot, 42_000).is_success());
    server.snapshot();
    assert_eq!(server.terminate().code(), Some(0));
    let newest = named(dir.path(), "snapshot-").pop().expect("a snapshot");
    let mut bytes = std::fs::read(&newest).expect("readable");
    let newer = botlist::persist::FORMAT_VERSION + 1;
    bytes[8..12].copy_from_slice(&newer.to_le_bytes());
    std::fs::write(&newest, bytes).expect("written");
    let before = contents(dir.path());

    for extra in [&[][..], &["--recover"][..]] {
        let refused = match Server::try_start(dir.path(), extra) {
            Ok(_) => panic!("started over a newer snapshot ({extra:?})"),
            Err(refused) => refused,
        };
        assert_eq!(refused.status.code(), Some(NEWER), "{}", refused.stderr);
        assert!(
            refused.stderr.contains(&format!("format version {newer}")),
            "{}",
            refused.stderr
        );
        assert!(refused.stderr.contains("Going back"), "{}", refused.stderr);
        assert_eq!(contents(dir.path()), before, "nothing changed ({extra:?})");
    }
}
