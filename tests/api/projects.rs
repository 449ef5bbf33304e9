//! The project API (CONTRACT section 12): every route of `/projects/@me` over HTTP with
//! `Authorization: Bearer`, each error as RFC 9457 problem details, the 4-hour announcement rule
//! on the injected clock, metrics batches into the growth history, and commands and
//! announcements across a restart.

use chrono::Duration;
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{spawn_app, test_settings, TestApp, TestBot};
use crate::weekend::{serve_until_stopped, snapshots};

fn bearer(app: &TestApp, method: Method, path: &str, token: &str) -> RequestBuilder {
    app.request(method, path, None)
        .header("Authorization", format!("Bearer {token}"))
}

async fn get(app: &TestApp, path: &str, bot: &TestBot) -> Response {
    bearer(app, Method::GET, path, &bot.token)
        .send()
        .await
        .expect("sent")
}

async fn send(app: &TestApp, method: Method, path: &str, bot: &TestBot, body: &Value) -> Response {
    bearer(app, method, path, &bot.token)
        .json(body)
        .send()
        .await
        .expect("sent")
}

/// Asserts an RFC 9457 problem of `status` and returns its `detail`.
async fn assert_problem(response: Response, status: StatusCode) -> String {
    assert_eq!(response.status(), status);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/problem+json")
    );
    let retry_after = response.headers().get("retry-after").cloned();
    let body: Value = response.json().await.expect("a problem is JSON");
    assert_eq!(body["status"], status.as_u16(), "{body}");
    assert_eq!(
        body["title"],
        status.canonical_reason().expect("a reason"),
        "{body}"
    );
    let kind = body["type"].as_str().expect("a type");
    assert!(kind.starts_with("urn:botlist:error:"), "{body}");
    assert_eq!(kind.trim_start_matches("urn:botlist:error:"), body["code"]);
    if status == StatusCode::TOO_MANY_REQUESTS {
        assert!(retry_after.is_some(), "a 429 says when to retry");
    }
    let detail = body["detail"].as_str().expect("a detail").to_owned();
    assert!(!detail.is_empty());
    detail
}

