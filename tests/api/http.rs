//! HTTP semantics around the routes: HEAD, `Allow`, `ETag` and 304, compression, CORS and
//! request ids.

use std::collections::BTreeSet;
use std::io::Read;

use reqwest::header::HeaderMap;
use reqwest::{Method, Response, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{
    assert_error, spawn_app, spawn_app_with, test_settings, TestApp, TestBot, ADMIN,
};

fn header<'a>(response: &'a Response, name: &str) -> Option<&'a str> {
    response.headers().get(name)?.to_str().ok()
}

fn header_in<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()
}

/// A directory with a few bots, one with stats and a voter, and one profile.
async fn populated() -> (TestApp, TestBot, String) {
    let app = spawn_app().await;
    let owner = app.create_user("owner").await;
    let owner_id = owner["id"].as_str().expect("id").to_owned();
    let bot = app
        .create_bot(
            42,
            json!({ "owner_ids": [owner_id], "long_description": "x".repeat(800) }),
        )
        .await;
    for n in 43..46 {
        app.create_bot(n, json!({ "long_description": "y".repeat(800) }))
            .await;
    }
    app.post_stats(&bot, 1200).await;
    app.vote_ok(&bot.id, 7).await;
    (app, bot, owner_id)
}

/// Every GET route, as a path under the base (or the root when it starts with `//`), with the
/// token it needs.
fn get_routes(bot: &TestBot, profile: &str) -> Vec<(String, Option<String>)> {
    let id = &bot.id;
    let token = Some(bot.token.clone());
    vec![
        ("/bots".into(), None),
        ("/bots?q=bot&limit=2".into(), None),
        (format!("/bots/{id}"), None),
        (format!("/bots/{id}/stats"), None),
        (format!("/bots/{id}/votes"), token.clone()),
        (format!("/bots/{id}/check?userId=7"), token.clone()),
        ("/bots/check?userId=7".into(), token.clone()),
        ("/bots/votes".into(), token),
        (format!("/users/{profile}"), None),
        ("/openapi.json".into(), None),
        (
            format!("/admin/bots/{id}/webhook/deliveries"),
            Some(ADMIN.into()),
        ),
        ("//healthz".into(), None),
    ]
}

fn url(app: &TestApp, path: &str) -> String {
    match path.strip_prefix("//") {
        Some(root) => format!("{}/{root}", app.root),
        None => format!("{}{path}", app.base),
    }
}

async fn send(app: &TestApp, method: Method, path: &str, token: Option<&str>) -> Response {
    let request = app.client.request(method, url(app, path));
    let request = match token {
        Some(token) => request.header("Authorization", token),
        None => request,
    };
    request.send().await.expect("sent")
}

#[actix_web::test]
async fn head_answers_every_get_route_as_get_does_without_a_body() {
    let (app, bot, profile) = populated().await;
    for (path, token) in get_routes(&bot, &profile) {
        let get = send(&app, Method::GET, &path, token.as_deref()).await;
        let head = send(&app, Method::HEAD, &path, token.as_deref()).await;
        assert_eq!(head.status(), get.status(), "HEAD {path}");
        assert_eq!(get.status(), StatusCode::OK, "GET {path}");
        assert_eq!(
            header(&head, "content-type"),
            header(&get, "content-type"),
            "{path}"
        );
        assert_eq!(
            header(&head, "content-length"),
            header(&get, "content-length"),
            "HEAD {path} announces the GET's length"
        );
        assert_eq!(header(&head, "etag"), header(&get, "etag"), "{path}");
        let body = head.bytes().await.expect("read");
        assert!(body.is_empty(), "HEAD {path} has no body");
    }
    // A HEAD of something missing is the GET's 404, without its body.
    let missing = send(&app, Method::HEAD, "/bots/404", None).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(missing.bytes().await.expect("read").is_empty());
}

fn allow_set(response: &Response) -> BTreeSet<String> {
    header(response, "allow")
        .expect("an Allow header")
        .split(',')
        .map(|m| m.trim().to_owned())
        .collect()
}

