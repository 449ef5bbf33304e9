//! kill -9 in the middle of concurrent writes: every write that got a 2xx is there after a
//! restart, nothing refused is, and at most the writes that got no answer may be either way.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::process::{Server, ADMIN};

const BOTS: usize = 3;
/// Accepted votes after which the server is killed: enough to test, and under 1000 per bot so
/// every voter stays in the voters list.
const KILL_AFTER: usize = 300;

/// What one client saw.
#[derive(Default)]
struct Seen {
    /// (bot, user) answered 201, in the order answered.
    accepted: Vec<(usize, u64)>,
    /// (bot, user) answered with an error status: must not be counted.
    refused: Vec<(usize, u64)>,
    /// Votes sent that got no answer (the kill): may or may not be there.
    unanswered: Vec<(usize, u64)>,
}

fn voter(server: &Server, bots: &[(String, String)], thread: u64, total: &AtomicUsize) -> Seen {
    let mut seen = Seen::default();
    // Until the server is gone: every client ends on a request that got no answer.
    for n in 0..1_000_000 {
        let user = (thread + 1) * 1_000_000 + n;
        let bot = (n as usize) % BOTS;
        // Every fifth user votes twice: the second must be refused and change nothing.
        let attempts = if n % 5 == 0 { 2 } else { 1 };
        for _ in 0..attempts {
            let body = json!({ "user_id": user.to_string(), "username": format!("u{user}"), "avatar": null });
            match server.post(&format!("/admin/bots/{}/votes", bots[bot].0), ADMIN, &body) {
                Ok((StatusCode::CREATED, _)) => {
                    seen.accepted.push((bot, user));
                    total.fetch_add(1, Ordering::Relaxed);
                }
                Ok((status, body)) => {
                    assert_eq!(status, StatusCode::CONFLICT, "{body}");
                    seen.refused.push((bot, user));
                }
                Err(_) => {
                    seen.unanswered.push((bot, user));
                    return seen;
                }
            }
        }
    }
    seen
}

/// Posts increasing server counts for one bot; returns the last acknowledged and any unanswered.
fn poster(server: &Server, bot: &(String, String)) -> (Option<u64>, Option<u64>) {
    let mut last_ok = None;
    for count in 1..1_000_000u64 {
        match server.post(
            &format!("/bots/{}/stats", bot.0),
            &bot.1,
            &json!({ "server_count": count }),
        ) {
            Ok((StatusCode::OK, _)) => last_ok = Some(count),
            Ok((status, body)) => panic!("stats post answered {status}: {body}"),
            Err(_) => return (last_ok, Some(count)),
        }
    }
    (last_ok, None)
}

#[test]
fn every_acknowledged_write_survives_kill_9() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Arc::new(Server::start(dir.path(), &["--fsync", "always"]));
    let bots: Arc<Vec<(String, String)>> = Arc::new(
        (0..BOTS)
            .map(|i| server.create_bot(1_000 + i as u64))
            .collect(),
    );
    let total = Arc::new(AtomicUsize::new(0));

    let voters: Vec<_> = (0..4u64)
        .map(|thread| {
            let (server, bots, total) =
                (Arc::clone(&server), Arc::clone(&bots), Arc::clone(&total));
            std::thread::spawn(move || voter(&server, &bots, thread, &total))
        })
        .collect();
    let posters: Vec<_> = (0..BOTS)
        .map(|bot| {
            let (server, bots) = (Arc::clone(&server), Arc::clone(&bots));
            std::thread::spawn(move || poster(&server, &bots[bot]))
        })
        .collect();

    // Kill while the clients are still writing, however fast this machine is.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while total.load(Ordering::Relaxed) < KILL_AFTER {
        assert!(
            std::time::Instant::now() < deadline,
            "the clients are stuck"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    server.kill9_now();

    let seen: Vec<Seen> = voters
        .into_iter()
        .map(|t| t.join().expect("voter thread"))
        .collect();
    let stats: Vec<(Option<u64>, Option<u64>)> = posters
        .into_iter()
        .map(|t| t.join().expect("poster thread"))
        .collect();

    let restarted = Server::start(dir.path(), &[]);
    check_votes(&restarted, &bots, &seen);
    check_stats(&restarted, &bots, &stats);
}

fn check_votes(server: &Server, bots: &[(String, String)], seen: &[Seen]) {
    let accepted_total: usize = seen.iter().map(|s| s.accepted.len()).sum();
    assert!(
        accepted_total > 50,
        "the kill came too early to test much: {accepted_total} votes"
    );
    assert!(
        seen.iter().all(|s| !s.unanswered.is_empty()),
        "every client ends on a write the kill cut off"
    );
    for (b, (id, token)) in bots.iter().enumerate() {
        let accepted: HashSet<u64> = seen
            .iter()
            .flat_map(|s| s.accepted.iter())
            .filter(|(bot, _)| *bot == b)
            .map(|(_, u)| *u)
            .collect();
        let unanswered: HashSet<u64> = seen
            .iter()
            .flat_map(|s| s.unanswered.iter())
            .filter(|(bot, _)| *bot == b)
            .map(|(_, u)| *u)
            .collect();
        let (_, bot) = server.get(&format!("/bots/{id}"), None);
        let count = bot["vote_count"].as_u64().expect("a count") as usize;
        assert!(
            count >= accepted.len() && count <= accepted.len() + unanswered.len(),
            "bot {b}: {count} votes stored, {} acknowledged, {} unanswered",
            accepted.len(),
            unanswered.len()
        );
        let (status, voters) = server.get(&format!("/bots/{id}/votes"), Some(token));
        assert_eq!(status, StatusCode::OK);
        let listed: Vec<u64> = voters
            .as_array()
            .expect("a list")
            .iter()
            .map(|v| {
                v["id"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .expect("an id")
            })
            .collect();
        assert_eq!(
            listed.len(),
            count,
            "every voter is listed once (fewer than 1000 votes)"
        );
        let listed_set: HashSet<u64> = listed.iter().copied().collect();
        assert!(
            accepted.is_subset(&listed_set),
            "bot {b}: an acknowledged voter is missing"
        );
        assert!(
            listed_set.is_subset(&accepted.union(&unanswered).copied().collect()),
            "bot {b}: a voter nobody acknowledged"
        );
        // Each client voted in order: its acknowledged voters appear newest first.
        let position: HashMap<u64, usize> =
            listed.iter().enumerate().map(|(i, u)| (*u, i)).collect();
        for s in seen {
            let mine: Vec<usize> = s
                .accepted
                .iter()
                .filter(|(bot, _)| *bot == b)
                .map(|(_, u)| position[u])
                .collect();
            assert!(
                mine.windows(2).all(|w| w[0] > w[1]),
                "bot {b}: voters out of order"
            );
        }
        for user in accepted.iter().take(20) {
            let (_, check) = server.get(&format!("/bots/{id}/check?userId={user}"), Some(token));
            assert_eq!(check, json!({ "voted": 1 }));
        }
    }
}

fn check_stats(server: &Server, bots: &[(String, String)], stats: &[(Option<u64>, Option<u64>)]) {
    for ((id, _), (last_ok, unanswered)) in bots.iter().zip(stats) {
        let (_, body): (_, Value) = server.get(&format!("/bots/{id}/stats"), None);
        let stored = body["server_count"].as_u64().expect("a count");
        let allowed: Vec<u64> = [*last_ok, *unanswered].into_iter().flatten().collect();
        assert!(
            allowed.contains(&stored) || (last_ok.is_none() && stored == 0),
            "stored {stored}, last acknowledged {last_ok:?}, unanswered {unanswered:?}"
        );
    }
}
