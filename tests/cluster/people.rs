//! CONTRACT sections 12 and 13 in a cluster: a profile token revoked through one node is
//! refused by every node once the revocation's `X-Botlist-Seq` is applied there; a profile's
//! vote, an owner's management and a project's commands and announcements made through a
//! follower are on every node and survive the writer's kill -9.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::harness::{nats_or_skip, writer_of, NatsCluster, Node, ADMIN};
use super::moderation::{profile, read, same_digest, send, seq_of};

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

/// What every node must answer for the listing once it has applied `seq`: the owner's edit
/// and owners, the profile's vote, the rotated token (the old one refused), the project's
/// commands and announcement.
fn holds_everything(node: &Node, seq: u64, bot: &str, owner: &str, tokens: (&str, &str)) {
    let (old_token, new_token) = tokens;
    let (status, listing) = read(node, &format!("/bots/{bot}"), None, seq);
    assert_eq!(status, StatusCode::OK, "{} {listing}", node.name);
    assert_eq!(
        listing["short_description"], "edited by its owner",
        "{listing}"
    );
    assert_eq!(listing["vote_count"], 1, "{listing}");
    let (status, managed) = read(node, &format!("/bots/{bot}/manage"), Some(owner), seq);
    assert_eq!(status, StatusCode::OK, "{managed}");
    assert_eq!(
        managed["owner_ids"].as_array().map(Vec::len),
        Some(2),
        "{managed}"
    );
    let check = format!("/bots/{bot}/check?userId=9090");
    let (status, voted) = read(node, &check, Some(new_token), seq);
    assert_eq!(
        (status, &voted["voted"]),
        (StatusCode::OK, &json!(1)),
        "{voted}"
    );
    assert_eq!(
        read(node, &check, Some(old_token), seq).0,
        StatusCode::UNAUTHORIZED,
        "the token rotated away, on {}",
        node.name
    );
    let bearer = format!("Bearer {new_token}");
    let (status, commands) = read(node, "/projects/@me/commands", Some(&bearer), seq);
    assert_eq!(status, StatusCode::OK, "{commands}");
    assert_eq!(commands, json!([{ "name": "ping", "description": "pong" }]));
    let (status, said) = read(node, &format!("/bots/{bot}/announcements"), None, seq);
    assert_eq!(status, StatusCode::OK, "{said}");
    assert_eq!(said["data"][0]["title"], "Replicated", "{said}");
}

#[test]
fn a_profile_s_vote_an_owner_s_changes_and_a_project_s_writes_through_a_follower_survive_kill_9() {
    let Some(binary) = nats_or_skip(
        "a_profile_s_vote_an_owner_s_changes_and_a_project_s_writes_through_a_follower_survive_kill_9",
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
    let (owner_id, owner, _) = profile(follower, json!({ "username": "owner" }), json!(["bots"]));
    let (co_owner, _, _) = profile(follower, json!({ "username": "co" }), json!(["bots"]));
    let (_, voter, _) = profile(
        follower,
        json!({ "username": "voter", "platform_id": "9090" }),
        json!(["vote"]),
    );
    let (listed, _) = send(
        follower,
        Method::POST,
        "/admin/bots",
        ADMIN,
        Some(
            json!({ "platform_id": "901", "name": "Owned", "username": "owned",
                     "short_description": "listed", "owner_ids": [owner_id] }),
        ),
        StatusCode::CREATED,
    );
    let bot = listed["bot"]["id"].as_str().expect("id").to_owned();
    let old_token = listed["token"].as_str().expect("token").to_owned();

    let (vote, _) = send(
        follower,
        Method::POST,
        &format!("/bots/{bot}/votes"),
        &voter,
        None,
        StatusCode::CREATED,
    );
    assert!(vote["expires_at"].is_string(), "{vote}");
    send(
        follower,
        Method::PATCH,
        &format!("/bots/{bot}"),
        &owner,
        Some(json!({ "short_description": "edited by its owner" })),
        StatusCode::OK,
    );
    send(
        follower,
        Method::PUT,
        &format!("/bots/{bot}/owners"),
        &owner,
        Some(json!({ "owner_ids": [owner_id, co_owner] })),
        StatusCode::OK,
    );
    let (rotated, _) = send(
        follower,
        Method::POST,
        &format!("/bots/{bot}/token"),
        &owner,
        None,
        StatusCode::OK,
    );
    let new_token = rotated["token"].as_str().expect("token").to_owned();
    let bearer = format!("Bearer {new_token}");
    send(
        follower,
        Method::PUT,
        "/projects/@me/commands",
        &bearer,
        Some(json!([{ "name": "ping", "description": "pong" }])),
        StatusCode::NO_CONTENT,
    );
    let (_, last) = send(
        follower,
        Method::POST,
        "/projects/@me/announcements",
        &bearer,
        Some(json!({ "title": "Replicated", "content": "on every node of the cluster" })),
        StatusCode::CREATED,
    );

    let tokens = (old_token.as_str(), new_token.as_str());
    for node in &nodes {
        holds_everything(node, last, &bot, &owner, tokens);
    }
    let running: Vec<&Node> = nodes.iter().collect();
    let digest = same_digest(&running, last);

    // The writer dies: the next one and the other survivor hold every change.
    let mut killed = nodes.remove(writer);
    killed.kill9();
    let new_writer = writer_of(&nodes, Duration::from_secs(30));
    let survivors: Vec<&Node> = nodes.iter().collect();
    assert_eq!(
        same_digest(&survivors, last),
        digest,
        "the state the writer left"
    );
    for node in &survivors {
        holds_everything(node, last, &bot, &owner, tokens);
    }
    // The vote's 12 hours hold on the new writer, asked once through the other node (which
    // knows the new writer from its epoch message: tests/cluster/writer_known.rs).
    let other = &nodes[(new_writer + 1) % 2];
    let (again, _) = send(
        other,
        Method::POST,
        &format!("/bots/{bot}/votes"),
        &voter,
        None,
        StatusCode::CONFLICT,
    );
    assert_eq!(again["error"]["code"], "already_voted", "{again}");
    // The owner removes the listing through the other node: gone everywhere.
    let (_, removed) = send(
        other,
        Method::DELETE,
        &format!("/bots/{bot}"),
        &owner,
        None,
        StatusCode::NO_CONTENT,
    );
    for node in &survivors {
        assert_eq!(
            read(node, &format!("/bots/{bot}"), None, removed).0,
            StatusCode::NOT_FOUND
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
