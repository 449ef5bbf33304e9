//! A webhook delivery queued or in retry when the process dies is sent after the restart.

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::process::{Server, ADMIN};

/// A receiver on a thread: answers 503 to the first request and 200 after; records the
/// delivery id of each request and when it came.
/// Delivery ids with the time each arrived.
type Log = Arc<Mutex<Vec<(String, Instant)>>>;

fn receiver() -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (id, _body) = read_delivery(&stream);
            let first = {
                let mut log = log.lock().expect("lock");
                log.push((id, Instant::now()));
                log.len() == 1
            };
            let status = if first {
                "503 Service Unavailable"
            } else {
                "200 OK"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    (url, seen)
}

#[path = "../support/delivery.rs"]
mod delivery;
pub(crate) use delivery::read_delivery;

/// Waits until the receiver has `n` requests, then returns them.
fn wait_for<T: Clone>(seen: &Mutex<Vec<T>>, n: usize) -> Vec<T> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = seen.lock().expect("lock").clone();
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} requests arrived",
            got.len()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_delivery_in_retry_when_the_process_dies_is_sent_after_the_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, seen) = receiver();
    let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let body = json!({
        "platform_id": "42", "name": "Hooked", "username": "hooked", "short_description": "d",
        "webhook_url": url, "webhook_secret": "s3cret",
    });
    let (status, created) = server.post("/admin/bots", ADMIN, &body).expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let bot = created["bot"]["id"].as_str().expect("id").to_owned();
    assert_eq!(server.vote(&bot, 7), StatusCode::CREATED);

    // The first try gets 503; the retry is due a second later. Kill before it.
    let first = wait_for(&seen, 1);
    server.kill9();
    let restarted_at = Instant::now();
    assert_eq!(
        seen.lock().expect("lock").len(),
        1,
        "the retry had not gone out before the kill"
    );

    let _again = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let all = wait_for(&seen, 2);
    assert_eq!(all[1].0, first[0].0, "the same delivery, after the restart");
    assert!(all[1].1 >= restarted_at);
}

/// One request as a receiver got it: the delivery id, the format's header and the body bytes.
#[derive(Clone, Debug)]
struct Got {
    delivery: String,
    body: Vec<u8>,
}

type Bodies = Arc<Mutex<Vec<Got>>>;

/// A receiver on a thread that records every request's body; with `first_fails`, the first
/// request of each delivery gets 503 and later ones 200, otherwise every request gets 200.
fn recording_receiver(first_fails: bool) -> (String, Bodies) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let got: Bodies = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&got);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (delivery, body) = read_delivery(&stream);
            let first = {
                let mut log = log.lock().expect("lock");
                let first = !log.iter().any(|g: &Got| g.delivery == delivery);
                log.push(Got { delivery, body });
                first
            };
            let status = if first && first_fails {
                "503 Service Unavailable"
            } else {
                "200 OK"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    (url, got)
}

fn hooked_bot(server: &Server, url: &str) -> String {
    let body = json!({
        "platform_id": "42", "name": "Hooked", "username": "hooked", "short_description": "d",
        "webhook_url": url, "webhook_secret": "s3cret",
    });
    let (status, created) = server.post("/admin/bots", ADMIN, &body).expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["bot"]["id"].as_str().expect("id").to_owned()
}

/// The delivery of a vote is sent after kill -9 and replay (from the journal alone, or from a
/// snapshot) with the bytes of its first try, though the bot's counts and platform id have
/// changed since: the bodies are made from what the vote stored, not from the bot as it is.
fn a_vote_delivery_after_kill_9_has_the_bytes_of_its_first_try(snapshot: bool) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, got) = recording_receiver(true);
    let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let bot = hooked_bot(&server, &url);
    assert_eq!(server.vote(&bot, 7), StatusCode::CREATED);
    let first = wait_for(&got, 1).remove(0);
    // The receiver is failing now: the next delivery waits for its probe, 1 s on.
    assert_eq!(server.vote(&bot, 8), StatusCode::CREATED);
    let (status, edited) = server.patch(
        &format!("/admin/bots/{bot}"),
        ADMIN,
        &json!({ "platform_id": "43" }),
    );
    assert_eq!(status, StatusCode::OK, "{edited}");
    if snapshot {
        server.snapshot();
    }
    server.kill9();
    assert_eq!(
        got.lock().expect("lock").len(),
        1,
        "no retry before the kill"
    );

    let _again = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let all = wait_for(&got, 4);
    let retried: Vec<&Got> = all[1..]
        .iter()
        .filter(|g| g.delivery == first.delivery)
        .collect();
    assert!(!retried.is_empty(), "the first vote's delivery came again");
    for again in retried {
        assert_eq!(
            String::from_utf8_lossy(&again.body),
            String::from_utf8_lossy(&first.body),
            "the same bytes after the restart"
        );
    }
    let sent: serde_json::Value = serde_json::from_slice(&first.body).expect("JSON");
    assert_eq!(sent["id"], first.delivery.as_str());
    assert_eq!(sent["data"]["bot"]["platform_id"], "42");
    assert_eq!(sent["data"]["user"]["id"], "7");
    assert_eq!(sent["data"]["vote_count"], 1);
    let second: Vec<&Got> = all
        .iter()
        .filter(|g| g.delivery != first.delivery)
        .collect();
    assert!(!second.is_empty(), "the second vote's delivery came too");
    let second: serde_json::Value = serde_json::from_slice(&second[0].body).expect("JSON");
    assert_eq!(second["data"]["user"]["id"], "8");
    assert_eq!(second["data"]["vote_count"], 2);
    assert_eq!(
        second["data"]["bot"]["platform_id"], "42",
        "as it was at the vote"
    );
}

