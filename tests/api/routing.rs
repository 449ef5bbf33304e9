//! What the router keeps, however it matches paths: a `{param}` is one non-empty segment,
//! percent-decoded once; anything else is another path (404 with the envelope, `unmatched` in
//! the metrics); a known path with another method is 405 naming the allowed ones; the route
//! pattern labels the metrics.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, spawn_app_with, test_settings, TestApp, TestBot};

async fn check(app: &TestApp, bot: &TestBot, id: &str) -> reqwest::Response {
    app.get_with(&format!("/bots/{id}/check?userId=7"), &bot.token)
        .await
}

/// The 404 of a bot id that names no bot (the route was found), with its message.
async fn assert_no_bot(response: reqwest::Response, id: &str) {
    let message = assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(message, format!("no bot with id `{id}`"));
}

#[actix_web::test]
async fn a_bot_id_is_one_segment_percent_decoded_once() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 7).await;

    // Any character of the id may be percent-encoded, in either case of hex digit.
    let first = bot.id.as_bytes()[0];
    for encoded in [
        format!("%{first:02X}{}", &bot.id[1..]),
        format!("%{first:02x}{}", &bot.id[1..]),
        bot.id.to_uppercase(),
    ] {
        let response = check(&app, &bot, &encoded).await;
        assert_eq!(response.status(), StatusCode::OK, "{encoded}");
        assert_eq!(
            response.json::<Value>().await.expect("json"),
            json!({ "voted": 1 })
        );
        let response = app.get(&format!("/bots/{encoded}")).await;
        assert_eq!(response.status(), StatusCode::OK, "{encoded}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["id"], bot.id.as_str());
    }

    // So may a character of the path's fixed segments.
    let response = app
        .get_with(&format!("/bots/{}/%63heck?userId=7", bot.id), &bot.token)
        .await;
    assert_eq!(response.status(), StatusCode::OK);

    // An encoded slash stays inside its segment; `%25` is decoded once, to `%`.
    assert_no_bot(check(&app, &bot, "%2F").await, "/").await;
    assert_no_bot(check(&app, &bot, "a%2Fb").await, "a/b").await;
    assert_no_bot(
        app.get(&format!("/bots/{}%2Fcheck", bot.id)).await,
        &format!("{}/check", bot.id),
    )
    .await;
    assert_no_bot(check(&app, &bot, "%2541").await, "%41").await;
    assert_no_bot(check(&app, &bot, "%20").await, " ").await;
    assert_no_bot(check(&app, &bot, "%C3%A9").await, "é").await;

    // However long, an id is looked up, not refused as a path.
    let long = "7".repeat(4000);
    assert_no_bot(check(&app, &bot, &long).await, &long).await;
    let long = "x".repeat(4000);
    assert_no_bot(app.get(&format!("/bots/{long}/stats")).await, &long).await;
}

#[actix_web::test]
async fn an_empty_or_extra_segment_is_another_path() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let id = &bot.id;
    for path in [
        "/bots//check".to_owned(),
        "/bots//".to_owned(),
        "/bots//stats".to_owned(),
        format!("/bots/{id}//check"),
        format!("/bots/{id}/check/"),
        format!("/bots/{id}/check/x"),
        format!("/bots/{id}/"),
        format!("/bots/{id}/votes/history/"),
        format!("/bots/{id}/votes//history"),
        format!("/bots/{id}/Check"),
        "/users//".to_owned(),
        format!("/admin/bots/{id}/webhook/deliveries//redeliver"),
    ] {
        let response = app
            .request(Method::GET, &path, Some(&bot.token))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        let message = assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
        assert_eq!(message, format!("no route for GET /api/v1{path}"), "{path}");
    }
}

#[actix_web::test]
async fn every_path_parameter_reaches_its_handler_in_order() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let response = app
        .admin(
            Method::POST,
            &format!(
                "/admin/bots/{}/webhook/deliveries/not-a-uuid/redeliver",
                bot.id
            ),
            None,
        )
        .await;
    let message = assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(message, "no delivery with id `not-a-uuid`");
    let response = app
        .admin(
            Method::POST,
            "/admin/bots/nobody/webhook/deliveries/not-a-uuid/redeliver",
            None,
        )
        .await;
    let message = assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(message, "no bot with id `nobody`");
}