#[actix_web::test]
async fn get_self_answers_the_bot_as_a_project_with_numeric_ids() {
    let app = spawn_app().await;
    let bot = app
        .create_bot(
            218109768489992192,
            json!({"name": "Miki", "short_description": "A great bot", "tags": ["fun", "anime"]}),
        )
        .await;
    app.vote_ok(&bot.id, 1).await;
    app.vote_ok(&bot.id, 2).await;
    let response = get(&app, "/projects/@me", &bot).await;
    assert_eq!(response.status(), StatusCode::OK);
    let project: Value = response.json().await.expect("json");
    assert_eq!(
        project,
        json!({
            "id": "218109768489992192", "name": "Miki", "type": "bot", "platform": "discord",
            "headline": "A great bot", "tags": ["fun", "anime"], "votes": 2, "votes_total": 2,
            "review_score": 0.0, "review_count": 0,
        })
    );
    // Its reviews' average (out of 5) and count, as `GET /bots/:id/reviews` gives them.
    let mut written_by = Vec::new();
    for (name, rating) in [("ann", 5), ("bob", 2)] {
        let token = reviews_token(&app, name).await;
        let written = review(&app, &bot, &token, rating).await;
        assert_eq!(written.status(), StatusCode::CREATED);
        let written: Value = written.json().await.expect("json");
        written_by.push((token, written["id"].as_str().expect("id").to_owned()));
    }
    let project: Value = get(&app, "/projects/@me", &bot)
        .await
        .json()
        .await
        .expect("json");
    let listed: Value = app
        .get(&format!("/bots/{}/reviews", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        (&project["review_score"], &project["review_count"]),
        (&json!(3.5), &json!(2))
    );
    assert_eq!(
        (&project["review_score"], &project["review_count"]),
        (&listed["rating"], &listed["count"])
    );
    // An edit and a deletion change the figures too.
    let figures = || async {
        let project: Value = get(&app, "/projects/@me", &bot)
            .await
            .json()
            .await
            .expect("json");
        (
            project["review_score"].clone(),
            project["review_count"].clone(),
        )
    };
    let (ann, bob) = (&written_by[0], &written_by[1]);
    let path = |id: &str| format!("/bots/{}/reviews/{id}", bot.id);
    let edited = app
        .request(Method::PATCH, &path(&ann.1), Some(&ann.0))
        .json(&json!({ "rating": 4 }))
        .send()
        .await
        .expect("sent");
    assert_eq!(edited.status(), StatusCode::OK);
    assert_eq!(figures().await, (json!(3.0), json!(2)));
    let deleted = app
        .request(Method::DELETE, &path(&bob.1), Some(&bob.0))
        .send()
        .await
        .expect("sent");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(figures().await, (json!(4.0), json!(1)));
}

/// A review written with `token`.
async fn review(app: &TestApp, bot: &TestBot, token: &str, rating: u8) -> Response {
    app.request(
        Method::POST,
        &format!("/bots/{}/reviews", bot.id),
        Some(token),
    )
    .json(&json!({ "rating": rating, "content": "" }))
    .send()
    .await
    .expect("sent")
}

/// A review-scoped token of a new profile named `name`.
async fn reviews_token(app: &TestApp, name: &str) -> String {
    let profile = app.create_profile(json!({ "username": name })).await;
    let issued: Value = app
        .admin(
            Method::POST,
            &format!(
                "/admin/users/{}/tokens",
                profile["id"].as_str().expect("id")
            ),
            Some(&json!({ "scopes": ["reviews"], "label": "test" })),
        )
        .await
        .json()
        .await
        .expect("json");
    issued["token"].as_str().expect("token").to_owned()
}

/// `@me` reads its review figures from the bot's published view, so while the journal has
/// failed it still answers, with the durable reviews only (docs/API.md, `/projects/@me`).
#[actix_web::test]
async fn get_self_shows_the_durable_reviews_while_the_journal_has_failed() {
    use botlist::persist::journal::JournalFault;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let switch = dir.path().join("disk-full");
    let mut settings = test_settings();
    settings.data_dir = Some(dir.path().join("data"));
    // ENOSPC once the file exists: the disk fills after the first review.
    settings.journal_fault = JournalFault::FailWhileExists(switch.clone(), 28);
    let app = crate::helpers::spawn_app_with(settings).await;
    let bot = app
        .create_bot(218109768489992193, json!({ "name": "Miki" }))
        .await;
    let (ann, bob) = (
        reviews_token(&app, "ann").await,
        reviews_token(&app, "bob").await,
    );
    assert_eq!(
        review(&app, &bot, &ann, 5).await.status(),
        StatusCode::CREATED
    );
    std::fs::write(&switch, b"").expect("the switch is made");
    let refused = review(&app, &bot, &bob, 1).await;
    assert!(refused.status().is_server_error(), "{}", refused.status());

    let response = get(&app, "/projects/@me", &bot).await;
    assert_eq!(response.status(), StatusCode::OK);
    let project: Value = response.json().await.expect("json");
    assert_eq!(
        (&project["review_score"], &project["review_count"]),
        (&json!(5.0), &json!(1)),
        "{project}"
    );
}

#[actix_web::test]
async fn every_project_route_takes_a_bearer_token_and_answers_problems() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let routes = [
        (Method::GET, "/projects/@me"),
        (Method::PATCH, "/projects/@me"),
        (
            Method::GET,
            "/projects/@me/votes?startDate=2026-01-01T00:00:00Z",
        ),
        (Method::GET, "/projects/@me/votes/1"),
        (Method::PATCH, "/projects/@me/metrics"),
        (Method::POST, "/projects/@me/metrics/batch"),
        (Method::PUT, "/projects/@me/commands"),
        (Method::POST, "/projects/@me/commands"),
        (Method::GET, "/projects/@me/commands"),
        (Method::POST, "/projects/@me/announcements"),
        (Method::GET, "/projects/@me/announcements"),
    ];
    for (method, path) in routes {
        // None, the raw token (the rule elsewhere), and an unknown one.
        let none = app.request(method.clone(), path, None).json(&json!({}));
        let detail =
            assert_problem(none.send().await.expect("sent"), StatusCode::UNAUTHORIZED).await;
        assert!(detail.contains("Bearer"), "{method} {path}: {detail}");
        let raw = app
            .request(method.clone(), path, Some(&bot.token))
            .json(&json!({}));
        assert_problem(raw.send().await.expect("sent"), StatusCode::UNAUTHORIZED).await;
        let unknown = bearer(&app, method.clone(), path, "not-a-token").json(&json!({}));
        let detail = assert_problem(
            unknown.send().await.expect("sent"),
            StatusCode::UNAUTHORIZED,
        )
        .await;
        assert_eq!(detail, "unknown API token", "{method} {path}");
    }
    // The rest of the API keeps the raw token: Bearer stays refused there, in the envelope.
    let classic = bearer(&app, Method::GET, "/bots/votes", &bot.token)
        .send()
        .await
        .expect("sent");
    crate::helpers::assert_error(classic, StatusCode::UNAUTHORIZED, "unauthorized").await;
    // The framework's own answers under /projects are problems too.
    let missing = get(&app, "/projects/@me/nothing", &bot).await;
    assert_problem(missing, StatusCode::NOT_FOUND).await;
    let method = bearer(&app, Method::DELETE, "/projects/@me", &bot.token)
        .send()
        .await
        .expect("sent");
    assert_problem(method, StatusCode::METHOD_NOT_ALLOWED).await;
    // A body that is not JSON.
    let not_json = bearer(&app, Method::PATCH, "/projects/@me/metrics", &bot.token)
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .expect("sent");
    assert_problem(not_json, StatusCode::BAD_REQUEST).await;
    let not_typed = bearer(&app, Method::PATCH, "/projects/@me/metrics", &bot.token)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .expect("sent");
    assert_problem(not_typed, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
}

#[actix_web::test]
async fn edit_self_sets_headline_and_page_content_from_either_client() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    // @top-gg/sdk 4.0.0's body.
    let node = json!({"headline": {"en": "A great bot with tons of features!"},
                      "page_content": {"en": "# Welcome\nThe page."}});
    let response = send(&app, Method::PATCH, "/projects/@me", &bot, &node).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let shown: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        shown["short_description"],
        "A great bot with tons of features!"
    );
    assert_eq!(shown["long_description"], "# Welcome\nThe page.");
    // topggpy 2.0.0's body: `content`, and one locale that is not English.
    let python = json!({"content": {"de": "Die Seite."}});
    let response = send(&app, Method::PATCH, "/projects/@me", &bot, &python).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let shown: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(shown["long_description"], "Die Seite.");
    assert_eq!(
        shown["short_description"],
        "A great bot with tons of features!"
    );
    for bad in [
        json!({}),
        json!({"headline": {"de": "a", "fr": "b"}}),
        json!({"headline": {}}),
        json!({"headline": {"en": ""}}),
        json!({"headline": {"en": "x".repeat(301)}}),
        json!({"name": "renamed"}),
    ] {
        let response = send(&app, Method::PATCH, "/projects/@me", &bot, &bad).await;
        assert_problem(response, StatusCode::BAD_REQUEST).await;
    }
}