#[test]
fn a_vote_delivery_replayed_from_the_journal_after_kill_9_sends_the_same_bytes() {
    a_vote_delivery_after_kill_9_has_the_bytes_of_its_first_try(false);
}

#[test]
fn a_vote_delivery_read_from_a_snapshot_after_kill_9_sends_the_same_bytes() {
    a_vote_delivery_after_kill_9_has_the_bytes_of_its_first_try(true);
}

fn journal_bytes(dir: &std::path::Path) -> u64 {
    crate::process::named(dir, "journal-")
        .iter()
        .map(|path| std::fs::metadata(path).expect("a segment").len())
        .sum()
}

/// A vote for a bot whose receiver is down journals about what a vote for a plain bot does:
/// the delivery is a reference to its vote, not its two rendered bodies (about 700 bytes).
#[test]
fn a_vote_for_a_bot_whose_receiver_is_down_journals_little_more_than_a_plain_vote() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let (plain, _) = server.create_bot(41);
    let dead = hooked_bot(&server, "http://127.0.0.1:9/hook");
    const VOTES: u64 = 200;
    let mut grew = Vec::new();
    for bot in [&plain, &dead] {
        let before = journal_bytes(dir.path());
        for user in 1..=VOTES {
            assert_eq!(server.vote(bot, user), StatusCode::CREATED);
        }
        grew.push(journal_bytes(dir.path()) - before);
    }
    let (plain, dead) = (grew[0] / VOTES, grew[1] / VOTES);
    // The delivery's id (18 bytes) and a longer record name; a few failed probes besides.
    assert!(
        dead <= plain + 48,
        "{plain} bytes per plain vote, {dead} per vote with a dead receiver"
    );
}

/// Deliveries journaled by build 843a63ae (both bodies rendered at queue time, the vote's
/// delivery in a `DeliverySaved` record) are replayed and sent with the bodies stored then.
#[test]
fn deliveries_journaled_with_their_bodies_by_an_earlier_build_are_sent_as_stored() {
    deliveries_of_an_earlier_build_are_sent_as_stored(
        "843a63ae-journal",
        "0eb87e52-6e64-4636-be84-37bfa0718f05",
        "signed",
        &[
            (
                "545ef49a-8957-428a-827e-2f17c0a39b48",
                r#"{"created_at":"2026-11-23T08:45:22.410Z","data":{"bot":{"id":"0eb87e52-6e64-4636-be84-37bfa0718f05","platform_id":"4242"},"expires_at":"2026-11-23T20:45:22.410Z","monthly_vote_count":1,"user":{"avatar":"https://cdn.example/a.png","id":"7","username":"ada \"the\" <first>"},"vote_count":1,"voted_at":"2026-11-23T08:45:22.410Z"},"id":"545ef49a-8957-428a-827e-2f17c0a39b48","type":"vote.create"}"#,
            ),
            (
                "afb88bf4-5727-4a1b-a69f-9afd02cd6126",
                r#"{"created_at":"2026-11-23T08:45:22.427Z","data":{"bot":{"id":"0eb87e52-6e64-4636-be84-37bfa0718f05","platform_id":"4242"},"expires_at":"2026-11-23T20:45:22.427Z","monthly_vote_count":2,"user":{"avatar":null,"id":"8","username":"zoë"},"vote_count":2,"voted_at":"2026-11-23T08:45:22.427Z"},"id":"afb88bf4-5727-4a1b-a69f-9afd02cd6126","type":"vote.create"}"#,
            ),
        ],
    );
}

/// Deliveries in a snapshot written by build 843a63ae load, are sent with the bodies stored
/// then (here the legacy ones, the format being changed after the restart), and survive the
/// next snapshot.
#[test]
fn deliveries_in_a_snapshot_of_an_earlier_build_are_sent_as_stored() {
    deliveries_of_an_earlier_build_are_sent_as_stored(
        "843a63ae-snapshot",
        "6ce76495-33e0-459b-849c-d6023a981874",
        "legacy",
        &[
            (
                "e5e91419-fd14-4c75-9d46-b5bd21ef19f4",
                r#"{"bot":"4242","isWeekend":false,"query":"","type":"upvote","user":"7"}"#,
            ),
            (
                "7403ff97-12a3-42a8-8418-5b9bd8be1bff",
                r#"{"bot":"4242","isWeekend":false,"query":"","type":"upvote","user":"8"}"#,
            ),
        ],
    );
}

