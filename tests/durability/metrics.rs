//! The moderation's counters read over `/metrics`, counted exactly: the real binary is a process
//! of its own, so no other test's writes share its recorder (in `tests/api` the recorder is one
//! per test process and counts are only ever "at least").
//!
//! - `botlist_reviews_total{change}`: one per review change answered 2xx, none for a refusal.
//! - `botlist_webhook_events_queued_total{kind}`: one per event journaled for delivery.
//! - `botlist_webhook_events_sent_total{kind}`: one per event a receiver answered 2xx; an event
//!   whose receiver refuses it is queued and never counted as sent.

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::process::{Server, ADMIN};
use crate::webhooks::read_delivery;

/// A receiver on a thread answering every request with `status`; keeps each body's `type`.
fn receiver(status: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (_, body) = read_delivery(&stream);
            let kind = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|b| b["type"].as_str().map(str::to_owned))
                .unwrap_or_default();
            log.lock().expect("lock").push(kind);
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    (url, seen)
}

/// Waits until the receiver holds `kinds` (in any order), then for the server to have counted
/// the answers (the count follows the answer).
fn wait_for(seen: &Mutex<Vec<String>>, kinds: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut want: Vec<String> = kinds.iter().map(|k| (*k).to_owned()).collect();
    want.sort();
    loop {
        let mut got = seen.lock().expect("lock").clone();
        got.sort();
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "received {got:?}, waited for {want:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn scrape(server: &Server) -> String {
    let root = server.base.trim_end_matches("/api/v1");
    server
        .client
        .get(format!("{root}/metrics"))
        .send()
        .expect("sent")
        .text()
        .expect("text")
}

/// The value of the sample `line_start` begins (a name and its labels); 0 when absent.
fn sample(text: &str, line_start: &str) -> f64 {
    text.lines()
        .find(|line| line.starts_with(line_start) && line[line_start.len()..].starts_with(' '))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("{line_start} in {text}"))
}

