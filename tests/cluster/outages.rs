//! Issue 40: what a client sees while a node or a nats-server fails, one failure at a time.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::harness::{nats_or_skip, writer_of, NatsCluster, Node, ADMIN};
use super::scenarios::{converged, three_nodes};

fn vote_body(user: u64) -> Value {
    json!({"user_id": user.to_string(), "username": format!("u{user}"), "avatar": null})
}

/// (status, error code) of a vote sent through `node`; `None` when the request failed.
fn vote(node: &Node, bot: &str, user: u64) -> Option<(StatusCode, String)> {
    let response = node
        .post(&format!("/admin/bots/{bot}/votes"), ADMIN, &vote_body(user))
        .ok()?;
    let status = response.status();
    let body: Value = response.json().unwrap_or(Value::Null);
    Some((
        status,
        body["error"]["code"].as_str().unwrap_or("").to_owned(),
    ))
}

#[test]
fn a_write_forwarded_to_a_writer_that_dies_is_answered_outcome_unknown_and_a_retry_counts_once() {
    let Some(binary) = nats_or_skip(
        "a_write_forwarded_to_a_writer_that_dies_is_answered_outcome_unknown_and_a_retry_counts_once",
    ) else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let mut nodes = three_nodes(&nats);
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let follower = (writer + 1) % 3;
    let (bot, token) = nodes[follower].create_bot(40);
    let user = 400_000_000_000_000_001u64;

    // The writer holds the forwarded request when it dies: the follower cannot know whether it
    // was stored, and says so.
    nodes[writer].signal("STOP");
    let (sent_bot, base) = (bot.clone(), nodes[follower].base.clone());
    let in_flight = std::thread::spawn(move || {
        let response = reqwest::blocking::Client::new()
            .post(format!("{base}/admin/bots/{sent_bot}/votes"))
            .header("Authorization", ADMIN)
            .json(&vote_body(user))
            .send()
            .expect("the follower answers");
        let status = response.status();
        let retry_after = response.headers().get("retry-after").cloned();
        let body: Value = response.json().expect("the envelope");
        (status, retry_after, body)
    });
    std::thread::sleep(Duration::from_millis(700));
    nodes[writer].kill9();
    let (status, retry_after, body) = in_flight.join().expect("the client thread");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "outcome_unknown", "{body}");
    assert!(retry_after.is_some(), "clients are told to retry");

    // Until the lease expires the follower still names the dead writer: its connection is
    // refused, nothing was sent, and that is `no_writer`.
    let mut other_user = user + 1;
    let mut saw_no_writer = false;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        other_user += 1;
        match vote(&nodes[follower], &bot, other_user) {
            Some((status, _)) if status.is_success() => break,
            Some((StatusCode::SERVICE_UNAVAILABLE, code)) => {
                assert_ne!(code, "outcome_unknown", "nothing reached a writer");
                saw_no_writer |= code == "no_writer";
            }
            other => panic!("unexpected answer {other:?}"),
        }
        assert!(Instant::now() < deadline, "no new writer took over");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(saw_no_writer, "the dead writer was refused as no_writer");

    // The client retries the vote whose outcome it does not know: it counts once.
    let (status, code) = vote(&nodes[follower], &bot, user).expect("an answer");
    assert!(
        status.is_success() || (status == StatusCode::CONFLICT && code == "already_voted"),
        "{status} {code}"
    );
    let (status, code) = vote(&nodes[follower], &bot, user).expect("an answer");
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "already_voted")
    );
    let others: Vec<Node> = nodes
        .drain(..)
        .enumerate()
        .filter(|(i, _)| *i != writer)
        .map(|(_, n)| n)
        .collect();
    converged(&others, Duration::from_secs(10));
    for node in &others {
        let (_, voters) = node.votes(&bot, &token);
        let times = voters.iter().filter(|v| **v == user).count();
        assert_eq!(times, 1, "node {}: the retried vote counts once", node.name);
    }
}

/// The raft groups a botlist cluster leans on: JetStream's meta group, the journal stream and
/// the lease bucket.
const GROUPS: [&str; 3] = ["meta", "botlist_journal", "KV_botlist_lease"];

/// One kill of a nats-server: how long writes stopped, and how long NATS itself took to elect
/// new leaders for every group the killed server led.
struct Outage {
    what: &'static str,
    writes: Duration,
    election: Duration,
}

