//! Nodes that do not write: they serve reads, live vote streams and history cursors from their
//! own actors, send no webhook until they write, and start from snapshots when the stream was
//! purged below them.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::harness::{nats_or_skip, writer_of, NatsCluster, Node, ADMIN};

#[path = "../support/delivery.rs"]
pub(super) mod delivery;
use super::scenarios::converged;
use delivery::read_delivery;

/// A webhook receiver: the delivery id of every request, in order; 503 while `down`.
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<(String, u16)>>>,
    down: Arc<AtomicBool>,
}

impl Receiver {
    fn start(down: bool) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        let url = format!("http://{}/hook", listener.local_addr().expect("address"));
        let got = Arc::new(Mutex::new(Vec::new()));
        let down = Arc::new(AtomicBool::new(down));
        let (log, failing) = (Arc::clone(&got), Arc::clone(&down));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (delivery, _) = read_delivery(&stream);
                let status = if failing.load(Ordering::SeqCst) {
                    503
                } else {
                    200
                };
                log.lock().expect("lock").push((delivery, status));
                let reason = if status == 200 {
                    "OK"
                } else {
                    "Service Unavailable"
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
            }
        });
        Receiver { url, got, down }
    }

    fn requests(&self) -> Vec<(String, u16)> {
        self.got.lock().expect("lock").clone()
    }

    /// Waits until every delivery in `ids` was answered 200.
    fn wait_delivered(&self, ids: &[String], within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let got = self.requests();
            if ids
                .iter()
                .all(|id| got.iter().any(|(d, s)| d == id && *s == 200))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "not all of {ids:?} delivered: {got:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn nodes_with(nats: &NatsCluster, extra: &[&str]) -> Vec<Node> {
    let urls = nats.urls();
    (0..3)
        .map(|i| Node::start(&format!("node{i}"), &urls, extra))
        .collect()
}

/// Lists a bot with a webhook through `node`; its id and token.
fn hooked_bot(node: &Node, url: &str) -> (String, String) {
    let body = json!({
        "platform_id": "4242", "name": "Hooked", "username": "hooked",
        "short_description": "d", "webhook_url": url, "webhook_secret": "s3cret",
    });
    let response = node.post("/admin/bots", ADMIN, &body).expect("sent");
    assert_eq!(response.status(), StatusCode::CREATED);
    let created: Value = response.json().expect("json");
    (
        created["bot"]["id"].as_str().expect("id").to_owned(),
        created["token"].as_str().expect("token").to_owned(),
    )
}

