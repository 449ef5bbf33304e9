//! `botlist backup --replicate`: a cluster backed up from its NATS servers alone (the newest
//! uploaded snapshot and the stream after it, and the history cursor key), restored, served by a
//! single node, and seeded into a new cluster: a cursor handed out before the backup reads on
//! both.

use std::process::Command;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use serde_json::Value;

use super::followers::{snapshot, vote};
use super::harness::{nats_or_skip, writer_of, NatsCluster, Node};
use super::scenarios::{single_node, three_nodes};

fn botlist(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_botlist"))
        .args(args)
        .output()
        .expect("botlist runs");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn a_cluster_backed_up_from_nats_restores_every_acknowledged_write() {
    let Some(binary) =
        nats_or_skip("a_cluster_backed_up_from_nats_restores_every_acknowledged_write")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let nodes = three_nodes(&nats);
    let writer = writer_of(&nodes, std::time::Duration::from_secs(30));
    let follower: &Node = &nodes[(writer + 1) % 3];
    let (bot, token) = nodes[writer].create_bot(31);
    // Votes before the uploaded snapshot, and after it (only in the stream).
    for user in 1..=5u64 {
        vote(follower, &bot, 310_000_000_000_000_000 + user);
    }
    snapshot(&nodes[writer]);
    let mut seq = 0;
    for user in 6..=10u64 {
        seq = vote(follower, &bot, 310_000_000_000_000_000 + user);
    }
    // A history cursor handed out before the backup, and the page it leads to.
    let first = history(&nodes[writer].base, &bot, &token, None, seq);
    let cursor = first["next"].as_str().expect("a next cursor").to_owned();
    let second = history(&nodes[writer].base, &bot, &token, Some(&cursor), seq);

    let dir = tempfile::tempdir().expect("temp dir");
    let to = dir.path().join("backup");
    let to_arg = to.to_str().expect("utf-8");
    let urls = nats.urls();
    let (code, out) = botlist(&["backup", "--replicate", &urls, "--to", to_arg]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("backed up the cluster"), "{out}");
    eprintln!("{out}");
    let (code, out) = botlist(&["backup", "--replicate", &urls, "--to", to_arg]);
    assert_eq!(code, Some(8), "a second backup to the same path: {out}");

    let restored = dir.path().join("restored");
    let (code, out) = botlist(&[
        "restore",
        "--from",
        to_arg,
        "--data-dir",
        restored.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, Some(0), "{out}");
    single_node(&restored, |base| {
        let info: Value = reqwest::blocking::get(format!("{base}/bots/{bot}"))
            .expect("sent")
            .json()
            .expect("json");
        assert_eq!(info["vote_count"], 10, "{info}");
        let voted: Value = reqwest::blocking::Client::new()
            .get(format!(
                "{base}/bots/{bot}/check?userId={}",
                310_000_000_000_000_010u64
            ))
            .header("Authorization", &token)
            .send()
            .expect("sent")
            .json()
            .expect("json");
        assert_eq!(
            voted["voted"], 1,
            "the last vote, only in the stream: {voted}"
        );
        assert_eq!(
            history(base, &bot, &token, Some(&cursor), 0),
            second,
            "the cursor from the cluster reads on the restored node"
        );
    });

    // Seeded into a new cluster (another prefix on the same servers), the backup's key becomes
    // that cluster's: the cursor reads on its node too.
    let restored_arg = restored.to_str().expect("utf-8");
    let init = |prefix: &str| {
        botlist(&[
            "cluster",
            "init",
            "--replicate",
            &urls,
            "--cluster-prefix",
            prefix,
            "--from",
            restored_arg,
        ])
    };
    let (code, out) = init("seeded");
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("history cursor key"), "{out}");
    let node = Node::start("seeded0", &urls, &["--cluster-prefix", "seeded"]);
    writer_of(std::slice::from_ref(&node), Duration::from_secs(30));
    let seeded_seq = node.status().expect("status")["applied_seq"]
        .as_u64()
        .expect("applied_seq");
    assert_eq!(
        history(&node.base, &bot, &token, Some(&cursor), seeded_seq),
        second,
        "the cursor from the old cluster reads on the seeded one"
    );
    drop(node);

    // A cluster whose bucket already holds another key (its nodes started first) is refused,
    // and its stream gets nothing.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let js = runtime.block_on(async {
        let servers: Vec<String> = urls.split(',').map(str::to_owned).collect();
        let client = async_nats::ConnectOptions::new()
            .connect(servers.as_slice())
            .await
            .expect("connected");
        let js = jetstream::new(client);
        let store = js
            .create_key_value(kv::Config {
                bucket: "keyed_meta".into(),
                history: 1,
                storage: jetstream::stream::StorageType::File,
                num_replicas: 3,
                ..Default::default()
            })
            .await
            .expect("a bucket");
        store
            .create("history-cursor-key", vec![7u8; 32].into())
            .await
            .expect("a key");
        js
    });
    let (code, out) = init("keyed");
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("already holds another history cursor key"),
        "{out}"
    );
    let messages = runtime.block_on(async {
        let mut stream = js.get_stream("keyed_journal").await.expect("the stream");
        stream.info().await.expect("info").state.messages
    });
    assert_eq!(messages, 0, "nothing seeded into a refused cluster");
}

/// One page of the bot's vote history (one vote), read once the node holds record `seq`.
fn history(base: &str, bot: &str, token: &str, cursor: Option<&str>, seq: u64) -> Value {
    let mut url = format!("{base}/bots/{bot}/votes/history?limit=1");
    if let Some(cursor) = cursor {
        url.push_str(&format!("&cursor={cursor}"));
    }
    let response = reqwest::blocking::Client::new()
        .get(url)
        .header("Authorization", token)
        .header("X-Botlist-Min-Seq", seq.to_string())
        .send()
        .expect("sent");
    assert!(response.status().is_success(), "{}", response.status());
    response.json().expect("json")
}