/// Kills the nats-server that leads `what`, waits for the first acknowledged write after it
/// (and for new leaders of the groups it led), and starts the server again.
fn kill_the_leader_of(
    what: &'static str,
    nats: &mut NatsCluster,
    nodes: &mut [Node],
    load: &super::load::Load,
) -> Outage {
    let leader = nats
        .leader_of(what)
        .unwrap_or_else(|| panic!("no server says who leads {what}"));
    let led: Vec<&str> = GROUPS
        .into_iter()
        .filter(|group| nats.leader_of(group) == Some(leader))
        .collect();
    eprintln!("killing n{leader}, the leader of {}", led.join(", "));
    let killed = Instant::now();
    nats.servers[leader].kill9();
    // NATS's own elections can take two rounds of its 4-9 s timeout; past 30 s it is a fault.
    let deadline = killed + Duration::from_secs(30);
    let (mut writes, mut election) = (None, None);
    while writes.is_none() || election.is_none() {
        writes = writes.or_else(|| load.first_ack_after(killed).map(|at| at - killed));
        let elected = led
            .iter()
            .all(|group| nats.leader_now(group).is_some_and(|l| l != leader));
        if elected && election.is_none() {
            election = Some(killed.elapsed());
        }
        if Instant::now() >= deadline {
            for node in nodes.iter() {
                eprintln!("--- {} ---\n{}", node.name, tail(&node.log(), 60));
            }
            for (i, server) in nats.servers.iter().enumerate() {
                eprintln!("--- nats n{i} ---\n{}", server.log_tail());
            }
            panic!("30 s after killing the leader of {what}: writes again after {writes:?}, NATS elected after {election:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for node in nodes.iter_mut() {
        assert!(
            node.exited().is_none(),
            "node {} exited after the leader of {what} died: {}",
            node.name,
            node.log()
        );
    }
    // `restart` returns once the server has caught up with its peers, so the next kill is
    // again the only fault.
    nats.servers[leader].restart();
    Outage {
        what,
        writes: writes.unwrap_or_default(),
        election: election.unwrap_or_default(),
    }
}

/// The longest time without an acknowledged write over the next `window`, sampled every 20 ms
/// (any client's 2xx counts: each client votes through one node, so a client of a dead node
/// waits for its own timeout whatever the cluster does).
fn longest_stretch_without_a_write(load: &super::load::Load, window: Duration) -> Duration {
    let start = Instant::now();
    let mut last = start;
    let mut longest = Duration::ZERO;
    while start.elapsed() < window {
        std::thread::sleep(Duration::from_millis(20));
        if let Some(at) = load.first_ack_after(last) {
            last = at;
        }
        longest = longest.max(last.elapsed());
    }
    longest
}

#[test]
fn a_nats_election_costs_seconds_and_no_node_its_role() {
    let Some(binary) = nats_or_skip("a_nats_election_costs_seconds_and_no_node_its_role") else {
        return;
    };
    let mut nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| Node::start_default_lease(&format!("node{i}"), &urls))
        .collect();
    let writer = writer_of(&nodes, Duration::from_secs(40));
    let load = super::load::Load::start_paced(&nodes, 4, Duration::from_millis(80));
    std::thread::sleep(Duration::from_secs(2));
    let mut outages = Vec::new();
    for what in ["botlist_journal", "KV_botlist_lease", "meta"] {
        let outage = kill_the_leader_of(what, &mut nats, &mut nodes, &load);
        eprintln!(
            "writes again {:?} after the leader of {what} died (NATS elected in {:?})",
            outage.writes, outage.election
        );
        outages.push(outage);
    }
    // The failures writes need not wait for at all: a botlist follower, and a nats-server
    // that leads none of the groups (when one does; JetStream may give each server one).
    let follower = (0..nodes.len()).find(|i| *i != writer).unwrap_or_default();
    eprintln!("killing node{follower}, a follower");
    nodes[follower].kill9();
    let stretch = longest_stretch_without_a_write(&load, Duration::from_secs(5));
    eprintln!("longest stretch without a write after a follower's kill -9: {stretch:?}");
    let stopped = nodes.remove(follower);
    nodes.insert(follower, Node::start_in_dir_of(stopped));
    load.set_base(follower, &nodes[follower].base);
    let mut stretches = vec![("a botlist follower", stretch)];
    let idle = (0..nats.servers.len())
        .find(|i| GROUPS.iter().all(|group| nats.leader_of(group) != Some(*i)));
    match idle {
        Some(idle) => {
            eprintln!("killing n{idle}, which leads no group");
            nats.servers[idle].kill9();
            let stretch = longest_stretch_without_a_write(&load, Duration::from_secs(5));
            eprintln!("longest stretch without a write after the kill -9 of a nats-server leading nothing: {stretch:?}");
            nats.servers[idle].restart();
            stretches.push(("a nats-server leading nothing", stretch));
        }
        None => eprintln!("every nats-server leads a group: no idle one to kill"),
    }
    assert_eq!(
        writer_of(&nodes, Duration::from_secs(5)),
        writer,
        "the writer kept its role"
    );
    let bots = load.bots.clone();
    let acked = load.finish();
    converged(&nodes, Duration::from_secs(15));
    super::load::assert_all_acked_everywhere(&nodes, &bots, &acked);
    for (what, stretch) in stretches {
        assert!(
            stretch < Duration::from_secs(10),
            "writes stopped for {stretch:?} after the kill -9 of {what}"
        );
    }
    // Writes come back within 10 s, or, when NATS's own election ran past that (a second round
    // of its randomised 4-9 s timeout), within 2 s of it: botlist adds no wait of its own.
    for Outage {
        what,
        writes,
        election,
    } in outages
    {
        assert!(
            writes < Duration::from_secs(10).max(election + Duration::from_secs(2)),
            "writes stopped for {writes:?} when the leader of {what} died (NATS elected in {election:?})"
        );
    }
}

#[test]
fn a_lease_unrenewable_past_its_ttl_stays_with_a_writer_that_still_answers() {
    let Some(binary) =
        nats_or_skip("a_lease_unrenewable_past_its_ttl_stays_with_a_writer_that_still_answers")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    // 4 s after taking the lease the writer's renewals fail for 4.5 s, as when the lease's
    // bucket elects a leader for longer than the TTL (3 s here): the key expires while the
    // writer still answers as the writer. The other nodes must leave it the key for a TTL
    // more, and it takes the key again when its renewals go through (before twice the TTL
    // without one, when it would fence itself).
    let blackout = ["--test-lease-blackout", "4000:4500"];
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| Node::start(&format!("node{i}"), &urls, &blackout))
        .collect();
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let load = super::load::Load::start(&nodes, 2);
    std::thread::sleep(Duration::from_secs(12));
    let ended = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    for node in nodes.iter_mut() {
        assert!(
            node.exited().is_none(),
            "{} exited: {}",
            node.name,
            node.log()
        );
    }
    assert_eq!(
        writer_of(&nodes, Duration::from_secs(5)),
        writer,
        "the writer kept its role"
    );
    assert!(
        nodes[writer].log().contains("took it again"),
        "{}",
        nodes[writer].log()
    );
    assert!(
        nodes
            .iter()
            .any(|n| n.log().contains("its holder still answers as the writer")),
        "a candidate waited for the writer"
    );
    assert!(
        load.first_ack_after(ended).is_some(),
        "writes go on after the blackout"
    );
    let bots = load.bots.clone();
    let acked = load.finish();
    converged(&nodes, Duration::from_secs(10));
    super::load::assert_all_acked_everywhere(&nodes, &bots, &acked);
}

