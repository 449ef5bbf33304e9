//! CONTRACT section 13 on the real binary: a profile token, a vote by it and a submission, each
//! answered 201, survive kill -9; a revocation survives it too, and after a snapshot as well.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::process::{Server, ADMIN};

fn profile_with_token(server: &Server) -> (String, String, String) {
    let (status, profile) = server
        .post(
            "/admin/users",
            ADMIN,
            &json!({ "username": "ada", "platform_id": "4242" }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{profile}");
    let id = profile["id"].as_str().expect("id").to_owned();
    let (status, issued) = server
        .post(
            &format!("/admin/users/{id}/tokens"),
            ADMIN,
            &json!({ "scopes": ["vote", "bots"], "label": "durable" }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    (
        id,
        issued["id"].as_str().expect("id").to_owned(),
        issued["token"].as_str().expect("token").to_owned(),
    )
}

fn vote(server: &Server, bot: &str, token: &str) -> (StatusCode, Value) {
    server
        .post(&format!("/bots/{bot}/votes"), token, &json!({}))
        .expect("sent")
}

#[test]
fn a_token_a_vote_and_a_submission_answered_201_survive_kill_9() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    let (bot, _) = server.create_bot(700);
    let (profile, token_id, token) = profile_with_token(&server);
    server.kill9();

    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    let (status, voted) = vote(&server, &bot, &token);
    assert_eq!(status, StatusCode::CREATED, "the token survived: {voted}");
    let (status, submitted) = server
        .post(
            "/bots",
            &token,
            &json!({ "platform_id": "701", "name": "Pending", "username": "pending", "short_description": "kept" }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{submitted}");
    let pending = submitted["bot"]["id"].as_str().expect("id").to_owned();
    server.kill9();

    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    assert_eq!(server.vote_count(&bot), 1, "the vote survived");
    assert_eq!(vote(&server, &bot, &token).0, StatusCode::CONFLICT);
    let (status, managed) = server.get(&format!("/bots/{pending}/manage"), Some(&token));
    assert_eq!(status, StatusCode::OK, "{managed}");
    assert_eq!(managed["status"], "pending");
    assert_eq!(managed["owner_ids"], json!([profile]));
    assert_eq!(
        server.get(&format!("/bots/{pending}"), None).0,
        StatusCode::NOT_FOUND
    );

    // A revocation is as durable, from the journal and from a snapshot.
    let revoked = reqwest::blocking::Client::new()
        .delete(format!(
            "{}/admin/users/{profile}/tokens/{token_id}",
            server.base
        ))
        .header("Authorization", ADMIN)
        .send()
        .expect("sent");
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    server.kill9();
    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    assert_eq!(vote(&server, &bot, &token).0, StatusCode::UNAUTHORIZED);
    server.snapshot();
    server.kill9();
    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    assert_eq!(vote(&server, &bot, &token).0, StatusCode::UNAUTHORIZED);
    let (status, listed) = server.get(&format!("/admin/users/{profile}/tokens"), Some(ADMIN));
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["tokens"], json!([]));
}
