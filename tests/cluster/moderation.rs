//! CONTRACT section 14 in a cluster: staff writes made through a follower are forwarded,
//! applied on every node with their audit entries, and survive the writer's kill -9; and
//! `vote.expired` is announced by the writer only, exactly once across writer kills.
//!
//! Time: every node runs on `BOTLIST_TEST_CLOCK_OFFSET_FILE` (src/startup/clock.rs), one file
//! for the cluster, so the test moves the cluster's clock 12 hours while a writer is down, as
//! tests/api/expiry.rs moves the injected clock in process.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use reqwest::blocking::Response;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::harness::{nats_or_skip, writer_of, NatsCluster, Node, ADMIN};

// The request reader of tests/support/delivery.rs, loaded once (by followers.rs).
use super::followers::delivery;
#[path = "../support/hook.rs"]
mod hook;
use hook::{ClockFile, Hook};

const TWELVE_HOURS_MS: i64 = 12 * 3600 * 1000;

pub(super) fn seq_of(response: &Response) -> u64 {
    response.headers()["x-botlist-seq"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("a number")
}

/// `method path` on `node` with `token` and `body`, expecting `status`: the answer's body
/// and `X-Botlist-Seq`.
pub(super) fn send(
    node: &Node,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
    status: StatusCode,
) -> (Value, u64) {
    let mut request = node
        .client
        .request(method.clone(), format!("{}{path}", node.base))
        .header("Authorization", token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().expect("sent");
    let (got, seq) = (response.status(), seq_of(&response));
    let body = response.json().unwrap_or(Value::Null);
    assert_eq!(got, status, "{method} {path} on {}: {body}", node.name);
    (body, seq)
}

/// `GET path` on `node` once it has applied `seq`.
pub(super) fn read(node: &Node, path: &str, token: Option<&str>, seq: u64) -> (StatusCode, Value) {
    let mut request = node
        .client
        .get(format!("{}{path}", node.base))
        .header("X-Botlist-Min-Seq", seq.to_string());
    if let Some(token) = token {
        request = request.header("Authorization", token);
    }
    let response = request.send().expect("sent");
    let status = response.status();
    (status, response.json().unwrap_or(Value::Null))
}

/// A profile made through `node` and a token of `scopes`: (id, token, seq of the token).
pub(super) fn profile(node: &Node, body: Value, scopes: Value) -> (String, String, u64) {
    let (made, _) = send(
        node,
        Method::POST,
        "/admin/users",
        ADMIN,
        Some(body),
        StatusCode::CREATED,
    );
    let id = made["id"].as_str().expect("id").to_owned();
    let (issued, seq) = send(
        node,
        Method::POST,
        &format!("/admin/users/{id}/tokens"),
        ADMIN,
        Some(json!({ "scopes": scopes, "label": "cluster" })),
        StatusCode::CREATED,
    );
    (id, issued["token"].as_str().expect("token").to_owned(), seq)
}

/// The whole audit log as `node` holds it once it has applied `seq`, newest first, every page.
fn audit_log(node: &Node, seq: u64) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = read(
            node,
            &format!("/staff/audit?limit=100{cursor}"),
            Some(ADMIN),
            seq,
        );
        assert_eq!(status, StatusCode::OK, "{page}");
        entries.extend(page["results"].as_array().expect("results").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return entries,
        }
    }
}