/// A TCP proxy on loopback between a node and one nats-server, which the test cuts (the node
/// then hears nothing from NATS while its clients still reach it) or freezes (a hung server:
/// connections stay open, nothing passes either way).
struct Proxy {
    port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    frozen: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

/// Copies `from` to `to` until either ends, holding what it read while `frozen`.
fn pass_on(
    mut from: std::net::TcpStream,
    mut to: std::net::TcpStream,
    frozen: &std::sync::atomic::AtomicBool,
) {
    use std::io::{Read, Write};
    let mut buffer = [0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buffer) {
        if n == 0 {
            break;
        }
        while frozen.load(std::sync::atomic::Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if to.write_all(&buffer[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
}

impl Proxy {
    fn to(target: u16) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = listener.local_addr().expect("bound").port();
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let frozen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (cutting, freezing, opened) = (cut.clone(), frozen.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                if cutting.load(Ordering::Acquire) {
                    continue;
                }
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let mut open = opened.lock().unwrap_or_else(|p| p.into_inner());
                for stream in [&client, &server] {
                    if let Ok(clone) = stream.try_clone() {
                        open.push(clone);
                    }
                }
                for (from, to) in [
                    (client.try_clone(), server.try_clone()),
                    (server.try_clone(), client.try_clone()),
                ]
                .into_iter()
                .filter_map(|(a, b)| Some((a.ok()?, b.ok()?)))
                {
                    let freezing = freezing.clone();
                    std::thread::spawn(move || pass_on(from, to, &freezing));
                }
            }
        });
        Proxy {
            port,
            cut,
            frozen,
            open,
        }
    }

    /// Whether a connection through it was ever opened (the node's client chose this server).
    fn used(&self) -> bool {
        !self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// Nothing passes, either way, until `thaw`; connections stay open and new ones are
    /// accepted: a server that hangs rather than dies.
    fn freeze(&self) {
        self.frozen
            .store(true, std::sync::atomic::Ordering::Release);
    }

    fn thaw(&self) {
        self.frozen
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// Drops every connection and refuses new ones.
    fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::Release);
        for stream in self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// A read of the bot through `node`: (status, error code, X-Botlist-Lag-Ms).
fn read(node: &Node, bot: &str, stale_ok: bool) -> (StatusCode, String, Option<u64>) {
    read_url(node, &format!("{}/bots/{bot}", node.base), stale_ok)
}

/// The same bot through the classic surface (`/api`), which the released SDKs read.
fn read_classic(node: &Node, bot: &str, stale_ok: bool) -> (StatusCode, String, Option<u64>) {
    let classic = node.base.trim_end_matches("/v1");
    read_url(node, &format!("{classic}/bots/{bot}"), stale_ok)
}

fn read_url(node: &Node, url: &str, stale_ok: bool) -> (StatusCode, String, Option<u64>) {
    let mut request = node.client.get(url);
    if stale_ok {
        request = request.header("X-Botlist-Allow-Stale", "true");
    }
    let response = request.send().expect("the node answers");
    let status = response.status();
    let lag = response
        .headers()
        .get("x-botlist-lag-ms")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    let body: Value = response.json().unwrap_or(Value::Null);
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_owned(),
        lag,
    )
}

#[test]
fn a_node_cut_off_from_nats_says_how_stale_it_is_and_follows_again() {
    let Some(binary) =
        nats_or_skip("a_node_cut_off_from_nats_says_how_stale_it_is_and_follows_again")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let proxy = Proxy::to(nats.servers[2].port);
    let via_proxy = format!("nats://127.0.0.1:{}", proxy.port);
    let mut nodes: Vec<Node> = (0..2)
        .map(|i| Node::start(&format!("node{i}"), &urls, &[]))
        .collect();
    nodes.push(Node::start(
        "cut",
        &via_proxy,
        &["--role", "follower", "--max-lag-ms", "2000"],
    ));
    writer_of(&nodes, Duration::from_secs(30));
    let (bot, _) = nodes[0].create_bot(41);
    converged(&nodes, Duration::from_secs(10));
    let (status, _, lag) = read(&nodes[2], &bot, false);
    assert_eq!(status, StatusCode::OK);
    assert!(lag.is_some_and(|lag| lag < 2000), "a current node: {lag:?}");

    proxy.cut();
    let cut_at = Instant::now();
    let behind_after = loop {
        let (status, code, lag) = read(&nodes[2], &bot, false);
        assert!(lag.is_some(), "every read says how far behind it may be");
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(code, "replica_behind");
            assert!(lag.is_some_and(|lag| lag > 2000), "{lag:?}");
            break cut_at.elapsed();
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            cut_at.elapsed() < Duration::from_secs(6),
            "reads stayed 200"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!("reads refused {behind_after:?} after the cut");
    // The classic surface is bounded alike: the released SDKs read through it.
    let (status, code, lag) = read_classic(&nodes[2], &bot, false);
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "replica_behind")
    );
    assert!(lag.is_some_and(|lag| lag > 2000), "{lag:?}");
    let (status, _, lag) = read_classic(&nodes[2], &bot, true);
    assert_eq!(status, StatusCode::OK, "a stale classic read asked for");
    assert!(
        lag.is_some(),
        "a classic read says how far behind it may be"
    );
    let (status, _, lag) = read(&nodes[2], &bot, true);
    assert_eq!(status, StatusCode::OK, "stale reads asked for");
    assert!(lag.is_some_and(|lag| lag > 2000));
    // Writes go on elsewhere meanwhile.
    let user = 410_000_000_000_000_000u64;
    for i in 0..5 {
        let (status, code) = vote(&nodes[0], &bot, user + i).expect("an answer");
        assert!(status.is_success(), "{status} {code}");
    }
    // Cut for longer than readiness allows: the node says it is stuck.
    std::thread::sleep(Duration::from_secs(12));
    let status = nodes[2].status().expect("/cluster answers");
    assert_eq!(status["ready"], false, "{status}");
    assert!(status["not_ready"].is_string(), "{status}");
    let (ready, code) = nodes[2].readiness().expect("/readyz answers");
    assert_eq!(
        (ready, code.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "not_ready")
    );

    proxy.restore();
    let restored = Instant::now();
    converged(&nodes, Duration::from_secs(20));
    eprintln!(
        "following again {:?} after the cut ended",
        restored.elapsed()
    );
    let (status, _, lag) = read(&nodes[2], &bot, false);
    assert_eq!(status, StatusCode::OK);
    assert!(lag.is_some_and(|lag| lag < 2000), "{lag:?}");
    let status = nodes[2].status().expect("/cluster answers");
    assert_eq!(status["ready"], true, "{status}");
    let (ready, _) = nodes[2].readiness().expect("/readyz answers");
    assert_eq!(ready, StatusCode::OK, "ready again once it follows");
    assert!(
        restored.elapsed() < Duration::from_secs(15),
        "the follower got back to applying within seconds"
    );
}

/// The last `lines` lines of a log.
fn tail(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The writer's nats-server hangs (its connection open, nothing answered) for 15 s: the
/// writer's client gives it up after three unanswered pings and reconnects to another server,
/// and writes go on there. The followers cannot take the role (`--role follower`), so only the
/// writer's own client can end the stall: before, at the client's 60 s ping interval, nothing
/// was written until the server answered again.
#[test]
fn a_writer_whose_nats_server_hangs_writes_again_through_another() {
    let Some(binary) =
        nats_or_skip("a_writer_whose_nats_server_hangs_writes_again_through_another")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let proxies: Vec<Proxy> = nats.servers.iter().map(|s| Proxy::to(s.port)).collect();
    let through_proxies = proxies
        .iter()
        .map(|p| format!("nats://127.0.0.1:{}", p.port))
        .collect::<Vec<_>>()
        .join(",");
    let writer = Node::start_default_lease("node0", &through_proxies);
    writer_of(std::slice::from_ref(&writer), Duration::from_secs(30));
    let urls = nats.urls();
    let mut nodes = vec![writer];
    nodes.extend((1..3).map(|i| Node::start(&format!("node{i}"), &urls, &["--role", "follower"])));
    let load = super::load::Load::start_paced(&nodes, 4, Duration::from_millis(50));
    std::thread::sleep(Duration::from_secs(2));

    let used: Vec<&Proxy> = proxies.iter().filter(|p| p.used()).collect();
    assert_eq!(used.len(), 1, "the writer's client has one server");
    used[0].freeze();
    let frozen_at = Instant::now();
    std::thread::sleep(Duration::from_secs(15));
    used[0].thaw();
    std::thread::sleep(Duration::from_secs(2));
    let bots = load.bots.clone();
    let acked = load.finish();
    // No 2xx at all after the freeze is a stall to the end.
    let none_after = acked.first_after(frozen_at).unwrap_or_else(Instant::now) - frozen_at;
    let stalled = acked.longest_gap_after(frozen_at).max(none_after);
    eprintln!("the longest stretch without a 2xx after the freeze: {stalled:?}");
    assert!(
        stalled < Duration::from_secs(8),
        "{stalled:?} without a 2xx while the writer's server hung for 15 s; the writer said:\n{}",
        super::scenarios::said(&nodes[0], 30)
    );
    assert_eq!(nodes[0].role(), "writer", "the writer kept its role");
    converged(&nodes, Duration::from_secs(10));
    super::load::assert_all_acked_everywhere(&nodes, &bots, &acked);
}
