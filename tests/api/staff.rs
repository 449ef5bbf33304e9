//! CONTRACT section 14 over HTTP, the staff's part: the listing's lifecycle as every role sees
//! it, the moderation queue, claims, certification and featuring, vote bans on the injected
//! clock, and staff rights read at request time.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app_with, test_settings, TestApp, ADMIN};

/// A server with every role of the lifecycle: an owner (`bots`), a moderator and an admin
/// profile (`staff`), a plain profile with a `staff` token, and a bot's own token.
struct World {
    app: TestApp,
    owner: String,
    owner_token: String,
    moderator: String,
    moderator_token: String,
    admin_token: String,
    plain_token: String,
    bot_token: String,
}

async fn profile(app: &TestApp, body: Value) -> String {
    app.create_profile(body).await["id"]
        .as_str()
        .expect("an id")
        .to_owned()
}

async fn token(app: &TestApp, profile: &str, scopes: &[&str]) -> String {
    let response = app
        .admin(
            Method::POST,
            &format!("/admin/users/{profile}/tokens"),
            Some(&json!({ "scopes": scopes, "label": "test" })),
        )
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let issued: Value = response.json().await.expect("json");
    issued["token"].as_str().expect("a token").to_owned()
}

async fn world() -> World {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    let app = spawn_app_with(settings).await;
    let owner = profile(&app, json!({ "username": "owner" })).await;
    let owner_token = token(&app, &owner, &["bots", "staff"]).await;
    let moderator = profile(&app, json!({ "username": "moderator", "mod": true })).await;
    let moderator_token = token(&app, &moderator, &["staff"]).await;
    let admin = profile(&app, json!({ "username": "boss", "admin": true })).await;
    let admin_token = token(&app, &admin, &["staff"]).await;
    let plain = profile(&app, json!({ "username": "plain" })).await;
    let plain_token = token(&app, &plain, &["staff", "vote", "bots"]).await;
    let bot_token = app.create_bot(1, json!({})).await.token;
    World {
        app,
        owner,
        owner_token,
        moderator,
        moderator_token,
        admin_token,
        plain_token,
        bot_token,
    }
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let request = app.request(method, path, Some(token));
    match body {
        Some(body) => request.json(&body),
        None => request,
    }
    .send()
    .await
    .expect("sent")
}

/// `POST /staff/bots/{bot}/{action}`, with a reason for the decisions that need one.
async fn act(app: &TestApp, bot: &str, action: &str, token: &str) -> reqwest::Response {
    let body = matches!(action, "deny" | "delist").then(|| json!({ "reason": "rule 3" }));
    send(
        app,
        Method::POST,
        &format!("/staff/bots/{bot}/{action}"),
        token,
        body,
    )
    .await
}

async fn act_ok(app: &TestApp, bot: &str, action: &str, token: &str) -> Value {
    let response = act(app, bot, action, token).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "{action}: {}",
        response.text().await.unwrap_or_default()
    );
    response.json().await.expect("json")
}

fn submission(platform_id: u64) -> Value {
    json!({
        "platform_id": platform_id.to_string(),
        "name": format!("Queued {platform_id}"),
        "username": format!("queued{platform_id}"),
        "short_description": "Waiting for staff",
    })
}

