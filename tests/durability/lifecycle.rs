//! Snapshots on request, on shutdown and on a timer; retention; `botlist generate`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::process::{binary, named, Server};

#[test]
fn sigterm_finishes_with_a_snapshot_and_exit_code_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    let (bot, token) = server.create_bot(5);
    assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
    let (status, _) = server
        .post(
            &format!("/bots/{bot}/stats"),
            &token,
            &json!({ "server_count": 12 }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::OK);
    assert!(named(dir.path(), "snapshot-").is_empty());

    let exit = server.terminate();
    assert_eq!(exit.code(), Some(0));
    assert_eq!(
        named(dir.path(), "snapshot-").len(),
        1,
        "a last snapshot on the way out"
    );

    let again = Server::start(dir.path(), &[]);
    assert_eq!(again.vote_count(&bot), 1);
    assert_eq!(
        again.get(&format!("/bots/{bot}/stats"), None).1,
        json!({ "server_count": 12 })
    );
    let (_, check) = again.get(&format!("/bots/{bot}/check?userId=1"), Some(&token));
    assert_eq!(check, json!({ "voted": 1 }));
}

#[test]
fn admin_snapshot_answers_with_the_file_and_retention_keeps_three() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &[]);
    let (bot, _) = server.create_bot(5);
    let mut written = Vec::new();
    for user in 1..=5u64 {
        assert_eq!(server.vote(&bot, user), StatusCode::CREATED);
        let body = server.snapshot();
        let file = body["file"].as_str().expect("a file").to_owned();
        let bytes = body["bytes"].as_u64().expect("a size");
        assert_eq!(
            std::fs::metadata(&file).expect("the file exists").len(),
            bytes
        );
        written.push(file);
    }
    let kept: Vec<String> = named(dir.path(), "snapshot-")
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(kept, written[2..].to_vec(), "the newest three");
    assert!(
        named(dir.path(), "journal-").len() <= 4,
        "older journal segments are retired"
    );
    server.kill9();
    let again = Server::start(dir.path(), &[]);
    assert_eq!(again.vote_count(&bot), 5);
}

#[test]
fn periodic_snapshots_are_written_on_their_own() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &["--snapshot-interval", "1"]);
    let (bot, _) = server.create_bot(5);
    assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
    let deadline = Instant::now() + Duration::from_secs(30);
    while named(dir.path(), "snapshot-").is_empty() {
        assert!(
            Instant::now() < deadline,
            "no snapshot within 30 s at a 1 s interval"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn generate_writes_a_directory_the_server_serves() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("data");
    let status = Command::new(binary())
        .args([
            "generate", "--bots", "300", "--votes", "20000", "--seed", "7", "--out",
        ])
        .arg(&out)
        .status()
        .expect("runs");
    assert!(status.success());
    let again = Command::new(binary())
        .args(["generate", "--bots", "10", "--votes", "10", "--out"])
        .arg(&out)
        .status()
        .expect("runs");
    assert!(
        !again.success(),
        "generate never writes over existing state"
    );

    let server = Server::start(&out, &[]);
    let (_, page) = server.get("/bots?limit=1", None);
    assert_eq!(page["total"], 300);
    let total_votes: u64 = (0..3)
        .map(|page_number| {
            let (_, page) = server.get(&format!("/bots?limit=100&page={}", page_number + 1), None);
            page["results"]
                .as_array()
                .expect("results")
                .iter()
                .map(|b| b["vote_count"].as_u64().unwrap_or(0))
                .sum::<u64>()
        })
        .sum();
    assert!(total_votes >= 20_000, "{total_votes}");
    drop(server);
    assert_same_generation(dir.path());
}

/// The same seed gives the same directory.
fn assert_same_generation(dir: &Path) {
    let run = |name: &str| {
        let out = dir.join(name);
        let output = Command::new(binary())
            .args([
                "generate", "--bots", "50", "--votes", "500", "--seed", "9", "--out",
            ])
            .arg(&out)
            .output()
            .expect("runs");
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| l.contains("bot id") || l.contains("token"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(run("a"), run("b"));
}

#[test]
fn shard_counts_survive_kill_9_and_a_snapshot() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &[]);
    let (bot, token) = server.create_bot(42);
    let stats = format!("/bots/{bot}/stats");
    let post = |server: &Server, body: serde_json::Value| {
        let (status, answer) = server.post(&stats, &token, &body).expect("sent");
        assert_eq!(status, StatusCode::OK, "{answer}");
    };
    post(
        &server,
        json!({"server_count": 100, "shard_id": 0, "shard_count": 3}),
    );
    server.snapshot();
    post(&server, json!({"server_count": 200, "shard_id": 1}));
    server.kill9();

    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.get(&stats, None).1["server_count"], 300);
    // The shards came back too, not only their sum.
    post(&server, json!({"server_count": 5, "shard_id": 2}));
    assert_eq!(server.get(&stats, None).1["server_count"], 305);
}