/// A vote through `node`; the write's `X-Botlist-Seq`.
pub(super) fn vote(node: &Node, bot: &str, user: u64) -> u64 {
    let response = node
        .post(
            &format!("/admin/bots/{bot}/votes"),
            ADMIN,
            &json!({"user_id": user.to_string(), "username": format!("u{user}"), "avatar": null}),
        )
        .expect("sent");
    assert!(response.status().is_success(), "{}", response.status());
    response.headers()["x-botlist-seq"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("a number")
}

/// Opens the bot's live vote stream on `node` (from `last_event_id`, if given); each event's id
/// and user id arrive on the channel.
fn stream(
    node: &Node,
    bot: &str,
    token: &str,
    last_event_id: Option<u64>,
) -> mpsc::Receiver<(u64, String)> {
    let client = reqwest::blocking::Client::builder()
        .timeout(None)
        .build()
        .expect("client");
    let mut request = client
        .get(format!("{}/bots/{bot}/votes/stream", node.base))
        .header("Authorization", token);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id.to_string());
    }
    let response = request.send().expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    let (events, received) = mpsc::channel();
    std::thread::spawn(move || {
        let mut id = None;
        for line in BufReader::new(response).lines().map_while(Result::ok) {
            if let Some(value) = line.strip_prefix("id:") {
                id = value.trim().parse::<u64>().ok();
            } else if let Some(data) = line.strip_prefix("data:") {
                let entry: Value = serde_json::from_str(data.trim()).unwrap_or(Value::Null);
                let user = entry["user"]["id"]
                    .as_str()
                    .or_else(|| entry["id"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                if let Some(id) = id.take() {
                    if events.send((id, user)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    received
}

fn next_event(events: &mpsc::Receiver<(u64, String)>) -> (u64, String) {
    events
        .recv_timeout(Duration::from_secs(10))
        .expect("a vote event within 10 s")
}

fn metrics(node: &Node) -> String {
    node.client
        .get(format!("{}/metrics", node.root))
        .send()
        .expect("sent")
        .text()
        .expect("text")
}

#[test]
fn followers_serve_streams_and_cursors_and_only_the_writer_sends_webhooks() {
    let Some(binary) =
        nats_or_skip("followers_serve_streams_and_cursors_and_only_the_writer_sends_webhooks")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let receiver = Receiver::start(false);
    let mut nodes = nodes_with(&nats, &["--allow-private-webhooks"]);
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let (one, two) = ((writer + 1) % 3, (writer + 2) % 3);
    let (bot, token) = hooked_bot(&nodes[one], &receiver.url);
    converged(&nodes, Duration::from_secs(10));

    // A live stream on a follower sees votes written through another node.
    let live = stream(&nodes[two], &bot, &token, None);
    let mut seq = 0;
    for user in 1..=3u64 {
        seq = vote(&nodes[one], &bot, 300_000_000_000_000_000 + user);
    }
    let events: Vec<(u64, String)> = (0..3).map(|_| next_event(&live)).collect();
    let ids: Vec<u64> = events.iter().map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");

    // Resumed on another node with Last-Event-ID: the votes after it, no gap, no repeat.
    let resumed = stream(&nodes[writer], &bot, &token, Some(ids[0]));
    assert_eq!(next_event(&resumed).0, ids[1]);
    assert_eq!(next_event(&resumed).0, ids[2]);

    // A history cursor from one node reads on another.
    let page = |node: &Node, cursor: Option<&str>| -> Value {
        let mut url = format!("{}/bots/{bot}/votes/history?limit=1", node.base);
        if let Some(cursor) = cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let response = node
            .client
            .get(url)
            .header("Authorization", &token)
            .header("X-Botlist-Min-Seq", seq.to_string())
            .send()
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK);
        response.json().expect("json")
    };
    let first = page(&nodes[one], None);
    let next = first["next"].as_str().expect("a next cursor").to_owned();
    let second = page(&nodes[two], Some(&next));
    assert_eq!(second["results"].as_array().expect("results").len(), 1);
    assert_ne!(first["results"][0], second["results"][0]);

    // Each delivery reached the receiver once: only the writer sends.
    let deliveries = |node: &Node| -> Vec<String> {
        let response = node
            .client
            .get(format!("{}/admin/bots/{bot}/webhook/deliveries", node.base))
            .header("Authorization", ADMIN)
            .header("X-Botlist-Min-Seq", seq.to_string())
            .send()
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().expect("json");
        let list = body
            .as_array()
            .or_else(|| body["deliveries"].as_array())
            .expect("a list")
            .clone();
        list.iter()
            .map(|d| d["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let ids = deliveries(&nodes[two]);
    assert_eq!(ids.len(), 3, "{ids:?}");
    receiver.wait_delivered(&ids, Duration::from_secs(15));
    std::thread::sleep(Duration::from_secs(2));
    let got = receiver.requests();
    assert_eq!(
        got.len(),
        3,
        "one request per delivery, from the writer alone: {got:?}"
    );

    // Metrics on every node.
    let text = metrics(&nodes[one]);
    for line in [
        "botlist_cluster_role{role=\"follower\"} 1",
        "botlist_cluster_role{role=\"writer\"} 0",
        "botlist_cluster_applied_seq ",
        "botlist_cluster_lag_messages ",
        "botlist_cluster_forwarded_total ",
        "botlist_cluster_epoch ",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
    assert!(metrics(&nodes[writer]).contains("botlist_cluster_failovers_total 1"));

    // Open deliveries are sent again by the next writer: the receiver fails, the writer dies.
    receiver.down.store(true, Ordering::SeqCst);
    let seq = vote(&nodes[one], &bot, 300_000_000_000_000_009);
    let before = receiver.requests().len();
    let deadline = Instant::now() + Duration::from_secs(10);
    while receiver.requests().len() == before {
        assert!(
            Instant::now() < deadline,
            "the writer never tried the new delivery"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let open: Vec<String> = receiver.requests()[before..]
        .iter()
        .map(|(d, _)| d.clone())
        .collect();
    nodes[writer].kill9();
    receiver.down.store(false, Ordering::SeqCst);
    let others = [one, two];
    let survivors: Vec<&Node> = others.iter().map(|i| &nodes[*i]).collect();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !survivors.iter().any(|n| n.role() == "writer") {
        assert!(Instant::now() < deadline, "no new writer");
        std::thread::sleep(Duration::from_millis(100));
    }
    receiver.wait_delivered(&open, Duration::from_secs(20));
    assert!(seq > 0);
    nodes.clear();
}

/// `POST {base}/admin/snapshot` on `node`.
pub(super) fn snapshot(node: &Node) {
    let response = node
        .client
        .post(format!("{}/admin/snapshot", node.base))
        .header("Authorization", ADMIN)
        .send()
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK, "{}", node.log());
}

#[test]
fn a_follower_restarted_after_the_stream_was_purged_below_its_snapshot_catches_up() {
    let Some(binary) = nats_or_skip(
        "a_follower_restarted_after_the_stream_was_purged_below_its_snapshot_catches_up",
    ) else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let mut nodes = nodes_with(&nats, &[]);
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let follower = (writer + 1) % 3;
    let (bot, _) = nodes[writer].create_bot(11);
    for user in 1..=5u64 {
        vote(&nodes[follower], &bot, 300_000_000_000_000_000 + user);
    }
    converged(&nodes, Duration::from_secs(10));
    // The follower's own snapshot, then it stops (writing its last one) while writes go on.
    snapshot(&nodes[follower]);
    let stopped = nodes.remove(follower);
    stopped.signal("TERM");
    let mut stopped = stopped;
    assert!(stopped
        .wait_exit(Duration::from_secs(30))
        .expect("stops")
        .success());
    let writer = writer_of(&nodes, Duration::from_secs(5));
    for user in 6..=10u64 {
        vote(&nodes[writer], &bot, 300_000_000_000_000_000 + user);
    }
    // Two uploads by the writer: the stream is purged below the older one, past the stopped
    // follower's snapshot.
    snapshot(&nodes[writer]);
    nodes[writer].create_bot(12);
    snapshot(&nodes[writer]);
    // The follower restarts on its data directory: its snapshot cannot be continued, so it
    // starts from the uploaded one; a node on an empty directory does too.
    let restarted = Node::start_in_dir_of(stopped);
    nodes.push(restarted);
    nodes.push(Node::start("fresh", &nats.urls(), &[]));
    converged(&nodes, Duration::from_secs(30));
    let log = nodes[2].log();
    assert!(
        log.contains("this node's snapshot cannot be continued from the stream"),
        "the restarted follower found its snapshot purged past: {log}"
    );
    for node in &nodes {
        let info: Value = node
            .get(&format!("/bots/{bot}"))
            .expect("sent")
            .json()
            .expect("json");
        assert_eq!(info["vote_count"], 10, "{}: {info}", node.name);
    }
}

#[test]
fn a_writer_stopped_hands_its_lease_over_at_once_and_one_killed_is_replaced_within_its_ttl() {
    let Some(binary) = nats_or_skip(
        "a_writer_stopped_hands_its_lease_over_at_once_and_one_killed_is_replaced_within_its_ttl",
    ) else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| Node::start_default_lease(&format!("node{i}"), &urls))
        .collect();
    let first = writer_of(&nodes, Duration::from_secs(40));
    let (bot, _) = nodes[(first + 1) % 3].create_bot(21);
    let mut user = 300_000_000_000_000_100u64;

    // SIGTERM: the writer hands its lease back as it leaves, so another node writes long
    // before the 7 s lease would have run out.
    nodes[first].signal("TERM");
    let stopped = Instant::now();
    let asked = (first + 1) % 3;
    let handed_over = writes_again(&nodes[asked], &bot, &mut user, stopped);
    let exit = nodes[first].wait_exit(Duration::from_secs(10));
    eprintln!("SIGTERM: writes again after {handed_over:?}; the old writer exited {exit:?}");
    assert!(exit.is_some_and(|code| code.success()), "exit 0: {exit:?}");
    assert!(
        handed_over < Duration::from_secs(4),
        "handed over in {handed_over:?}, not at once (the lease lasts 7 s)"
    );

    // kill -9: nothing is handed back; the lease runs out first.
    let second = writer_of(&nodes, Duration::from_secs(10));
    assert_ne!(second, first);
    let asked = 3 - first - second;
    nodes[second].kill9();
    let killed = Instant::now();
    let replaced = writes_again(&nodes[asked], &bot, &mut user, killed);
    eprintln!("kill -9: writes again {replaced:?} after the kill");
}

/// Sends votes to `node` until one is acknowledged (at most 10 s after `since`); how long
/// after `since` that was.
fn writes_again(node: &Node, bot: &str, user: &mut u64, since: Instant) -> Duration {
    loop {
        *user += 1;
        let answered = node.post(
            &format!("/admin/bots/{bot}/votes"),
            ADMIN,
            &json!({"user_id": user.to_string(), "username": "u", "avatar": null}),
        );
        if answered.is_ok_and(|r| r.status().is_success()) {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < Duration::from_secs(10),
            "no write succeeded within 10 s at the default lease (7 s)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_follower_whose_consumer_never_gets_some_messages_reads_them_from_the_leader() {
    let Some(binary) = nats_or_skip(
        "a_follower_whose_consumer_never_gets_some_messages_reads_them_from_the_leader",
    ) else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let writer = Node::start("node0", &urls, &[]);
    writer_of(std::slice::from_ref(&writer), Duration::from_secs(30));
    // The copy its consumer reads lacks three messages for good (a nats-server still catching
    // up, as a chaos run saw): following anew lands on the same gap again, so only reading the
    // gap from the stream's leader gets the follower past it.
    let follower = Node::start(
        "node1",
        &urls,
        &["--role", "follower", "--test-missing-messages", "4-6"],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !follower.log().contains("caught up") {
        assert!(Instant::now() < deadline, "{}", follower.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let nodes = [writer, follower];
    let (bot, _) = nodes[0].create_bot(31);
    let mut last = 0;
    for user in 0..12 {
        last = vote(&nodes[0], &bot, 300_000_000_000_001_000 + user);
    }
    assert!(
        last > 6,
        "the votes reach past the missing messages: {last}"
    );
    assert_eq!(converged(&nodes, Duration::from_secs(10)), last);
    assert!(
        nodes[1].log().contains("the consumer skipped ahead"),
        "{}",
        nodes[1].log()
    );
    let info: Value = nodes[1]
        .get(&format!("/bots/{bot}"))
        .expect("sent")
        .json()
        .expect("json");
    assert_eq!(info["vote_count"], 12, "{info}");
}

/// What the test asks of JetStream directly (as an operator's `nats` tool would).
mod jetstream_client {
    use std::time::Duration;

    use async_nats::jetstream::{self, consumer::pull};
    use futures_util::StreamExt;

    pub fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    /// The only stream on the servers and the names of its consumers.
    pub async fn consumers(js: &jetstream::Context) -> (String, Vec<String>) {
        let mut streams = js.stream_names();
        let name = streams.next().await.expect("a stream").expect("its name");
        let stream = js.get_stream(&name).await.expect("the stream");
        let mut names = stream.consumer_names();
        let mut out = Vec::new();
        while let Some(consumer) = names.next().await {
            out.push(consumer.expect("a consumer's name"));
        }
        (name, out)
    }

    /// Makes a consumer named `name` that outlives the test (a leaked one); its error.
    pub async fn leak(js: &jetstream::Context, stream: &str, name: &str) -> Result<(), String> {
        let stream = js.get_stream(stream).await.map_err(|e| e.to_string())?;
        stream
            .create_consumer(pull::Config {
                name: Some(name.to_string()),
                inactive_threshold: Duration::from_secs(600),
                ..Default::default()
            })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    pub async fn delete(js: &jetstream::Context, stream: &str, name: &str) {
        let stream = js.get_stream(stream).await.expect("the stream");
        let _ = stream.delete_consumer(name).await;
    }
}

#[test]
fn a_follower_whose_leaked_consumers_reach_the_streams_limit_deletes_them_and_follows_again() {
    let Some(binary) = nats_or_skip(
        "a_follower_whose_leaked_consumers_reach_the_streams_limit_deletes_them_and_follows_again",
    ) else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let limit = ["--test-max-consumers", "4"];
    let writer = Node::start("node0", &urls, &limit);
    writer_of(std::slice::from_ref(&writer), Duration::from_secs(30));
    let follower = Node::start("node1", &urls, &["--role", "follower", limit[0], limit[1]]);
    let nodes = [writer, follower];
    let (bot, _) = nodes[0].create_bot(41);
    let mut user = 410_000_000_000_000_000u64;
    let mut last = 0;
    for _ in 0..5 {
        user += 1;
        last = vote(&nodes[0], &bot, user);
    }
    assert_eq!(converged(&nodes, Duration::from_secs(20)), last);

    // While the follower is stopped its consumer goes, and consumers named as this follower
    // names its own fill the stream's limit, as consumers whose creation timed out during a
    // JetStream election would (stopped, it cannot take the freed place first).
    let runtime = jetstream_client::runtime();
    let client = runtime
        .block_on(async_nats::connect(urls.split(',').next().expect("a url")))
        .expect("connected to NATS");
    // The context is made inside the runtime, which it needs.
    let js = runtime.block_on(async { async_nats::jetstream::new(client) });
    let (stream, names) = runtime.block_on(jetstream_client::consumers(&js));
    let current = names
        .iter()
        .find(|n| n.starts_with("botlist_node1_"))
        .unwrap_or_else(|| panic!("the follower's consumer among {names:?}"))
        .clone();
    let prefix = current[..current.rfind('_').expect("a serial") + 1].to_string();
    nodes[1].signal("STOP");
    runtime.block_on(jetstream_client::delete(&js, &stream, &current));
    let mut leaked = 0;
    let full = loop {
        let name = format!("{prefix}leak{leaked}");
        match runtime.block_on(jetstream_client::leak(&js, &stream, &name)) {
            Ok(()) => leaked += 1,
            Err(error) => break error,
        }
        assert!(leaked < 10, "the stream's limit of 4 consumers holds");
    };
    assert!(full.contains("10026"), "{full}");
    nodes[1].signal("CONT");

    // Writes go on; the follower notices its consumer is gone, deletes its leaked ones, makes
    // another under the limit and applies again within seconds.
    let since = Instant::now();
    for _ in 0..5 {
        user += 1;
        last = vote(&nodes[0], &bot, user);
    }
    assert_eq!(
        converged(&nodes, Duration::from_secs(15)),
        last,
        "{}",
        nodes[1].log()
    );
    println!(
        "the follower applied again {:?} after its consumer went",
        since.elapsed()
    );
    let (status, _) = nodes[1].readiness().expect("readiness");
    assert_eq!(status, StatusCode::OK);
    assert!(
        nodes[1]
            .log()
            .contains("deleted the stream consumers this node made before"),
        "{}",
        nodes[1].log()
    );
    let (_, left) = runtime.block_on(jetstream_client::consumers(&js));
    assert!(
        left.iter().all(|n| !n.contains("leak")),
        "the leaked consumers are gone: {left:?}"
    );
}
