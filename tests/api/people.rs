//! CONTRACT section 13 over HTTP: profile tokens, votes by the voter, owners who manage their
//! own listings, and listings that are not approved kept out of every public answer.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{
    assert_error, json_receiver as receiver, spawn_app_with, test_settings, TestApp, ADMIN,
};

async fn app() -> TestApp {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    spawn_app_with(settings).await
}

/// One that delivers webhooks to a receiver on this machine.
async fn webhook_app() -> TestApp {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.allow_private_webhooks = true;
    spawn_app_with(settings).await
}

/// A profile, linked to platform id `platform` when given.
async fn profile(app: &TestApp, username: &str, platform: Option<u64>) -> String {
    let mut body = json!({ "username": username });
    if let Some(platform) = platform {
        body["platform_id"] = json!(platform.to_string());
    }
    let created = app.create_profile(body).await;
    created["id"].as_str().expect("an id").to_owned()
}

/// Issues a token to `profile`; the whole answer.
async fn issue(app: &TestApp, profile: &str, body: Value) -> Value {
    let response = app
        .admin(
            Method::POST,
            &format!("/admin/users/{profile}/tokens"),
            Some(&body),
        )
        .await;
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        response.text().await.unwrap_or_default()
    );
    response.json().await.expect("json")
}

async fn token(app: &TestApp, profile: &str, scopes: &[&str]) -> String {
    let issued = issue(app, profile, json!({ "scopes": scopes, "label": "test" })).await;
    issued["token"].as_str().expect("a token").to_owned()
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let request = app.request(method, path, Some(token));
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    request.send().await.expect("sent")
}

async fn profile_vote(app: &TestApp, bot: &str, token: &str) -> reqwest::Response {
    send(
        app,
        Method::POST,
        &format!("/bots/{bot}/votes"),
        token,
        None,
    )
    .await
}

/// `expires_in` is an integer to the document, and `3600.0` is the integer 3600 to JSON Schema:
/// the server reads it so (schemathesis sent `236392405.0` and got 400), and still refuses a
/// fraction and `null` is still "no expiry".
#[actix_web::test]
async fn a_token_expiry_is_read_from_any_whole_json_number() {
    let app = app().await;
    let user = profile(&app, "alice", None).await;
    let whole = issue(
        &app,
        &user,
        json!({ "scopes": ["vote"], "label": "float", "expires_in": 3600.0 }),
    )
    .await;
    assert_eq!(whole["expires_at"], "2026-11-15T13:00:00.000Z");
    let none = issue(
        &app,
        &user,
        json!({ "scopes": ["vote"], "label": "null", "expires_in": null }),
    )
    .await;
    assert_eq!(none["expires_at"], Value::Null);
    let path = format!("/admin/users/{user}/tokens");
    for expires_in in [json!(3600.5), json!(0.0), json!(315360001.0), json!("3600")] {
        let body = json!({ "scopes": ["vote"], "label": "x", "expires_in": expires_in });
        let response = app.admin(Method::POST, &path, Some(&body)).await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains("expires_in"), "{body}: {message}");
    }
}

#[actix_web::test]
async fn a_token_is_shown_once_listed_without_its_secret_and_revoked_at_once() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let user = profile(&app, "alice", Some(1001)).await;
    let issued = issue(
        &app,
        &user,
        json!({ "scopes": ["vote", "vote"], "label": "web login", "expires_in": 3600 }),
    )
    .await;
    let secret = issued["token"].as_str().expect("token");
    assert!(secret.starts_with("usr_") && secret.len() == 68, "{secret}");
    assert_eq!(issued["scopes"], json!(["vote"]));
    assert_eq!(issued["label"], "web login");
    assert_eq!(issued["expires_at"], "2026-11-15T13:00:00.000Z");

    let listed: Value = app
        .admin(Method::GET, &format!("/admin/users/{user}/tokens"), None)
        .await
        .json()
        .await
        .expect("json");
    let tokens = listed["tokens"].as_array().expect("tokens");
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0]["id"], issued["id"]);
    assert!(!listed.to_string().contains(&secret[4..]), "{listed}");
    assert!(tokens[0].get("token").is_none());

    let never = issue(&app, &user, json!({ "scopes": ["bots"], "label": "x" })).await;
    assert_eq!(never["expires_at"], Value::Null);

    let voted = profile_vote(&app, &bot.id, secret).await;
    assert_eq!(voted.status(), StatusCode::CREATED);

    let revoked = app
        .admin(
            Method::DELETE,
            &format!(
                "/admin/users/{user}/tokens/{}",
                issued["id"].as_str().expect("id")
            ),
            None,
        )
        .await;
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    app.clock.advance(chrono::Duration::hours(13));
    assert_error(
        profile_vote(&app, &bot.id, secret).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    // Revoking again: no such token.
    let again = app
        .admin(
            Method::DELETE,
            &format!(
                "/admin/users/{user}/tokens/{}",
                issued["id"].as_str().expect("id")
            ),
            None,
        )
        .await;
    assert_error(again, StatusCode::NOT_FOUND, "not_found").await;
    let not_a_uuid = app
        .admin(
            Method::DELETE,
            &format!("/admin/users/{user}/tokens/nope"),
            None,
        )
        .await;
    assert_error(not_a_uuid, StatusCode::NOT_FOUND, "not_found").await;
}