fn set(methods: &[&str]) -> BTreeSet<String> {
    methods.iter().map(|m| (*m).to_owned()).collect()
}

#[actix_web::test]
async fn a_405_names_the_methods_the_route_allows() {
    let app = spawn_app().await;
    let cases: [(Method, &str, &[&str]); 8] = [
        (Method::DELETE, "/bots", &["GET", "HEAD", "POST"]),
        (Method::POST, "/bots/1", &["GET", "HEAD", "PATCH", "DELETE"]),
        (Method::PUT, "/bots/1/stats", &["GET", "HEAD", "POST"]),
        (Method::GET, "/bots/stats", &["POST"]),
        (Method::HEAD, "/bots/stats", &["POST"]),
        (Method::GET, "/admin/bots/1", &["PATCH", "DELETE"]),
        (Method::OPTIONS, "/users/1", &["GET", "HEAD"]),
        (Method::POST, "//metrics", &["GET", "HEAD"]),
    ];
    for (method, path, allowed) in cases {
        let response = send(&app, method.clone(), path, None).await;
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}"
        );
        assert_eq!(allow_set(&response), set(allowed), "{method} {path}");
        if method != Method::HEAD {
            assert_error(
                response,
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
            )
            .await;
        }
    }
}

#[actix_web::test]
async fn cacheable_reads_carry_an_etag_and_a_matching_if_none_match_is_304() {
    let (app, bot, profile) = populated().await;
    let routes = [
        format!("/bots/{}", bot.id),
        format!("/bots/{}/stats", bot.id),
        format!("/users/{profile}"),
        "/bots?limit=2".to_string(),
    ];
    for path in &routes {
        let first = app.get(path).await;
        assert_eq!(first.status(), StatusCode::OK, "{path}");
        let etag = header(&first, "etag").expect("an ETag").to_owned();
        assert!(
            etag.starts_with('"') && etag.ends_with('"') && etag.len() > 20,
            "a strong tag: {etag}"
        );
        let again = app.get(path).await;
        assert_eq!(header(&again, "etag"), Some(etag.as_str()), "stable");

        for if_none_match in [
            etag.clone(),
            format!("W/{etag}"),
            format!("\"other\", {etag}"),
            "*".to_string(),
        ] {
            let cached = app
                .request(Method::GET, path, None)
                .header("If-None-Match", &if_none_match)
                .send()
                .await
                .expect("sent");
            assert_eq!(
                cached.status(),
                StatusCode::NOT_MODIFIED,
                "{path} {if_none_match}"
            );
            assert_eq!(header(&cached, "etag"), Some(etag.as_str()));
            assert!(header(&cached, "x-ratelimit-limit").is_some());
            assert!(cached.bytes().await.expect("read").is_empty());
        }
        let stale = app
            .request(Method::GET, path, None)
            .header("If-None-Match", "\"not-the-tag\"")
            .send()
            .await
            .expect("sent");
        assert_eq!(stale.status(), StatusCode::OK);
        assert!(!stale.bytes().await.expect("read").is_empty());
    }

    // A change gives a new tag, and the old one no longer matches.
    let path = format!("/bots/{}/stats", bot.id);
    let before = header(&app.get(&path).await, "etag")
        .expect("etag")
        .to_owned();
    app.post_stats(&bot, 1300).await;
    let changed = app.revalidate(&path, &before).await;
    assert_eq!(changed.status(), StatusCode::OK);
    assert_ne!(header(&changed, "etag"), Some(before.as_str()));

    // So does a profile's edit (its answer is rendered once per edit, with its tag).
    let path = format!("/users/{profile}");
    let before = header(&app.get(&path).await, "etag")
        .expect("etag")
        .to_owned();
    let edited = app
        .admin(
            Method::PATCH,
            &format!("/admin/users/{profile}"),
            Some(&serde_json::json!({"bio": "Edited since."})),
        )
        .await;
    assert_eq!(edited.status(), StatusCode::OK);
    let changed = app.revalidate(&path, &before).await;
    assert_eq!(changed.status(), StatusCode::OK);
    assert_ne!(header(&changed, "etag"), Some(before.as_str()));
    assert!(changed
        .text()
        .await
        .expect("read")
        .contains("Edited since."));
}