/// Waits until every node answers the same digest at the same applied sequence, at least
/// `seq`; returns it.
pub(super) fn same_digest(nodes: &[&Node], seq: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let digests: Vec<(u64, String)> = nodes.iter().map(|n| n.digest()).collect();
        if digests[0].0 >= seq
            && !digests[0].1.is_empty()
            && digests.iter().all(|d| *d == digests[0])
        {
            return digests[0].1.clone();
        }
        assert!(
            Instant::now() < deadline,
            "digests differ or stay behind {seq}: {digests:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn count_action(log: &[Value], action: &str, target: &str) -> usize {
    log.iter()
        .filter(|e| e["action"] == action && e["target"]["id"] == target)
        .count()
}

#[test]
fn staff_writes_through_a_follower_reach_every_node_with_their_entries_and_survive_kill_9() {
    let Some(binary) = nats_or_skip(
        "staff_writes_through_a_follower_reach_every_node_with_their_entries_and_survive_kill_9",
    ) else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| Node::start(&format!("node{i}"), &urls, &[]))
        .collect();
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let follower = &nodes[(writer + 1) % 3];

    // Everything through a follower, which forwards every write to the writer.
    let (_, owner, _) = profile(follower, json!({ "username": "owner" }), json!(["bots"]));
    let (moderator, staff, _) = profile(
        follower,
        json!({ "username": "moderator", "mod": true }),
        json!(["staff"]),
    );
    let (_, reviewer, _) = profile(
        follower,
        json!({ "username": "reviewer" }),
        json!(["reviews"]),
    );
    let (voter, vote_token, _) = profile(
        follower,
        json!({ "username": "voter", "platform_id": "8080" }),
        json!(["vote"]),
    );
    let submit = |platform_id: &str| {
        let (made, _) = send(
            follower,
            Method::POST,
            "/bots",
            &owner,
            Some(
                json!({ "platform_id": platform_id, "name": "Queued", "username": "queued",
                          "short_description": "submitted" }),
            ),
            StatusCode::CREATED,
        );
        made["bot"]["id"].as_str().expect("id").to_owned()
    };
    let approved = submit("801");
    let denied = submit("802");
    let (listed, listed_token) = follower.create_bot(803);
    // The events a bot chose reach its vote stream on a node that only applies them (CONTRACT
    // section 14): the other follower's stream, while the writes go through the first.
    send(
        follower,
        Method::PATCH,
        &format!("/admin/bots/{listed}"),
        ADMIN,
        Some(json!({ "webhook_events": ["vote.create", "review.create", "listing.delisted"] })),
        StatusCode::OK,
    );
    let streamed = stream_events(&nodes[(writer + 2) % 3], &listed, &listed_token);

    let staff_post = |path: &str, body: Value| {
        send(
            follower,
            Method::POST,
            path,
            &staff,
            Some(body),
            StatusCode::OK,
        )
        .1
    };
    staff_post(&format!("/staff/bots/{approved}/claim"), json!({}));
    staff_post(&format!("/staff/bots/{approved}/approve"), json!({}));
    staff_post(
        &format!("/staff/bots/{denied}/deny"),
        json!({ "reason": "no description" }),
    );
    send(
        follower,
        Method::POST,
        &format!("/bots/{listed}/reviews"),
        &reviewer,
        Some(json!({ "rating": 5, "content": "streamed" })),
        StatusCode::CREATED,
    );
    staff_post(
        &format!("/staff/bots/{listed}/delist"),
        json!({ "reason": "spam" }),
    );
    let first = streamed.recv_timeout(Duration::from_secs(10));
    let second = streamed.recv_timeout(Duration::from_secs(10));
    let (review_event, delisted_event) = (first.expect("review.create"), second.expect("delisted"));
    assert_eq!(review_event.0, "review.create", "{review_event:?}");
    assert_eq!(review_event.1["review"]["rating"], 5, "{review_event:?}");
    assert_eq!(delisted_event.0, "listing.delisted", "{delisted_event:?}");
    assert_eq!(delisted_event.1["reason"], "spam", "{delisted_event:?}");
    staff_post(
        &format!("/staff/users/{voter}/vote-ban"),
        json!({ "reason": "vote ring" }),
    );
    let (review, _) = send(
        follower,
        Method::POST,
        &format!("/bots/{approved}/reviews"),
        &reviewer,
        Some(json!({ "rating": 2, "content": "rude" })),
        StatusCode::CREATED,
    );
    let review = review["id"].as_str().expect("id").to_owned();
    let (_, last) = send(
        follower,
        Method::POST,
        &format!("/bots/{approved}/reviews/{review}/remove"),
        &staff,
        Some(json!({ "reason": "abuse" })),
        StatusCode::NO_CONTENT,
    );

    // Applied on every node, with the same log: each decision's entry once, with its actor
    // and reason.
    let running: Vec<&Node> = nodes.iter().collect();
    let before = audit_log(running[0], last);
    for (action, target, reason) in [
        ("bot.claim", &approved, None),
        ("bot.approve", &approved, None),
        ("bot.deny", &denied, Some("no description")),
        ("bot.delist", &listed, Some("spam")),
        ("profile.vote_ban", &voter, Some("vote ring")),
        ("bot.review.remove", &approved, Some("abuse")),
    ] {
        assert_eq!(
            count_action(&before, action, target),
            1,
            "{action}: {before:?}"
        );
        let entry = before
            .iter()
            .find(|e| e["action"] == action && e["target"]["id"] == target.as_str())
            .expect("found");
        assert_eq!(entry["actor"]["id"], moderator.as_str(), "{entry}");
        if let Some(reason) = reason {
            assert_eq!(entry["reason"], reason, "{entry}");
        }
    }
    for node in &running {
        assert_eq!(audit_log(node, last), before, "the log on {}", node.name);
    }
    let digest = same_digest(&running, last);

    // The writer dies: the next one has every change and every entry.
    let mut killed = nodes.remove(writer);
    killed.kill9();
    let new_writer = &nodes[writer_of(&nodes, Duration::from_secs(30))];
    let survivors: Vec<&Node> = nodes.iter().collect();
    assert_eq!(
        same_digest(&survivors, last),
        digest,
        "the state the writer left"
    );
    let check = |node: &Node, seq: u64| {
        assert_eq!(
            read(node, &format!("/bots/{approved}"), None, seq).0,
            StatusCode::OK
        );
        assert_eq!(
            read(node, &format!("/bots/{denied}"), None, seq).0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            read(node, &format!("/bots/{listed}"), None, seq).0,
            StatusCode::NOT_FOUND
        );
        let (status, reviews) = read(node, &format!("/bots/{approved}/reviews"), None, seq);
        assert_eq!(status, StatusCode::OK, "{reviews}");
        assert_eq!(reviews["count"], 0, "the removed review: {reviews}");
    };
    for node in &survivors {
        check(node, last);
        assert_eq!(audit_log(node, last), before);
    }
    // The ban holds on the new writer, which refuses the vote itself.
    let (refused, _) = send(
        new_writer,
        Method::POST,
        &format!("/bots/{approved}/votes"),
        &vote_token,
        Some(json!({})),
        StatusCode::FORBIDDEN,
    );
    assert_eq!(refused["error"]["code"], "vote_banned");
    // A decision through the new writer's follower adds one entry, the same everywhere.
    let other = survivors
        .iter()
        .find(|n| n.name != new_writer.name)
        .expect("another node");
    // Sent once: the other survivor knows the new writer from its epoch message, applied
    // before the new writer answered anything (tests/cluster/writer_known.rs).
    let (_, lifted) = send(
        other,
        Method::DELETE,
        &format!("/staff/users/{voter}/vote-ban"),
        &staff,
        None,
        StatusCode::NO_CONTENT,
    );
    let after = audit_log(new_writer, lifted);
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after[0]["action"], "profile.vote_unban");
    assert_eq!(&after[1..], &before[..]);

    // The killed node, restarted, catches up: the same log and state.
    let restarted = Node::start_in_dir_of(killed);
    check(&restarted, lifted);
    assert_eq!(audit_log(&restarted, lifted), after);
    let mut everyone = survivors.clone();
    everyone.push(&restarted);
    same_digest(&everyone, lifted);
}

