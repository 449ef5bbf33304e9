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
        // Paths are exact: a trailing or doubled slash is another path.
        "/api/v1/bots/",
        "/api/v1/bots/1/",
        "/api/v1/bots/1/check/",
        "/api/v1/bots/1//check",
        "/api/v1/users/1/",
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
        (Method::PUT, "/bots/1/votes"),
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

/// Every route that takes a JSON body, with a bot and a profile to aim at.
async fn body_routes(app: &crate::helpers::TestApp) -> Vec<(Method, String, String)> {
    let bot = app.create_bot(42, json!({})).await;
    let user = app.create_user("someone").await;
    let user = user["id"].as_str().expect("id").to_owned();
    let admin = crate::helpers::ADMIN.to_owned();
    vec![
        (
            Method::POST,
            format!("/bots/{}/stats", bot.id),
            bot.token.clone(),
        ),
        (Method::POST, "/bots/stats".into(), bot.token.clone()),
        (Method::POST, "/admin/users".into(), admin.clone()),
        (Method::PATCH, format!("/admin/users/{user}"), admin.clone()),
        (Method::POST, "/admin/bots".into(), admin.clone()),
        (
            Method::PATCH,
            format!("/admin/bots/{}", bot.id),
            admin.clone(),
        ),
        (Method::POST, format!("/admin/bots/{}/votes", bot.id), admin),
    ]
}

#[actix_web::test]
async fn every_body_route_refuses_a_body_that_is_not_an_object() {
    let app = spawn_app().await;
    for (method, path, token) in body_routes(&app).await {
        for (raw, got) in [
            ("[1]", "an array"),
            ("[]", "an array"),
            ("5", "a number"),
            ("\"text\"", "a string"),
            ("null", "null"),
        ] {
            let response = app
                .request(method.clone(), &path, Some(&token))
                .header("content-type", "application/json")
                .body(raw)
                .send()
                .await
                .expect("sent");
            let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
            assert_eq!(
                message,
                format!("body must be a JSON object, got {got}"),
                "{method} {path} {raw}"
            );
        }
    }
}

#[actix_web::test]
async fn no_error_message_speaks_rust() {
    let app = spawn_app().await;
    let rust = [
        "struct", "u64", "u32", "i64", "sequence", "enum", "variant", "a map",
    ];
    for (method, path, token) in body_routes(&app).await {
        for raw in [
            r#"{"server_count": 5.5, "name": 5, "username": [1], "user_id": 1}"#,
            r#"{"platform_id": {}, "server_count": "5"}"#,
            r#"{"socials": [5], "tags": [1], "server_count": true}"#,
            r#"{"webhook_format": 5, "admin": 1, "server_count": [true]}"#,
        ] {
            let response = app
                .request(method.clone(), &path, Some(&token))
                .header("content-type", "application/json")
                .body(raw)
                .send()
                .await
                .expect("sent");
            let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
            for word in rust {
                assert!(!message.contains(word), "{method} {path} {raw}: {message}");
            }
        }
    }
}

/// Query strings whose escapes are malformed or decode to bytes that are not UTF-8, in a key and
/// in a value.
const MALFORMED_QUERIES: [(&str, &str); 10] = [
    ("q=%zz", "`q`"),
    ("q=abc%", "`q`"),
    ("q=%E0%A4", "`q`"),
    ("q=%C0%AF", "`q`"),
    ("q=%ED%A0%80", "`q`"),
    ("q=%FF", "`q`"),
    ("%zz=1", "`%zz`"),
    ("ta%E0%A4gs=x", "`ta%E0%A4gs`"),
    ("a%C0%AF=1", "`a%C0%AF`"),
    ("x%ED%A0%80=1", "`x%ED%A0%80`"),
];

#[actix_web::test]
async fn malformed_query_strings_are_400_naming_the_parameter_on_search() {
    let app = spawn_app().await;
    for (query, named) in MALFORMED_QUERIES {
        let response = app.get(&format!("/bots?{query}")).await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains(named), "{query}: {message}");
    }
}

#[actix_web::test]
async fn malformed_query_strings_are_400_naming_the_parameter_on_check() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let mut cases: Vec<(String, String)> = MALFORMED_QUERIES
        .iter()
        .filter(|(query, _)| !query.starts_with("q="))
        .map(|(query, named)| (format!("userId=1&{query}"), named.to_string()))
        .collect();
    for bad in ["%zz", "1%", "%E0%A4", "%C0%B1", "%ED%A0%80", "1%FF"] {
        cases.push((format!("userId={bad}"), "`userId`".into()));
    }
    for (query, named) in cases {
        for path in [
            format!("/bots/{}/check?{query}", bot.id),
            format!("/bots/check?{query}"),
        ] {
            let response = app.get_with(&path, &bot.token).await;
            let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
            assert!(message.contains(&named), "{path}: {message}");
        }
    }
}

/// What a client saw while it sent a body as fast as the server took it.
struct Flood {
    response: String,
    /// Body bytes the client could write before the connection ended.
    written: usize,
}

/// Sends `head`, then body bytes (chunked or not) until the connection ends or `cap` bytes are
/// out, while another thread reads the answer.
fn flood(port: u16, head: &str, chunked: bool, cap: usize) -> Flood {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .expect("timeout set");
    let mut reader = stream.try_clone().expect("cloned");
    reader
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout set");
    let answer = std::thread::spawn(move || {
        let mut response = Vec::new();
        let _ = reader.read_to_end(&mut response);
        String::from_utf8_lossy(&response).into_owned()
    });
    stream.write_all(head.as_bytes()).expect("head written");
    let piece = vec![b'x'; 64 * 1024];
    let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
    framed.extend_from_slice(&piece);
    framed.extend_from_slice(b"\r\n");
    let mut written = 0;
    while written < cap {
        let result = if chunked {
            stream.write_all(&framed)
        } else {
            stream.write_all(&piece)
        };
        if result.is_err() {
            break;
        }
        written += piece.len();
    }
    drop(stream);
    Flood {
        response: answer.join().expect("joined"),
        written,
    }
}

/// The most a client may get in past the limit: what the server reads after refusing (256 KiB)
/// plus what the two sockets' kernel buffers hold on loopback.
const MOST_WRITTEN_AFTER_413: usize = 16 << 20;

fn assert_refused_and_closed(flood: &Flood, what: &str) {
    let head = flood.response.to_ascii_lowercase();
    assert!(
        head.starts_with("http/1.1 413"),
        "{what}: {}",
        flood.response
    );
    assert!(
        head.contains("connection: close"),
        "{what}: {}",
        flood.response
    );
    assert!(
        flood.written < MOST_WRITTEN_AFTER_413,
        "{what}: the client got {} bytes in before the connection closed",
        flood.written
    );
}

#[actix_web::test]
async fn after_a_413_the_server_stops_reading_a_huge_declared_body_and_closes() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let head = format!(
        "POST /api/v1/bots/{}/stats HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n",
        bot.id, bot.token
    );
    let port = app.port;
    let flood = actix_web::rt::task::spawn_blocking(move || flood(port, &head, false, 100_000_000))
        .await
        .expect("joined");
    assert_refused_and_closed(&flood, "Content-Length: 100000000");
}

#[actix_web::test]
async fn after_a_413_the_server_stops_reading_an_endless_chunked_body_and_closes() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let head = format!(
        "POST /api/v1/bots/{}/stats HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        bot.id, bot.token
    );
    let port = app.port;
    let flood = actix_web::rt::task::spawn_blocking(move || flood(port, &head, true, 200 << 20))
        .await
        .expect("joined");
    assert_refused_and_closed(&flood, "chunked");
}
