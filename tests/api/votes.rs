//! `GET /bots/:id/votes` and `GET /bots/:id/check`.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app};

#[actix_web::test]
async fn voters_are_distinct_and_most_recent_first() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 1).await;
    app.clock.advance(chrono::Duration::minutes(1));
    app.vote_ok(&bot.id, 2).await;
    app.clock.advance(chrono::Duration::hours(12));
    let body =
        json!({ "user_id": "1", "username": "renamed", "avatar": "https://cdn.example/a.png" });
    let response = app
        .admin(
            Method::POST,
            &format!("/admin/bots/{}/votes", bot.id),
            Some(&body),
        )
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);

    let response = app
        .get_with(&format!("/bots/{}/votes", bot.id), &bot.token)
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let voters: Value = response.json().await.expect("json");
    assert_eq!(
        voters,
        json!([
            { "username": "renamed", "id": "1", "avatar": "https://cdn.example/a.png" },
            { "username": "user2", "id": "2", "avatar": null },
        ])
    );
}

#[actix_web::test]
async fn voters_stop_at_the_last_thousand() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    for user in 1..=1005u64 {
        app.vote_ok(&bot.id, user).await;
    }
    let voters: Vec<Value> = app
        .get_with(&format!("/bots/{}/votes", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(voters.len(), 1000);
    assert_eq!(voters[0]["id"], "1005");
    assert_eq!(voters[999]["id"], "6");
    let check: Value = app
        .get_with(&format!("/bots/{}/check?userId=1", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        check,
        json!({ "voted": 1 }),
        "check stays right beyond the last 1000 voters"
    );
    let counts: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(counts["vote_count"], 1005);
}

#[actix_web::test]
async fn check_answers_1_only_for_a_user_who_voted() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 77).await;
    for (user, voted) in [("77", 1), ("78", 0)] {
        for id in [&bot.id, &bot.platform_id] {
            let response = app
                .get_with(&format!("/bots/{id}/check?userId={user}"), &bot.token)
                .await;
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                response.json::<Value>().await.expect("json"),
                json!({ "voted": voted })
            );
        }
    }
}

#[actix_web::test]
async fn check_needs_a_snowflake_user_id() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    for query in [
        "",
        "?userId=",
        "?userId=abc",
        "?userId=-1",
        "?userId=01",
        "?userId=18446744073709551616",
        "?userId=1&userId=2",
        "?userid=1",
    ] {
        let response = app
            .get_with(&format!("/bots/{}/check{query}", bot.id), &bot.token)
            .await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains("userId"), "{query}: {message}");
    }
}

#[actix_web::test]
async fn a_vote_is_seen_at_once_by_check_votes_counts_and_search() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let response = app.vote(&bot.id, 5).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        json!({ "vote_count": 1, "monthly_vote_count": 1 })
    );
    let check: Value = app
        .get_with(&format!("/bots/{}/check?userId=5", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(check["voted"], 1);
    let voters: Value = app
        .get_with(&format!("/bots/{}/votes", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(voters[0]["id"], "5");
    let found: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        (
            found["vote_count"].as_u64(),
            found["monthly_vote_count"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let search: Value = app.get("/bots?votes=1").await.json().await.expect("json");
    assert_eq!(search["total"], 1);
}

#[actix_web::test]
async fn a_second_vote_within_12_hours_is_409_and_changes_nothing() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 5).await;
    app.vote_ok(&bot.id, 6).await;
    app.clock.advance(chrono::Duration::hours(11));
    let message = assert_error(
        app.vote(&bot.id, 5).await,
        StatusCode::CONFLICT,
        "already_voted",
    )
    .await;
    assert!(
        message.contains("2026-11-16T00:00:00.000Z"),
        "says when the user may vote again: {message}"
    );
    let voters: Value = app
        .get_with(&format!("/bots/{}/votes", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(voters[0]["id"], "6");
    let found: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(found["vote_count"], 2);
}

#[actix_web::test]
async fn vote_ingest_validates_its_body() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let cases = [
        (json!({ "user_id": 5, "username": "u" }), "user_id"),
        (json!({ "user_id": "x", "username": "u" }), "user_id"),
        (json!({ "username": "u" }), "user_id"),
        (json!({ "user_id": "5" }), "username"),
        (json!({ "user_id": "5", "username": "" }), "username"),
        (
            json!({ "user_id": "5", "username": "u", "avatar": "ftp://x" }),
            "avatar",
        ),
    ];
    for (body, field) in cases {
        let response = app
            .admin(
                Method::POST,
                &format!("/admin/bots/{}/votes", bot.id),
                Some(&body),
            )
            .await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains(field), "{body}: {message}");
    }
    assert_error(
        app.vote("6f9619ff-8b86-4d11-b42d-00c04fc964ff", 5).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}