#[actix_web::test]
async fn a_wrong_method_on_a_route_with_an_id_is_405_with_allow() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    for (method, path, allowed) in [
        (Method::POST, format!("/bots/{}/check", bot.id), "GET, HEAD"),
        (Method::DELETE, "/bots/nobody/check".to_owned(), "GET, HEAD"),
        (
            Method::PUT,
            "/bots/%2F/votes/history".to_owned(),
            "GET, HEAD",
        ),
        (Method::GET, "/admin/bots/x/token".to_owned(), "POST"),
        (Method::PUT, "/users/1".to_owned(), "GET, HEAD"),
    ] {
        let response = app
            .request(method.clone(), &path, Some(&bot.token))
            .send()
            .await
            .expect("sent");
        let allow = response
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut allow: Vec<String> = allow
            .unwrap_or_default()
            .split(", ")
            .map(str::to_owned)
            .collect();
        allow.sort();
        let mut expected: Vec<String> = allowed.split(", ").map(str::to_owned).collect();
        expected.sort();
        assert_eq!(allow, expected, "{method} {path}");
        let message = assert_error(
            response,
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        )
        .await;
        let decoded = path.replace("%2F", "/");
        assert!(
            message == format!("{method} is not allowed on /api/v1{path}")
                || message == format!("{method} is not allowed on /api/v1{decoded}"),
            "{message}"
        );
    }
}

/// The value of the one sample `line_start` begins (a name with its labels), if present.
fn sample(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(line_start) && line[line_start.len()..].starts_with(' '))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[actix_web::test]
async fn routes_with_an_id_are_counted_under_their_pattern() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    for _ in 0..3 {
        assert_eq!(check(&app, &bot, &bot.id).await.status(), StatusCode::OK);
    }
    app.request(Method::POST, &format!("/bots/{}/check", bot.id), None)
        .send()
        .await
        .expect("sent");
    let response = app
        .admin(
            Method::GET,
            &format!("/admin/bots/{}/webhook/deliveries", bot.id),
            None,
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let text = app
        .client
        .get(format!("{}/metrics", app.root))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    let at_least = |line: &str, n: f64| {
        let value = sample(&text, line).unwrap_or_else(|| panic!("{line} in {text}"));
        assert!(value >= n, "{line} {value}");
    };
    at_least(
        r#"botlist_http_requests_total{route="/api/v1/bots/{id}/check",method="GET",status="200",surface="base"}"#,
        3.0,
    );
    at_least(
        r#"botlist_http_requests_total{route="/api/v1/bots/{id}/check",method="POST",status="405",surface="base"}"#,
        1.0,
    );
    at_least(
        r#"botlist_http_requests_total{route="/api/v1/admin/bots/{id}/webhook/deliveries",method="GET",status="200",surface="base"}"#,
        1.0,
    );
}

#[actix_web::test]
async fn the_reference_and_the_api_are_both_served_whatever_the_base_path() {
    for base in ["", "/v1", "/docs/api"] {
        let mut settings = test_settings();
        settings.base_path = base.into();
        let app = spawn_app_with(settings).await;
        let bot = app.create_bot(42, json!({})).await;
        app.vote_ok(&bot.id, 7).await;
        let response = check(&app, &bot, &bot.id).await;
        assert_eq!(response.status(), StatusCode::OK, "{base}");
        let response = app.get(&format!("/bots/{}", bot.id)).await;
        assert_eq!(response.status(), StatusCode::OK, "{base}");
        let page = app
            .client
            .get(format!("{}/docs/", app.root))
            .send()
            .await
            .expect("sent");
        assert_eq!(page.status(), StatusCode::OK, "{base}");
        let response = app.get("/bots/nobody/nothing").await;
        let message = assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
        assert_eq!(
            message,
            format!("no route for GET {base}/bots/nobody/nothing")
        );
    }
}
