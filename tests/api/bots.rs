//! `GET /bots/:id`: the public shape, and `:id` as a UUID or a snowflake.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, key_set, keys, spawn_app, BOT_FIELDS, NULLABLE_BOT_FIELDS};

#[actix_web::test]
async fn a_bot_is_found_by_listing_uuid_in_any_case_and_by_platform_id() {
    let app = spawn_app().await;
    let bot = app.create_bot(123456789012345678, json!({})).await;
    for id in [
        bot.id.clone(),
        bot.id.to_uppercase(),
        bot.platform_id.clone(),
        // Percent-encoded, as a client's URL library may send it: decoded like any path.
        format!("%{:02X}{}", bot.id.as_bytes()[0], &bot.id[1..]),
    ] {
        let response = app.get(&format!("/bots/{id}")).await;
        assert_eq!(response.status(), StatusCode::OK, "{id}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["id"], bot.id.as_str());
    }
}

#[actix_web::test]
async fn a_bot_has_exactly_the_spec_fields_and_nulls_for_unset_ones() {
    let app = spawn_app().await;
    let owner = app.create_user("owner").await;
    let bot = app
        .create_bot(
            42,
            json!({ "owner_ids": [owner["id"]], "webhook_url": "https://hooks.example/v", "webhook_secret": "s3cret" }),
        )
        .await;
    app.post_stats(&bot, 5).await;
    let body: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    let mut all = BOT_FIELDS.to_vec();
    all.push("server_count");
    assert_eq!(keys(&body), key_set(&all));
    for nullable in NULLABLE_BOT_FIELDS {
        assert_eq!(body[nullable], Value::Null, "{nullable}");
    }
    assert_eq!(body["owner_ids"], json!([owner["id"]]));
    assert_eq!(body["tags"], json!([]));
    assert_eq!(
        (
            body["vote_count"].as_u64(),
            body["monthly_vote_count"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(body["server_count"], 5);
    assert_eq!(
        (body["certified"].as_bool(), body["featured"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(body["created_at"], "2026-11-15T12:00:00.000Z");
    let text = body.to_string();
    assert!(
        !text.contains("hooks.example") && !text.contains("s3cret"),
        "owner-only fields leak: {text}"
    );
}

#[actix_web::test]
async fn server_count_is_left_out_until_the_bot_posts_stats() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let body: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert!(body.get("server_count").is_none(), "{body}");
    assert_eq!(keys(&body), key_set(&BOT_FIELDS));
}

#[actix_web::test]
async fn unknown_or_malformed_ids_are_404() {
    let app = spawn_app().await;
    app.create_bot(42, json!({})).await;
    for id in [
        "6f9619ff-8b86-4d11-b42d-00c04fc964ff",
        "43",
        "042",
        "not-an-id",
        "18446744073709551616",
        "%F0%9F%A6%80",
    ] {
        let message = assert_error(
            app.get(&format!("/bots/{id}")).await,
            StatusCode::NOT_FOUND,
            "not_found",
        )
        .await;
        assert!(message.contains("bot"), "{message}");
    }
}

#[actix_web::test]
async fn a_token_on_a_public_route_is_accepted_and_ignored() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    for token in [bot.token.as_str(), "not-a-token", "Bearer whatever"] {
        let response = app.get_with(&format!("/bots/{}", bot.id), token).await;
        assert_eq!(response.status(), StatusCode::OK, "{token}");
        assert_eq!(
            app.get_with(&format!("/bots/{}/stats", bot.id), token)
                .await
                .status(),
            StatusCode::OK
        );
        assert_eq!(app.get_with("/bots", token).await.status(), StatusCode::OK);
    }
}