#[actix_web::test]
async fn votes_page_in_time_order_by_start_date_then_cursor_until_an_empty_one() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    for user in 1..=150u64 {
        app.vote_ok(&bot.id, user).await;
        app.clock.advance(Duration::seconds(1));
    }
    let first = get(
        &app,
        "/projects/@me/votes?startDate=2026-11-15T12%3A00%3A00.000Z",
        &bot,
    )
    .await;
    assert_eq!(first.status(), StatusCode::OK);
    let first: Value = first.json().await.expect("json");
    let data = first["data"].as_array().expect("data");
    assert_eq!(data.len(), 100);
    assert_eq!(
        data[0],
        json!({"user_id": "1", "platform_id": "1", "created_at": "2026-11-15T12:00:00.000Z",
               "expires_at": "2026-11-16T00:00:00.000Z", "weight": 1})
    );
    assert_eq!(data[99]["user_id"], "100");
    let cursor = first["cursor"].as_str().expect("a cursor");
    assert!(!cursor.is_empty());
    let second: Value = get(&app, &format!("/projects/@me/votes?cursor={cursor}"), &bot)
        .await
        .json()
        .await
        .expect("json");
    let data = second["data"].as_array().expect("data");
    assert_eq!(data.len(), 50);
    assert_eq!(data[49]["user_id"], "150");
    assert_eq!(
        second["cursor"], "",
        "the last page's cursor is the empty string"
    );
    // Both clients ask once more with the empty cursor: an empty last page.
    let past: Value = get(&app, "/projects/@me/votes?cursor=", &bot)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(past, json!({"data": [], "cursor": ""}));
    // A start date without an offset is UTC (topggpy's naive isoformat), with one converted.
    let naive: Value = get(
        &app,
        "/projects/@me/votes?startDate=2026-11-15T12:02:00",
        &bot,
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(naive["data"][0]["user_id"], "121");
    let offset: Value = get(
        &app,
        "/projects/@me/votes?startDate=2026-11-15T13:02:00%2B01:00",
        &bot,
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(offset["data"][0]["user_id"], "121");
    assert_eq!(offset["data"].as_array().map(Vec::len), Some(30));
    for bad in [
        "/projects/@me/votes",
        "/projects/@me/votes?startDate=yesterday",
        "/projects/@me/votes?cursor=abc",
        "/projects/@me/votes?startDate=2026-11-15T12:00:00Z&cursor=1",
    ] {
        assert_problem(get(&app, bad, &bot).await, StatusCode::BAD_REQUEST).await;
    }
}

#[actix_web::test]
async fn a_users_vote_has_its_times_and_weight_for_either_source_and_404_otherwise() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 661200758510977084).await;
    let expected = json!({"created_at": "2026-11-15T12:00:00.000Z",
                          "expires_at": "2026-11-16T00:00:00.000Z", "weight": 1});
    for query in ["", "?source=discord", "?source=topgg"] {
        let response = get(
            &app,
            &format!("/projects/@me/votes/661200758510977084{query}"),
            &bot,
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK, "{query}");
        assert_eq!(response.json::<Value>().await.expect("json"), expected);
    }
    let other = get(&app, "/projects/@me/votes/2?source=discord", &bot).await;
    let detail = assert_problem(other, StatusCode::NOT_FOUND).await;
    assert!(detail.contains("12 hours"), "{detail}");
    // The node SDK's own mock asks for user 0 and expects 404.
    assert_problem(
        get(&app, "/projects/@me/votes/0", &bot).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    app.clock.advance(Duration::hours(12));
    let expired = get(&app, "/projects/@me/votes/661200758510977084", &bot).await;
    assert_problem(expired, StatusCode::NOT_FOUND).await;
    for bad in [
        "/projects/@me/votes/abc",
        "/projects/@me/votes/01",
        "/projects/@me/votes/1?source=github",
    ] {
        assert_problem(get(&app, bad, &bot).await, StatusCode::BAD_REQUEST).await;
    }
}

