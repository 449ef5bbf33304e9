//! The classic routes without an id act on the token's bot.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app};

#[actix_web::test]
async fn classic_routes_act_on_the_bot_that_owns_the_token() {
    let app = spawn_app().await;
    let mine = app.create_bot(42, json!({})).await;
    let other = app.create_bot(43, json!({})).await;
    app.vote_ok(&mine.id, 11).await;
    app.vote_ok(&other.id, 12).await;

    let response = app
        .post_json(
            "/bots/stats",
            Some(&mine.token),
            &json!({ "server_count": 77, "shard_count": 1 }),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        json!({ "ok": true })
    );
    let stats: Value = app
        .get(&format!("/bots/{}/stats", mine.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats["server_count"], 77);
    let stats: Value = app
        .get(&format!("/bots/{}/stats", other.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats["server_count"], 0);

    let check: Value = app
        .get_with("/bots/check?userId=11", &mine.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(check, json!({ "voted": 1 }));
    let check: Value = app
        .get_with("/bots/check?userId=12", &mine.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(check, json!({ "voted": 0 }), "another bot's voter");

    let voters: Value = app
        .get_with("/bots/votes", &mine.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        voters,
        json!([{ "username": "user11", "id": "11", "avatar": null }])
    );
}

#[actix_web::test]
async fn classic_routes_validate_like_the_id_routes() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let response = app.get_with("/bots/check", &bot.token).await;
    assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    let response = app
        .post_json(
            "/bots/stats",
            Some(&bot.token),
            &json!({ "server_count": "1" }),
        )
        .await;
    assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    assert_error(
        app.get("/bots/votes").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
}