fn deliveries_of_an_earlier_build_are_sent_as_stored(
    fixture: &str,
    bot: &str,
    format: &str,
    expected: &[(&str, &str)],
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/durability/fixtures")
        .join(fixture);
    for file in std::fs::read_dir(&from).expect("the fixture") {
        let file = file.expect("an entry").path();
        std::fs::copy(&file, dir.path().join(file.file_name().expect("a name"))).expect("copied");
    }
    let (url, got) = recording_receiver(false);
    let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
    // Its receiver was a closed port; deliveries use the URL as it is when they go.
    let (status, edited) = server.patch(
        &format!("/admin/bots/{bot}"),
        ADMIN,
        &json!({ "webhook_url": url, "webhook_format": format }),
    );
    assert_eq!(status, StatusCode::OK, "{edited}");
    let deadline = Instant::now() + Duration::from_secs(30);
    for (id, body) in expected {
        let sent = loop {
            let now = got.lock().expect("lock").clone();
            if let Some(sent) = now.into_iter().find(|g| g.delivery == *id) {
                break sent;
            }
            assert!(Instant::now() < deadline, "delivery {id} was not sent");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(String::from_utf8_lossy(&sent.body), *body, "delivery {id}");
    }
    // Written back into a snapshot of this build, and read from it again.
    server.snapshot();
    server.kill9();
    let again = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let (status, log) = again.get(
        &format!("/admin/bots/{bot}/webhook/deliveries"),
        Some(ADMIN),
    );
    assert_eq!(status, StatusCode::OK, "{log}");
    for (id, _) in expected {
        let shown = log
            .as_array()
            .expect("a list")
            .iter()
            .find(|d| d["id"] == *id)
            .unwrap_or_else(|| panic!("{id} in {log}"));
        assert_eq!(shown["state"], "delivered", "{shown}");
    }
}

/// A stop waits for the webhook attempt in flight: its outcome is kept, so the restart does not
/// send the delivery again.
#[test]
fn sigterm_waits_for_the_webhook_attempt_in_flight() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let seen: Log = Arc::default();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (id, _) = read_delivery(&stream);
            log.lock().expect("lock").push((id, Instant::now()));
            // A slow receiver: the answer comes well after the stop.
            std::thread::sleep(Duration::from_millis(1500));
            let _ = write!(stream, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let bot = hooked_bot(&server, &url);
    assert_eq!(server.vote(&bot, 7), StatusCode::CREATED);
    wait_for(&seen, 1);
    assert!(server.terminate().success(), "a clean stop");

    let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let (_, deliveries) = server.get(
        &format!("/admin/bots/{bot}/webhook/deliveries"),
        Some(ADMIN),
    );
    assert_eq!(deliveries[0]["state"], "delivered", "{deliveries}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        seen.lock().expect("lock").len(),
        1,
        "sent again after the restart"
    );
}

/// A delivery whose attempt's answer comes back while the journal is failed: the outcome
/// cannot be kept, so the bot drops it before it changes anything, and once the disk is back
/// and the process takes writes again (docs/PERSISTENCE.md, "Taking writes again without a
/// restart") the delivery, open in the durable state, is sent again by the same process.
#[test]
fn a_delivery_answered_while_the_journal_is_failed_is_sent_again_once_writes_are_taken_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let faults = tempfile::tempdir().expect("temp dir");
    let switch = faults.path().join("disk-full");
    let fault = format!("fail-while-exists:enospc:{}", switch.display());
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let seen: Log = Arc::new(Mutex::new(Vec::new()));
    let (release, held) = std::sync::mpsc::channel::<()>();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (id, _body) = read_delivery(&stream);
            let first = {
                let mut log = log.lock().expect("lock");
                log.push((id, Instant::now()));
                log.len() == 1
            };
            // The first attempt is answered only once the test has failed the journal.
            if first {
                let _ = held.recv();
            }
            let status = if first {
                "503 Service Unavailable"
            } else {
                "200 OK"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    let server = Server::start(
        dir.path(),
        &["--allow-private-webhooks", "--inject-journal-fault", &fault],
    );
    let bot = hooked_bot(&server, &url);
    assert_eq!(server.vote(&bot, 7), StatusCode::CREATED);
    let first = wait_for(&seen, 1);

    std::fs::write(&switch, b"").expect("the disk fills");
    // The write that fails the journal is not the bot's: the bot holds no refused change,
    // only the outcome it drops.
    let (status, body) = server
        .post("/admin/users", ADMIN, &json!({ "username": "ada" }))
        .expect("sent");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    // Its answer reaches the bot while the journal is failed.
    release.send(()).expect("released");

    std::fs::remove_file(&switch).expect("the disk has room again");
    let all = wait_for(&seen, 2);
    assert_eq!(
        all[1].0, first[0].0,
        "the same delivery, from the same process"
    );
    assert_eq!(server.vote(&bot, 8), StatusCode::CREATED);
}