#[actix_web::test]
async fn a_weekend_vote_answers_its_weight() {
    let mut settings = test_settings();
    settings.weekend_multiplier = 2;
    // 2026-11-15T12:00Z, the helpers' start, is a Sunday.
    let app = crate::helpers::spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 7).await;
    let vote: Value = get(&app, "/projects/@me/votes/7", &bot)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(vote["weight"], 2);
    let page: Value = get(
        &app,
        "/projects/@me/votes?startDate=2026-11-15T00:00:00Z",
        &bot,
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(page["data"][0]["weight"], 2);
}

async fn server_count(app: &TestApp, bot: &TestBot) -> u64 {
    let stats: Value = app
        .get(&format!("/bots/{}/stats", bot.id))
        .await
        .json()
        .await
        .expect("json");
    stats["server_count"].as_u64().expect("a count")
}

#[actix_web::test]
async fn metrics_are_a_stats_post() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let response = send(
        &app,
        Method::PATCH,
        "/projects/@me/metrics",
        &bot,
        &json!({"server_count": 420, "shard_count": 67}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(server_count(&app, &bot).await, 420);
    for bad in [
        json!({"shard_count": 2}),
        json!({"server_count": -1}),
        json!({"server_count": 1, "shard_count": 0}),
        json!({"member_count": 5}),
        json!([1]),
    ] {
        let response = send(&app, Method::PATCH, "/projects/@me/metrics", &bot, &bad).await;
        assert_problem(response, StatusCode::BAD_REQUEST).await;
    }
    assert_eq!(server_count(&app, &bot).await, 420);
}

async fn hourly(app: &TestApp, bot: &TestBot) -> Vec<(String, Option<u64>)> {
    let body: Value = app
        .get(&format!(
            "/bots/{}/stats/history?interval=hour&from=2026-11-15T08:00:00Z&to=2026-11-15T13:00:00Z",
            bot.id
        ))
        .await
        .json()
        .await
        .expect("json");
    body["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| {
            (
                p["at"].as_str().expect("at")[11..16].to_owned(),
                p["server_count"].as_u64(),
            )
        })
        .collect()
}

