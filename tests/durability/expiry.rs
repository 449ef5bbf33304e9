//! `vote.expired` on the real binary across kill -9 (CONTRACT section 14): votes, kill -9, the
//! voters' windows end while the process is down, restart. Each stored vote is announced to the
//! receiver exactly once, every acknowledged one among them, and no vote that was not stored.
//! The time is moved with `BOTLIST_TEST_CLOCK_OFFSET_FILE` (src/startup/clock.rs); the
//! in-process twin on the injected clock is in tests/api/expiry.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::process::{Server, ADMIN};

/// The request reader of tests/support/delivery.rs, loaded once (by webhooks.rs).
mod delivery {
    pub(crate) use crate::webhooks::read_delivery;
}
#[path = "../support/hook.rs"]
mod hook;
use hook::{ClockFile, Hook};

const TWELVE_HOURS_MS: i64 = 12 * 3600 * 1000;

fn start(dir: &std::path::Path, clock: &ClockFile) -> Server {
    Server::start_env(
        dir,
        &["--allow-private-webhooks", "--snapshot-interval", "0"],
        &[clock.env()],
    )
}

/// The voters the bot's owner sees (`GET /bots/:id/votes`, the last 1000).
fn stored_voters(server: &Server, bot: &str, token: &str) -> BTreeSet<u64> {
    let (status, voters) = server.get(&format!("/bots/{bot}/votes"), Some(token));
    assert_eq!(status, StatusCode::OK, "{voters}");
    voters
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v["id"].as_str().expect("id").parse().expect("a snowflake"))
        .collect()
}

/// How many times each voter was announced, by distinct delivery and by request.
fn announced(hook: &Hook) -> (BTreeMap<u64, BTreeSet<String>>, usize) {
    let got = hook.of_kind("vote.expired");
    let mut by_voter: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    for (delivery, body) in &got {
        let voter = body["data"]["user"]["id"]
            .as_str()
            .expect("a voter")
            .parse()
            .expect("a snowflake");
        by_voter.entry(voter).or_default().insert(delivery.clone());
    }
    (by_voter, got.len())
}

/// Waits until every delivery the bot has is `delivered` (its outcome journaled, so a kill
/// after it cannot send it again).
fn wait_delivered(server: &Server, bot: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, log) = server.get(
            &format!("/admin/bots/{bot}/webhook/deliveries"),
            Some(ADMIN),
        );
        assert_eq!(status, StatusCode::OK, "{log}");
        let open: Vec<&Value> = log
            .as_array()
            .expect("a list")
            .iter()
            .filter(|d| d["state"] != "delivered")
            .collect();
        if open.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "deliveries still open: {open:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn windows_that_end_while_the_process_is_down_are_announced_once_after_kill_9() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = ClockFile::new();
    let hook = Hook::start();
    let server = start(dir.path(), &clock);
    let body = json!({
        "platform_id": "42", "name": "Hooked", "username": "hooked", "short_description": "d",
        "webhook_url": hook.url, "webhook_secret": "s3cret",
    });
    let (status, created) = server.post("/admin/bots", ADMIN, &body).expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let bot = created["bot"]["id"].as_str().expect("id").to_owned();
    let bot_token = created["token"].as_str().expect("token").to_owned();
    let (status, chose) = server.patch(
        &format!("/admin/bots/{bot}"),
        ADMIN,
        &json!({ "webhook_events": ["vote.create", "vote.expired"] }),
    );
    assert_eq!(status, StatusCode::OK, "{chose}");

    // Ten votes answered 201 before the kill.
    for voter in 1..=10 {
        assert_eq!(server.vote(&bot, voter), StatusCode::CREATED);
    }
    // Then voters from 1000 up, as fast as one client goes, while the process is killed:
    // some are answered, one may be stored without its answer, the rest were never stored.
    let acknowledged: Arc<Mutex<BTreeSet<u64>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let voting = {
        let (acknowledged, stop) = (Arc::clone(&acknowledged), Arc::clone(&stop));
        let (base, bot) = (server.base.clone(), bot.clone());
        std::thread::spawn(move || {
            let client = reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .expect("client");
            let mut voter = 1000u64;
            while !stop.load(Ordering::Relaxed) {
                let sent = client
                    .post(format!("{base}/admin/bots/{bot}/votes"))
                    .header("Authorization", ADMIN)
                    .json(&json!({ "user_id": voter.to_string(), "username": "v", "avatar": null }))
                    .send();
                match sent {
                    Ok(answer) if answer.status() == StatusCode::CREATED => {
                        acknowledged.lock().expect("lock").insert(voter);
                    }
                    Ok(answer) => panic!("vote {voter} answered {}", answer.status()),
                    Err(_) => return voter,
                }
                voter += 1;
            }
            voter
        })
    };
    while acknowledged.lock().expect("lock").len() < 20 {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill9_now();
    stop.store(true, Ordering::Relaxed);
    let last_sent = voting.join().expect("the voter thread");
    server.kill9();
    let mut acknowledged = acknowledged.lock().expect("lock").clone();
    acknowledged.extend(1..=10);
    // Nothing was announced before the kill: no window had ended.
    assert!(hook.of_kind("vote.expired").is_empty());

    // Down while every window ends: the clock moves 12 hours and a minute.
    clock.set_ms(TWELVE_HOURS_MS + 60_000);
    let server = start(dir.path(), &clock);
    let stored = stored_voters(&server, &bot, &bot_token);
    assert!(
        acknowledged.is_subset(&stored),
        "every acknowledged vote survived: missing {:?}",
        acknowledged.difference(&stored).collect::<Vec<_>>()
    );
    let unanswered: Vec<&u64> = stored.difference(&acknowledged).collect();
    assert!(
        unanswered.iter().all(|&&v| v == last_sent),
        "stored but not acknowledged: only the vote in flight at the kill may be, {unanswered:?}"
    );
    eprintln!(
        "{} votes acknowledged, {} stored, the one in flight at the kill: {last_sent}",
        acknowledged.len(),
        stored.len()
    );
    hook.wait_for("vote.expired", stored.len(), Duration::from_secs(30));
    wait_delivered(&server, &bot);
    std::thread::sleep(Duration::from_millis(500));
    let (by_voter, requests) = announced(&hook);
    assert_eq!(
        by_voter.keys().copied().collect::<BTreeSet<u64>>(),
        stored,
        "every stored vote announced, and no other"
    );
    assert!(by_voter.values().all(|ids| ids.len() == 1), "{by_voter:?}");
    assert_eq!(requests, stored.len(), "each sent once");

    // Killed again once every announcement is delivered, and started: none made again.
    server.kill9();
    clock.set_ms(TWELVE_HOURS_MS + 120_000);
    let server = start(dir.path(), &clock);
    assert_eq!(stored_voters(&server, &bot, &bot_token), stored);
    std::thread::sleep(Duration::from_millis(1500));
    let (again, requests) = announced(&hook);
    assert_eq!(again, by_voter, "nothing announced twice");
    assert_eq!(requests, stored.len());
    // The voters may vote again, and that vote's window is announced in its turn.
    assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
    clock.set_ms(2 * TWELVE_HOURS_MS + 180_000);
    hook.wait_for("vote.expired", stored.len() + 1, Duration::from_secs(30));
    server.kill9();
}