#[actix_web::test]
async fn issuing_refuses_bad_bodies_unknown_profiles_and_other_tokens() {
    let app = app().await;
    let user = profile(&app, "alice", None).await;
    let path = format!("/admin/users/{user}/tokens");
    for (body, field) in [
        (json!({ "scopes": [], "label": "x" }), "scopes"),
        (json!({ "scopes": ["root"], "label": "x" }), "scopes"),
        (json!({ "scopes": ["vote"] }), "label"),
        (json!({ "scopes": ["vote"], "label": "" }), "label"),
        (
            json!({ "scopes": ["vote"], "label": "a\u{202E}b" }),
            "label",
        ),
        (
            json!({ "scopes": ["vote"], "label": "x", "expires_in": 0 }),
            "expires_in",
        ),
        (
            json!({ "scopes": ["vote"], "label": "x", "expires_in": -5 }),
            "expires_in",
        ),
        (
            json!({ "scopes": ["vote"], "label": "x", "extra": 1 }),
            "extra",
        ),
    ] {
        let response = app.admin(Method::POST, &path, Some(&body)).await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains(field), "{body}: {message}");
    }
    let unknown = app
        .admin(
            Method::POST,
            "/admin/users/00000000-0000-4000-8000-000000000000/tokens",
            Some(&json!({ "scopes": ["vote"], "label": "x" })),
        )
        .await;
    assert_error(unknown, StatusCode::NOT_FOUND, "not_found").await;
    let listed_unknown = app
        .admin(
            Method::GET,
            "/admin/users/00000000-0000-4000-8000-000000000000/tokens",
            None,
        )
        .await;
    assert_error(listed_unknown, StatusCode::NOT_FOUND, "not_found").await;
    // The admin token, not a profile's, issues tokens.
    let own = token(&app, &user, &["staff"]).await;
    let response = send(
        &app,
        Method::POST,
        &path,
        &own,
        Some(json!({ "scopes": ["vote"], "label": "x" })),
    )
    .await;
    assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
}

#[actix_web::test]
async fn a_token_expires_on_the_clock() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let user = profile(&app, "alice", Some(1001)).await;
    let issued = issue(
        &app,
        &user,
        json!({ "scopes": ["vote"], "label": "short", "expires_in": 60 }),
    )
    .await;
    let secret = issued["token"].as_str().expect("token");
    app.clock.advance(chrono::Duration::seconds(59));
    assert_eq!(
        profile_vote(&app, &bot.id, secret).await.status(),
        StatusCode::CREATED
    );
    app.clock.advance(chrono::Duration::seconds(1));
    let message = assert_error(
        profile_vote(&app, &bot.id, secret).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    assert!(message.contains("expired"), "{message}");
}

