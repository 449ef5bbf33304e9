//! Exit codes of a start refused for a setting (7, never 2, which is damaged state), each
//! naming the flag or variable; and readiness on a journal that fails (`GET /readyz`).

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::process::{binary, Server, ADMIN};

const CONFIG: i32 = 7;

/// Runs `serve` with `args` and `env` and returns its exit code and standard error, or `None`
/// for the code when it was still running after 20 s (it started).
fn run(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new(binary());
    command
        .arg("serve")
        .arg("--data-dir")
        .arg(dir)
        .args(["--snapshot-interval", "0"])
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return (None, String::new());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut err, &mut stderr);
    }
    (code, stderr)
}

#[test]
fn a_bad_boolean_variable_exits_7_naming_the_flag_and_the_accepted_ones_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (code, stderr) = run(
        &dir.path().join("a"),
        &["--bind", "127.0.0.1:0"],
        &[("BOTLIST_RECOVER", "maybe")],
    );
    assert_eq!(code, Some(CONFIG), "{stderr}");
    assert!(stderr.contains("--recover"), "{stderr}");
    assert!(stderr.contains("BOTLIST_"), "{stderr}");
    for accepted in ["1", "yes", "0", "off", "true"] {
        let started = {
            let mut command = Command::new(binary());
            command
                .args(["serve", "--bind", "127.0.0.1:0", "--snapshot-interval", "0"])
                .arg("--data-dir")
                .arg(dir.path().join(format!("b{accepted}")))
                .env("BOTLIST_RECOVER", accepted)
                .stdout(Stdio::piped())
                .stderr(Stdio::null());
            let mut child = command.spawn().expect("starts");
            let mut out = String::new();
            let stdout = child.stdout.take().expect("piped");
            let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
            let listening = lines
                .next()
                .and_then(Result::ok)
                .is_some_and(|line| line.starts_with("listening on"));
            out.push_str(if listening { "listening" } else { "not" });
            let _ = child.kill();
            let _ = child.wait();
            out
        };
        assert_eq!(started, "listening", "BOTLIST_RECOVER={accepted}");
    }
}

