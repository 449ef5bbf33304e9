//! Nothing leaves the process before the write it tells of is durable: not a webhook (a vote's,
//! a test event's, a redelivery's), not a live stream event, not a metric. Storage faults are put
//! into the real binary's journal with the hidden `--inject-journal-fault` flag:
//! `delay:<ms>` holds every batch that long before any of it is written (a slow or frozen disk),
//! `fail-from:<seq>` fails every batch from that record on as the disk would (EIO).

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::history::Stream;
use crate::process::{Server, ADMIN};
use crate::webhooks::read_delivery;

/// What a receiver got: the event header and when each request arrived.
type Arrivals = Arc<Mutex<Vec<(String, Instant)>>>;

/// A receiver on a thread that answers 200 to everything and notes the event and arrival time.
fn receiver() -> (String, Arrivals) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let seen: Arrivals = Arc::default();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (_, body) = read_delivery(&stream);
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let event = body["type"].as_str().unwrap_or("vote").to_owned();
            log.lock().expect("lock").push((event, Instant::now()));
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    (url, seen)
}

fn arrivals(seen: &Arrivals) -> Vec<(String, Instant)> {
    seen.lock().expect("lock").clone()
}

/// Waits until the receiver has `n` requests.
fn wait_for(seen: &Arrivals, n: usize) -> Vec<(String, Instant)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = arrivals(seen);
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Lists a bot whose webhook goes to `url`, and returns its id and token.
fn hooked_bot(server: &Server, url: &str) -> (String, String) {
    let body = json!({
        "platform_id": "42", "name": "Hooked", "username": "hooked", "short_description": "d",
        "webhook_url": url, "webhook_secret": "s3cret",
    });
    let (status, created) = server.post("/admin/bots", ADMIN, &body).expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{created}");
    (
        created["bot"]["id"].as_str().expect("id").to_owned(),
        created["token"].as_str().expect("token").to_owned(),
    )
}