#[actix_web::test]
async fn a_batch_goes_into_the_growth_history_in_time_order_from_either_client() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    // Node's form, out of order.
    let node = json!({"data": [
        {"timestamp": "2026-11-15T09:30:00Z", "metrics": {"server_count": 5}},
        {"timestamp": "2026-11-15T08:10:00Z", "metrics": {"server_count": 3}},
        {"timestamp": "2026-11-15T11:00:00+01:00", "metrics": {"server_count": 7, "shard_count": 2}},
    ]});
    let response = send(
        &app,
        Method::POST,
        "/projects/@me/metrics/batch",
        &bot,
        &node,
    )
    .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let expect = |counts: [u64; 5]| -> Vec<(String, Option<u64>)> {
        ["08:00", "09:00", "10:00", "11:00", "12:00"]
            .iter()
            .zip(counts)
            .map(|(at, count)| (at.to_string(), Some(count)))
            .collect()
    };
    assert_eq!(hourly(&app, &bot).await, expect([3, 5, 7, 7, 7]));
    assert_eq!(server_count(&app, &bot).await, 7);
    // A live post, then Python's bare array, naive times (UTC), older than it: history only.
    app.post_stats(&bot, 10).await;
    let python = json!([{"timestamp": "2026-11-15T11:15:00", "metrics": {"server_count": 9}}]);
    let response = send(
        &app,
        Method::POST,
        "/projects/@me/metrics/batch",
        &bot,
        &python,
    )
    .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(hourly(&app, &bot).await, expect([3, 5, 7, 9, 10]));
    assert_eq!(server_count(&app, &bot).await, 10);
    let entry = json!({"metrics": {"server_count": 1}});
    for bad in [
        json!([]),
        json!({"data": []}),
        Value::Array(vec![entry.clone(); 101]),
        json!([{"timestamp": "2026-11-15T12:02:00Z", "metrics": {"server_count": 1}}]),
        json!([{"timestamp": "noon", "metrics": {"server_count": 1}}]),
        json!([{"timestamp": "2026-11-15T11:00:00Z"}]),
        json!([{"metrics": {"player_count": 1}}]),
        json!({"entries": [entry]}),
    ] {
        let response = send(
            &app,
            Method::POST,
            "/projects/@me/metrics/batch",
            &bot,
            &bad,
        )
        .await;
        assert_problem(response, StatusCode::BAD_REQUEST).await;
    }
    // 100 entries is the most, all applied.
    let full = Value::Array(vec![entry; 100]);
    let response = send(
        &app,
        Method::POST,
        "/projects/@me/metrics/batch",
        &bot,
        &full,
    )
    .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(server_count(&app, &bot).await, 1);
}

