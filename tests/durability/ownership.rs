//! One process per data directory, no leftover temporary files, and what a stop after a journal
//! failure says.

use std::process::Command;

use reqwest::StatusCode;
use serde_json::json;

use crate::process::{binary, files, Server};

/// The exit code of a start refused because another process holds the data directory.
const IN_USE: i32 = 3;
/// The exit code of a stop after the journal failed.
const STOPPED_AFTER_JOURNAL_FAILURE: i32 = 4;

#[test]
fn a_second_server_on_a_directory_in_use_refuses_and_kill_9_releases_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = Server::start(dir.path(), &[]);
    let (bot, _) = first.create_bot(42);
    assert_eq!(first.vote(&bot, 1), StatusCode::CREATED);

    let Err(refused) = Server::try_start(dir.path(), &[]) else {
        panic!("a second server started on a directory in use");
    };
    assert_eq!(refused.status.code(), Some(IN_USE), "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&dir.path().display().to_string())
            && refused.stderr.contains(&format!("pid {}", first.pid())),
        "names the directory and the holder: {}",
        refused.stderr
    );

    let generate = Command::new(binary())
        .args(["generate", "--bots", "5", "--votes", "5", "--out"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert_eq!(generate.status.code(), Some(IN_USE));
    let stderr = String::from_utf8_lossy(&generate.stderr);
    assert!(stderr.contains(&format!("pid {}", first.pid())), "{stderr}");

    assert_eq!(first.vote_count(&bot), 1, "the first server is untouched");
    first.kill9();
    let second = Server::start(dir.path(), &[]);
    assert_eq!(second.vote_count(&bot), 1, "the acknowledged vote is there");
}

#[test]
fn startup_removes_the_temporary_files_of_snapshots_cut_short() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &[]);
    let (bot, _) = server.create_bot(42);
    server.kill9();
    let stale = dir.path().join("snapshot-00000000000000000001.msgpack.tmp");
    std::fs::write(&stale, vec![7u8; 4096]).expect("written");

    let server = Server::start(dir.path(), &[]);
    let log = server.wait_for_log("removed");
    assert!(
        log.contains(&stale.display().to_string()) && log.contains("4096 bytes"),
        "{log}"
    );
    assert!(!stale.exists());
    assert!(
        files(dir.path())
            .iter()
            .all(|f| !f.to_string_lossy().ends_with(".tmp")),
        "{:?}",
        files(dir.path())
    );
    assert_eq!(server.vote_count(&bot), 0, "the state is intact");
}

#[test]
fn sigterm_after_a_journal_failure_exits_4_saying_what_to_do_and_a_restart_keeps_what_was_acknowledged(
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &[]);
    let (bot, _) = server.create_bot(42);
    assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
    // The next journal segment cannot be created: where it would go, a directory is in the way.
    let blockers: Vec<_> = (1..=50u64)
        .map(|seq| dir.path().join(format!("journal-{seq:020}.log")))
        .filter(|path| !path.exists())
        .collect();
    for path in &blockers {
        std::fs::create_dir(path).expect("created");
        std::fs::write(path.join("x"), b"x").expect("written");
    }
    let (status, _) = server
        .post("/admin/snapshot", crate::process::ADMIN, &json!({}))
        .expect("sent");
    assert!(status.is_server_error(), "{status}");
    assert_eq!(server.vote(&bot, 2), StatusCode::SERVICE_UNAVAILABLE);

    let stderr = std::sync::Arc::clone(&server.stderr);
    let status = server.terminate();
    assert_eq!(status.code(), Some(STOPPED_AFTER_JOURNAL_FAILURE));
    // The reader thread may still be taking the last lines from the pipe.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut log = String::new();
    while std::time::Instant::now() < deadline {
        log = stderr.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if log.contains("start botlist again") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        log.contains("journal failed") && log.contains("start botlist again"),
        "{log}"
    );

    for path in &blockers {
        std::fs::remove_dir_all(path).expect("removed");
    }
    let server = Server::start(dir.path(), &[]);
    assert_eq!(
        server.vote_count(&bot),
        1,
        "acknowledged: kept; refused: absent"
    );
}