#[actix_web::test]
async fn each_kind_of_token_is_refused_where_the_other_is_needed() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let user = profile(&app, "alice", Some(1001)).await;
    let own = token(&app, &user, &["vote", "bots"]).await;
    // A profile token where the bot's own is needed.
    let stats = app
        .post_json(
            &format!("/bots/{}/stats", bot.id),
            Some(&own),
            &json!({ "server_count": 5 }),
        )
        .await;
    let message = assert_error(stats, StatusCode::UNAUTHORIZED, "unauthorized").await;
    assert!(message.contains("profile"), "{message}");
    let check = app
        .get_with(&format!("/bots/{}/check?userId=1", bot.id), &own)
        .await;
    assert_error(check, StatusCode::UNAUTHORIZED, "unauthorized").await;
    // A bot token where a profile's is needed.
    let message = assert_error(
        profile_vote(&app, &bot.id, &bot.token).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    assert!(message.contains("bot's API token"), "{message}");
    let manage = send(
        &app,
        Method::GET,
        &format!("/bots/{}/manage", bot.id),
        &bot.token,
        None,
    )
    .await;
    assert_error(manage, StatusCode::UNAUTHORIZED, "unauthorized").await;
    for missing in [None, Some("Bearer x"), Some("usr_unknown")] {
        let mut request = app.request(Method::POST, &format!("/bots/{}/votes", bot.id), None);
        if let Some(value) = missing {
            request = request.header("Authorization", value);
        }
        let response = request.send().await.expect("sent");
        assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }
}

#[actix_web::test]
async fn a_missing_scope_is_403_naming_it() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let user = profile(&app, "alice", Some(1001)).await;
    let bots_only = token(&app, &user, &["bots"]).await;
    let message = assert_error(
        profile_vote(&app, &bot.id, &bots_only).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert!(message.contains("`vote`"), "{message}");
    let vote_only = token(&app, &user, &["vote"]).await;
    let submitted = send(
        &app,
        Method::POST,
        "/bots",
        &vote_only,
        Some(
            json!({ "platform_id": "77", "name": "N", "username": "n", "short_description": "d" }),
        ),
    )
    .await;
    let message = assert_error(submitted, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(message.contains("`bots`"), "{message}");
}

#[actix_web::test]
async fn a_profile_votes_as_itself_once_per_twelve_hours() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let unlinked = profile(&app, "nolink", None).await;
    let unlinked_token = token(&app, &unlinked, &["vote"]).await;
    let message = assert_error(
        profile_vote(&app, &bot.id, &unlinked_token).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert!(message.contains("link"), "{message}");

    let user = profile(&app, "alice", Some(1001)).await;
    let own = token(&app, &user, &["vote"]).await;
    let missing = profile_vote(&app, "00000000-0000-4000-8000-000000000000", &own).await;
    assert_error(missing, StatusCode::NOT_FOUND, "not_found").await;

    let response = profile_vote(&app, &bot.id, &own).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body,
        json!({ "vote_count": 1, "monthly_vote_count": 1, "expires_at": "2026-11-16T00:00:00.000Z" })
    );
    // By platform id too, and the same voter through the admin API is the same voter.
    let again = profile_vote(&app, &bot.platform_id, &own).await;
    assert_error(again, StatusCode::CONFLICT, "already_voted").await;
    assert_error(
        app.vote(&bot.id, 1001).await,
        StatusCode::CONFLICT,
        "already_voted",
    )
    .await;
    app.clock.advance(chrono::Duration::hours(12));
    assert_eq!(
        profile_vote(&app, &bot.id, &own).await.status(),
        StatusCode::CREATED
    );
}

/// The first vote event of a stream's bytes, as JSON.
async fn first_stream_vote(response: &mut reqwest::Response) -> Value {
    let mut buffer = String::new();
    loop {
        if let Some(at) = buffer.find("event: vote\n") {
            let rest = &buffer[at..];
            if let Some(end) = rest.find("\n\n") {
                let data = rest[..end]
                    .lines()
                    .find_map(|line| line.strip_prefix("data: "))
                    .expect("data");
                return serde_json::from_str(data).expect("json");
            }
        }
        let chunk = tokio::time::timeout(Duration::from_secs(10), response.chunk())
            .await
            .expect("within 10 s")
            .expect("reads")
            .expect("the stream goes on");
        buffer.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
    }
}

