//! Rate limits and request limits.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{
    assert_error, assert_json_utf8, spawn_app, spawn_app_with, test_settings, TestApp,
};

fn header(response: &reqwest::Response, name: &str) -> Option<u64> {
    response.headers().get(name)?.to_str().ok()?.parse().ok()
}

async fn exhaust(app: &TestApp, path: &str, token: Option<&str>) {
    for used in 1..=60u64 {
        let response = app
            .request(Method::GET, path, token)
            .send()
            .await
            .expect("sent");
        assert_ne!(
            response.status(),
            StatusCode::TOO_MANY_REQUESTS,
            "request {used}"
        );
        assert_eq!(header(&response, "x-ratelimit-remaining"), Some(60 - used));
    }
}

async fn assert_limited(response: reqwest::Response) -> u64 {
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry = header(&response, "retry-after").expect("Retry-After");
    assert!(retry >= 1);
    assert_eq!(header(&response, "x-ratelimit-limit"), Some(60));
    assert_eq!(header(&response, "x-ratelimit-remaining"), Some(0));
    assert!(header(&response, "x-ratelimit-reset").is_some_and(|r| r >= retry));
    assert_json_utf8(&response);
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body,
        json!({ "retry_after": retry }),
        "not the error envelope"
    );
    retry
}

#[actix_web::test]
async fn sixty_requests_then_429_with_retry_after_and_one_back_each_second() {
    let app = spawn_app().await;
    let first = app.get("/bots").await;
    assert_eq!(header(&first, "x-ratelimit-limit"), Some(60));
    assert_eq!(header(&first, "x-ratelimit-remaining"), Some(59));
    assert_eq!(header(&first, "x-ratelimit-reset"), Some(1));
    for _ in 0..59 {
        app.get("/bots").await;
    }
    assert_eq!(assert_limited(app.get("/bots").await).await, 1);
    app.clock.advance(chrono::Duration::seconds(1));
    assert_eq!(app.get("/bots").await.status(), StatusCode::OK);
    assert_limited(app.get("/bots").await).await;
    app.clock.advance(chrono::Duration::seconds(60));
    assert_eq!(
        header(&app.get("/bots").await, "x-ratelimit-remaining"),
        Some(59)
    );
}

#[actix_web::test]
async fn every_bots_route_shares_one_bucket_and_errors_carry_the_headers() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let paths = [
        "/bots".to_string(),
        format!("/bots/{}", bot.id),
        format!("/bots/{}/stats", bot.id),
        "/bots/404".into(),
        "/bots/x/y/z".into(),
    ];
    for i in 0..60 {
        let response = app.get(&paths[i % paths.len()]).await;
        assert!(
            header(&response, "x-ratelimit-remaining").is_some(),
            "{} {}",
            paths[i % paths.len()],
            response.status()
        );
    }
    assert_limited(app.get(&format!("/bots/{}/stats", bot.id)).await).await;
    assert_limited(app.get("/bots/check?userId=1").await).await;
}

#[actix_web::test]
async fn a_valid_token_is_its_own_key_and_a_bad_one_counts_as_the_ip() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    exhaust(&app, "/bots", None).await;
    assert_limited(app.get_with("/bots", "not-a-token").await).await;
    let response = app.get_with("/bots", &bot.token).await;
    assert_eq!(response.status(), StatusCode::OK, "the bot's own bucket");
    assert_eq!(header(&response, "x-ratelimit-remaining"), Some(59));
    exhaust_from(&app, &bot.token, 59).await;
    let refused = app
        .request(
            Method::POST,
            &format!("/bots/{}/stats", bot.id),
            Some(&bot.token),
        )
        .json(&json!({ "server_count": 999 }))
        .send()
        .await
        .expect("sent");
    assert_limited(refused).await;
    app.clock.advance(chrono::Duration::seconds(1));
    let stats: Value = app
        .get_with(&format!("/bots/{}/stats", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats["server_count"], 0, "a refused request does no work");
}

async fn exhaust_from(app: &TestApp, token: &str, left: u64) {
    for _ in 0..left {
        assert_eq!(app.get_with("/bots", token).await.status(), StatusCode::OK);
    }
}

