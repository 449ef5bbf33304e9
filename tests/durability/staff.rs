//! CONTRACT section 14 on the real binary: a staff decision, a claim and a vote ban, each
//! answered 2xx, survive kill -9, from the journal and from a snapshot.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::process::{Server, ADMIN};

/// A profile made with `body` and a token of `scopes`: its id and token.
fn profile(server: &Server, body: Value, scopes: Value) -> (String, String) {
    let (status, profile) = server.post("/admin/users", ADMIN, &body).expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{profile}");
    let id = profile["id"].as_str().expect("id").to_owned();
    let (status, issued) = server
        .post(
            &format!("/admin/users/{id}/tokens"),
            ADMIN,
            &json!({ "scopes": scopes, "label": "durable" }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    (id, issued["token"].as_str().expect("token").to_owned())
}

fn restart(server: Server, dir: &std::path::Path) -> Server {
    server.kill9();
    Server::start(dir, &["--snapshot-interval", "0"])
}

#[test]
fn decisions_claims_and_vote_bans_answered_2xx_survive_kill_9() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    let (bot, _) = server.create_bot(800);
    let (_, owner) = profile(&server, json!({ "username": "owner" }), json!(["bots"]));
    let (moderator, staff) = profile(
        &server,
        json!({ "username": "moderator", "mod": true }),
        json!(["staff"]),
    );
    let (voter, vote_token) = profile(
        &server,
        json!({ "username": "voter", "platform_id": "8080" }),
        json!(["vote"]),
    );
    let submission = |platform_id: &str| json!({ "platform_id": platform_id, "name": "Queued", "username": "queued", "short_description": "kept" });
    let (status, first) = server
        .post("/bots", &owner, &submission("801"))
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let first = first["bot"]["id"].as_str().expect("id").to_owned();
    let (status, second) = server
        .post("/bots", &owner, &submission("802"))
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let second = second["bot"]["id"].as_str().expect("id").to_owned();

    // Each answered 200, then kill -9.
    let (status, claimed) = server
        .post(&format!("/staff/bots/{second}/claim"), &staff, &json!({}))
        .expect("sent");
    assert_eq!(status, StatusCode::OK, "{claimed}");
    let (status, approved) = server
        .post(&format!("/staff/bots/{first}/approve"), &staff, &json!({}))
        .expect("sent");
    assert_eq!(status, StatusCode::OK, "{approved}");
    let (status, delisted) = server
        .post(
            &format!("/staff/bots/{bot}/delist"),
            &staff,
            &json!({ "reason": "spam" }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::OK, "{delisted}");
    let (status, banned) = server
        .post(
            &format!("/staff/users/{voter}/vote-ban"),
            &staff,
            &json!({ "reason": "vote ring" }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::OK, "{banned}");
    let server = restart(server, dir.path());

    let check = |server: &Server| {
        assert_eq!(
            server.get(&format!("/bots/{first}"), None).0,
            StatusCode::OK
        );
        assert_eq!(
            server.get(&format!("/bots/{bot}"), None).0,
            StatusCode::NOT_FOUND
        );
        let (status, queue) = server.get("/staff/queue", Some(&staff));
        assert_eq!(status, StatusCode::OK, "{queue}");
        assert_eq!(queue["results"][0]["bot"]["id"], second.as_str());
        assert_eq!(
            queue["results"][0]["claim"]["profile_id"],
            moderator.as_str()
        );
        assert_eq!(queue["results"].as_array().map(Vec::len), Some(1));
        let (status, refused) = server
            .post(&format!("/bots/{first}/votes"), &vote_token, &json!({}))
            .expect("sent");
        assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
        assert_eq!(refused["error"]["code"], "vote_banned");
    };
    check(&server);
    server.snapshot();
    let server = restart(server, dir.path());
    check(&server);
}
