//! `GET /bots/:id/stats` and `POST /bots/:id/stats`.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, TestApp, TestBot};

#[actix_web::test]
async fn stats_read_0_until_posted_then_the_last_count() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let stats: Value = app
        .get(&format!("/bots/{}/stats", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats, json!({ "server_count": 0 }));
    for count in [1500u64, 12, 9_007_199_254_740_991] {
        let response = app
            .post_json(
                &format!("/bots/{}/stats", bot.platform_id),
                Some(&bot.token),
                &json!({ "server_count": count, "shards": [1, 2], "shard_count": 2 }),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.json::<Value>().await.expect("json"),
            json!({ "ok": true })
        );
        let stats: Value = app
            .get(&format!("/bots/{}/stats", bot.platform_id))
            .await
            .json()
            .await
            .expect("json");
        assert_eq!(stats["server_count"], count);
        let found: Value = app
            .get(&format!("/bots/{}", bot.id))
            .await
            .json()
            .await
            .expect("json");
        assert_eq!(found["server_count"], count);
    }
}

#[actix_web::test]
async fn a_stats_post_needs_an_integer_server_count_in_range() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    for body in [
        json!({}),
        json!({ "server_count": "5" }),
        json!({ "server_count": 1.5 }),
        json!({ "server_count": -1 }),
        json!({ "server_count": 9_007_199_254_740_992u64 }),
        json!({ "server_count": null }),
        json!({ "server_count": 90.5 }),
        json!({ "server_count": [] }),
        json!({ "server_count": [5, -1] }),
        json!({ "server_count": true }),
    ] {
        let response = app
            .post_json(&format!("/bots/{}/stats", bot.id), Some(&bot.token), &body)
            .await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains("server_count"), "{body}: {message}");
    }
    for raw in [
        "[]",
        "5",
        "null",
        "{\"server_count\": 5} trailing",
        "{\"server_count\": 5",
    ] {
        let response = post_text(&app, &bot, raw.to_owned()).await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    let stats: Value = app
        .get(&format!("/bots/{}/stats", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats["server_count"], 0, "nothing refused was stored");
}

#[actix_web::test]
async fn a_stats_post_moves_the_bot_in_recently_updated_and_invites() {
    let app = spawn_app().await;
    let first = app.create_bot(1, json!({})).await;
    let second = app.create_bot(2, json!({})).await;
    app.clock.advance(chrono::Duration::seconds(5));
    app.post_stats(&first, 50).await;
    let search: Value = app
        .get("/bots?sort=recently_updated")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(search["results"][0]["id"], first.id.as_str());
    app.post_stats(&second, 150).await;
    let search: Value = app
        .get("/bots?invites=100-1000")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(search["total"], 1);
    assert_eq!(search["results"][0]["id"], second.id.as_str());
}

#[actix_web::test]
async fn stats_of_an_unknown_bot_are_404() {
    let app = spawn_app().await;
    assert_error(
        app.get("/bots/999/stats").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

/// A stats post of `body` as it is, JSON or not.
async fn post_text(app: &TestApp, bot: &TestBot, body: String) -> reqwest::Response {
    app.request(
        Method::POST,
        &format!("/bots/{}/stats", bot.id),
        Some(&bot.token),
    )
    .header("content-type", "application/json")
    .body(body)
    .send()
    .await
    .expect("sent")
}

async fn post_raw(app: &TestApp, bot: &TestBot, path: &str, body: &Value) -> StatusCode {
    let response = app.post_json(path, Some(&bot.token), body).await;
    let status = response.status();
    if status != StatusCode::OK {
        let text = response.text().await.unwrap_or_default();
        panic!("{body}: {status} {text}");
    }
    status
}

async fn servers(app: &TestApp, bot: &TestBot) -> Value {
    let stats: Value = app
        .get(&format!("/bots/{}/stats", bot.id))
        .await
        .json()
        .await
        .expect("json");
    let listed: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats["server_count"], listed["server_count"]);
    stats["server_count"].clone()
}

#[actix_web::test]
async fn sharded_bots_post_per_shard_and_the_count_is_the_sum() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let own = format!("/bots/{}/stats", bot.id);
    for (path, body, expected) in [
        (
            own.as_str(),
            json!({"server_count": 100, "shard_id": 0, "shard_count": 2}),
            100,
        ),
        (
            "/bots/stats",
            json!({"server_count": 200, "shard_id": 1, "shard_count": 2}),
            300,
        ),
        // A shard posting again replaces its own count only.
        (
            own.as_str(),
            json!({"server_count": 150, "shard_id": 1}),
            250,
        ),
        // A smaller shard_count drops the shards at or above it.
        (
            own.as_str(),
            json!({"server_count": 10, "shard_id": 0, "shard_count": 1}),
            10,
        ),
        (own.as_str(), json!({"server_count": [100, 200]}), 300),
        (own.as_str(), json!({"shards": [100, 200, 5]}), 305),
        // `server_count` wins over `shards`; other fields are ignored.
        (
            own.as_str(),
            json!({"server_count": [1, 2], "shards": [100], "extra": "x"}),
            3,
        ),
        // A whole count replaces every shard.
        (own.as_str(), json!({"server_count": 90.0}), 90),
        (own.as_str(), json!({"server_count": 7, "shard_id": 3}), 7),
        (
            own.as_str(),
            json!({"server_count": 7, "shard_id": null}),
            7,
        ),
    ] {
        post_raw(&app, &bot, path, &body).await;
        assert_eq!(servers(&app, &bot).await, expected, "after {body}");
    }
}

#[actix_web::test]
async fn sharded_posts_out_of_range_are_refused_naming_the_field() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.post_stats(&bot, 5).await;
    let too_many: Vec<u64> = vec![1; 10_001];
    for (body, field) in [
        (
            json!({"server_count": 1, "shard_id": 2, "shard_count": 2}),
            "shard_id",
        ),
        (json!({"server_count": 1, "shard_id": -1}), "shard_id"),
        (json!({"server_count": 1, "shard_id": 10_000}), "shard_id"),
        (json!({"server_count": 1, "shard_id": "0"}), "shard_id"),
        (
            json!({"server_count": 1, "shard_id": 0, "shard_count": 0}),
            "shard_count",
        ),
        (
            json!({"server_count": 1, "shard_id": 0, "shard_count": 10_001}),
            "shard_count",
        ),
        (json!({"server_count": [1, 2.5]}), "server_count[1]"),
        (json!({"server_count": [1, "2"]}), "server_count[1]"),
        (json!({"server_count": too_many}), "server_count"),
        (json!({"shards": [1, -2]}), "shards[1]"),
        (json!({"shards": 5}), "shards"),
        (json!({"shards": []}), "shards"),
        (json!({"shard_id": 0}), "server_count"),
        (json!({"server_count": 90.5}), "server_count"),
    ] {
        let response = app
            .post_json(&format!("/bots/{}/stats", bot.id), Some(&bot.token), &body)
            .await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.starts_with(field), "{body}: {message}");
    }
    assert_eq!(servers(&app, &bot).await, 5, "nothing refused was stored");
}

