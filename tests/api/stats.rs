//! `GET /bots/:id/stats` and `POST /bots/:id/stats`.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app};

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
        json!({ "server_count": [5] }),
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
        let response = app
            .request(
                Method::POST,
                &format!("/bots/{}/stats", bot.id),
                Some(&bot.token),
            )
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .expect("sent");
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
