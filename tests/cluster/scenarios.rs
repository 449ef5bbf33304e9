//! What must hold when nodes and servers die, each under four writing clients.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::harness::{nats_or_skip, writer_of, NatsCluster, Node, ADMIN};
use super::load::{assert_all_acked_everywhere, Load};

pub fn three_nodes(nats: &NatsCluster) -> Vec<Node> {
    let urls = nats.urls();
    (0..3)
        .map(|i| Node::start(&format!("node{i}"), &urls, &[]))
        .collect()
}

/// Waits until every node reports the same applied sequence and the same digest of its
/// state, and returns the sequence.
pub fn converged(nodes: &[Node], within: Duration) -> u64 {
    let deadline = Instant::now() + within;
    loop {
        let digests: Vec<(u64, String)> = nodes.iter().map(Node::digest).collect();
        if digests.iter().all(|d| *d == digests[0]) && digests[0].0 > 0 {
            return digests[0].0;
        }
        if Instant::now() >= deadline {
            print_tails(nodes);
            panic!("nodes did not converge: {digests:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Prints each node's `/cluster` and the tail of what it said, for a failed run.
pub fn print_tails(nodes: &[Node]) {
    for node in nodes {
        eprintln!(
            "--- node {}: {:?}\n(last log lines but the access log, newest first):\n{}",
            node.name,
            node.status(),
            said(node, 40)
        );
    }
}

/// A node's last `lines` log lines, newest first, without the access log: the test's own
/// polls would bury what the node said.
pub fn said(node: &Node, lines: usize) -> String {
    let log = node.log();
    let tail: Vec<&str> = log
        .lines()
        .filter(|line| !line.contains("botlist::access"))
        .rev()
        .take(lines)
        .collect();
    tail.join("\n")
}

#[test]
fn a_writer_killed_under_four_clients_loses_no_acknowledged_write() {
    let Some(binary) =
        nats_or_skip("a_writer_killed_under_four_clients_loses_no_acknowledged_write")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let mut nodes = three_nodes(&nats);
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let load = Load::start(&nodes, 4);
    std::thread::sleep(Duration::from_secs(2));

    let killed_at = Instant::now();
    nodes[writer].kill9();
    // Restarted once another node writes: a restart before that would take its own lease
    // back (a_writer_restarted_takes_its_lease_back_without_waiting_out_the_ttl), and this
    // test is about a writer replaced by another node.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !nodes
        .iter()
        .enumerate()
        .any(|(i, n)| i != writer && n.role() == "writer")
    {
        assert!(
            Instant::now() < deadline,
            "no other node took over within 10 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let args = nodes[writer].args.clone();
    nodes[writer] = Node::start_with(&format!("node{writer}"), args);
    load.set_base(writer, &nodes[writer].base);
    std::thread::sleep(Duration::from_secs(4));
    let bots = load.bots.clone();
    let acked = load.finish();

    let back = acked
        .first_after(killed_at + Duration::from_millis(1))
        .expect("writes succeed again after the kill");
    // Writes in flight at the kill may still be answered just after it; what counts is that
    // a new writer answers within 10 s at --lease-ttl 3.
    assert!(
        back - killed_at < Duration::from_secs(10),
        "writes resumed {:?} after the kill",
        back - killed_at
    );
    let new_writer = writer_of(&nodes, Duration::from_secs(10));
    assert_ne!(
        new_writer, writer,
        "the killed node came back as a follower"
    );
    assert!(
        acked.total() > 50,
        "too few writes to mean anything: {}",
        acked.total()
    );
    converged(&nodes, Duration::from_secs(2));
    assert_all_acked_everywhere(&nodes, &bots, &acked);
}

/// The harness's arguments with the lease TTL set to `ttl` seconds.
fn args_with_ttl(name: &str, nats: &str, ttl: &str) -> Vec<String> {
    let mut args = Node::args(name, nats, &[]);
    let at = args
        .iter()
        .position(|a| a == "--lease-ttl")
        .expect("the harness sets a TTL");
    args[at + 1] = ttl.to_owned();
    args
}

/// A vote through `node` answered 2xx within `within`, retried every 100 ms; when it came.
fn vote_answered(node: &Node, bot: &str, user: u64, within: Duration) -> Option<Instant> {
    let deadline = Instant::now() + within;
    let body = json!({"user_id": user.to_string(), "username": "u", "avatar": null});
    while Instant::now() < deadline {
        let answer = node.post(&format!("/admin/bots/{bot}/votes"), ADMIN, &body);
        if answer.is_ok_and(|a| a.status().is_success()) {
            return Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// A writer killed and started again by its supervisor finds the lease naming its own id,
/// written by a process that no longer answers, and takes it back at once: at a 60 s TTL the
/// other nodes could not take it for a minute, and before, neither could the restarted node.
/// A second live process under the same id takes nothing from the first.
#[test]
fn a_writer_restarted_takes_its_lease_back_without_waiting_out_the_ttl() {
    let Some(binary) =
        nats_or_skip("a_writer_restarted_takes_its_lease_back_without_waiting_out_the_ttl")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let mut nodes: Vec<Node> = (0..3)
        .map(|i| {
            Node::start_with(
                &format!("node{i}"),
                args_with_ttl(&format!("node{i}"), &urls, "60"),
            )
        })
        .collect();
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let (bot, _) = nodes[writer].create_bot(900);
    let epoch = |node: &Node| node.status().and_then(|s| s["epoch"].as_u64()).unwrap_or(0);
    let before = epoch(&nodes[writer]);
    let other = (writer + 1) % 3;
    vote_answered(&nodes[other], &bot, 1, Duration::from_secs(10)).expect("a vote before the kill");

    nodes[writer].kill9();
    let killed = Instant::now();
    let stopped = nodes.remove(writer);
    nodes.insert(writer, Node::start_in_dir_of(stopped));
    let back = vote_answered(&nodes[other], &bot, 2, Duration::from_secs(30))
        .expect("no write within 30 s of the kill at a 60 s TTL: the lease was not taken back");
    eprintln!("writes again {:?} after the kill", back - killed);
    assert_eq!(writer_of(&nodes, Duration::from_secs(5)), writer);
    assert!(
        epoch(&nodes[writer]) > before,
        "the same epoch after a restart"
    );

    // A twin: another process, another data directory, the same --node-id.
    let name = format!("node{writer}");
    let twin = Node::start_with(&name, args_with_ttl(&name, &urls, "60"));
    let warned = Instant::now() + Duration::from_secs(10);
    while !twin
        .log()
        .contains("another live process writes under this node's id")
    {
        assert!(
            Instant::now() < warned,
            "the twin did not see the live holder: {}",
            twin.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(writer_of(&nodes, Duration::from_secs(5)), writer);
    assert_ne!(twin.role(), "writer");
    vote_answered(&nodes[other], &bot, 3, Duration::from_secs(5)).expect("the writer still writes");
    converged(&nodes, Duration::from_secs(10));
}

#[test]
fn a_stopped_writer_is_fenced_and_exits_5() {
    let Some(binary) = nats_or_skip("a_stopped_writer_is_fenced_and_exits_5") else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let mut nodes = three_nodes(&nats);
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let load = Load::start(&nodes, 4);
    std::thread::sleep(Duration::from_secs(2));

    nodes[writer].signal("STOP");
    // Three lease TTLs.
    std::thread::sleep(Duration::from_secs(9));
    let others: Vec<&Node> = nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != writer)
        .map(|(_, n)| n)
        .collect();
    assert!(
        others.iter().any(|n| n.role() == "writer"),
        "another node took over while the writer was stopped"
    );
    nodes[writer].signal("CONT");
    let status = nodes[writer]
        .wait_exit(Duration::from_secs(10))
        .expect("the stale writer exits");
    assert_eq!(status.code(), Some(5), "{}", nodes[writer].log());
    let args = nodes[writer].args.clone();
    nodes[writer] = Node::start_with(&format!("node{writer}"), args);
    load.set_base(writer, &nodes[writer].base);
    std::thread::sleep(Duration::from_secs(2));
    let bots = load.bots.clone();
    let acked = load.finish();
    converged(&nodes, Duration::from_secs(2));
    assert_all_acked_everywhere(&nodes, &bots, &acked);
}

#[test]
fn a_nats_server_killed_under_writes_loses_nothing() {
    let Some(binary) = nats_or_skip("a_nats_server_killed_under_writes_loses_nothing") else {
        return;
    };
    let mut nats = NatsCluster::start(&binary);
    let mut nodes = three_nodes(&nats);
    writer_of(&nodes, Duration::from_secs(30));
    let load = Load::start(&nodes, 4);
    std::thread::sleep(Duration::from_secs(2));
    let killed_at = Instant::now();
    nats.servers[0].kill9();
    // JetStream elects new leaders within seconds: a round of nats-server's elections takes 4
    // to 9 s, and a split vote between the two servers left costs another (13 s seen). At
    // --lease-ttl 3 the writer may fence itself meanwhile and exit 5: restarted, as a
    // supervisor would, it comes back as a standby while another node writes.
    let mut exits = Vec::new();
    let settled = killed_at + Duration::from_secs(12);
    let give_up = killed_at + Duration::from_secs(30);
    while load.first_ack_after(settled).is_none() && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(250));
        for (i, node) in nodes.iter_mut().enumerate() {
            if let Some(status) = node.exited() {
                assert_eq!(status.code(), Some(5), "{}", node.log());
                exits.push(format!(
                    "--- {} exited {:?} {:?} after the kill, newest first:\n{}",
                    node.name,
                    status.code(),
                    killed_at.elapsed(),
                    said(node, 60)
                ));
                let args = node.args.clone();
                *node = Node::start_with(&format!("node{i}"), args);
                load.set_base(i, &node.base);
            }
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    let bots = load.bots.clone();
    let acked = load.finish();
    eprintln!(
        "the longest stretch without a 2xx after the kill: {:?} ({} node exits)",
        acked.longest_gap_after(killed_at),
        exits.len()
    );
    if acked.first_after(settled).is_none() {
        eprintln!("{}", exits.join("\n"));
        print_tails(&nodes);
        panic!(
            "writes go on with two of three servers ({} node exits)",
            exits.len()
        );
    }
    // A node whose server died reconnects to another one first.
    converged(&nodes, Duration::from_secs(10));
    assert_all_acked_everywhere(&nodes, &bots, &acked);
}

#[test]
fn every_node_answers_forwards_and_tells_its_sequence() {
    let Some(binary) = nats_or_skip("every_node_answers_forwards_and_tells_its_sequence") else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    // A follower alone: it answers reads from what it applied, and a write finds no writer.
    let lone = Node::start("lone", &nats.urls(), &["--role", "follower"]);
    let response = lone.get("/bots").expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().contains_key("x-botlist-seq"));
    let response = lone
        .post(
            "/admin/bots",
            ADMIN,
            &json!({"platform_id": "1", "name": "B", "username": "b", "short_description": "s"}),
        )
        .expect("sent");
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("x-botlist-seq"));
    let body: Value = response.json().expect("json");
    assert_eq!(body["error"]["code"], "no_writer", "{body}");
    let status = lone.status().expect("GET /cluster");
    assert_eq!(status["role"], "follower");
    assert!(status["writer"].is_null());
    for key in [
        "node_id",
        "epoch",
        "applied_seq",
        "durable_seq",
        "stream_last_seq",
        "lag_messages",
    ] {
        assert!(status.get(key).is_some(), "{key} in {status}");
    }

    let mut nodes = three_nodes(&nats);
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let follower = (writer + 1) % 3;
    let get_writer = |n: &Node| {
        n.client
            .get(format!("{}/cluster/writer", n.root))
            .send()
            .expect("sent")
            .status()
    };
    assert_eq!(get_writer(&nodes[writer]), StatusCode::OK);
    assert_eq!(
        get_writer(&nodes[follower]),
        StatusCode::SERVICE_UNAVAILABLE
    );

    // A write through a follower is forwarded, answered as the writer answered, with a seq.
    let (bot, token) = nodes[follower].create_bot(77);
    // A bot only listed, with no record of its own yet, is the same state on every node.
    converged(&nodes, Duration::from_secs(10));
    let voted = nodes[follower]
        .post(
            &format!("/admin/bots/{bot}/votes"),
            ADMIN,
            &json!({"user_id": "300000000000000001", "username": "u", "avatar": null}),
        )
        .expect("sent");
    assert!(voted.status().is_success(), "{}", voted.status());
    let seq: u64 = voted.headers()["x-botlist-seq"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("a number");
    assert!(seq >= 2, "the vote is the second record at least: {seq}");
    // The writer shows its lease: the TTL it was given (the harness's `--lease-ttl 3`) and a
    // renewal within it (it renews at a third of the TTL and could not have written otherwise).
    // The others (`candidate` while a writer holds the lease, or `follower`) never held it
    // and show neither.
    let status = nodes[writer].status().expect("GET /cluster");
    assert_eq!(status["lease_ttl_ms"], 3000, "{status}");
    let renewed = status["lease_renewed_ms_ago"]
        .as_u64()
        .unwrap_or_else(|| panic!("lease_renewed_ms_ago is a number: {status}"));
    assert!(renewed < 3000, "renewed {renewed} ms ago: {status}");
    for node in [&nodes[follower], &nodes[(writer + 2) % 3], &lone] {
        let status = node.status().expect("GET /cluster");
        assert_ne!(status["role"], "writer", "{status}");
        assert!(status["lease_ttl_ms"].is_null(), "{status}");
        assert!(status["lease_renewed_ms_ago"].is_null(), "{status}");
    }
    // The lone follower follows the stream too, and shows what it applied.
    let listed = lone
        .client
        .get(format!("{}/bots/{bot}", lone.base))
        .header("X-Botlist-Min-Seq", seq.to_string())
        .send()
        .expect("sent");
    assert_eq!(listed.status(), StatusCode::OK);
    assert!(listed.headers().contains_key("x-botlist-seq"));

    // Reading with the write's token sees it, on every node.
    for node in &nodes {
        let response = node
            .client
            .get(format!("{}/bots/{bot}", node.base))
            .header("X-Botlist-Min-Seq", seq.to_string())
            .send()
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK);
        let seen: u64 = response.headers()["x-botlist-seq"]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("a number");
        assert!(seen >= seq);
        let body: Value = response.json().expect("json");
        assert_eq!(body["vote_count"], 1, "{body}");
    }
    // A token far ahead: 503 replica_behind after about a second, Retry-After: 1.
    for ask in [
        |n: &Node| {
            n.client
                .get(format!("{}/bots", n.base))
                .header("X-Botlist-Min-Seq", "1000000000")
                .send()
        },
        |n: &Node| {
            n.client
                .get(format!("{}/bots?min_seq=1000000000", n.base))
                .send()
        },
        // Among other parameters, and with its name percent-encoded: the same.
        |n: &Node| {
            n.client
                .get(format!(
                    "{}/bots?limit=5&min_seq=1000000000&sort=votes",
                    n.base
                ))
                .send()
        },
        |n: &Node| {
            n.client
                .get(format!("{}/bots?limit=5&min%5Fseq=1000000000", n.base))
                .send()
        },
    ] {
        let started = Instant::now();
        let response = ask(&nodes[follower]).expect("sent");
        let waited = started.elapsed();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()["retry-after"], "1");
        let body: Value = response.json().expect("json");
        assert_eq!(body["error"]["code"], "replica_behind", "{body}");
        assert!(
            waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
            "{waited:?}"
        );
    }
    let bad = nodes[writer]
        .client
        .get(format!("{}/bots?min_seq=soon", nodes[writer].base))
        .send()
        .expect("sent");
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    // A read asking for nothing is answered at once, with how far the node is and how stale.
    let plain = nodes[follower]
        .client
        .get(format!("{}/bots?limit=5&q=min", nodes[follower].base))
        .send()
        .expect("sent");
    assert_eq!(plain.status(), StatusCode::OK);
    for header in ["x-botlist-seq", "x-botlist-lag-ms"] {
        let value: u64 = plain.headers()[header]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("a number");
        assert!(
            header != "x-botlist-seq" || value >= seq,
            "{header}: {value}"
        );
    }

    // Step-down hands the role over: the writer exits 5 and another node writes.
    let stepped = nodes[writer]
        .client
        .post(format!("{}/admin/cluster/step-down", nodes[writer].base))
        .header("Authorization", ADMIN)
        .send()
        .expect("sent");
    assert_eq!(stepped.status(), StatusCode::ACCEPTED);
    let status = nodes[writer]
        .wait_exit(Duration::from_secs(10))
        .expect("the writer exits after stepping down");
    assert_eq!(status.code(), Some(5));
    let started = Instant::now();
    let others: Vec<Node> = nodes
        .drain(..)
        .enumerate()
        .filter(|(i, _)| *i != writer)
        .map(|(_, n)| n)
        .collect();
    writer_of(&others, Duration::from_secs(5));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    for node in &others {
        let (count, voters) = node.votes(&bot, &token);
        assert_eq!((count, voters.len()), (1, 1));
    }
}

/// Runs the single-node server on `dir` until `work` is done, then stops it with SIGTERM.
pub(super) fn single_node(dir: &std::path::Path, work: impl FnOnce(&str)) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_botlist"))
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--admin-token",
            ADMIN,
            "--rate-limit",
            "0",
        ])
        .arg("--data-dir")
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("botlist starts");
    let stdout = child.stdout.take().expect("stdout");
    let base = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .expect("the single-node server listens");
    work(&base);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert!(child.wait().expect("waited").success());
}

#[test]
fn a_seeded_cluster_and_a_late_empty_node_hold_the_same_state() {
    let Some(binary) = nats_or_skip("a_seeded_cluster_and_a_late_empty_node_hold_the_same_state")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let single = tempfile::tempdir().expect("temp dir");
    let mut seeded_bot = (String::new(), String::new());
    single_node(single.path(), |base| {
        let client = reqwest::blocking::Client::new();
        let created: Value = client
            .post(format!("{base}/admin/bots"))
            .header("Authorization", ADMIN)
            .json(
                &json!({"platform_id": "4242", "name": "Seed", "username": "seed",
                          "short_description": "from one box"}),
            )
            .send()
            .expect("sent")
            .json()
            .expect("json");
        seeded_bot = (
            created["bot"]["id"].as_str().expect("id").to_owned(),
            created["token"].as_str().expect("token").to_owned(),
        );
        for user in 1..=3u64 {
            let status = client
                .post(format!("{base}/admin/bots/{}/votes", seeded_bot.0))
                .header("Authorization", ADMIN)
                .json(
                    &json!({"user_id": (400_000_000_000_000_000 + user).to_string(),
                              "username": "v", "avatar": null}),
                )
                .send()
                .expect("sent")
                .status();
            assert!(status.is_success());
        }
    });
    let init = |expect: i32| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_botlist"))
            .args(["cluster", "init", "--replicate", &nats.urls(), "--from"])
            .arg(single.path())
            .output()
            .expect("runs");
        assert_eq!(
            output.status.code(),
            Some(expect),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    init(0);
    // Seeding is for an empty stream only.
    init(2);

    let urls = nats.urls();
    let mut nodes: Vec<Node> = (0..2)
        .map(|i| Node::start(&format!("node{i}"), &urls, &[]))
        .collect();
    writer_of(&nodes, Duration::from_secs(30));
    let (count, voters) = nodes[1].votes(&seeded_bot.0, &seeded_bot.1);
    assert_eq!((count, voters.len()), (3, 3), "the seeded votes are there");
    let (bot, _) = nodes[0].create_bot(99);
    for user in 0..20u64 {
        let status = nodes[(user % 2) as usize]
            .post(
                &format!("/admin/bots/{bot}/votes"),
                ADMIN,
                &json!({"user_id": (500_000_000_000_000_000 + user).to_string(),
                        "username": "v", "avatar": null}),
            )
            .expect("sent")
            .status();
        assert!(status.is_success(), "{status}");
    }
    // A node started on an empty data directory catches up; when writes stop every node
    // reaches the same applied sequence and digest within 2 s.
    nodes.push(Node::start("late", &urls, &[]));
    converged(&nodes, Duration::from_secs(2));
}