/// Waits until the sample reaches `value` (the count of an answer lands just after it).
fn expect_sample(server: &Server, line_start: &str, value: f64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = scrape(server);
        let got = sample(&text, line_start);
        if got == value {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{line_start} is {got}, not {value}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn send(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = server
        .client
        .request(method, format!("{}{path}", server.base))
        .header("Authorization", token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().expect("sent");
    let status = response.status();
    (status, response.json().unwrap_or(Value::Null))
}

/// A profile (with `extra` fields) and a token of `scopes`: its id and token.
fn profile(server: &Server, username: &str, extra: Value, scopes: &[&str]) -> (String, String) {
    let mut body = json!({ "username": username });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let (status, created) = server.post("/admin/users", ADMIN, &body).expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    let scopes = json!({ "scopes": scopes, "label": "metrics" });
    let (status, issued) = server
        .post(&format!("/admin/users/{id}/tokens"), ADMIN, &scopes)
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    (id, issued["token"].as_str().expect("token").to_owned())
}

const EVERY_EVENT: [&str; 5] = [
    "vote.create",
    "review.create",
    "listing.approved",
    "listing.denied",
    "listing.delisted",
];

#[test]
fn reviews_and_events_queued_and_sent_are_counted_exactly_by_label() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let (url, received) = receiver("200 OK");
    let (refusing_url, refused) = receiver("500 Internal Server Error");
    let hooked = |url: &str| json!({ "webhook_url": url, "webhook_events": EVERY_EVENT });

    // Every family is there from the start, at zero, for every label.
    let text = scrape(&server);
    for change in ["create", "edit", "reply", "delete", "remove"] {
        assert_eq!(
            sample(
                &text,
                &format!("botlist_reviews_total{{change=\"{change}\"}}")
            ),
            0.0
        );
    }
    for kind in EVERY_EVENT.iter().chain(&["vote.expired"]) {
        for family in ["queued", "sent"] {
            let line = format!("botlist_webhook_events_{family}_total{{kind=\"{kind}\"}}");
            assert_eq!(sample(&text, &line), 0.0, "{line}");
        }
    }

    let (owner, owner_token) = profile(&server, "owner", json!({}), &["bots"]);
    let (_, moderator) = profile(&server, "moderator", json!({ "mod": true }), &["staff"]);
    let (_, first) = profile(&server, "first", json!({}), &["reviews"]);
    let (_, second) = profile(&server, "second", json!({}), &["reviews"]);
    let mut listed = json!({
        "platform_id": "301", "name": "Heard", "username": "heard",
        "short_description": "Its receiver answers", "owner_ids": [owner],
    });
    listed
        .as_object_mut()
        .expect("an object")
        .extend(hooked(&url).as_object().expect("o").clone());
    let (status, bot) = server.post("/admin/bots", ADMIN, &listed).expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{bot}");
    let bot = bot["bot"]["id"].as_str().expect("id").to_owned();
    let mut deaf = json!({
        "platform_id": "302", "name": "Deaf", "username": "deaf",
        "short_description": "Its receiver refuses",
    });
    deaf.as_object_mut()
        .expect("an object")
        .extend(hooked(&refusing_url).as_object().expect("o").clone());
    let (status, deaf) = server.post("/admin/bots", ADMIN, &deaf).expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{deaf}");
    let deaf = deaf["bot"]["id"].as_str().expect("id").to_owned();

    // Reviews: every change once, and refusals that count nothing.
    let reviews = format!("/bots/{bot}/reviews");
    let (status, written) = server
        .post(&reviews, &first, &json!({ "rating": 4, "content": "good" }))
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{written}");
    let review = format!("{reviews}/{}", written["id"].as_str().expect("id"));
    let (status, _) = server
        .post(&reviews, &first, &json!({ "rating": 2 }))
        .expect("sent");
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "a second review by one profile"
    );
    let (status, _) = server.patch(&review, &first, &json!({ "rating": 5 }));
    assert_eq!(status, StatusCode::OK);
    let (status, _) = server.patch(&review, &second, &json!({ "rating": 1 }));
    assert_eq!(status, StatusCode::FORBIDDEN, "not the author");
    let reply = json!({ "content": "thanks" });
    let (status, _) = send(
        &server,
        reqwest::Method::PUT,
        &format!("{review}/reply"),
        &owner_token,
        Some(reply),
    );
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(&server, reqwest::Method::DELETE, &review, &first, None);
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, again) = server
        .post(
            &reviews,
            &second,
            &json!({ "rating": 3, "content": "fine" }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{again}");
    let again = format!("{reviews}/{}/remove", again["id"].as_str().expect("id"));
    let (status, _) = server
        .post(&again, &moderator, &json!({ "reason": "off topic" }))
        .expect("sent");
    assert_eq!(status, StatusCode::NO_CONTENT);
    // On the bot whose receiver refuses: queued, never sent.
    let (status, _) = server
        .post(
            &format!("/bots/{deaf}/reviews"),
            &first,
            &json!({ "rating": 1, "content": "no" }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(server.vote(&bot, 7), StatusCode::CREATED);

    let text = scrape(&server);
    for (change, count) in [
        ("create", 3.0),
        ("edit", 1.0),
        ("reply", 1.0),
        ("delete", 1.0),
        ("remove", 1.0),
    ] {
        let line = format!("botlist_reviews_total{{change=\"{change}\"}}");
        assert_eq!(sample(&text, &line), count, "{line}");
    }
    // Sent once the receiver has answered them, before the listing is delisted (which stops
    // what is still pending).
    wait_for(
        &received,
        &["review.create", "review.create", "vote.create"],
    );
    expect_sample(
        &server,
        r#"botlist_webhook_events_sent_total{kind="review.create"}"#,
        2.0,
    );

    // Decisions: delisted, approved again; a listing submitted by its owner and denied.
    let staff = |bot: &str, action: &str, body: Value| {
        let (status, answer) = server
            .post(&format!("/staff/bots/{bot}/{action}"), &moderator, &body)
            .expect("sent");
        assert_eq!(status, StatusCode::OK, "{action}: {answer}");
    };
    staff(&bot, "delist", json!({ "reason": "spam" }));
    wait_for(
        &received,
        &[
            "review.create",
            "review.create",
            "vote.create",
            "listing.delisted",
        ],
    );
    staff(&bot, "approve", json!({}));
    let mut submitted = json!({
        "platform_id": "303", "name": "Queued", "username": "queued",
        "short_description": "Waiting for staff",
    });
    submitted
        .as_object_mut()
        .expect("an object")
        .extend(hooked(&url).as_object().expect("o").clone());
    let (status, queued) = server
        .post("/bots", &owner_token, &submitted)
        .expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{queued}");
    let queued = queued["bot"]["id"].as_str().expect("id").to_owned();
    staff(&queued, "deny", json!({ "reason": "needs a description" }));
    wait_for(
        &received,
        &[
            "review.create",
            "review.create",
            "vote.create",
            "listing.delisted",
            "listing.approved",
            "listing.denied",
        ],
    );

    let counts = [
        ("vote.create", 1.0, 1.0),
        ("review.create", 3.0, 2.0),
        ("listing.approved", 1.0, 1.0),
        ("listing.denied", 1.0, 1.0),
        ("listing.delisted", 1.0, 1.0),
        ("vote.expired", 0.0, 0.0),
    ];
    for (kind, queued, sent) in counts {
        expect_sample(
            &server,
            &format!("botlist_webhook_events_sent_total{{kind=\"{kind}\"}}"),
            sent,
        );
        let text = scrape(&server);
        let line = format!("botlist_webhook_events_queued_total{{kind=\"{kind}\"}}");
        assert_eq!(sample(&text, &line), queued, "{line}");
    }
    // The refusing receiver was asked (and is asked again on its retries): never counted as
    // sent, as the counts above say.
    let deadline = Instant::now() + Duration::from_secs(30);
    while refused.lock().expect("lock").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the refusing receiver was never asked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(refused
        .lock()
        .expect("lock")
        .iter()
        .all(|kind| kind == "review.create"));
    expect_sample(
        &server,
        r#"botlist_webhook_events_sent_total{kind="review.create"}"#,
        2.0,
    );
}