/// What a vote left everywhere it shows, with the times and ids that differ by nature left out.
async fn traces(app: &TestApp, source: &str) -> Value {
    let (url, received) = receiver().await;
    let bot = app
        .create_bot(
            50,
            json!({ "webhook_url": url, "webhook_secret": "s3cret" }),
        )
        .await;
    let name = "voter".to_owned();
    let user = app
        .create_profile(json!({ "username": name, "platform_id": "2002" }))
        .await;
    let mut stream = app
        .get_with(&format!("/bots/{}/votes/stream", bot.id), &bot.token)
        .await;
    assert_eq!(stream.status(), StatusCode::OK);
    let answer: Value = if source == "admin" {
        let response = app.vote_as(&bot.id, 2002, &name).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        response.json().await.expect("json")
    } else {
        let own = token(app, user["id"].as_str().expect("id"), &["vote"]).await;
        let response = profile_vote(app, &bot.id, &own).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let mut body: Value = response.json().await.expect("json");
        assert_eq!(body["expires_at"], "2026-11-16T00:00:00.000Z");
        body.as_object_mut().expect("object").remove("expires_at");
        body
    };
    let check: Value = app
        .get_with(&format!("/bots/{}/check?userId=2002", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    let voters: Value = app
        .get_with(&format!("/bots/{}/votes", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    let mut history: Value = app
        .get_with(&format!("/bots/{}/votes/history", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    history
        .as_object_mut()
        .expect("object")
        .remove("next_cursor");
    let public: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    let streamed = first_stream_vote(&mut stream).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut delivery = loop {
        if let Some(first) = received.lock().expect("lock").first().cloned() {
            break first;
        }
        assert!(Instant::now() < deadline, "no delivery");
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    };
    // The delivery names its bot and itself, each by an id drawn at random: the same but
    // for those.
    assert_eq!(
        delivery["data"]["bot"]["id"].as_str(),
        Some(bot.id.as_str())
    );
    delivery["data"]["bot"]["id"] = Value::Null;
    assert!(delivery["id"].is_string());
    delivery["id"] = Value::Null;
    json!({
        "answer": answer,
        "check": check,
        "voters": voters,
        "history": history,
        "counts": [public["vote_count"], public["monthly_vote_count"]],
        "stream": streamed,
        "webhook": delivery,
    })
}

#[actix_web::test]
async fn a_vote_is_the_same_everywhere_whichever_way_it_came() {
    // Two directories alike but for the way the vote came in.
    let admin = traces(&webhook_app().await, "admin").await;
    let app = webhook_app().await;
    let by_profile = traces(&app, "profile").await;
    assert_eq!(admin, by_profile);
    assert_eq!(admin["check"], json!({ "voted": 1 }));
    let metrics = app
        .client
        .get(format!("{}/metrics", app.root))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    for source in ["admin", "profile"] {
        let line = format!("botlist_votes_by_source_total{{source=\"{source}\"}} ");
        assert!(metrics.contains(&line), "{line} in\n{metrics}");
    }
}

fn submission(platform_id: u64) -> Value {
    json!({
        "platform_id": platform_id.to_string(),
        "name": "Zyzzyva Helper",
        "username": "zyzzyva",
        "short_description": "Pending and unseen",
        "tags": ["music"],
    })
}

async fn submit(app: &TestApp, token: &str, body: Value) -> Value {
    let response = send(app, Method::POST, "/bots", token, Some(body)).await;
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        response.text().await.unwrap_or_default()
    );
    response.json().await.expect("json")
}

/// Every public answer that could show a bot, by id and in the directory's figures.
async fn assert_absent(app: &TestApp, id: &str, platform_id: &str, total: u64) {
    for path in [
        format!("/bots/{id}"),
        format!("/bots/{platform_id}"),
        format!("/bots/{id}/stats"),
        format!("/bots/{id}/stats/history"),
        format!("/bots/{id}/badge/votes.svg"),
    ] {
        let response = app.get(&path).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
    for (query, expected) in [
        ("", total),
        ("?sort=newest", total),
        ("?q=zyzzyva", 0),
        ("?tags=music", 0),
    ] {
        let page: Value = app
            .get(&format!("/bots{query}"))
            .await
            .json()
            .await
            .expect("json");
        assert_eq!(page["total"], expected, "{query}: {page}");
        assert!(!page.to_string().contains(id), "{query}");
    }
    let suggested = app
        .get("/bots/suggest?q=zyz")
        .await
        .text()
        .await
        .expect("text");
    assert!(!suggested.contains(id), "{suggested}");
    let health: Value = app
        .client
        .get(format!("{}/healthz", app.root))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert!(!health.to_string().contains(id));
}

#[actix_web::test]
async fn a_submission_is_pending_unseen_until_approved_and_its_owners_manage_it() {
    let app = app().await;
    let listed = app.create_bot(42, json!({})).await;
    assert_eq!(
        listed.body.get("status"),
        None,
        "the Bot keeps SPEC.md's fields"
    );
    let owner = profile(&app, "owner", Some(1001)).await;
    let other = profile(&app, "other", Some(1002)).await;
    let owner_token = token(&app, &owner, &["bots", "vote"]).await;
    let other_token = token(&app, &other, &["bots", "vote"]).await;

    let bad = send(
        &app,
        Method::POST,
        "/bots",
        &owner_token,
        Some(json!({ "platform_id": "77", "name": "N", "username": "n", "short_description": "d", "featured": true })),
    )
    .await;
    assert_error(bad, StatusCode::BAD_REQUEST, "bad_request").await;
    let private = send(
        &app,
        Method::POST,
        "/bots",
        &owner_token,
        Some(json!({ "platform_id": "77", "name": "N", "username": "n", "short_description": "d\u{200B}" })),
    )
    .await;
    assert_error(private, StatusCode::BAD_REQUEST, "bad_request").await;
    let taken = send(
        &app,
        Method::POST,
        "/bots",
        &owner_token,
        Some(submission(42)),
    )
    .await;
    assert_error(taken, StatusCode::CONFLICT, "conflict").await;

    let submitted = submit(&app, &owner_token, submission(77)).await;
    assert_eq!(submitted["status"], "pending");
    let id = submitted["bot"]["id"].as_str().expect("id").to_owned();
    let bot_token = submitted["token"].as_str().expect("token").to_owned();
    assert_absent(&app, &id, "77", 1).await;
    // Its token works nowhere yet, and nobody can vote for it.
    let stats = app
        .post_json(
            &format!("/bots/{id}/stats"),
            Some(&bot_token),
            &json!({ "server_count": 1 }),
        )
        .await;
    assert_error(stats, StatusCode::UNAUTHORIZED, "unauthorized").await;
    assert_error(
        profile_vote(&app, &id, &owner_token).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    assert_error(app.vote(&id, 5).await, StatusCode::NOT_FOUND, "not_found").await;

    // Its owners see it; nobody else does.
    let manage = send(
        &app,
        Method::GET,
        &format!("/bots/{id}/manage"),
        &owner_token,
        None,
    )
    .await;
    assert_eq!(manage.status(), StatusCode::OK);
    let view: Value = manage.json().await.expect("json");
    assert_eq!(view["status"], "pending");
    assert_eq!(view["owner_ids"], json!([owner]));
    assert_eq!(view["reason"], Value::Null);
    assert_eq!(
        view["webhook"],
        json!({ "url": null, "secret_set": false, "format": "signed", "events": ["vote.create"] })
    );
    let hidden = send(
        &app,
        Method::GET,
        &format!("/bots/{id}/manage"),
        &other_token,
        None,
    )
    .await;
    assert_error(hidden, StatusCode::NOT_FOUND, "not_found").await;

    // A pending token cannot be rotated yet.
    let early = send(
        &app,
        Method::POST,
        &format!("/bots/{id}/token"),
        &owner_token,
        None,
    )
    .await;
    let message = assert_error(early, StatusCode::CONFLICT, "conflict").await;
    assert!(message.contains("pending"), "{message}");

    // The operator denies it, with a reason; the owner's edit sends it back.
    let no_reason = app
        .admin(
            Method::PATCH,
            &format!("/admin/bots/{id}"),
            Some(&json!({ "status": "denied" })),
        )
        .await;
    assert_error(no_reason, StatusCode::BAD_REQUEST, "bad_request").await;
    let denied = app
        .admin(
            Method::PATCH,
            &format!("/admin/bots/{id}"),
            Some(&json!({ "status": "denied", "reason": "no invite link" })),
        )
        .await;
    assert_eq!(denied.status(), StatusCode::OK);
    let view: Value = send(
        &app,
        Method::GET,
        &format!("/bots/{id}/manage"),
        &owner_token,
        None,
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(
        (&view["status"], &view["reason"]),
        (&json!("denied"), &json!("no invite link"))
    );
    let wrong = app
        .admin(
            Method::PATCH,
            &format!("/admin/bots/{id}"),
            Some(&json!({ "status": "delisted", "reason": "x" })),
        )
        .await;
    let message = assert_error(wrong, StatusCode::CONFLICT, "conflict").await;
    assert!(message.contains("`denied`"), "{message}");
    let edited = send(
        &app,
        Method::PATCH,
        &format!("/bots/{id}"),
        &owner_token,
        Some(json!({ "invite_url": "https://example.com/invite", "webhook_secret": "hush" })),
    )
    .await;
    assert_eq!(edited.status(), StatusCode::OK);
    let view: Value = edited.json().await.expect("json");
    assert_eq!(view["status"], "pending");
    assert_eq!(view["webhook"]["secret_set"], true);
    assert!(!view.to_string().contains("hush"));
    let forbidden_field = send(
        &app,
        Method::PATCH,
        &format!("/bots/{id}"),
        &owner_token,
        Some(json!({ "certified": true })),
    )
    .await;
    assert_error(forbidden_field, StatusCode::BAD_REQUEST, "bad_request").await;
    let ssrf = send(
        &app,
        Method::PATCH,
        &format!("/bots/{id}"),
        &owner_token,
        Some(json!({ "webhook_url": "http://169.254.169.254/latest" })),
    )
    .await;
    assert_error(ssrf, StatusCode::BAD_REQUEST, "bad_request").await;
    assert_absent(&app, &id, "77", 1).await;

    // Approved: public, its token works, and the owner may rotate it.
    let approved = app
        .admin(
            Method::PATCH,
            &format!("/admin/bots/{id}"),
            Some(&json!({ "status": "approved" })),
        )
        .await;
    assert_eq!(approved.status(), StatusCode::OK);
    assert_eq!(
        app.get(&format!("/bots/{id}")).await.status(),
        StatusCode::OK
    );
    assert_eq!(app.get("/bots/77").await.status(), StatusCode::OK);
    let page: Value = app.get("/bots?q=zyzzyva").await.json().await.expect("json");
    assert_eq!(page["total"], 1);
    app.post_json(
        &format!("/bots/{id}/stats"),
        Some(&bot_token),
        &json!({ "server_count": 3 }),
    )
    .await
    .error_for_status()
    .expect("the bot's token works once approved");
    let someone_elses = send(
        &app,
        Method::POST,
        &format!("/bots/{id}/token"),
        &other_token,
        None,
    )
    .await;
    assert_error(someone_elses, StatusCode::FORBIDDEN, "forbidden").await;
    let rotated = send(
        &app,
        Method::POST,
        &format!("/bots/{id}/token"),
        &owner_token,
        None,
    )
    .await;
    assert_eq!(rotated.status(), StatusCode::OK);
    let new_token = rotated.json::<Value>().await.expect("json")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let old = app
        .post_json(
            &format!("/bots/{id}/stats"),
            Some(&bot_token),
            &json!({ "server_count": 3 }),
        )
        .await;
    assert_error(old, StatusCode::UNAUTHORIZED, "unauthorized").await;
    app.post_json(
        &format!("/bots/{id}/stats"),
        Some(&new_token),
        &json!({ "server_count": 4 }),
    )
    .await
    .error_for_status()
    .expect("the new token works");

    // Owners: a co-owner may not change the first owner; the first owner may.
    let owners_path = format!("/bots/{id}/owners");
    let set = send(
        &app,
        Method::PUT,
        &owners_path,
        &owner_token,
        Some(json!({ "owner_ids": [owner, other] })),
    )
    .await;
    assert_eq!(set.status(), StatusCode::OK);
    assert_eq!(
        set.json::<Value>().await.expect("json")["owner_ids"],
        json!([owner, other])
    );
    let coup = send(
        &app,
        Method::PUT,
        &owners_path,
        &other_token,
        Some(json!({ "owner_ids": [other, owner] })),
    )
    .await;
    let message = assert_error(coup, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(message.contains("first owner"), "{message}");
    let empty = send(
        &app,
        Method::PUT,
        &owners_path,
        &owner_token,
        Some(json!({ "owner_ids": [] })),
    )
    .await;
    assert_error(empty, StatusCode::BAD_REQUEST, "bad_request").await;
    let ghost = send(
        &app,
        Method::PUT,
        &owners_path,
        &owner_token,
        Some(json!({ "owner_ids": [owner, "00000000-0000-4000-8000-000000000000"] })),
    )
    .await;
    assert_error(ghost, StatusCode::BAD_REQUEST, "bad_request").await;
    let handover = send(
        &app,
        Method::PUT,
        &owners_path,
        &owner_token,
        Some(json!({ "owner_ids": [other, owner] })),
    )
    .await;
    assert_eq!(handover.status(), StatusCode::OK);

    // Not an owner of the listed bot: 403 on each owner's route.
    for (method, path, body) in [
        (Method::GET, format!("/bots/{}/manage", listed.id), None),
        (
            Method::PATCH,
            format!("/bots/{}", listed.id),
            Some(json!({ "name": "x" })),
        ),
        (
            Method::PUT,
            format!("/bots/{}/owners", listed.id),
            Some(json!({ "owner_ids": [owner] })),
        ),
        (Method::DELETE, format!("/bots/{}", listed.id), None),
        (Method::POST, format!("/bots/{}/token", listed.id), None),
    ] {
        let response = send(&app, method.clone(), &path, &owner_token, body).await;
        assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    }

    // Removed by its owner: gone.
    let removed = send(
        &app,
        Method::DELETE,
        &format!("/bots/{id}"),
        &owner_token,
        None,
    )
    .await;
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.get(&format!("/bots/{id}")).await.status(),
        StatusCode::NOT_FOUND
    );
    let gone = send(
        &app,
        Method::GET,
        &format!("/bots/{id}/manage"),
        &owner_token,
        None,
    )
    .await;
    assert_error(gone, StatusCode::NOT_FOUND, "not_found").await;
}

#[actix_web::test]
async fn a_delisted_listing_leaves_every_public_answer_and_may_come_back() {
    let app = app().await;
    let bot = app
        .create_bot(42, json!({ "name": "Zyzzyva", "tags": ["music"] }))
        .await;
    app.vote_ok(&bot.id, 9).await;
    let delisted = app
        .admin(
            Method::PATCH,
            &format!("/admin/bots/{}", bot.id),
            Some(&json!({ "status": "delisted", "reason": "spam" })),
        )
        .await;
    assert_eq!(delisted.status(), StatusCode::OK);
    assert_absent(&app, &bot.id, "42", 0).await;
    let check = app
        .get_with(&format!("/bots/{}/check?userId=9", bot.id), &bot.token)
        .await;
    assert_error(check, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let back = app
        .admin(
            Method::PATCH,
            &format!("/admin/bots/{}", bot.id),
            Some(&json!({ "status": "approved" })),
        )
        .await;
    assert_eq!(back.status(), StatusCode::OK);
    let shown: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(shown["vote_count"], 1);
    let check: Value = app
        .get_with(&format!("/bots/{}/check?userId=9", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(check["voted"], 1);
}

#[actix_web::test]
async fn a_profile_s_requests_draw_from_its_own_bucket() {
    let mut settings = test_settings();
    settings.rate_limit = 2;
    let app = spawn_app_with(settings).await;
    let user = profile(&app, "alice", Some(1001)).await;
    let first = token(&app, &user, &["vote"]).await;
    let second = token(&app, &user, &["bots"]).await;
    for token in [&first, &second] {
        let response = app.get_with("/bots", token).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    // Both tokens are the one profile's: its bucket is empty.
    let refused = app.get_with("/bots", &first).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    // The address's own bucket is untouched.
    assert_eq!(app.get("/bots").await.status(), StatusCode::OK);
    let _ = ADMIN;
}

/// An owner sets a webhook's secret and format under the admin API's rule: a `standard` secret
/// is `whsec_` and base64, on submission and on every edit, whichever of the two it sets.
#[actix_web::test]
async fn an_owner_s_standard_secret_must_be_whsec_and_base64() {
    const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let app = app().await;
    let owner = profile(&app, "owner", Some(1001)).await;
    let owner_token = token(&app, &owner, &["bots"]).await;
    for secret in ["s3cret", "whsec_not base64!", "whsec_c2hvcnQ="] {
        let mut body = submission(77);
        body["webhook_secret"] = json!(secret);
        body["webhook_format"] = json!("standard");
        let refused = send(&app, Method::POST, "/bots", &owner_token, Some(body)).await;
        let message = assert_error(refused, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains("webhook_secret"), "{secret}: {message}");
    }
    let mut body = submission(77);
    body["webhook_secret"] = json!("plain secret");
    let id = submit(&app, &owner_token, body).await["bot"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let path = format!("/bots/{id}");
    for patch in [
        // The format alone, over the plain secret it had.
        json!({ "webhook_format": "standard" }),
        json!({ "webhook_format": "standard", "webhook_secret": "whsec_c2hvcnQ=" }),
    ] {
        let refused = send(&app, Method::PATCH, &path, &owner_token, Some(patch)).await;
        let message = assert_error(refused, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains("webhook_secret"), "{message}");
    }
    let both = json!({ "webhook_format": "standard", "webhook_secret": STANDARD_SECRET });
    let edited = send(&app, Method::PATCH, &path, &owner_token, Some(both)).await;
    assert_eq!(edited.status(), StatusCode::OK);
    // The secret alone, under the `standard` format it now has.
    let plain = json!({ "webhook_secret": "plain again" });
    let refused = send(&app, Method::PATCH, &path, &owner_token, Some(plain)).await;
    assert_error(refused, StatusCode::BAD_REQUEST, "bad_request").await;
    let view: Value = send(
        &app,
        Method::GET,
        &format!("{path}/manage"),
        &owner_token,
        None,
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(view["webhook"]["format"], "standard");
}

/// `DELETE /bots/:id` by an owner is the lifecycle's `approved` -> removed: a pending or denied
/// listing waits for its decision and a delisted one stays as staff left it, each 409 naming
/// its status, and each still there afterwards.
#[actix_web::test]
async fn an_owner_removes_an_approved_listing_only() {
    let app = app().await;
    let owner = profile(&app, "owner", Some(1001)).await;
    let owner_token = token(&app, &owner, &["bots"]).await;
    let mut listings = Vec::new();
    for (platform_id, moves) in [
        (77, vec![]),
        (
            78,
            vec![json!({ "status": "denied", "reason": "no invite" })],
        ),
        (
            79,
            vec![
                json!({ "status": "approved" }),
                json!({ "status": "delisted", "reason": "spam" }),
            ],
        ),
        (80, vec![json!({ "status": "approved" })]),
    ] {
        let id = submit(&app, &owner_token, submission(platform_id)).await["bot"]["id"]
            .as_str()
            .expect("id")
            .to_owned();
        for status in moves {
            let moved = app
                .admin(Method::PATCH, &format!("/admin/bots/{id}"), Some(&status))
                .await;
            assert_eq!(moved.status(), StatusCode::OK, "{status}");
        }
        listings.push(id);
    }
    for (id, status) in listings.iter().zip(["pending", "denied", "delisted"]) {
        let refused = send(
            &app,
            Method::DELETE,
            &format!("/bots/{id}"),
            &owner_token,
            None,
        )
        .await;
        let message = assert_error(refused, StatusCode::CONFLICT, "conflict").await;
        assert!(message.contains(&format!("`{status}`")), "{message}");
        let view: Value = send(
            &app,
            Method::GET,
            &format!("/bots/{id}/manage"),
            &owner_token,
            None,
        )
        .await
        .json()
        .await
        .expect("json");
        assert_eq!(view["status"], status, "still there");
    }
    let approved = &listings[3];
    let removed = send(
        &app,
        Method::DELETE,
        &format!("/bots/{approved}"),
        &owner_token,
        None,
    )
    .await;
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    let gone = send(
        &app,
        Method::GET,
        &format!("/bots/{approved}/manage"),
        &owner_token,
        None,
    )
    .await;
    assert_error(gone, StatusCode::NOT_FOUND, "not_found").await;
    // The operator's `DELETE /admin/bots/:id` removes a listing in any status.
    let pending = &listings[0];
    let by_operator = app
        .admin(Method::DELETE, &format!("/admin/bots/{pending}"), None)
        .await;
    assert_eq!(by_operator.status(), StatusCode::NO_CONTENT);
}

/// A profile holds at most 50 tokens: the 51st is 409 naming the limit until one is revoked.
#[actix_web::test]
async fn a_profile_holds_at_most_fifty_tokens() {
    let app = app().await;
    let user = profile(&app, "alice", None).await;
    let mut first = None;
    for n in 0..50 {
        let issued = issue(
            &app,
            &user,
            json!({ "scopes": ["vote"], "label": format!("t{n}") }),
        )
        .await;
        first.get_or_insert(issued["id"].as_str().expect("id").to_owned());
    }
    let path = format!("/admin/users/{user}/tokens");
    let body = json!({ "scopes": ["vote"], "label": "one more" });
    let refused = app.admin(Method::POST, &path, Some(&body)).await;
    let message = assert_error(refused, StatusCode::CONFLICT, "conflict").await;
    assert!(message.contains("50"), "{message}");
    let listed: Value = app
        .admin(Method::GET, &path, None)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        listed.to_string().matches("\"label\"").count(),
        50,
        "{listed}"
    );
    let first = first.expect("issued");
    let revoked = app
        .admin(Method::DELETE, &format!("{path}/{first}"), None)
        .await;
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    issue(&app, &user, body).await;
}