#[actix_web::test]
async fn commands_are_replaced_by_put_or_post_and_read_back() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let empty: Value = get(&app, "/projects/@me/commands", &bot)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(empty, json!([]));
    let node = json!([{"name": "test", "description": "command description", "options": [],
                       "name_localizations": null, "nsfw": false}]);
    let response = send(&app, Method::PUT, "/projects/@me/commands", &bot, &node).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let read: Value = get(&app, "/projects/@me/commands", &bot)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(read, node);
    let python = json!([{"name": "ping"}, {"name": "help"}]);
    let response = send(&app, Method::POST, "/projects/@me/commands", &bot, &python).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let read: Value = get(&app, "/projects/@me/commands", &bot)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(read, python);
    for bad in [
        json!({"name": "ping"}),
        json!([1]),
        json!([{"description": "no name"}]),
        json!([{"name": ""}]),
    ] {
        let response = send(&app, Method::PUT, "/projects/@me/commands", &bot, &bad).await;
        assert_problem(response, StatusCode::BAD_REQUEST).await;
    }
}

fn announcement(title: &str) -> Value {
    json!({"title": title, "content": "We just released version 2.0 with new features."})
}

#[actix_web::test]
async fn one_announcement_per_four_hours_on_the_injected_clock_read_publicly_newest_first() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let path = "/projects/@me/announcements";
    let response = send(
        &app,
        Method::POST,
        path,
        &bot,
        &announcement("Version 2.0 Released!"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let posted: Value = response.json().await.expect("json");
    assert_eq!(
        posted,
        json!({"title": "Version 2.0 Released!",
               "content": "We just released version 2.0 with new features.",
               "category": "announcement", "created_at": "2026-11-15T12:00:00.000Z"})
    );
    app.clock.advance(Duration::hours(4) - Duration::seconds(1));
    let response = send(&app, Method::POST, path, &bot, &announcement("Too soon")).await;
    assert_eq!(
        response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let detail = assert_problem(response, StatusCode::TOO_MANY_REQUESTS).await;
    assert!(detail.contains("4 hours"), "{detail}");
    app.clock.advance(Duration::seconds(1));
    let mut second = announcement("An event");
    second["category"] = json!("event");
    let response = send(&app, Method::POST, path, &bot, &second).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    // Public, newest first, by listing id or snowflake, without a token.
    for id in [&bot.id, &bot.platform_id] {
        let response = app.get(&format!("/bots/{id}/announcements")).await;
        assert_eq!(response.status(), StatusCode::OK);
        let listed: Value = response.json().await.expect("json");
        let titles: Vec<&str> = listed["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|a| a["title"].as_str().expect("title"))
            .collect();
        assert_eq!(titles, ["An event", "Version 2.0 Released!"]);
        assert_eq!(listed["data"][0]["category"], "event");
    }
    let own: Value = get(&app, path, &bot).await.json().await.expect("json");
    assert_eq!(own["data"].as_array().map(Vec::len), Some(2));
    crate::helpers::assert_error(
        app.get("/bots/999/announcements").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    // Out of bounds (checked before the rule), and unknown categories.
    app.clock.advance(Duration::hours(4));
    let long_title = "x".repeat(101);
    for bad in [
        json!({"title": "ab", "content": "0123456789"}),
        json!({"title": long_title, "content": "0123456789"}),
        json!({"title": "abc", "content": "012345678"}),
        json!({"title": "abc", "content": "x".repeat(2001)}),
        json!({"title": "abc", "content": "0123456789", "category": "news"}),
        json!({"content": "0123456789"}),
        // topggpy 2.0.0 sends `title[100:]` and `content[2000:]`: empty for every short text.
        json!({"title": "", "content": ""}),
    ] {
        let response = send(&app, Method::POST, path, &bot, &bad).await;
        assert_problem(response, StatusCode::BAD_REQUEST).await;
    }
    // The limits are inclusive, and counted in characters, not bytes.
    let edge = json!({"title": "é".repeat(100), "content": "ü".repeat(2000)});
    let response = send(&app, Method::POST, path, &bot, &edge).await;
    assert_eq!(response.status(), StatusCode::CREATED);
}

#[actix_web::test]
async fn commands_and_announcements_survive_a_restart_from_the_journal_and_from_a_snapshot() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = test_settings();
    settings.data_dir = Some(dir.path().to_owned());
    let start = crate::helpers::start_time();
    let (app, stop, task) = serve_until_stopped(settings.clone(), start).await;
    let bot = app.create_bot(42, json!({})).await;
    // A snapshot first: what follows is only in the journal.
    let snapshot = app.admin(Method::POST, "/admin/snapshot", None).await;
    assert_eq!(snapshot.status(), StatusCode::OK);
    let commands = json!([{"name": "ping"}]);
    let response = send(&app, Method::PUT, "/projects/@me/commands", &bot, &commands).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let response = send(
        &app,
        Method::POST,
        "/projects/@me/announcements",
        &bot,
        &announcement("Kept"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");

    let check = |app: TestApp| {
        let bot_id = bot.id.clone();
        let token = bot.token.clone();
        let commands = commands.clone();
        async move {
            let read = bearer(&app, Method::GET, "/projects/@me/commands", &token)
                .send()
                .await
                .expect("sent");
            assert_eq!(read.json::<Value>().await.expect("json"), commands);
            let listed: Value = app
                .get(&format!("/bots/{bot_id}/announcements"))
                .await
                .json()
                .await
                .expect("json");
            assert_eq!(listed["data"][0]["title"], "Kept");
            // The 4-hour rule holds across the restart.
            let again = bearer(&app, Method::POST, "/projects/@me/announcements", &token)
                .json(&announcement("Again"))
                .send()
                .await
                .expect("sent");
            assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
        }
    };
    // From the journal: the last snapshot (the stop's) set aside.
    let all = snapshots(dir.path());
    std::fs::remove_file(&all[all.len() - 1]).expect("removed");
    let (app, stop, task) =
        serve_until_stopped(settings.clone(), start.plus(Duration::hours(1))).await;
    check(app).await;
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");
    // From the snapshot the stop wrote.
    let (app, stop, task) = serve_until_stopped(settings, start.plus(Duration::hours(1))).await;
    check(app).await;
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");
}

/// `GET /projects/@me` answers the bot whose token it carries, however `Bearer` is spelled,
/// with the rate limit counting by token or turned off (the handler takes the limit's lookup
/// of the token when it made one, and looks it up itself otherwise), and a rotated token stops
/// at once.
#[actix_web::test]
async fn get_self_answers_the_tokens_own_bot_with_or_without_the_limits_lookup() {
    for rate_limit in [60, 0] {
        let mut settings = test_settings();
        settings.rate_limit = rate_limit;
        let app = crate::helpers::spawn_app_with(settings).await;
        let first = app.create_bot(41, json!({ "name": "First" })).await;
        let second = app.create_bot(42, json!({ "name": "Second" })).await;
        let name = |token: String| {
            let app = &app;
            async move {
                let response = app.get_with("/projects/@me", &token).await;
                assert_eq!(response.status(), StatusCode::OK);
                let project: Value = response.json().await.expect("json");
                project["name"].as_str().expect("a name").to_owned()
            }
        };
        for _ in 0..2 {
            assert_eq!(name(format!("Bearer {}", first.token)).await, "First");
            assert_eq!(name(format!("Bearer {}", second.token)).await, "Second");
            assert_eq!(name(format!("bearer {}", second.token)).await, "Second");
            assert_eq!(name(format!("BEARER {}", first.token)).await, "First");
        }
        let rotated = app.rotate_token(&first.id).await;
        assert_eq!(rotated.status(), StatusCode::OK);
        let rotated: Value = rotated.json().await.expect("json");
        let old = get(&app, "/projects/@me", &first).await;
        let detail = assert_problem(old, StatusCode::UNAUTHORIZED).await;
        assert_eq!(detail, "unknown API token");
        let new = rotated["token"].as_str().expect("the new token");
        assert_eq!(name(format!("Bearer {new}")).await, "First");
    }
}
