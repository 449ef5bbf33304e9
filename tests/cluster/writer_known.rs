//! Issue 40: a follower knows a new writer as soon as it applies the writer's epoch message,
//! not only at its next look at the lease. Twice in CI, after the writer's kill -9, a write
//! sent through the survivor that was not the new writer got 503 `no_writer` although the new
//! writer already answered writes: that survivor had seen the old writer's key expire and
//! learned the new one only at a later look at the bucket, more than the 1.2 s a forward waits.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::harness::{nats_or_skip, writer_of, NatsCluster, Node, ADMIN};

/// A bot listed through `node` once: its status and answer.
fn list_once(node: &Node, platform_id: u64) -> (StatusCode, Value) {
    let body = json!({
        "platform_id": platform_id.to_string(),
        "name": format!("Bot {platform_id}"),
        "username": format!("bot{platform_id}"),
        "short_description": "replicated",
    });
    let response = node.post("/admin/bots", ADMIN, &body).expect("sent");
    let status = response.status();
    (status, response.json().unwrap_or(Value::Null))
}

/// node2 never reads the lease's holder (`--test-lease-unread`, and `--role follower` so that
/// it never takes the lease either): what it knows of the writer comes from the stream alone.
/// Once the new writer has acknowledged a write after the old one's kill -9, a write sent
/// through node2 once is forwarded and acknowledged: the new writer's epoch message, stored
/// before that first acknowledgement, named it. Without it node2 knows no writer and answers
/// 503 `no_writer` every time.
#[test]
fn a_follower_knows_the_new_writer_from_its_epoch_message() {
    let Some(binary) = nats_or_skip("a_follower_knows_the_new_writer_from_its_epoch_message")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let mut nodes: Vec<Node> = (0..2)
        .map(|i| Node::start(&format!("node{i}"), &urls, &[]))
        .collect();
    let blind = Node::start(
        "node2",
        &urls,
        &["--role", "follower", "--test-lease-unread"],
    );
    let writer = writer_of(&nodes, Duration::from_secs(30));
    nodes[writer].create_bot(1);

    let mut killed = nodes.remove(writer);
    killed.kill9();
    let new_writer = &nodes[writer_of(&nodes, Duration::from_secs(30))];
    // The first write the new writer acknowledges (retried while it is still promoting).
    new_writer.create_bot(2);
    let (status, answer) = list_once(&blind, 3);
    assert_eq!(
        status,
        StatusCode::CREATED,
        "node2 forwards to the new writer: {answer}\n{}",
        blind.log()
    );
    let status = blind.status().expect("node2 answers /cluster");
    assert_eq!(
        status["writer"]["node_id"],
        new_writer.name.as_str(),
        "{status}"
    );
}