#[actix_web::test]
async fn users_have_their_own_bucket_and_admin_is_not_limited() {
    let app = spawn_app().await;
    let user = app.create_user("ada").await;
    exhaust(&app, "/bots", None).await;
    let path = format!("/users/{}", user["id"].as_str().expect("id"));
    let response = app.get(&path).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-ratelimit-remaining"), Some(59));
    for _ in 0..59 {
        app.get(&path).await;
    }
    assert_limited(app.get(&path).await).await;
    for n in 0..70 {
        let response = app
            .admin(
                Method::POST,
                "/admin/users",
                Some(&json!({ "username": format!("u{n}") })),
            )
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        assert!(response.headers().get("x-ratelimit-limit").is_none());
    }
}

#[actix_web::test]
async fn rate_limit_0_turns_limits_off() {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    let app = spawn_app_with(settings).await;
    for _ in 0..80 {
        let response = app.get("/bots").await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().get("x-ratelimit-limit").is_none());
    }
}

#[actix_web::test]
async fn forwarded_for_is_the_key_only_when_trusted() {
    let app = spawn_app().await;
    for n in 0..61 {
        let response = app
            .request(Method::GET, "/bots", None)
            .header("x-forwarded-for", format!("10.0.0.{n}"))
            .send()
            .await
            .expect("sent");
        if n == 60 {
            assert_limited(response).await;
        }
    }
    let mut settings = test_settings();
    settings.trust_forwarded_for = true;
    let app = spawn_app_with(settings).await;
    for n in 0..61 {
        let response = app
            .request(Method::GET, "/bots", None)
            // The trusted proxy appends the address it saw: the rightmost entry.
            .header("x-forwarded-for", format!("10.0.0.1, 203.0.113.{n}"))
            .send()
            .await
            .expect("sent");
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "each client address has its own bucket"
        );
    }
}

/// How many of `requests` to `/bots` with these X-Forwarded-For values got through.
async fn passed(app: &TestApp, forwarded: impl Iterator<Item = String>) -> usize {
    let mut passed = 0;
    for value in forwarded {
        let response = app
            .request(Method::GET, "/bots", None)
            .header("x-forwarded-for", value)
            .send()
            .await
            .expect("sent");
        match response.status() {
            StatusCode::OK => passed += 1,
            status => assert_eq!(status, StatusCode::TOO_MANY_REQUESTS),
        }
    }
    passed
}

#[actix_web::test]
async fn a_client_varying_the_leftmost_forwarded_for_entry_does_not_escape_the_limit() {
    let mut settings = test_settings();
    settings.trust_forwarded_for = true;
    settings.rate_limit = 5;
    let app = spawn_app_with(settings).await;
    // The client writes whatever it likes on the left; the proxy appends 203.0.113.7.
    let spoofed = (0..12).map(|n| format!("198.51.100.{n}, 203.0.113.7"));
    assert_eq!(passed(&app, spoofed).await, 5);
    // Without a header the TCP peer is the key (the proxy itself, here): its own bucket.
    assert_eq!(app.get("/bots").await.status(), StatusCode::OK);
}

#[actix_web::test]
async fn with_two_trusted_proxies_the_client_is_the_second_entry_from_the_right() {
    let mut settings = test_settings();
    settings.trust_forwarded_for = true;
    settings.trusted_proxies = 2;
    settings.rate_limit = 5;
    let app = spawn_app_with(settings).await;
    // The outer proxy appended the client (203.0.113.7), the inner one the outer proxy.
    let spoofed = (0..12).map(|n| format!("198.51.100.{n}, 203.0.113.7, 10.0.0.2"));
    assert_eq!(passed(&app, spoofed).await, 5);
    let clients = (0..12).map(|n| format!("203.0.113.{}, 10.0.0.2", 100 + n));
    assert_eq!(
        passed(&app, clients).await,
        12,
        "each client its own bucket"
    );
}

/// Raw HTTP on a blocking thread: returns what the server sent before closing, and how long
/// the connection stayed open.
async fn raw(port: u16, steps: Vec<(Vec<u8>, Duration)>, read_for: Duration) -> (String, Duration) {
    actix_web::rt::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
        stream.set_read_timeout(Some(read_for)).expect("timeout");
        for (bytes, pause) in steps {
            if stream.write_all(&bytes).is_err() {
                break;
            }
            std::thread::sleep(pause);
        }
        let mut out = Vec::new();
        let _ = stream.read_to_end(&mut out);
        (
            String::from_utf8_lossy(&out).into_owned(),
            started.elapsed(),
        )
    })
    .await
    .expect("joined")
}