#[actix_web::test]
async fn a_304_counts_against_the_rate_limit_and_says_so() {
    let (app, bot, _) = populated().await;
    let path = format!("/bots/{}", bot.id);
    let etag = header(&app.get(&path).await, "etag")
        .expect("etag")
        .to_owned();
    let mut last = None;
    let mut refused = false;
    for _ in 0..70 {
        let response = app
            .request(Method::GET, &path, None)
            .header("If-None-Match", &etag)
            .send()
            .await
            .expect("sent");
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            refused = true;
            assert!(header(&response, "retry-after").is_some());
            break;
        }
        assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
        let remaining: u64 = header(&response, "x-ratelimit-remaining")
            .and_then(|v| v.parse().ok())
            .expect("X-RateLimit-Remaining");
        if let Some(last) = last {
            assert_eq!(remaining + 1, last, "each 304 takes one request");
        }
        last = Some(remaining);
    }
    assert!(
        refused,
        "polling with 304s runs into the limit like any GET"
    );
}

/// The body as sent, without decoding (the test client asks for no encoding of its own).
async fn raw(app: &TestApp, path: &str, accept_encoding: Option<&str>) -> (HeaderMap, Vec<u8>) {
    let request = app.request(Method::GET, path, None);
    let request = match accept_encoding {
        Some(encoding) => request.header("Accept-Encoding", encoding),
        None => request,
    };
    let response = request.send().await.expect("sent");
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    let headers = response.headers().clone();
    (headers, response.bytes().await.expect("read").to_vec())
}

#[actix_web::test]
async fn large_json_is_compressed_for_clients_that_ask_and_small_json_is_not() {
    let (app, bot, _) = populated().await;
    let (plain_headers, plain) = raw(&app, "/bots?limit=100", None).await;
    assert!(plain.len() > 3000, "{} bytes", plain.len());
    assert_eq!(header_in(&plain_headers, "content-encoding"), None);

    let (headers, gzipped) = raw(&app, "/bots?limit=100", Some("gzip")).await;
    assert_eq!(header_in(&headers, "content-encoding"), Some("gzip"));
    assert!(gzipped.len() < plain.len() / 2, "{} bytes", gzipped.len());
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(gzipped.as_slice())
        .read_to_end(&mut decoded)
        .expect("valid gzip");
    assert_eq!(decoded, plain);
    assert!(headers.get_all("vary").iter().any(|v| v
        .to_str()
        .is_ok_and(|v| v.eq_ignore_ascii_case("accept-encoding"))));
    // The compressed bytes are not the ones tagged: the tag is weak, and still matches.
    let strong = header_in(&plain_headers, "etag").expect("etag");
    assert_eq!(
        header_in(&headers, "etag"),
        Some(format!("W/{strong}").as_str())
    );
    let revalidated = app
        .request(Method::GET, "/bots?limit=100", None)
        .header("Accept-Encoding", "gzip")
        .header("If-None-Match", format!("W/{strong}"))
        .send()
        .await
        .expect("sent");
    assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);

    let (headers, brotli) = raw(&app, "/bots?limit=100", Some("br")).await;
    assert_eq!(header_in(&headers, "content-encoding"), Some("br"));
    let mut decoded = Vec::new();
    brotli::Decompressor::new(brotli.as_slice(), 4096)
        .read_to_end(&mut decoded)
        .expect("valid brotli");
    assert_eq!(decoded, plain);

    // On a tie, as browsers send it, gzip: far cheaper for a fifth more bytes.
    let (headers, _) = raw(&app, "/bots?limit=100", Some("gzip, deflate, br, zstd")).await;
    assert_eq!(header_in(&headers, "content-encoding"), Some("gzip"));
    let (headers, _) = raw(&app, "/bots?limit=100", Some("br;q=1, gzip;q=0.5")).await;
    assert_eq!(header_in(&headers, "content-encoding"), Some("br"));

    // A small body is not worth it.
    let stats = format!("/bots/{}/stats", bot.id);
    let (headers, body) = raw(&app, &stats, Some("gzip, br")).await;
    assert_eq!(header_in(&headers, "content-encoding"), None);
    let body: Value = serde_json::from_slice(&body).expect("plain JSON");
    assert_eq!(body["server_count"], 1200);
}

