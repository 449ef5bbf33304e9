//! `botlist backup --replicate`: a cluster backed up from its NATS servers alone (the newest
//! uploaded snapshot and the stream after it), restored, and served by a single node.

use std::process::Command;

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
    for user in 6..=10u64 {
        vote(follower, &bot, 310_000_000_000_000_000 + user);
    }

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
    });
}