#[test]
fn a_bad_bind_an_address_in_use_and_an_unreadable_token_file_exit_7() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (code, stderr) = run(&dir.path().join("a"), &["--bind", "nonsense"], &[]);
    assert_eq!(code, Some(CONFIG), "{stderr}");
    assert!(stderr.contains("--bind"), "{stderr}");

    // The port is bound before anything is loaded: the demo is never built.
    let taken = TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = taken.local_addr().expect("address").to_string();
    let began = Instant::now();
    let (code, stderr) = run(&dir.path().join("b"), &["--bind", &address, "--demo"], &[]);
    assert_eq!(code, Some(CONFIG), "{stderr}");
    assert!(stderr.contains("--bind (BOTLIST_BIND)"), "{stderr}");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "refused before the demo loads"
    );
    assert!(
        !dir.path().join("b").exists()
            || std::fs::read_dir(dir.path().join("b"))
                .expect("readable")
                .next()
                .is_none(),
        "nothing written"
    );

    let missing = dir.path().join("missing-token");
    let missing = missing.to_str().expect("utf-8");
    let (code, stderr) = run(
        &dir.path().join("c"),
        &["--bind", "127.0.0.1:0", "--admin-token-file", missing],
        &[],
    );
    assert_eq!(code, Some(CONFIG), "{stderr}");
    assert!(stderr.contains("--admin-token-file"), "{stderr}");
    let (code, stderr) = run(
        &dir.path().join("d"),
        &[
            "--bind",
            "127.0.0.1:0",
            "--replicate",
            "nats://127.0.0.1:1",
            "--cluster-token-file",
            missing,
        ],
        &[],
    );
    assert_eq!(code, Some(CONFIG), "{stderr}");
    assert!(stderr.contains("--cluster-token-file"), "{stderr}");
    let (code, stderr) = run(
        &dir.path().join("e"),
        &["--bind", "127.0.0.1:0", "--replicate", "nats://127.0.0.1:1"],
        &[],
    );
    assert_eq!(code, Some(CONFIG), "{stderr}");
    assert!(stderr.contains("cluster token"), "{stderr}");

    // A cluster node binds its port before it connects to NATS: a taken port is a setting
    // (7) at once, even with no NATS server to reach.
    let token = dir.path().join("cluster-token");
    std::fs::write(&token, "a-cluster-token-of-enough-length-41").expect("written");
    let began = Instant::now();
    let (code, stderr) = run(
        &dir.path().join("f"),
        &[
            "--bind",
            &address,
            "--replicate",
            "nats://127.0.0.1:1",
            "--cluster-token-file",
            token.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert_eq!(code, Some(CONFIG), "{stderr}");
    assert!(stderr.contains("--bind (BOTLIST_BIND)"), "{stderr}");
    assert!(began.elapsed() < Duration::from_secs(5), "refused at once");
    drop(taken);
}

#[test]
fn readyz_answers_503_with_the_reason_once_the_journal_fails_and_200_after_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(
        dir.path(),
        &["--inject-journal-fault", "fail-from:40:enospc"],
    );
    let root = server.base.trim_end_matches("/api/v1").to_owned();
    let ready = server
        .client
        .get(format!("{root}/readyz"))
        .send()
        .expect("sent");
    assert_eq!(ready.status(), StatusCode::OK);
    let (bot, _) = server.create_bot(3);
    let mut refused = 0;
    let mut body = serde_json::Value::Null;
    for user in 1..=60u64 {
        let answer = server
            .post(
                &format!("/admin/bots/{bot}/votes"),
                crate::process::ADMIN,
                &serde_json::json!({ "user_id": user.to_string(), "username": "u", "avatar": null }),
            )
            .expect("sent");
        if answer.0 == StatusCode::SERVICE_UNAVAILABLE {
            refused += 1;
            body = answer.1;
        }
    }
    assert!(refused > 10, "writes refused once the journal failed");
    // The refused writes never reached the file: "not stored".
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not stored")),
        "{body}"
    );
    let not_ready = server
        .client
        .get(format!("{root}/readyz"))
        .send()
        .expect("sent");
    assert_eq!(not_ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    let why: serde_json::Value = not_ready.json().expect("json");
    assert_eq!(why["error"]["code"], "not_ready", "{why}");
    assert!(
        why["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("enospc")),
        "{why}"
    );
    // Liveness stays 200.
    let live = server
        .client
        .get(format!("{root}/healthz"))
        .send()
        .expect("sent");
    assert_eq!(live.status(), StatusCode::OK);
    let metrics = server
        .client
        .get(format!("{root}/metrics"))
        .send()
        .expect("sent")
        .text()
        .expect("text");
    assert!(metrics.contains("botlist_journal_healthy 0"), "{metrics}");
    assert!(metrics.contains("botlist_ready 0"), "{metrics}");
    assert!(
        metrics.contains("botlist_journal_failures_total{kind=\"enospc\"} 1"),
        "{metrics}"
    );
    // One line for the failure, and refusals at a bounded rate, not one per write.
    let log = server.log();
    assert_eq!(log.matches("the journal failed").count(), 1, "{log}");
    assert!(log.matches("writes are refused").count() <= 3, "{log}");
    let exit = server.terminate();
    assert_eq!(
        exit.code(),
        Some(4),
        "no last snapshot after a journal failure"
    );

    // The disk fixed (no fault), a restart takes writes again.
    let again = Server::start(dir.path(), &[]);
    let ready = again
        .client
        .get(format!(
            "{root_again}/readyz",
            root_again = again.base.trim_end_matches("/api/v1")
        ))
        .send()
        .expect("sent");
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(again.vote(&bot, 1000), StatusCode::CREATED);
}

/// A batch whose bytes reached the file before its fsync failed
/// (`--inject-journal-fault fsync-fail-from:N:eio`) is taken back before anyone is answered:
/// every refused write is told "not stored", and that is true: after kill -9 the restart holds
/// exactly the acknowledged votes, takes the journal without a hole, and a voter whose vote was
/// refused votes again (201, not 409). Before, the first refused vote was "may have been
/// stored" and came back after the restart.
#[test]
fn a_write_refused_after_its_bytes_reached_the_file_is_taken_back_and_told_not_stored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(
        dir.path(),
        &["--inject-journal-fault", "fsync-fail-from:30:eio"],
    );
    let (bot, _) = server.create_bot(3);
    let mut acknowledged = 0u64;
    let mut refused = Vec::new();
    for user in 1..=40u64 {
        let body =
            serde_json::json!({ "user_id": user.to_string(), "username": "u", "avatar": null });
        let (status, answer) = server
            .post(
                &format!("/admin/bots/{bot}/votes"),
                crate::process::ADMIN,
                &body,
            )
            .expect("sent");
        match status {
            StatusCode::CREATED => acknowledged += 1,
            StatusCode::SERVICE_UNAVAILABLE => refused.push((user, answer)),
            other => panic!("{other}: {answer}"),
        }
    }
    assert!(
        acknowledged > 0 && refused.len() > 5,
        "{acknowledged} {refused:?}"
    );
    for (_, answer) in &refused {
        assert_eq!(answer["error"]["code"], "unavailable", "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("not stored")),
            "{answer}"
        );
    }
    let log = server.log();
    assert_eq!(log.matches("the journal failed").count(), 1, "{log}");
    server.kill9();

    let again = Server::start(dir.path(), &[]);
    assert_eq!(
        again.vote_count(&bot),
        acknowledged,
        "exactly the acknowledged votes"
    );
    let (first_refused, _) = refused[0];
    assert_eq!(
        again.vote(&bot, first_refused),
        StatusCode::CREATED,
        "the refused vote was not kept"
    );
    assert_eq!(again.vote_count(&bot), acknowledged + 1);
}