#[actix_web::test]
async fn an_accept_encoding_that_refuses_every_encoding_is_406_in_the_envelope() {
    let (app, bot, _) = populated().await;
    for refusing in ["identity;q=0", "*;q=0", "zstd, identity;q=0"] {
        let response = app
            .request(Method::GET, &format!("/bots/{}", bot.id), None)
            .header("Accept-Encoding", refusing)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::NOT_ACCEPTABLE, "{refusing}");
        assert!(response.headers().contains_key("x-request-id"));
        let body: Value = response.json().await.expect("the envelope");
        assert_eq!(body["error"]["code"], "not_acceptable", "{refusing}");
    }
    // Refusing identity but taking gzip is fine, even for a body too small to compress.
    let (headers, _) = raw(
        &app,
        &format!("/bots/{}/stats", bot.id),
        Some("gzip, identity;q=0"),
    )
    .await;
    assert_eq!(header_in(&headers, "content-encoding"), None);
    // A badge is an SVG picture: text, and compressed like JSON.
    let (headers, _) = raw(
        &app,
        &format!("/bots/{}/badge/servers.svg", bot.id),
        Some("gzip"),
    )
    .await;
    assert_eq!(header_in(&headers, "content-encoding"), Some("gzip"));
}

async fn cors_app(origins: &[&str]) -> TestApp {
    let mut settings = test_settings();
    settings.cors_origins = origins.iter().map(|o| (*o).to_owned()).collect();
    spawn_app_with(settings).await
}

/// A GET as a browser on `origin` sends it.
async fn get_from(app: &TestApp, path: &str, origin: &str) -> Response {
    app.request(Method::GET, path, None)
        .header("Origin", origin)
        .send()
        .await
        .expect("sent")
}

async fn preflight(
    app: &TestApp,
    path: &str,
    origin: &str,
    method: &str,
    headers: &str,
) -> Response {
    let request = app
        .request(Method::OPTIONS, path, None)
        .header("Origin", origin)
        .header("Access-Control-Request-Method", method);
    let request = if headers.is_empty() {
        request
    } else {
        request.header("Access-Control-Request-Headers", headers)
    };
    request.send().await.expect("sent")
}

fn listed(response: &Response, name: &str) -> BTreeSet<String> {
    header(response, name)
        .unwrap_or("")
        .split(',')
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty())
        .collect()
}

#[actix_web::test]
async fn an_allowed_origin_gets_preflights_and_can_read_the_rate_limit_headers() {
    const FRONT: &str = "https://front.example";
    let app = cors_app(&[FRONT, "http://localhost:3000"]).await;
    let bot = app.create_bot(42, json!({})).await;

    let response = preflight(&app, "/bots", FRONT, "GET", "").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        header(&response, "access-control-allow-origin"),
        Some(FRONT)
    );
    let methods = listed(&response, "access-control-allow-methods");
    assert!(
        methods.contains("get") && methods.contains("head"),
        "{methods:?}"
    );
    assert!(header(&response, "access-control-max-age").is_some());

    // Authenticated routes follow the same rule.
    let response = preflight(
        &app,
        &format!("/bots/{}/stats", bot.id),
        FRONT,
        "POST",
        "authorization, content-type",
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let allowed = listed(&response, "access-control-allow-headers");
    assert!(allowed.contains("authorization") && allowed.contains("content-type"));

    let response = get_from(&app, "/bots", FRONT).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        header(&response, "access-control-allow-origin"),
        Some(FRONT)
    );
    let exposed = listed(&response, "access-control-expose-headers");
    for name in [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "retry-after",
        "etag",
        "x-request-id",
    ] {
        assert!(exposed.contains(name), "{name} exposed: {exposed:?}");
    }

    // Errors and 429s are readable too.
    let response = get_from(&app, "/bots/404", FRONT).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        header(&response, "access-control-allow-origin"),
        Some(FRONT)
    );
    let mut limited = None;
    for _ in 0..70 {
        let response = get_from(&app, "/bots", FRONT).await;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = Some(response);
            break;
        }
    }
    let limited = limited.expect("a 429");
    assert_eq!(header(&limited, "access-control-allow-origin"), Some(FRONT));
    assert!(listed(&limited, "access-control-expose-headers").contains("retry-after"));
    // Preflights are not rate limited.
    let response = preflight(&app, "/bots", FRONT, "GET", "").await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[actix_web::test]