/// Opens the bot's vote stream on `node`: each named event (`event:` line) but votes arrives on
/// the channel with its data.
fn stream_events(
    node: &Node,
    bot: &str,
    token: &str,
) -> std::sync::mpsc::Receiver<(String, Value)> {
    use std::io::BufRead;
    let client = reqwest::blocking::Client::builder()
        .timeout(None)
        .build()
        .expect("client");
    let response = client
        .get(format!("{}/bots/{bot}/votes/stream", node.base))
        .header("Authorization", token)
        .send()
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    let (events, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut name = None;
        for line in std::io::BufReader::new(response)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(value) = line.strip_prefix("event:") {
                name = Some(value.trim().to_owned()).filter(|n| n != "vote");
            } else if let Some(data) = line.strip_prefix("data:") {
                let data = serde_json::from_str(data.trim()).unwrap_or(Value::Null);
                if let Some(name) = name.take() {
                    if events.send((name, data)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    received
}

/// Each voter's `vote.expired` deliveries: the distinct delivery ids (one per announcement)
/// and the requests (a delivery whose outcome was not journaled before a kill is sent again
/// with its id: docs/WEBHOOKS.md's at-least-once).
fn announced(hook: &Hook) -> (BTreeMap<u64, BTreeSet<String>>, BTreeMap<u64, usize>) {
    let mut ids: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    let mut requests: BTreeMap<u64, usize> = BTreeMap::new();
    for (delivery, body) in hook.of_kind("vote.expired") {
        let voter = body["data"]["user"]["id"]
            .as_str()
            .expect("a voter")
            .parse()
            .expect("a snowflake");
        ids.entry(voter).or_default().insert(delivery);
        *requests.entry(voter).or_default() += 1;
    }
    (ids, requests)
}

/// Votes for `bot` by `voters` through `node` (forwarded when it does not write), each 201.
fn vote_all(node: &Node, bot: &str, voters: std::ops::RangeInclusive<u64>) -> Instant {
    for voter in voters {
        let body = json!({ "user_id": voter.to_string(), "username": "v", "avatar": null });
        send(
            node,
            Method::POST,
            &format!("/admin/bots/{bot}/votes"),
            ADMIN,
            Some(body),
            StatusCode::CREATED,
        );
    }
    Instant::now()
}

/// Waits until `node` (the writer) says every delivery of `bot` is delivered: their outcomes
/// are journaled, so no later writer sends them again.
fn wait_delivered(node: &Node, bot: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, log) = read(
            node,
            &format!("/admin/bots/{bot}/webhook/deliveries"),
            Some(ADMIN),
            0,
        );
        if status == StatusCode::OK
            && log
                .as_array()
                .is_some_and(|all| all.iter().all(|d| d["state"] == "delivered"))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still open on {}: {log}",
            node.name
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn vote_expired_is_sent_by_the_writer_only_and_once_across_writer_kills() {
    let Some(binary) =
        nats_or_skip("vote_expired_is_sent_by_the_writer_only_and_once_across_writer_kills")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let clock = ClockFile::new();
    let hook = Hook::start();
    let start = |i: usize| {
        Node::start_env(
            &format!("node{i}"),
            &urls,
            &["--allow-private-webhooks"],
            &[clock.env()],
        )
    };
    let mut nodes: Vec<Node> = (0..3).map(start).collect();
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let follower = &nodes[(writer + 1) % 3];
    let (made, _) = send(
        follower,
        Method::POST,
        "/admin/bots",
        ADMIN,
        Some(
            json!({ "platform_id": "42", "name": "Hooked", "username": "hooked",
                      "short_description": "d", "webhook_url": hook.url,
                      "webhook_secret": "s3cret" }),
        ),
        StatusCode::CREATED,
    );
    let bot = made["bot"]["id"].as_str().expect("id").to_owned();
    send(
        follower,
        Method::PATCH,
        &format!("/admin/bots/{bot}"),
        ADMIN,
        Some(json!({ "webhook_events": ["vote.create", "vote.expired"] })),
        StatusCode::OK,
    );
    let mut offset = 0i64;

    // 1. Windows that end while the writer is down: votes through a follower, the writer
    //    killed, the cluster's clock moved past their ends before another node takes over.
    vote_all(follower, &bot, 1..=5);
    let mut killed = nodes.remove(writer);
    killed.kill9();
    offset += TWELVE_HOURS_MS + 60_000;
    clock.set_ms(offset);
    let second = writer_of(&nodes, Duration::from_secs(30));
    hook.wait_for("vote.expired", 5, Duration::from_secs(30));
    wait_delivered(&nodes[second], &bot);
    std::thread::sleep(Duration::from_secs(2));
    let (ids, requests) = announced(&hook);
    assert_eq!(
        ids.keys().copied().collect::<Vec<u64>>(),
        (1..=5).collect::<Vec<_>>()
    );
    assert!(
        requests.values().all(|&n| n == 1),
        "each once: {requests:?}"
    );
    // The killed node comes back as a follower: it holds the mark and sends nothing.
    nodes.push(Node::start_in_dir_of(killed));

    // 2. Windows that end during the handover: votes, the clock set so that they end 1.5 s
    //    on, and the writer killed at once (its loop had not yet seen the end).
    let second = writer_of(&nodes, Duration::from_secs(30));
    let through = &nodes[(second + 1) % 3];
    let voted = vote_all(through, &bot, 11..=15);
    offset += TWELVE_HOURS_MS - voted.elapsed().as_millis() as i64 + 1_500;
    clock.set_ms(offset);
    let mut killed = nodes.remove(second);
    killed.kill9();
    let third = writer_of(&nodes, Duration::from_secs(30));
    hook.wait_for("vote.expired", 10, Duration::from_secs(30));
    wait_delivered(&nodes[third], &bot);
    std::thread::sleep(Duration::from_secs(2));
    let (ids, requests) = announced(&hook);
    assert_eq!(
        ids.keys().copied().collect::<Vec<u64>>(),
        (1..=5).chain(11..=15).collect::<Vec<_>>()
    );
    assert!(
        requests.values().all(|&n| n == 1),
        "each once: {requests:?}"
    );
    nodes.push(Node::start_in_dir_of(killed));

    // 3. The writer announces with every node up, and is killed as soon as the receiver has
    //    the announcements (their outcomes perhaps not yet journaled): the next writer makes
    //    no announcement again (a delivery it resends keeps its id).
    let third = writer_of(&nodes, Duration::from_secs(30));
    let through = &nodes[(third + 1) % 3];
    vote_all(through, &bot, 21..=25);
    offset += TWELVE_HOURS_MS + 60_000;
    clock.set_ms(offset);
    hook.wait_for("vote.expired", 15, Duration::from_secs(30));
    let mut killed = nodes.remove(third);
    killed.kill9();
    let fourth = writer_of(&nodes, Duration::from_secs(30));
    wait_delivered(&nodes[fourth], &bot);
    std::thread::sleep(Duration::from_secs(2));
    nodes.push(Node::start_in_dir_of(killed));
    let all: Vec<&Node> = nodes.iter().collect();
    let (applied, _) = nodes[fourth].digest();
    same_digest(&all, applied);
    std::thread::sleep(Duration::from_secs(1));

    let (ids, requests) = announced(&hook);
    assert_eq!(
        ids.keys().copied().collect::<Vec<u64>>(),
        (1..=5).chain(11..=15).chain(21..=25).collect::<Vec<_>>(),
        "every vote announced"
    );
    assert!(
        ids.values().all(|ids| ids.len() == 1),
        "no vote announced twice: {ids:?}"
    );
    for voter in (1..=5).chain(11..=15) {
        assert_eq!(requests[&voter], 1, "sent once: {requests:?}");
    }
}