/// `shards` is unused when `server_count` is given, but a field the API names is checked
/// whenever it is sent: what is accepted could always have been used.
#[actix_web::test]
async fn an_invalid_shards_beside_a_valid_server_count_is_refused() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.post_stats(&bot, 5).await;
    for body in [
        json!({"server_count": 7, "shards": [-1]}),
        json!({"server_count": 7, "shards": [1, false]}),
        json!({"server_count": 7, "shards": []}),
        json!({"server_count": 7, "shards": "x"}),
        json!({"server_count": 7, "shards": {}}),
        json!({"server_count": 7, "shard_id": 0, "shard_count": 1, "shards": [2.5]}),
    ] {
        for path in [format!("/bots/{}/stats", bot.id), "/bots/stats".to_owned()] {
            let response = app.post_json(&path, Some(&bot.token), &body).await;
            let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
            assert!(message.starts_with("shards"), "{body}: {message}");
        }
    }
    // Too many shards makes the body too large before any field is read.
    let ones = vec!["1"; 40_000].join(",");
    let oversized = format!("{{\"server_count\": 7, \"shards\": [{ones}, -1]}}");
    let response = post_text(&app, &bot, oversized).await;
    assert_error(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
    assert_eq!(servers(&app, &bot).await, 5, "nothing refused was stored");
}