#[actix_web::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off_while_others_are_served() {
    let mut settings = test_settings();
    settings.request_timeout = Duration::from_secs(1);
    let app = spawn_app_with(settings).await;
    let slow = raw(
        app.port,
        vec![(
            b"GET /api/v1/bots HTTP/1.1\r\nHost: x\r\n".to_vec(),
            Duration::ZERO,
        )],
        Duration::from_secs(10),
    );
    let served = async {
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
        app.get("/bots").await.status()
    };
    let ((answer, open_for), status) = tokio::join!(slow, served);
    assert_eq!(status, StatusCode::OK, "the slow client holds no worker");
    assert!(
        open_for < Duration::from_secs(5),
        "cut off after {open_for:?}"
    );
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
}

#[actix_web::test]
async fn a_body_that_trickles_in_is_408_with_the_envelope() {
    let mut settings = test_settings();
    settings.request_timeout = Duration::from_secs(1);
    let app = spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;
    let head = format!(
        "POST /api/v1/bots/{}/stats HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{{",
        bot.id, bot.token
    );
    let (answer, _) = raw(
        app.port,
        vec![
            (head.into_bytes(), Duration::from_millis(1500)),
            (b" ".to_vec(), Duration::ZERO),
        ],
        Duration::from_secs(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"request_timeout\""), "{answer}");
}

#[actix_web::test]
async fn oversized_headers_are_refused_and_the_server_goes_on() {
    let app = spawn_app().await;
    let huge = "x".repeat(64 * 1024);
    let request = format!(
        "GET /api/v1/bots HTTP/1.1\r\nHost: x\r\nX-Big: {huge}\r\nConnection: close\r\n\r\n"
    );
    let (answer, _) = raw(
        app.port,
        vec![(request.into_bytes(), Duration::ZERO)],
        Duration::from_secs(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:.200}");
    assert!(answer.contains("\"headers_too_large\""), "{answer:.400}");
    let many: String = (0..200).map(|n| format!("X-H{n}: v\r\n")).collect();
    let request =
        format!("GET /api/v1/bots HTTP/1.1\r\nHost: x\r\n{many}Connection: close\r\n\r\n");
    let (answer, _) = raw(
        app.port,
        vec![(request.into_bytes(), Duration::ZERO)],
        Duration::from_secs(5),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:.200}");
    assert_eq!(app.get("/bots").await.status(), StatusCode::OK);
}

/// A request of `lines` header lines in all (`Host` and `Connection` among them), over a raw
/// socket: what the server answers.
async fn with_header_lines(port: u16, lines: usize) -> String {
    let filler: String = (2..lines).map(|n| format!("X-H{n}: v\r\n")).collect();
    let request =
        format!("GET /api/v1/bots HTTP/1.1\r\nHost: x\r\n{filler}Connection: close\r\n\r\n");
    raw(
        port,
        vec![(request.into_bytes(), Duration::ZERO)],
        Duration::from_secs(5),
    )
    .await
    .0
}

/// The HTTP layer parses at most 96 header lines and answers more itself, before any of the
/// service's code runs: a bare 431, as docs/API.md's "Request limits" says.
#[actix_web::test]
async fn more_than_96_header_lines_get_a_bare_431() {
    let app = spawn_app().await;
    let answer = with_header_lines(app.port, 96).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:.200}");
    let answer = with_header_lines(app.port, 97).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:.400}");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    assert_eq!(body, "", "{answer:.400}");
    assert_eq!(app.get("/bots").await.status(), StatusCode::OK);
}

#[actix_web::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let mut settings = test_settings();
    settings.keep_alive = Duration::from_secs(1);
    let app = spawn_app_with(settings).await;
    let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    let (answer, open_for) = raw(
        app.port,
        vec![(request, Duration::ZERO)],
        Duration::from_secs(10),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        open_for < Duration::from_secs(5),
        "closed after {open_for:?}"
    );
}

#[actix_web::test]
async fn admin_routes_are_never_limited_even_for_a_client_over_its_limit() {
    let app = spawn_app().await;
    exhaust(&app, "/bots", None).await;
    let response = app
        .admin(
            Method::POST,
            "/admin/users",
            Some(&json!({ "username": "ada" })),
        )
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let wrong = app
        .request(Method::POST, "/admin/users", Some("wrong"))
        .json(&json!({}))
        .send()
        .await
        .expect("sent");
    assert!(wrong.headers().get("x-ratelimit-limit").is_none());
    assert_error(wrong, StatusCode::UNAUTHORIZED, "unauthorized").await;
}
