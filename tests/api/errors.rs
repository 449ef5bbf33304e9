//! The error envelope everywhere, the framework's own errors included.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app};

#[actix_web::test]
async fn unknown_routes_are_404_with_the_envelope() {
    let app = spawn_app().await;
    for path in [
        "/nope",
        "/api/v1",
        "/api/v1/",
        "/api/v1/nope",
        "/api/v1/bots/1/nope",
        "/api/v2/bots",
    ] {
        let response = app
            .client
            .get(format!("{}{path}", app.root))
            .send()
            .await
            .expect("sent");
        assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
    }
}

#[actix_web::test]
async fn a_wrong_method_on_a_known_route_is_405() {
    let app = spawn_app().await;
    let cases = [
        (Method::DELETE, "/bots"),
        (Method::POST, "/bots/1"),
        (Method::PUT, "/bots/1/stats"),
        (Method::POST, "/bots/1/votes"),
        (Method::POST, "/bots/1/check"),
        (Method::GET, "/bots/stats"),
        (Method::POST, "/users/1"),
        (Method::GET, "/admin/bots"),
        (Method::GET, "/admin/users"),
    ];
    for (method, path) in cases {
        let response = app
            .request(method.clone(), path, None)
            .send()
            .await
            .expect("sent");
        let message = assert_error(
            response,
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        )
        .await;
        assert!(message.contains(method.as_str()), "{message}");
    }
}

#[actix_web::test]
async fn a_body_without_json_content_type_is_415() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let request = app
            .request(
                Method::POST,
                &format!("/bots/{}/stats", bot.id),
                Some(&bot.token),
            )
            .body(r#"{"server_count": 5}"#);
        let request = match content_type {
            Some(value) => request.header("content-type", value),
            None => request,
        };
        let response = request.send().await.expect("sent");
        assert_error(
            response,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        )
        .await;
    }
    let response = app
        .request(
            Method::POST,
            &format!("/bots/{}/stats", bot.id),
            Some(&bot.token),
        )
        .header("content-type", "application/json; charset=UTF-8")
        .body(r#"{"server_count": 5}"#)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
}

#[actix_web::test]
async fn malformed_json_is_400_naming_the_problem() {
    let app = spawn_app().await;
    let response = app
        .request(Method::POST, "/admin/bots", Some(crate::helpers::ADMIN))
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .expect("sent");
    let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    assert!(message.contains("JSON"), "{message}");
    let response = app
        .request(Method::POST, "/admin/bots", Some(crate::helpers::ADMIN))
        .header("content-type", "application/json")
        .body("")
        .send()
        .await
        .expect("sent");
    assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
}

#[actix_web::test]
async fn a_body_over_64_kib_is_413() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let padding = "x".repeat(64 * 1024);
    let response = app
        .post_json(
            &format!("/bots/{}/stats", bot.id),
            Some(&bot.token),
            &json!({ "server_count": 1, "pad": padding }),
        )
        .await;
    assert_error(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
    let just_under = "x".repeat(64 * 1024 - 40);
    let response = app
        .post_json(
            &format!("/bots/{}/stats", bot.id),
            Some(&bot.token),
            &json!({ "server_count": 1, "pad": just_under }),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
}

/// Sends raw HTTP/1.1 and returns the status line and body.
async fn raw_request(port: u16, request: String) -> (String, String) {
    actix_web::rt::task::spawn_blocking(move || raw_request_blocking(port, &request))
        .await
        .expect("joined")
}

fn raw_request_blocking(port: u16, request: &str) -> (String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout set");
    stream.write_all(request.as_bytes()).expect("written");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response.lines().next().unwrap_or_default().to_owned();
    let body = response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

fn chunked(path: &str, token: &str, chunks: &[&str]) -> String {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: {token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    for chunk in chunks {
        request.push_str(&format!("{:x}\r\n{chunk}\r\n", chunk.len()));
    }
    request.push_str("0\r\n\r\n");
    request
}

#[actix_web::test]
async fn chunked_bodies_are_accepted_and_limited() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let path = format!("/api/v1/bots/{}/stats", bot.id);
    let request = chunked(&path, &bot.token, &["{\"server_c", "ount\": 321}"]);
    let (status, body) = raw_request(app.port, request).await;
    assert!(status.contains("200"), "{status} {body}");
    let stats: Value = app
        .get(&format!("/bots/{}/stats", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats["server_count"], 321);

    let big = "x".repeat(16 * 1024);
    let chunks: Vec<&str> = std::iter::once("{\"pad\":\"")
        .chain(std::iter::repeat_n(big.as_str(), 5))
        .collect();
    let request = chunked(&path, &bot.token, &chunks);
    let (status, body) = raw_request(app.port, request).await;
    assert!(status.contains("413"), "{status}");
    assert!(body.contains("payload_too_large"), "{body}");
}

#[actix_web::test]
async fn every_json_response_says_utf_8() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let paths = [
        format!("{}/bots", app.base),
        format!("{}/bots/{}", app.base, bot.id),
        format!("{}/bots/{}/stats", app.base, bot.id),
        format!("{}/openapi.json", app.base),
        format!("{}/healthz", app.root),
    ];
    for url in paths {
        let response = app
            .client
            .get(&url)
            .header("Authorization", &bot.token)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK, "{url}");
        assert_eq!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("application/json; charset=utf-8"),
            "{url}"
        );
        let _: Value = response.json().await.expect("valid JSON");
    }
}