/// A listing submitted by the world's owner: `pending`. Its id.
async fn submit(world: &World, platform_id: u64) -> String {
    let response = send(
        &world.app,
        Method::POST,
        "/bots",
        &world.owner_token,
        Some(submission(platform_id)),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: Value = response.json().await.expect("json");
    body["bot"]["id"].as_str().expect("id").to_owned()
}

/// A listing of the world's owner in `status`, reached the way the lifecycle reaches it.
async fn listing_in(world: &World, status: &str, platform_id: u64) -> String {
    let id = submit(world, platform_id).await;
    let token = &world.moderator_token;
    match status {
        "pending" => {}
        "approved" => drop(act_ok(&world.app, &id, "approve", token).await),
        "denied" => drop(act_ok(&world.app, &id, "deny", token).await),
        "delisted" => {
            act_ok(&world.app, &id, "approve", token).await;
            act_ok(&world.app, &id, "delist", token).await;
        }
        other => panic!("no status {other}"),
    }
    id
}

/// The status the owners see.
async fn status_of(world: &World, id: &str) -> String {
    let response = send(
        &world.app,
        Method::GET,
        &format!("/bots/{id}/manage"),
        &world.owner_token,
        None,
    )
    .await;
    let body: Value = response.json().await.expect("json");
    body["status"].as_str().expect("a status").to_owned()
}

async fn is_public(app: &TestApp, id: &str) -> bool {
    app.get(&format!("/bots/{id}")).await.status() == StatusCode::OK
}

const ACTIONS: [&str; 8] = [
    "claim",
    "approve",
    "deny",
    "delist",
    "certify",
    "uncertify",
    "feature",
    "unfeature",
];

#[actix_web::test]
async fn every_decision_from_every_status_by_staff_follows_the_table() {
    let world = world().await;
    // (from, decision) -> allowed, as `ListingStatus::who_may` says for staff.
    let allowed = |from: &str, decision: &str| {
        matches!(
            (from, decision),
            ("pending", "approve")
                | ("pending", "deny")
                | ("approved", "delist")
                | ("delisted", "approve")
        )
    };
    let mut platform_id = 100;
    for from in ["pending", "approved", "denied", "delisted"] {
        for decision in ["approve", "deny", "delist"] {
            for token in [&world.moderator_token, &world.admin_token] {
                platform_id += 1;
                let id = listing_in(&world, from, platform_id).await;
                let response = act(&world.app, &id, decision, token).await;
                if allowed(from, decision) {
                    assert_eq!(response.status(), StatusCode::OK, "{from} -> {decision}");
                    let body: Value = response.json().await.expect("json");
                    let to = match decision {
                        "approve" => "approved",
                        "deny" => "denied",
                        _ => "delisted",
                    };
                    assert_eq!(body["status"], to);
                    assert_eq!(status_of(&world, &id).await, to);
                } else {
                    let message = assert_error(response, StatusCode::CONFLICT, "conflict").await;
                    assert!(message.contains(&format!("`{from}`")), "{message}");
                    assert_eq!(status_of(&world, &id).await, from);
                }
                let status = status_of(&world, &id).await;
                assert_eq!(is_public(&world.app, &id).await, status == "approved");
            }
        }
    }
}

#[actix_web::test]
async fn no_other_role_may_act_as_staff() {
    let world = world().await;
    let id = submit(&world, 7).await;
    let moderator_without_scope = token(&world.app, &world.moderator, &["vote"]).await;
    for action in ACTIONS {
        let path = format!("/staff/bots/{id}/{action}");
        let body = Some(json!({ "reason": "x" }));
        for (who, token, status, code) in [
            (
                "plain",
                &world.plain_token,
                StatusCode::FORBIDDEN,
                "forbidden",
            ),
            (
                "owner",
                &world.owner_token,
                StatusCode::FORBIDDEN,
                "forbidden",
            ),
            (
                "bot",
                &world.bot_token,
                StatusCode::UNAUTHORIZED,
                "unauthorized",
            ),
            (
                "admin token",
                &ADMIN.to_owned(),
                StatusCode::UNAUTHORIZED,
                "unauthorized",
            ),
            (
                "no scope",
                &moderator_without_scope,
                StatusCode::FORBIDDEN,
                "forbidden",
            ),
        ] {
            let response = send(&world.app, Method::POST, &path, token, body.clone()).await;
            let message = assert_error(response, status, code).await;
            if who == "no scope" {
                assert!(message.contains("`staff`"), "{message}");
            }
        }
        let anonymous = world
            .app
            .request(Method::POST, &path, None)
            .send()
            .await
            .expect("sent");
        assert_error(anonymous, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }
    for path in ["/staff/queue".to_owned()] {
        for token in [&world.plain_token, &world.owner_token] {
            let response = send(&world.app, Method::GET, &path, token, None).await;
            assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
        }
    }
    // Nothing changed.
    assert_eq!(status_of(&world, &id).await, "pending");
}

#[actix_web::test]
async fn featuring_is_for_admins_and_certifying_for_all_staff() {
    let world = world().await;
    let id = listing_in(&world, "approved", 8).await;
    for action in ["feature", "unfeature"] {
        let response = act(&world.app, &id, action, &world.moderator_token).await;
        let message = assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
        assert!(message.contains("`admin`"), "{message}");
    }
    let featured = act_ok(&world.app, &id, "feature", &world.admin_token).await;
    assert_eq!(featured["bot"]["featured"], true);
    let certified = act_ok(&world.app, &id, "certify", &world.moderator_token).await;
    assert_eq!(certified["bot"]["certified"], true);
    let public: Value = world
        .app
        .get(&format!("/bots/{id}"))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        (&public["featured"], &public["certified"]),
        (&json!(true), &json!(true))
    );
    let search: Value = world
        .app
        .get("/bots?featured=true")
        .await
        .json()
        .await
        .expect("json");
    assert!(search.to_string().contains(&id), "{search}");
    act_ok(&world.app, &id, "uncertify", &world.admin_token).await;
    let unfeatured = act_ok(&world.app, &id, "unfeature", &world.admin_token).await;
    assert_eq!(unfeatured["bot"]["featured"], false);
    assert_eq!(unfeatured["bot"]["certified"], false);
    // 404 for a bot no one listed, after the guard.
    let response = act(
        &world.app,
        "00000000-0000-4000-8000-000000000000",
        "certify",
        &world.moderator_token,
    )
    .await;
    assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
}

#[actix_web::test]
async fn a_reason_is_one_to_500_characters() {
    let world = world().await;
    let id = submit(&world, 9).await;
    for body in [
        json!({}),
        json!({ "reason": "" }),
        json!({ "reason": "x".repeat(501) }),
        json!({ "reason": "ok", "extra": 1 }),
    ] {
        let response = send(
            &world.app,
            Method::POST,
            &format!("/staff/bots/{id}/deny"),
            &world.moderator_token,
            Some(body),
        )
        .await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    let response = send(
        &world.app,
        Method::POST,
        &format!("/staff/bots/{id}/deny"),
        &world.moderator_token,
        Some(json!({ "reason": "x".repeat(500) })),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[actix_web::test]
async fn an_owner_edit_sends_a_denied_listing_back_to_the_queue() {
    let world = world().await;
    let id = listing_in(&world, "denied", 10).await;
    let manage: Value = send(
        &world.app,
        Method::GET,
        &format!("/bots/{id}/manage"),
        &world.owner_token,
        None,
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(manage["reason"], "rule 3");
    let edited = send(
        &world.app,
        Method::PATCH,
        &format!("/bots/{id}"),
        &world.owner_token,
        Some(json!({ "short_description": "Fixed as asked" })),
    )
    .await;
    assert_eq!(edited.status(), StatusCode::OK);
    assert_eq!(status_of(&world, &id).await, "pending");
    let queue = queue_page(&world, "").await;
    assert_eq!(ids_of(&queue), vec![id.clone()]);
    act_ok(&world.app, &id, "approve", &world.moderator_token).await;
    assert!(is_public(&world.app, &id).await);
    // An owner's edit of an approved listing keeps it approved.
    let edited = send(
        &world.app,
        Method::PATCH,
        &format!("/bots/{id}"),
        &world.owner_token,
        Some(json!({ "short_description": "Still fine" })),
    )
    .await;
    assert_eq!(edited.status(), StatusCode::OK);
    assert_eq!(status_of(&world, &id).await, "approved");
    // The owner removes it: gone for staff too.
    let removed = send(
        &world.app,
        Method::DELETE,
        &format!("/bots/{id}"),
        &world.owner_token,
        None,
    )
    .await;
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    let response = act(&world.app, &id, "delist", &world.moderator_token).await;
    assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
}

async fn queue_page(world: &World, query: &str) -> Value {
    let response = send(
        &world.app,
        Method::GET,
        &format!("/staff/queue{query}"),
        &world.moderator_token,
        None,
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("json")
}

fn ids_of(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|entry| entry["bot"]["id"].as_str().expect("id").to_owned())
        .collect()
}

#[actix_web::test]
async fn the_queue_is_oldest_first_paged_and_shows_claims() {
    let world = world().await;
    let mut submitted = Vec::new();
    for platform_id in 20..25 {
        submitted.push(submit(&world, platform_id).await);
        world.app.clock.advance(chrono::Duration::minutes(1));
    }
    // An approved listing is not queued.
    act_ok(&world.app, &submitted[2], "approve", &world.moderator_token).await;
    let waiting: Vec<String> = submitted
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, id)| id.clone())
        .collect();
    let first = queue_page(&world, "?limit=3").await;
    assert_eq!(ids_of(&first), waiting[..3]);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = queue_page(&world, &format!("?limit=3&cursor={cursor}")).await;
    assert_eq!(ids_of(&second), waiting[3..]);
    assert_eq!(second["next_cursor"], Value::Null);
    assert_eq!(ids_of(&queue_page(&world, "").await), waiting);

    let claimed = act_ok(&world.app, &waiting[1], "claim", &world.moderator_token).await;
    assert_eq!(claimed["claim"]["profile_id"], world.moderator.as_str());
    assert_eq!(claimed["claim"]["at"], "2026-11-15T12:05:00.000Z");
    let page = queue_page(&world, "").await;
    assert_eq!(
        page["results"][1]["claim"]["profile_id"],
        world.moderator.as_str()
    );
    assert_eq!(page["results"][0]["claim"], Value::Null);
    // A decision ends the claim; claiming a listing that is not pending is 409.
    act_ok(&world.app, &waiting[1], "deny", &world.admin_token).await;
    let response = act(&world.app, &waiting[1], "claim", &world.moderator_token).await;
    let message = assert_error(response, StatusCode::CONFLICT, "conflict").await;
    assert!(message.contains("`denied`"), "{message}");
    assert_eq!(
        queue_page(&world, "").await["results"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );

    for query in [
        "?limit=0",
        "?limit=101",
        "?cursor=nonsense",
        "?cursor=1.x",
        "?sort=new",
    ] {
        let response = send(
            &world.app,
            Method::GET,
            &format!("/staff/queue{query}"),
            &world.moderator_token,
            None,
        )
        .await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }

    let metrics = world
        .app
        .client
        .get(format!("{}/metrics", world.app.root))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    // The recorder is the test process's, shared by every server in it: the families and
    // labels are checked here, not the figures other tests move too.
    assert!(
        metrics.contains("botlist_moderation_queue_length "),
        "{metrics}"
    );
    for decision in ["approved", "denied", "delisted", "pending"] {
        let line = format!("botlist_moderation_decisions_total{{decision=\"{decision}\"}} ");
        assert!(metrics.contains(&line), "{line}");
    }
}

#[actix_web::test]
async fn a_vote_ban_holds_until_its_end_on_the_clock_for_both_ways_in() {
    let world = world().await;
    let bot = world.app.create_bot(30, json!({})).await;
    let voter = profile(
        &world.app,
        json!({ "username": "voter", "platform_id": "5005" }),
    )
    .await;
    let vote_token = token(&world.app, &voter, &["vote"]).await;
    let ban_path = format!("/staff/users/{voter}/vote-ban");
    let ban = send(
        &world.app,
        Method::POST,
        &ban_path,
        &world.moderator_token,
        Some(json!({ "reason": "vote ring", "until": "2026-11-15T13:00:00Z" })),
    )
    .await;
    assert_eq!(ban.status(), StatusCode::OK);
    let ban: Value = ban.json().await.expect("json");
    assert_eq!(ban["until"], "2026-11-15T13:00:00.000Z");
    assert_eq!(ban["by"], world.moderator.as_str());

    let vote = |token: String| {
        let app = &world.app;
        let path = format!("/bots/{}/votes", bot.id);
        async move { send(app, Method::POST, &path, &token, None).await }
    };
    let message = assert_error(
        vote(vote_token.clone()).await,
        StatusCode::FORBIDDEN,
        "vote_banned",
    )
    .await;
    assert!(message.contains("2026-11-15"), "{message}");
    assert_error(
        world.app.vote(&bot.id, 5005).await,
        StatusCode::FORBIDDEN,
        "vote_banned",
    )
    .await;
    // Other voters are not touched.
    world.app.vote_ok(&bot.id, 5006).await;

    world.app.clock.advance(chrono::Duration::minutes(59));
    assert_error(
        vote(vote_token.clone()).await,
        StatusCode::FORBIDDEN,
        "vote_banned",
    )
    .await;
    world.app.clock.advance(chrono::Duration::minutes(1));
    assert_eq!(vote(vote_token.clone()).await.status(), StatusCode::CREATED);
    // An ended ban is not there to lift.
    let lifted = send(
        &world.app,
        Method::DELETE,
        &ban_path,
        &world.moderator_token,
        None,
    )
    .await;
    assert_error(lifted, StatusCode::CONFLICT, "conflict").await;

    // Without an end: until lifted.
    let ban = send(
        &world.app,
        Method::POST,
        &ban_path,
        &world.admin_token,
        Some(json!({ "reason": "again" })),
    )
    .await;
    assert_eq!(ban.status(), StatusCode::OK);
    world.app.clock.advance(chrono::Duration::days(400));
    assert_error(
        world.app.vote(&bot.id, 5005).await,
        StatusCode::FORBIDDEN,
        "vote_banned",
    )
    .await;
    let lifted = send(
        &world.app,
        Method::DELETE,
        &ban_path,
        &world.moderator_token,
        None,
    )
    .await;
    assert_eq!(lifted.status(), StatusCode::NO_CONTENT);
    assert_eq!(vote(vote_token).await.status(), StatusCode::CREATED);

    for body in [
        json!({ "reason": "" }),
        json!({ "reason": "late", "until": "2020-01-01T00:00:00Z" }),
        json!({ "reason": "bad", "until": "tomorrow" }),
        json!({ "until": "2030-01-01T00:00:00Z" }),
    ] {
        let response = send(
            &world.app,
            Method::POST,
            &ban_path,
            &world.moderator_token,
            Some(body),
        )
        .await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    let unknown = "/staff/users/00000000-0000-4000-8000-000000000000/vote-ban";
    let response = send(
        &world.app,
        Method::POST,
        unknown,
        &world.moderator_token,
        Some(json!({ "reason": "x" })),
    )
    .await;
    assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
    for token in [&world.plain_token, &world.owner_token] {
        let response = send(
            &world.app,
            Method::POST,
            &ban_path,
            token,
            Some(json!({ "reason": "x" })),
        )
        .await;
        assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
        let response = send(&world.app, Method::DELETE, &ban_path, token, None).await;
        assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    }
    let response = send(
        &world.app,
        Method::POST,
        &ban_path,
        &world.bot_token,
        Some(json!({ "reason": "x" })),
    )
    .await;
    assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
}

#[actix_web::test]
async fn a_profile_losing_mod_loses_staff_rights_at_once() {
    let world = world().await;
    let first = submit(&world, 40).await;
    act_ok(&world.app, &first, "claim", &world.moderator_token).await;
    let demoted = world
        .app
        .admin(
            Method::PATCH,
            &format!("/admin/users/{}", world.moderator),
            Some(&json!({ "mod": false })),
        )
        .await;
    assert_eq!(demoted.status(), StatusCode::OK);
    for action in ["approve", "claim", "deny"] {
        let response = act(&world.app, &first, action, &world.moderator_token).await;
        assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    }
    let response = send(
        &world.app,
        Method::GET,
        "/staff/queue",
        &world.moderator_token,
        None,
    )
    .await;
    assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(status_of(&world, &first).await, "pending");
    // Made admin instead: staff again, with the same token, featuring included.
    let promoted = world
        .app
        .admin(
            Method::PATCH,
            &format!("/admin/users/{}", world.moderator),
            Some(&json!({ "admin": true })),
        )
        .await;
    assert_eq!(promoted.status(), StatusCode::OK);
    act_ok(&world.app, &first, "approve", &world.moderator_token).await;
    act_ok(&world.app, &first, "feature", &world.moderator_token).await;
    let _ = &world.owner;
}

/// `GET /staff/bots/{id}` as staff, 200 with the listing, or the error it gets.
async fn staff_read(world: &World, path: &str, token: &str) -> reqwest::Response {
    send(&world.app, Method::GET, path, token, None).await
}

#[actix_web::test]
async fn staff_read_any_listing_whatever_its_status_and_list_each_status_in_order() {
    let world = world().await;
    let mut by_status: Vec<(&str, Vec<String>)> = Vec::new();
    let mut platform_id = 300;
    for status in ["pending", "approved", "denied", "delisted"] {
        let mut ids = Vec::new();
        for _ in 0..3 {
            platform_id += 1;
            ids.push(listing_in(&world, status, platform_id).await);
            world.app.clock.advance(chrono::Duration::minutes(1));
        }
        by_status.push((status, ids));
    }
    // The world's own approved bot (made through the admin API) is the oldest approved one.
    let admin_bot: Value = world.app.get("/bots/1").await.json().await.expect("json");
    let admin_bot = admin_bot["id"].as_str().expect("id").to_owned();
    by_status[1].1.insert(0, admin_bot);

    for (status, ids) in &by_status {
        for id in ids {
            for token in [&world.moderator_token, &world.admin_token] {
                let response = staff_read(&world, &format!("/staff/bots/{id}"), token).await;
                assert_eq!(response.status(), StatusCode::OK, "{status} {id}");
                let body: Value = response.json().await.expect("json");
                assert_eq!(body["status"], *status, "{id}");
                assert_eq!(body["bot"]["id"], id.as_str());
                let reason = match *status {
                    "denied" | "delisted" => json!("rule 3"),
                    _ => Value::Null,
                };
                assert_eq!(body["reason"], reason, "{status}");
                assert_eq!(body["claim"], Value::Null);
            }
        }
        // The whole status in one page, oldest first; then two by two through the cursor.
        let path = format!("/staff/bots?status={status}");
        let response = staff_read(&world, &path, &world.moderator_token).await;
        assert_eq!(response.status(), StatusCode::OK);
        let page: Value = response.json().await.expect("json");
        assert_eq!(&ids_of(&page), ids, "{status}");
        assert_eq!(page["next_cursor"], Value::Null);
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let query = match &cursor {
                Some(cursor) => format!("{path}&limit=2&cursor={cursor}"),
                None => format!("{path}&limit=2"),
            };
            let page: Value = staff_read(&world, &query, &world.admin_token)
                .await
                .json()
                .await
                .expect("json");
            seen.extend(ids_of(&page));
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(&seen, ids, "{status} paged");
    }

    // A listing moves between the lists with its status; a removed one leaves them.
    let moved = by_status[0].1[0].clone();
    act_ok(&world.app, &moved, "deny", &world.moderator_token).await;
    let denied: Value = staff_read(&world, "/staff/bots?status=denied", &world.moderator_token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(ids_of(&denied)[0], moved, "oldest first: it was made first");
    let pending: Value = staff_read(&world, "/staff/bots?status=pending", &world.moderator_token)
        .await
        .json()
        .await
        .expect("json");
    assert!(!ids_of(&pending).contains(&moved));
    // (An approved one: who may remove a listing in the other statuses is another change's.)
    let gone = by_status[1].1[1].clone();
    let response = send(
        &world.app,
        Method::DELETE,
        &format!("/bots/{gone}"),
        &world.owner_token,
        None,
    )
    .await;
    assert!(response.status().is_success(), "{}", response.status());
    let approved: Value = staff_read(
        &world,
        "/staff/bots?status=approved",
        &world.moderator_token,
    )
    .await
    .json()
    .await
    .expect("json");
    assert!(!ids_of(&approved).contains(&gone));
    let response = staff_read(
        &world,
        &format!("/staff/bots/{gone}"),
        &world.moderator_token,
    )
    .await;
    assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
    let response = staff_read(
        &world,
        "/staff/bots/00000000-0000-4000-8000-000000000000",
        &world.moderator_token,
    )
    .await;
    assert_error(response, StatusCode::NOT_FOUND, "not_found").await;

    for query in [
        "",
        "?status=gone",
        "?status=pending&limit=0",
        "?status=pending&limit=101",
        "?status=pending&cursor=nonsense",
        "?status=pending&sort=new",
    ] {
        let response = staff_read(
            &world,
            &format!("/staff/bots{query}"),
            &world.moderator_token,
        )
        .await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
}

#[actix_web::test]
async fn only_staff_read_listings_through_the_staff_routes() {
    let world = world().await;
    let id = listing_in(&world, "denied", 9).await;
    let moderator_without_scope = token(&world.app, &world.moderator, &["vote"]).await;
    for path in [
        "/staff/queue".to_owned(),
        "/staff/bots?status=denied".to_owned(),
        format!("/staff/bots/{id}"),
    ] {
        for token in [
            &world.plain_token,
            &world.owner_token,
            &moderator_without_scope,
        ] {
            let response = staff_read(&world, &path, token).await;
            assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
        }
        for token in [&world.bot_token, &ADMIN.to_owned()] {
            let response = staff_read(&world, &path, token).await;
            assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
        }
        let anonymous = world
            .app
            .request(Method::GET, &path, None)
            .send()
            .await
            .expect("sent");
        assert_error(anonymous, StatusCode::UNAUTHORIZED, "unauthorized").await;
        for token in [&world.moderator_token, &world.admin_token] {
            assert_eq!(
                staff_read(&world, &path, token).await.status(),
                StatusCode::OK,
                "{path}"
            );
        }
    }
}

#[actix_web::test]
async fn staff_routes_draw_from_the_profiles_rate_limit_bucket() {
    let mut settings = test_settings();
    settings.rate_limit = 3;
    let app = spawn_app_with(settings).await;
    let moderator = profile(&app, json!({ "username": "moderator", "mod": true })).await;
    let first = token(&app, &moderator, &["staff"]).await;
    let second = token(&app, &moderator, &["staff"]).await;
    let other = profile(&app, json!({ "username": "other", "admin": true })).await;
    let other_token = token(&app, &other, &["staff"]).await;
    // Two tokens of one profile, on two staff routes: one bucket of 3.
    for (token, path) in [
        (&first, "/staff/queue"),
        (&second, "/staff/audit"),
        (&first, "/staff/bots?status=pending"),
    ] {
        let response = app
            .request(Method::GET, path, Some(token))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["x-ratelimit-limit"], "3");
    }
    let refused = app
        .request(Method::GET, "/staff/queue", Some(&second))
        .send()
        .await
        .expect("sent");
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.expect("json");
    assert!(
        body["retry_after"].as_u64().is_some_and(|n| n >= 1),
        "{body}"
    );
    // Another staff member has a bucket of their own.
    let response = app
        .request(Method::GET, "/staff/queue", Some(&other_token))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    // The bucket fills again on the server's clock.
    app.clock.advance(chrono::Duration::seconds(20));
    let response = app
        .request(Method::GET, "/staff/queue", Some(&first))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
}
