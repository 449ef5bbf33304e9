//! CONTRACT section 13 in a cluster: a profile token revoked through one node is refused by
//! every node once the revocation's `X-Botlist-Seq` is applied there.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::harness::{nats_or_skip, writer_of, NatsCluster, Node, ADMIN};

fn seq_of(response: &reqwest::blocking::Response) -> u64 {
    response.headers()["x-botlist-seq"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("a number")
}

/// `GET /bots/{bot}/manage` with `token` on `node`, once it has applied `seq`.
fn manage(node: &Node, bot: &str, token: &str, seq: u64) -> StatusCode {
    node.client
        .get(format!("{}/bots/{bot}/manage", node.base))
        .header("Authorization", token)
        .header("X-Botlist-Min-Seq", seq.to_string())
        .send()
        .expect("sent")
        .status()
}

#[test]
fn a_token_revoked_through_one_node_is_refused_by_every_node_after_its_seq() {
    let Some(binary) =
        nats_or_skip("a_token_revoked_through_one_node_is_refused_by_every_node_after_its_seq")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let nodes: Vec<Node> = (0..3)
        .map(|i| Node::start(&format!("node{i}"), &urls, &[]))
        .collect();
    let writer = writer_of(&nodes, Duration::from_secs(30));
    let follower = &nodes[(writer + 1) % nodes.len()];

    // Everything through a follower, which forwards the writes.
    let created = follower
        .post(
            "/admin/users",
            ADMIN,
            &json!({ "username": "ada", "platform_id": "5151" }),
        )
        .expect("sent");
    let status = created.status();
    let created = created.json::<Value>().expect("json");
    assert_eq!(
        status,
        StatusCode::CREATED,
        "{created}: {}",
        follower.log.lock().map(|l| l.clone()).unwrap_or_default()
    );
    let profile = created["id"].as_str().expect("id").to_owned();
    let listed = follower
        .post(
            "/admin/bots",
            ADMIN,
            &json!({ "platform_id": "5252", "name": "Owned", "username": "owned",
                     "short_description": "d", "owner_ids": [profile] }),
        )
        .expect("sent");
    assert_eq!(listed.status(), StatusCode::CREATED);
    let bot = listed.json::<Value>().expect("json")["bot"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let issued = follower
        .post(
            &format!("/admin/users/{profile}/tokens"),
            ADMIN,
            &json!({ "scopes": ["bots"], "label": "cluster" }),
        )
        .expect("sent");
    assert_eq!(issued.status(), StatusCode::CREATED);
    let issued_seq = seq_of(&issued);
    let issued: Value = issued.json().expect("json");
    let token = issued["token"].as_str().expect("token");
    for node in &nodes {
        assert_eq!(manage(node, &bot, token, issued_seq), StatusCode::OK);
    }

    let revoked = follower
        .client
        .delete(format!(
            "{}/admin/users/{profile}/tokens/{}",
            follower.base,
            issued["id"].as_str().expect("id")
        ))
        .header("Authorization", ADMIN)
        .send()
        .expect("sent");
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    let revoked_seq = seq_of(&revoked);
    assert!(revoked_seq > issued_seq);
    for node in &nodes {
        assert_eq!(
            manage(node, &bot, token, revoked_seq),
            StatusCode::UNAUTHORIZED,
            "node {} after seq {revoked_seq}",
            node.base
        );
    }
}

/// The cluster layer's own refusals under the project API are RFC 9457 problem details, as
/// every error below `/projects` is (docs/API.md): a min-seq that is not a number (400) and one
/// not reached in time (503 `replica_behind`); elsewhere they stay in the envelope.
#[test]
fn the_cluster_layer_s_refusals_on_the_project_api_are_problem_details() {
    let Some(binary) =
        nats_or_skip("the_cluster_layer_s_refusals_on_the_project_api_are_problem_details")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let node = Node::start("node0", &nats.urls(), &["--min-seq-wait-ms", "100"]);
    writer_of(std::slice::from_ref(&node), Duration::from_secs(30));
    let (bot, token) = node.create_bot(6161);
    for (min_seq, status, code) in [
        ("x", StatusCode::BAD_REQUEST, "bad_request"),
        (
            "999999999",
            StatusCode::SERVICE_UNAVAILABLE,
            "replica_behind",
        ),
    ] {
        let response = node
            .client
            .get(format!("{}/projects/@me", node.base))
            .header("Authorization", format!("Bearer {token}"))
            .header("X-Botlist-Min-Seq", min_seq)
            .send()
            .expect("sent");
        assert_eq!(response.status(), status, "{min_seq}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json",
            "{min_seq}"
        );
        assert!(response.headers().contains_key("x-botlist-seq"));
        let problem: Value = response.json().expect("json");
        assert_eq!(
            problem["type"],
            format!("urn:botlist:error:{code}"),
            "{problem}"
        );
        assert_eq!(problem["status"], status.as_u16(), "{problem}");
        assert!(problem["detail"].as_str().is_some_and(|d| !d.is_empty()));
        // The same refusal on a route of SPEC.md's surface: the envelope.
        let response = node
            .client
            .get(format!("{}/bots/{bot}", node.base))
            .header("X-Botlist-Min-Seq", min_seq)
            .send()
            .expect("sent");
        assert_eq!(response.status(), status, "{min_seq}");
        let envelope: Value = response.json().expect("json");
        assert_eq!(envelope["error"]["code"], code, "{envelope}");
    }
}
