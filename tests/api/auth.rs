//! Authentication: 401 for the token, then 404 for the bot, then 403 for another bot's token.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{assert_error, spawn_app, TestApp};

/// The routes whose token must belong to the bot in the path.
fn owner_routes(bot: &str) -> Vec<(Method, String)> {
    vec![
        (Method::GET, format!("/bots/{bot}/votes")),
        (Method::POST, format!("/bots/{bot}/stats")),
        // CONTRACT section 2 (2026-11): a vote is told only to the bot voted for.
        (Method::GET, format!("/bots/{bot}/check?userId=1")),
    ]
}

async fn send(app: &TestApp, method: Method, path: &str, token: Option<&str>) -> reqwest::Response {
    app.request(method, path, token)
        .json(&json!({ "server_count": 1 }))
        .send()
        .await
        .expect("request sent")
}

#[actix_web::test]
async fn a_missing_unknown_or_bearer_token_is_401() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let bearer = format!("Bearer {}", bot.token);
    let mut routes = owner_routes(&bot.id);
    routes.push((Method::GET, "/bots/check?userId=1".into()));
    routes.push((Method::GET, "/bots/votes".into()));
    routes.push((Method::POST, "/bots/stats".into()));
    for (method, path) in routes {
        for token in [None, Some("blt_unknown"), Some(""), Some(bearer.as_str())] {
            let response = send(&app, method.clone(), &path, token).await;
            let message = assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
            if token == Some(bearer.as_str()) {
                assert!(
                    message.contains("Bearer"),
                    "the message says to drop the prefix: {message}"
                );
            }
        }
    }
}

/// Each way a token can be wrong has its own words, whichever the route.
#[actix_web::test]
async fn each_refused_token_says_what_is_wrong_with_it() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let mut not_text = reqwest::header::HeaderValue::from_bytes(b"blt_\xff\xfe")
        .expect("obs-text is a valid header value");
    not_text.set_sensitive(true);
    for (method, path) in owner_routes(&bot.id) {
        let cases: [(Option<reqwest::header::HeaderValue>, &str); 5] = [
            (None, "missing Authorization header"),
            (Some("".parse().expect("a value")), "is empty"),
            (Some(not_text.clone()), "is not a valid token"),
            (
                Some(format!("bearer {}", bot.token).parse().expect("a value")),
                "without the `Bearer ` prefix",
            ),
            (
                Some("blt_unknown".parse().expect("a value")),
                "unknown API token",
            ),
        ];
        for (token, words) in cases {
            let mut request = app
                .request(method.clone(), &path, None)
                .json(&json!({ "server_count": 1 }));
            if let Some(token) = token {
                request = request.header("Authorization", token);
            }
            let response = request.send().await.expect("request sent");
            let message = assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
            assert!(message.contains(words), "{path}: {message}");
        }
    }
}

#[actix_web::test]
async fn the_token_is_checked_before_the_bot_and_the_bot_before_ownership() {
    let app = spawn_app().await;
    let mine = app.create_bot(42, json!({})).await;
    let other = app.create_bot(43, json!({})).await;
    for (method, path) in owner_routes("6f9619ff-8b86-4d11-b42d-00c04fc964ff") {
        assert_error(
            send(&app, method.clone(), &path, None).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        )
        .await;
        assert_error(
            send(&app, method, &path, Some(&mine.token)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        )
        .await;
    }
    for id in [&other.id, &other.platform_id] {
        for (method, path) in owner_routes(id) {
            assert_error(
                send(&app, method, &path, Some(&mine.token)).await,
                StatusCode::FORBIDDEN,
                "forbidden",
            )
            .await;
        }
    }
    for id in [&mine.id, &mine.platform_id] {
        for (method, path) in owner_routes(id) {
            assert_eq!(
                send(&app, method, &path, Some(&mine.token)).await.status(),
                StatusCode::OK
            );
        }
    }
}

#[actix_web::test]
async fn ownership_is_checked_before_the_body() {
    let app = spawn_app().await;
    let mine = app.create_bot(42, json!({})).await;
    let other = app.create_bot(43, json!({})).await;
    let response = app
        .request(
            Method::POST,
            &format!("/bots/{}/stats", other.id),
            Some(&mine.token),
        )
        .body("not json")
        .send()
        .await
        .expect("sent");
    assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
}

#[actix_web::test]
async fn check_takes_only_the_bots_own_token() {
    let app = spawn_app().await;
    let mine = app.create_bot(42, json!({})).await;
    let other = app.create_bot(43, json!({})).await;
    app.vote_ok(&other.id, 7).await;
    let response = app
        .get_with(&format!("/bots/{}/check?userId=7", other.id), &mine.token)
        .await;
    let message = assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(message.contains("another bot"), "{message}");
    let response = app
        .get_with(&format!("/bots/{}/check?userId=7", other.id), &other.token)
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<serde_json::Value>().await.expect("json"),
        json!({ "voted": 1 })
    );
}

#[actix_web::test]
async fn a_delisted_bots_token_is_unknown_at_once() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let other = app.create_bot(43, json!({})).await;
    let response = app
        .admin(Method::DELETE, &format!("/admin/bots/{}", bot.id), None)
        .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let response = app
        .get_with(&format!("/bots/{}/check?userId=1", other.id), &bot.token)
        .await;
    assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
}