fn accepted_votes(server: &Server) -> u64 {
    let metrics = server
        .client
        .get(server.base.replace("/api/v1", "/metrics"))
        .send()
        .expect("sent")
        .text()
        .expect("text");
    metrics
        .lines()
        .find(|l| l.starts_with("botlist_votes_total{outcome=\"accepted\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

const SLOW: u64 = 400;

/// The disk takes 400 ms for every write: the vote's webhook, its stream event and its count
/// in the metrics all come after its 201, never while the record is on its way to disk.
#[test]
fn on_a_slow_disk_nothing_tells_of_a_vote_before_its_201() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, seen) = receiver();
    let server = Server::start(
        dir.path(),
        &[
            "--allow-private-webhooks",
            "--inject-journal-fault",
            &format!("delay:{SLOW}"),
            "--stream-write-interval-ms",
            "0",
        ],
    );
    let (bot, token) = hooked_bot(&server, &url);

    let events: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let reader = {
        let events = Arc::clone(&events);
        let mut stream = Stream::open(&server, &bot, &token, None);
        std::thread::spawn(move || {
            for _ in 0..3 {
                stream.vote();
                events.lock().expect("lock").push(Instant::now());
            }
        })
    };
    for user in 1..=3u64 {
        let sent = Instant::now();
        let counted = accepted_votes(&server);
        let voting = std::thread::scope(|scope| {
            let vote = scope.spawn(|| server.vote(&bot, user));
            // Half-way to disk: nobody may know of the vote yet.
            std::thread::sleep(Duration::from_millis(SLOW / 2));
            assert_eq!(
                arrivals(&seen).len() as u64,
                user - 1,
                "a webhook before disk"
            );
            assert_eq!(
                events.lock().expect("lock").len() as u64,
                user - 1,
                "an event"
            );
            assert_eq!(
                accepted_votes(&server),
                counted,
                "a vote counted before disk"
            );
            vote.join().expect("voted")
        });
        assert_eq!(voting, StatusCode::CREATED);
        let got = wait_for(&seen, user as usize);
        let (_, at) = got[user as usize - 1];
        assert!(
            at >= sent + Duration::from_millis(SLOW - 50),
            "the webhook came {:?} after the request, before its record could be on disk",
            at - sent
        );
    }
    reader.join().expect("the stream got every vote");

    // A test event is journaled too: the receiver hears of it only after its 2xx's record.
    let sent = Instant::now();
    let (status, _) = server
        .post(
            &format!("/admin/bots/{bot}/webhook/test"),
            ADMIN,
            &json!({}),
        )
        .expect("sent");
    assert!(status.is_success(), "{status}");
    let got = wait_for(&seen, 4);
    assert_eq!(got[3].0, "webhook.test");
    assert!(got[3].1 >= sent + Duration::from_millis(SLOW - 50));
}

/// The vote's record can never reach the disk: the vote is refused, and no webhook, stream event
/// or count ever tells of it; a test event and a redelivery are refused the same way.
#[test]
fn a_journal_that_fails_sends_nothing_for_the_writes_it_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, seen) = receiver();
    let bot = {
        let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
        let (bot, _) = hooked_bot(&server, &url);
        assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
        assert_eq!(
            wait_for(&seen, 1).len(),
            1,
            "the acknowledged vote's webhook"
        );
        // Its outcome is journaled too: wait for it, or the restart would send it again.
        let deadline = Instant::now() + Duration::from_secs(10);
        while server
            .get(
                &format!("/admin/bots/{bot}/webhook/deliveries"),
                Some(ADMIN),
            )
            .1[0]["state"]
            != "delivered"
        {
            assert!(
                Instant::now() < deadline,
                "the delivery's outcome was not stored"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        server.kill9();
        bot
    };
    let server = Server::start(
        dir.path(),
        &[
            "--allow-private-webhooks",
            "--inject-journal-fault",
            "fail-from:1",
        ],
    );
    let (status, deliveries) = server.get(
        &format!("/admin/bots/{bot}/webhook/deliveries"),
        Some(ADMIN),
    );
    assert_eq!(status, StatusCode::OK, "{deliveries}");
    let delivered = deliveries[0]["id"]
        .as_str()
        .expect("the first vote's delivery")
        .to_owned();

    assert_eq!(server.vote(&bot, 2), StatusCode::SERVICE_UNAVAILABLE);
    let (status, _) = server
        .post(
            &format!("/admin/bots/{bot}/webhook/test"),
            ADMIN,
            &json!({}),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let (status, _) = server
        .post(
            &format!("/admin/bots/{bot}/webhook/deliveries/{delivered}/redeliver"),
            ADMIN,
            &json!({}),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(accepted_votes(&server), 0);
    // Attempts go out within a tick (25 ms) of being due: a second is forty ticks.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(arrivals(&seen).len(), 1, "nothing sent for a refused write");
}

/// kill -9 while a vote's record cannot be on disk yet: after the restart the vote is gone, and
/// its webhook was never sent, before the kill or after.
#[test]
fn a_vote_lost_to_kill_9_before_its_fsync_was_never_announced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, seen) = receiver();
    let slow = [
        "--allow-private-webhooks",
        "--inject-journal-fault",
        "delay:1500",
    ];
    let server = Arc::new(Server::start(dir.path(), &slow));
    let (bot, _) = hooked_bot(&server, &url);
    let voting = {
        let server = Arc::clone(&server);
        let bot = bot.clone();
        std::thread::spawn(move || {
            let body = json!({ "user_id": "7", "username": "u7", "avatar": null });
            server.post(&format!("/admin/bots/{bot}/votes"), ADMIN, &body)
        })
    };
    // The vote is in its actor and on its way to disk, which takes 1.5 s.
    std::thread::sleep(Duration::from_millis(500));
    server.kill9_now();
    assert!(
        voting.join().expect("joined").is_err(),
        "never acknowledged"
    );
    assert!(arrivals(&seen).is_empty(), "announced before the kill");
    drop(server);

    let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
    assert_eq!(
        server.vote_count(&bot),
        0,
        "the vote was lost, as it was never acknowledged"
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(arrivals(&seen).is_empty(), "announced after the restart");
}