/// A tmpfs of `size` mounted on a new temporary directory, unmounted when dropped; `None` when
/// this process may not mount (not root, or in a container without the right), which the
/// caller reports as a skip.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(Tmpfs { dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// A real full disk, not an injected fault: a 4 MiB tmpfs filled while the server runs. Writes
/// are refused, reads go on, `/readyz` and the metrics say so, the log says it once; after a
/// restart with room again every acknowledged edit is there.
#[test]
fn a_full_tmpfs_is_seen_by_readyz_and_the_metrics_and_loses_no_acknowledged_write() {
    let Some(tmpfs) = Tmpfs::mount("4m") else {
        eprintln!(
            "skipped a_full_tmpfs_is_seen_by_readyz_and_the_metrics_and_loses_no_acknowledged_write: \
             this process cannot mount a tmpfs (run as root to include it; .ci/run does when it can)"
        );
        return;
    };
    let data = tmpfs.dir.path().join("data");
    let server = Server::start(&data, &["--snapshot-interval", "0"]);
    let root = server.base.trim_end_matches("/api/v1").to_owned();
    let (bot, _) = server.create_bot(5);
    // Fill what is left, so that the segment's next growth finds no room.
    let filler = tmpfs.dir.path().join("filler");
    {
        let mut file = std::fs::File::create(&filler).expect("filler");
        let block = vec![7u8; 64 << 10];
        while std::io::Write::write_all(&mut file, &block).is_ok() {}
    }
    let mut acknowledged = 0u32;
    let mut refused = None;
    for edit in 0..400u32 {
        let text = format!("{edit:05} {}", "x".repeat(15_000));
        let (status, body) = server.patch(
            &format!("/admin/bots/{bot}"),
            crate::process::ADMIN,
            &serde_json::json!({ "long_description": text }),
        );
        if status.is_success() {
            acknowledged = edit + 1;
        } else {
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
            refused = Some(body);
            break;
        }
    }
    let refused = refused.expect("the disk filled up");
    eprintln!("{acknowledged} edits of 15 kB acknowledged before the disk was full: {refused}");
    let get = |path: &str| {
        server
            .client
            .get(format!("{root}{path}"))
            .send()
            .expect("sent")
    };
    assert_eq!(get("/readyz").status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(get("/healthz").status(), StatusCode::OK);
    assert_eq!(get(&format!("/api/v1/bots/{bot}")).status(), StatusCode::OK);
    let metrics = get("/metrics").text().expect("text");
    assert!(metrics.contains("botlist_journal_healthy 0"), "{metrics}");
    assert!(metrics.contains("botlist_ready 0"), "{metrics}");
    assert!(
        metrics.contains("botlist_journal_failures_total{kind=\"enospc\"} 1"),
        "{metrics}"
    );
    let log = server.log();
    assert_eq!(log.matches("the journal failed").count(), 1, "{log}");
    assert_eq!(server.terminate().code(), Some(4));

    std::fs::remove_file(&filler).expect("room again");
    let again = Server::start(&data, &[]);
    let (status, info) = again.get(&format!("/bots/{bot}"), None);
    assert_eq!(status, StatusCode::OK);
    let kept = info["long_description"].as_str().unwrap_or_default();
    assert!(
        kept.starts_with(&format!("{:05} ", acknowledged - 1)),
        "the last acknowledged edit ({}) is kept: {}",
        acknowledged - 1,
        &kept[..kept.len().min(12)]
    );
    let ready = again
        .client
        .get(format!("{}/readyz", again.base.trim_end_matches("/api/v1")))
        .send()
        .expect("sent");
    assert_eq!(ready.status(), StatusCode::OK);
}

/// A real full disk that gets room again while the server runs: a 4 MiB tmpfs filled until an
/// edit is refused, then the filler removed. The running process takes writes again by itself
/// (`/readyz` 200), the refused edit retried is taken, and a restart holds it.
#[test]
fn a_full_tmpfs_given_room_again_takes_writes_again_without_a_restart() {
    let Some(tmpfs) = Tmpfs::mount("4m") else {
        eprintln!(
            "skipped a_full_tmpfs_given_room_again_takes_writes_again_without_a_restart: \
             this process cannot mount a tmpfs (run as root to include it; .ci/run does when it can)"
        );
        return;
    };
    let data = tmpfs.dir.path().join("data");
    let server = Server::start(&data, &["--snapshot-interval", "0"]);
    let ready = || {
        server
            .client
            .get(format!(
                "{}/readyz",
                server.base.trim_end_matches("/api/v1")
            ))
            .send()
            .expect("sent")
            .status()
            == StatusCode::OK
    };
    let (bot, _) = server.create_bot(5);
    let filler = tmpfs.dir.path().join("filler");
    {
        let mut file = std::fs::File::create(&filler).expect("filler");
        let block = vec![7u8; 64 << 10];
        while std::io::Write::write_all(&mut file, &block).is_ok() {}
    }
    let edit = |n: u32| {
        let text = format!("{n:05} {}", "x".repeat(15_000));
        server.patch(
            &format!("/admin/bots/{bot}"),
            crate::process::ADMIN,
            &serde_json::json!({ "long_description": text }),
        )
    };
    let mut refused = None;
    for n in 0..400u32 {
        let (status, body) = edit(n);
        if !status.is_success() {
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
            refused = Some(n);
            break;
        }
    }
    let refused = refused.expect("the disk filled up");
    assert!(!ready());
    std::fs::remove_file(&filler).expect("room again");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(
            Instant::now() < deadline,
            "takes writes again: {}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, body) = edit(refused);
    assert_eq!(status, StatusCode::OK, "the refused edit, retried: {body}");
    assert_eq!(server.terminate().code(), Some(0));

    let again = Server::start(&data, &[]);
    let (status, info) = again.get(&format!("/bots/{bot}"), None);
    assert_eq!(status, StatusCode::OK);
    let kept = info["long_description"].as_str().unwrap_or_default();
    assert!(
        kept.starts_with(&format!("{refused:05} ")),
        "the retried edit is kept: {}",
        &kept[..kept.len().min(12)]
    );
}

/// A disk that fails and comes back (`--inject-journal-fault fail-while-exists:enospc:PATH`:
/// batches and probes fail while the file exists). The journal's writer probes the disk every
/// second once it failed; once the disk takes writes again the process rebuilds the durable
/// state from the data directory and takes writes again without a restart: `/readyz` 200, the
/// gauges back to 1, one log line, and the vote refused during the fault cast again in the same
/// process, answered 201 and counted once. The disk then fails again (the reopened journal fails
/// as the first did), and a restart holds exactly the acknowledged writes.
#[test]
fn a_disk_that_comes_back_is_seen_by_the_probe_and_the_process_takes_writes_again_without_a_restart(
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let faults = tempfile::tempdir().expect("temp dir");
    let switch = faults.path().join("disk-full");
    let fault = format!("fail-while-exists:enospc:{}", switch.display());
    let server = Server::start(dir.path(), &["--inject-journal-fault", &fault]);
    let root = server.base.trim_end_matches("/api/v1").to_owned();
    let readyz = || -> (StatusCode, String) {
        let answer = server
            .client
            .get(format!("{root}/readyz"))
            .send()
            .expect("sent");
        (answer.status(), answer.text().expect("text"))
    };
    let metrics = || -> String {
        server
            .client
            .get(format!("{root}/metrics"))
            .send()
            .expect("sent")
            .text()
            .expect("text")
    };
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: {:?}", readyz());
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let (bot, _) = server.create_bot(5);
    assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
    assert!(metrics().contains("botlist_journal_disk_writable 1"));

    std::fs::write(&switch, b"").expect("the disk fills");
    assert_eq!(server.vote(&bot, 2), StatusCode::SERVICE_UNAVAILABLE);
    // Retried while the journal cannot take it: refused again, never 409 "already voted"
    // (which clients read as stored), and so is an already durable voter's.
    assert_eq!(server.vote(&bot, 2), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.vote(&bot, 1), StatusCode::SERVICE_UNAVAILABLE);
    let (status, why) = readyz();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        why.contains("enospc") && !why.contains("takes writes again"),
        "{why}"
    );
    let seen = metrics();
    assert!(seen.contains("botlist_journal_disk_writable 0"), "{seen}");
    assert!(seen.contains("botlist_journal_healthy 0"), "{seen}");

    std::fs::remove_file(&switch).expect("the disk has room again");
    wait_for("the process takes writes again", &|| {
        readyz().0 == StatusCode::OK
    });
    let seen = metrics();
    assert!(seen.contains("botlist_journal_disk_writable 1"), "{seen}");
    assert!(seen.contains("botlist_journal_healthy 1"), "{seen}");
    assert!(seen.contains("botlist_ready 1"), "{seen}");
    assert_eq!(server.vote(&bot, 2), StatusCode::CREATED, "cast again");
    assert_eq!(server.vote_count(&bot), 2, "and counted once");
    assert_eq!(
        server.vote(&bot, 2),
        StatusCode::CONFLICT,
        "its window is the acknowledged vote's"
    );
    let log = server.log();
    assert_eq!(
        log.matches("the disk takes writes again").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("the journal takes writes again").count(),
        1,
        "{log}"
    );

    // The reopened journal fails as the first one did, and stops with code 4.
    std::fs::write(&switch, b"").expect("the disk fills again");
    assert_eq!(server.vote(&bot, 3), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(readyz().0, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.terminate().code(), Some(4));

    std::fs::remove_file(&switch).expect("the disk has room again");
    let again = Server::start(dir.path(), &[]);
    assert_eq!(again.vote_count(&bot), 2, "exactly the acknowledged votes");
    assert_eq!(again.vote(&bot, 2), StatusCode::CONFLICT);
    assert_eq!(
        again.vote(&bot, 3),
        StatusCode::CREATED,
        "the refused one cast"
    );
    assert_eq!(again.vote_count(&bot), 3);
}

/// A growth history kept while the disk was fine is not answered for the state rebuilt when it
/// comes back: the rebuilt history counts its changes from the snapshot on, so a count it
/// reaches again means other points (here: 1 vote kept, 3 durable when the disk is back).
#[test]
fn a_growth_history_kept_before_the_disk_failed_is_not_shown_for_the_state_rebuilt_after() {
    let dir = tempfile::tempdir().expect("temp dir");
    let faults = tempfile::tempdir().expect("temp dir");
    let switch = faults.path().join("disk-full");
    let fault = format!("fail-while-exists:enospc:{}", switch.display());
    let server = Server::start(dir.path(), &["--inject-journal-fault", &fault]);
    let (bot, _) = server.create_bot(5);
    let votes = || -> u64 {
        let (status, body) = server.get(&format!("/bots/{bot}/stats/history?interval=day"), None);
        assert_eq!(status, StatusCode::OK, "{body}");
        let points = body["points"].as_array().expect("points");
        points.iter().filter_map(|p| p["votes"].as_u64()).sum()
    };
    assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
    assert_eq!(votes(), 1, "kept at the history's first change");
    assert_eq!(server.vote(&bot, 2), StatusCode::CREATED);
    server.snapshot();
    assert_eq!(server.vote(&bot, 3), StatusCode::CREATED);

    std::fs::write(&switch, b"").expect("the disk fills");
    assert_eq!(server.vote(&bot, 4), StatusCode::SERVICE_UNAVAILABLE);
    std::fs::remove_file(&switch).expect("the disk has room again");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !server.log().contains("the journal takes writes again") {
        assert!(Instant::now() < deadline, "{}", server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(votes(), 3, "the durable votes, not the kept answer");
}

/// The registry's writes are refused before they apply while the journal is failed, and are
/// taken again in the same process once the disk is back. Twice in one process, each time
/// with another write in the batch that failed (applied by the registry, then refused):
/// a profile create, retried while the disk is full, is refused again with 503, never 409
/// "username taken" (which would say it was stored), and so are an edit that claims a
/// platform id and a delisting; once the disk is back the profile is created, once. Then a
/// listing: its actor, started for the refused record and never published, is stopped when
/// the durable state is taken back, so the retried listing gets its platform id (not 409).
/// A restart holds exactly what was acknowledged.
#[test]
fn a_registry_write_refused_by_a_full_disk_is_refused_again_then_taken_once_the_disk_is_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let faults = tempfile::tempdir().expect("temp dir");
    let switch = faults.path().join("disk-full");
    let fault = format!("fail-while-exists:enospc:{}", switch.display());
    let server = Server::start(dir.path(), &["--inject-journal-fault", &fault]);
    let root = server.base.trim_end_matches("/api/v1").to_owned();
    let ready = || {
        server
            .client
            .get(format!("{root}/readyz"))
            .send()
            .expect("sent")
            .status()
            == StatusCode::OK
    };
    let wait_until_ready = || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ready() {
            assert!(Instant::now() < deadline, "the process takes writes again");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let (bot, _) = server.create_bot(5);
    let (gone, _) = server.create_bot(8);
    let create = |name: &str| {
        server
            .post(
                "/admin/users",
                ADMIN,
                &serde_json::json!({ "username": name }),
            )
            .expect("sent")
    };
    let delist = || {
        server
            .client
            .delete(format!("{}/admin/bots/{gone}", server.base))
            .header("Authorization", ADMIN)
            .send()
            .expect("sent")
            .status()
    };
    let listing = serde_json::json!({
        "platform_id": "6", "name": "Six", "username": "six", "short_description": "refused",
    });
    let list = || server.post("/admin/bots", ADMIN, &listing).expect("sent");
    let edit = serde_json::json!({ "platform_id": "7" });

    std::fs::write(&switch, b"").expect("the disk fills");
    let (status, body) = create("ada");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let (status, body) = create("ada");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "retried: {body}");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    let (status, body) = server.patch(&format!("/admin/bots/{bot}"), ADMIN, &edit);
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(delist(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(!ready());
    std::fs::remove_file(&switch).expect("the disk has room again");
    wait_until_ready();
    let (status, body) = create("ada");
    assert_eq!(
        status,
        StatusCode::CREATED,
        "taken in the same process: {body}"
    );
    let (status, body) = create("ada");
    assert_eq!(status, StatusCode::CONFLICT, "once: {body}");

    std::fs::write(&switch, b"").expect("the disk fills again");
    let (status, body) = list();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let (status, body) = list();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "retried: {body}");
    std::fs::remove_file(&switch).expect("the disk has room again");
    wait_until_ready();
    let (status, body) = list();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let six = body["bot"]["id"].as_str().expect("id").to_owned();
    let (status, body) = server.patch(&format!("/admin/bots/{bot}"), ADMIN, &edit);
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(delist(), StatusCode::NO_CONTENT);
    assert_eq!(
        server.get(&format!("/bots/{gone}"), None).0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(server.get("/bots/7", None).1["id"], bot.as_str());
    let log = server.log();
    assert_eq!(
        log.matches("the journal takes writes again").count(),
        2,
        "{log}"
    );
    assert!(log.contains("refused_listings_dropped=1"), "{log}");
    assert_eq!(server.terminate().code(), Some(0));

    let again = Server::start(dir.path(), &[]);
    let (status, body) = again
        .post(
            "/admin/users",
            ADMIN,
            &serde_json::json!({ "username": "ada" }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::CONFLICT, "kept once: {body}");
    assert_eq!(again.get(&format!("/bots/{six}"), None).0, StatusCode::OK);
    assert_eq!(again.get("/bots/7", None).1["id"], bot.as_str());
    assert_eq!(
        again.get(&format!("/bots/{gone}"), None).0,
        StatusCode::NOT_FOUND
    );
    let (status, body) = again.get("/bots?q=six", None);
    assert_eq!(body["total"], 1, "{status}: {body}");
}