async fn another_origin_gets_no_cors_headers_and_its_preflight_is_refused() {
    let app = cors_app(&["https://front.example"]).await;
    let response = preflight(&app, "/bots", "https://evil.example", "GET", "").await;
    let headers = response.headers().clone();
    assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(header_in(&headers, "access-control-allow-origin"), None);

    let response = get_from(&app, "/bots", "https://evil.example").await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "served; the browser hides it"
    );
    assert_eq!(header(&response, "access-control-allow-origin"), None);
}

#[actix_web::test]
async fn a_star_allows_any_origin() {
    let app = cors_app(&["*"]).await;
    let response = preflight(&app, "/users/1", "https://anyone.example", "GET", "").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "access-control-allow-origin"), Some("*"));
    let response = get_from(&app, "/bots", "https://anyone.example").await;
    assert_eq!(header(&response, "access-control-allow-origin"), Some("*"));
}

#[actix_web::test]
async fn without_cors_origins_there_are_no_cors_headers() {
    let app = spawn_app().await;
    let response = preflight(&app, "/bots", "https://front.example", "GET", "").await;
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(allow_set(&response), set(&["GET", "HEAD", "POST"]));
    let response = get_from(&app, "/bots", "https://front.example").await;
    assert!(response
        .headers()
        .keys()
        .all(|name| !name.as_str().starts_with("access-control-")));
}

#[actix_web::test]
async fn a_sane_request_id_is_echoed_and_any_other_is_replaced() {
    let app = spawn_app().await;
    let echoed = app
        .request(Method::GET, "/bots", None)
        .header("X-Request-Id", "front-1234_abc.DEF")
        .send()
        .await
        .expect("sent");
    assert_eq!(header(&echoed, "x-request-id"), Some("front-1234_abc.DEF"));

    let generated = |response: &Response| {
        let id = header(response, "x-request-id").expect("an id").to_owned();
        assert_eq!(id.len(), 32, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        id
    };
    let first = generated(&app.get("/bots").await);
    let second = generated(&app.get("/bots/404").await);
    assert_ne!(first, second);
    for insane in ["a".repeat(129), "with space".into(), String::new()] {
        let response = app
            .request(Method::GET, "/bots", None)
            .header("X-Request-Id", &insane)
            .send()
            .await
            .expect("sent");
        assert_ne!(generated(&response), insane);
    }
    // An error raised before any handler (headers over the limit) carries the id too.
    let mut request = app
        .request(Method::GET, "/bots", None)
        .header("X-Request-Id", "big-headers");
    for n in 0..5 {
        request = request.header(format!("x-filler-{n}"), "f".repeat(4000));
    }
    let response = request.send().await.expect("sent");
    assert_eq!(
        response.status(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
    assert_eq!(header(&response, "x-request-id"), Some("big-headers"));

    let longest = "b".repeat(128);
    let response = app
        .request(Method::GET, "/bots", None)
        .header("X-Request-Id", &longest)
        .send()
        .await
        .expect("sent");
    assert_eq!(header(&response, "x-request-id"), Some(longest.as_str()));
}
