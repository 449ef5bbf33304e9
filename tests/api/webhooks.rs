//! Vote webhooks against real receivers bound to port 0.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use hmac::{Hmac, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::helpers::{assert_error, spawn_app, spawn_app_with, test_settings, TestApp, TestBot};

#[derive(Clone, Copy)]
pub(crate) enum Reply {
    Status(u16),
    RetryAfter(u64),
    Hang,
    Redirect,
}

#[derive(Clone, Debug)]
pub(crate) struct Received {
    headers: Vec<(String, String)>,
    body: String,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

#[derive(Clone)]
pub(crate) struct Receiver {
    pub(crate) url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

struct Script {
    replies: Mutex<VecDeque<Reply>>,
    received: Arc<Mutex<Vec<Received>>>,
}

async fn receive(
    request: HttpRequest,
    body: web::Bytes,
    script: web::Data<Script>,
) -> HttpResponse {
    let headers = request
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    script.received.lock().expect("lock").push(Received {
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let reply = script
        .replies
        .lock()
        .expect("lock")
        .pop_front()
        .unwrap_or(Reply::Status(200));
    match reply {
        Reply::Status(code) => {
            HttpResponse::build(actix_web::http::StatusCode::from_u16(code).expect("a status"))
                .finish()
        }
        Reply::RetryAfter(seconds) => HttpResponse::TooManyRequests()
            .insert_header(("Retry-After", seconds.to_string()))
            .finish(),
        Reply::Redirect => HttpResponse::Found()
            .insert_header(("Location", "/elsewhere"))
            .finish(),
        Reply::Hang => {
            actix_web::rt::time::sleep(Duration::from_secs(30)).await;
            HttpResponse::Ok().finish()
        }
    }
}

/// A receiver that answers with the script, then 200.
pub(crate) async fn receiver(replies: &[Reply]) -> Receiver {
    let received = Arc::new(Mutex::new(Vec::new()));
    let script = web::Data::new(Script {
        replies: Mutex::new(replies.iter().copied().collect()),
        received: Arc::clone(&received),
    });
    let server = HttpServer::new(move || {
        App::new()
            .app_data(script.clone())
            .default_service(web::to(receive))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("binds");
    let port = server.addrs()[0].port();
    actix_web::rt::spawn(server.run());
    Receiver {
        url: format!("http://127.0.0.1:{port}/hook"),
        received,
    }
}

impl Receiver {
    pub(crate) fn all(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// Waits (real time, bounded) until `n` requests have arrived.
    pub(crate) async fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let all = self.all();
            if all.len() >= n {
                return all;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} deliveries arrived",
                all.len()
            );
            actix_web::rt::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn webhook_app() -> TestApp {
    let mut settings = test_settings();
    settings.allow_private_webhooks = true;
    settings.webhook_timeout = Duration::from_millis(500);
    spawn_app_with(settings).await
}

async fn bot_with_hook(
    app: &TestApp,
    platform_id: u64,
    receiver: &Receiver,
    format: &str,
) -> TestBot {
    app.create_bot(platform_id, json!({ "webhook_url": receiver.url, "webhook_secret": "s3cret", "webhook_format": format }))
        .await
}

async fn deliveries(app: &TestApp, bot: &TestBot) -> Vec<Value> {
    let response = app
        .admin(
            Method::GET,
            &format!("/admin/bots/{}/webhook/deliveries", bot.id),
            None,
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    // The delivery log counts the deliveries given up for a full outbox: none in these tests.
    assert_eq!(
        response
            .headers()
            .get("botlist-deliveries-given-up")
            .and_then(|v| v.to_str().ok()),
        Some("0")
    );
    response.json().await.expect("json")
}

/// Waits until the newest delivery has been tried `attempts` times.
async fn settled(app: &TestApp, bot: &TestBot, attempts: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let list = deliveries(app, bot).await;
        if list.first().is_some_and(|d| d["attempts"] == attempts) {
            return list[0].clone();
        }
        assert!(
            Instant::now() < deadline,
            "never reached {attempts} attempts: {list:?}"
        );
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
}

fn verify(secret: &str, header: &str, body: &str) -> i64 {
    let (t, v1) = header
        .split_once(',')
        .and_then(|(t, v)| Some((t.strip_prefix("t=")?, v.strip_prefix("v1=")?)))
        .expect("t=...,v1=...");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(format!("{t}.{body}").as_bytes());
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v1, expected, "the signature verifies against the raw body");
    t.parse().expect("seconds")
}

#[actix_web::test]
async fn a_signed_delivery_verifies_against_the_raw_body_and_never_carries_the_secret() {
    let app = webhook_app().await;
    let hook = receiver(&[]).await;
    let bot = bot_with_hook(&app, 42, &hook, "signed").await;
    let body = json!({ "user_id": "77", "username": "ada", "avatar": "https://cdn.example/a.png" });
    app.admin(
        Method::POST,
        &format!("/admin/bots/{}/votes", bot.id),
        Some(&body),
    )
    .await;

    let got = hook.wait_for(1).await.remove(0);
    let t = verify(
        "s3cret",
        got.header("x-botlist-signature").expect("signed"),
        &got.body,
    );
    assert_eq!(t, crate::helpers::start_time().millis() / 1000);
    let event = got.json();
    assert_eq!(got.header("x-botlist-event"), Some("vote.create"));
    assert_eq!(got.header("x-botlist-delivery"), event["id"].as_str());
    assert_eq!(got.header("content-type"), Some("application/json"));
    assert_eq!(event["type"], "vote.create");
    assert_eq!(
        event["data"]["bot"],
        json!({ "id": bot.id, "platform_id": "42" })
    );
    assert_eq!(
        event["data"]["user"],
        json!({ "id": "77", "username": "ada", "avatar": "https://cdn.example/a.png" })
    );
    assert_eq!(event["data"]["voted_at"], "2026-11-15T12:00:00.000Z");
    assert_eq!(event["data"]["expires_at"], "2026-11-16T00:00:00.000Z");
    assert_eq!(
        (
            event["data"]["vote_count"].as_u64(),
            event["data"]["monthly_vote_count"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert!(!got.body.contains("s3cret") && got.headers.iter().all(|(_, v)| !v.contains("s3cret")));
}

#[actix_web::test]
async fn the_legacy_format_is_the_classic_body_with_the_secret_as_authorization() {
    let app = webhook_app().await;
    let hook = receiver(&[]).await;
    let bot = bot_with_hook(&app, 42, &hook, "legacy").await;
    app.vote_ok(&bot.id, 77).await;
    let got = hook.wait_for(1).await.remove(0);
    assert_eq!(
        got.json(),
        json!({ "bot": "42", "user": "77", "type": "upvote", "isWeekend": false, "query": "" })
    );
    assert_eq!(got.header("authorization"), Some("s3cret"));
    assert!(got.header("x-botlist-signature").is_none());

    let response = app
        .admin(
            Method::POST,
            &format!("/admin/bots/{}/webhook/test", bot.id),
            None,
        )
        .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let got = hook.wait_for(2).await.remove(1);
    assert_eq!(got.json()["type"], "test");
}

#[actix_web::test]
async fn a_receiver_answering_500_twice_gets_the_same_delivery_three_times() {
    let app = webhook_app().await;
    let hook = receiver(&[Reply::Status(500), Reply::Status(503)]).await;
    let bot = bot_with_hook(&app, 42, &hook, "signed").await;
    app.vote_ok(&bot.id, 7).await;
    hook.wait_for(1).await;
    let first = settled(&app, &bot, 1).await;
    assert_eq!(
        (first["state"].as_str(), first["last_status"].as_u64()),
        (Some("retrying"), Some(500))
    );
    assert_eq!(
        first["next_attempt_at"], "2026-11-15T12:00:01.000Z",
        "1 s after the first try"
    );
    app.clock.advance(chrono::Duration::seconds(1));
    hook.wait_for(2).await;
    let second = settled(&app, &bot, 2).await;
    assert_eq!(
        second["next_attempt_at"], "2026-11-15T12:00:03.000Z",
        "then 2 s"
    );
    app.clock.advance(chrono::Duration::seconds(2));
    let all = hook.wait_for(3).await;
    let done = settled(&app, &bot, 3).await;
    assert_eq!(done["state"], "delivered");
    let ids: Vec<&str> = all
        .iter()
        .map(|r| r.header("x-botlist-delivery").expect("an id"))
        .collect();
    assert_eq!(ids, vec![ids[0]; 3], "the same delivery id on every try");
    assert!(
        all.iter().all(|r| r.body == all[0].body),
        "the same body on every try"
    );
}

#[actix_web::test]
async fn a_400_is_not_retried_and_a_redirect_is_not_followed() {
    let app = webhook_app().await;
    for (n, reply, status) in [
        (1u64, Reply::Status(400), 400u64),
        (2, Reply::Redirect, 302),
    ] {
        let hook = receiver(&[reply]).await;
        let bot = bot_with_hook(&app, 40 + n, &hook, "signed").await;
        app.vote_ok(&bot.id, 7).await;
        let done = settled(&app, &bot, 1).await;
        assert_eq!(
            (done["state"].as_str(), done["last_status"].as_u64()),
            (Some("failed"), Some(status))
        );
        app.clock.advance(chrono::Duration::hours(2));
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            hook.all().len(),
            1,
            "not retried, and the redirect target was not asked"
        );
    }
}

#[actix_web::test]
async fn retry_after_of_a_429_is_honoured() {
    let app = webhook_app().await;
    let hook = receiver(&[Reply::RetryAfter(30)]).await;
    let bot = bot_with_hook(&app, 42, &hook, "signed").await;
    app.vote_ok(&bot.id, 7).await;
    let first = settled(&app, &bot, 1).await;
    assert_eq!(first["next_attempt_at"], "2026-11-15T12:00:30.000Z");
    app.clock.advance(chrono::Duration::seconds(29));
    actix_web::rt::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(hook.all().len(), 1);
    app.clock.advance(chrono::Duration::seconds(1));
    hook.wait_for(2).await;
    assert_eq!(settled(&app, &bot, 2).await["state"], "delivered");
}

#[actix_web::test]
async fn a_hanging_receiver_is_timed_out_and_retried_while_others_get_theirs() {
    let app = webhook_app().await;
    let hanging = receiver(&[Reply::Hang]).await;
    let healthy = receiver(&[]).await;
    let slow_bot = bot_with_hook(&app, 1, &hanging, "signed").await;
    let bot = bot_with_hook(&app, 2, &healthy, "signed").await;
    app.vote_ok(&slow_bot.id, 7).await;
    hanging.wait_for(1).await;
    let started = Instant::now();
    for user in 1..=5 {
        app.vote_ok(&bot.id, user).await;
    }
    healthy.wait_for(5).await;
    assert!(
        started.elapsed() < Duration::from_millis(450),
        "the healthy receiver waited {:?}",
        started.elapsed()
    );
    let timed_out = settled(&app, &slow_bot, 1).await;
    assert_eq!(timed_out["state"], "retrying");
    assert!(
        timed_out["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("timed out")),
        "{timed_out}"
    );
    app.clock.advance(chrono::Duration::seconds(1));
    hanging.wait_for(2).await;
    assert_eq!(settled(&app, &slow_bot, 2).await["state"], "delivered");
}

#[actix_web::test]
async fn deliveries_are_listed_and_can_be_redelivered_with_the_same_id() {
    let app = webhook_app().await;
    let hook = receiver(&[]).await;
    let bot = bot_with_hook(&app, 42, &hook, "signed").await;
    let response = app
        .admin(
            Method::POST,
            &format!("/admin/bots/{}/webhook/test", bot.id),
            None,
        )
        .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let queued: Value = response.json().await.expect("json");
    assert_eq!(
        (queued["event"].as_str(), queued["state"].as_str()),
        (Some("webhook.test"), Some("pending"))
    );
    let first = hook.wait_for(1).await.remove(0);
    assert_eq!(first.json()["type"], "webhook.test");
    let delivered = settled(&app, &bot, 1).await;
    assert_eq!(delivered["id"], queued["id"]);
    assert_eq!(delivered["state"], "delivered");
    for key in [
        "id",
        "event",
        "state",
        "attempts",
        "last_status",
        "last_error",
        "next_attempt_at",
        "created_at",
        "delivered_at",
    ] {
        assert!(delivered.get(key).is_some(), "{key}");
    }

    let path = format!(
        "/admin/bots/{}/webhook/deliveries/{}/redeliver",
        bot.id,
        queued["id"].as_str().expect("id")
    );
    let response = app.admin(Method::POST, &path, None).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let again = hook.wait_for(2).await.remove(1);
    assert_eq!(
        again.header("x-botlist-delivery"),
        first.header("x-botlist-delivery")
    );
    let unknown = format!(
        "/admin/bots/{}/webhook/deliveries/6f9619ff-8b86-4d11-b42d-00c04fc964ff/redeliver",
        bot.id
    );
    assert_error(
        app.admin(Method::POST, &unknown, None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;

    let plain = app.create_bot(99, json!({})).await;
    let response = app
        .admin(
            Method::POST,
            &format!("/admin/bots/{}/webhook/test", plain.id),
            None,
        )
        .await;
    assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
}

#[actix_web::test]
async fn private_targets_are_refused_without_the_flag() {
    let app = spawn_app().await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://10.0.0.7/",
        "http://[::1]:80/",
        "http://169.254.169.254/latest",
    ] {
        let body = json!({ "platform_id": "5", "name": "B", "username": "b", "short_description": "d", "webhook_url": url });
        let message = assert_error(
            app.admin(Method::POST, "/admin/bots", Some(&body)).await,
            StatusCode::BAD_REQUEST,
            "bad_request",
        )
        .await;
        assert!(message.contains("webhook_url"), "{message}");
    }
    let bot = app.create_bot(6, json!({})).await;
    let response = app
        .admin(
            Method::PATCH,
            &format!("/admin/bots/{}", bot.id),
            Some(&json!({ "webhook_url": "http://127.0.0.1:1/" })),
        )
        .await;
    assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
}

#[actix_web::test]
async fn no_webhook_settings_appear_on_public_routes() {
    let app = webhook_app().await;
    let hook = receiver(&[]).await;
    let bot = bot_with_hook(&app, 42, &hook, "legacy").await;
    let text = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .text()
        .await
        .expect("text");
    assert!(
        !text.contains("hook") && !text.contains("s3cret") && !text.contains("legacy"),
        "{text}"
    );
}

#[actix_web::test]
async fn redelivering_a_delivery_in_retry_replaces_its_retry_instead_of_adding_one() {
    let app = webhook_app().await;
    let hook = receiver(&[Reply::Status(500)]).await;
    let bot = bot_with_hook(&app, 42, &hook, "signed").await;
    app.vote_ok(&bot.id, 7).await;
    let retrying = settled(&app, &bot, 1).await;
    assert_eq!(retrying["state"], "retrying");
    let path = format!(
        "/admin/bots/{}/webhook/deliveries/{}/redeliver",
        bot.id,
        retrying["id"].as_str().expect("id")
    );
    assert_eq!(
        app.admin(Method::POST, &path, None).await.status(),
        StatusCode::ACCEPTED
    );
    hook.wait_for(2).await;
    assert_eq!(
        settled(&app, &bot, 1).await["state"],
        "delivered",
        "a fresh set of tries"
    );
    app.clock.advance(chrono::Duration::minutes(10));
    actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(hook.all().len(), 2, "the replaced retry never went out");
}

/// Waits until every listed delivery satisfies `done`.
async fn all_settled(
    app: &TestApp,
    bot: &TestBot,
    n: usize,
    done: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let list = deliveries(app, bot).await;
        if list.len() == n && list.iter().all(&done) {
            return list;
        }
        assert!(Instant::now() < deadline, "never settled: {list:?}");
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
}

#[actix_web::test]
async fn a_failing_receiver_gets_one_probe_and_the_waiting_deliveries_go_when_it_answers() {
    let app = webhook_app().await;
    let hook = receiver(&[Reply::Status(503)]).await;
    let bot = bot_with_hook(&app, 42, &hook, "signed").await;
    app.vote_ok(&bot.id, 1).await;
    assert_eq!(settled(&app, &bot, 1).await["state"], "retrying");
    for user in 2..=6 {
        app.vote_ok(&bot.id, user).await;
    }
    // Due now, but the receiver is failing and its next probe is 1 s away: nothing is sent.
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hook.all().len(), 1, "the waiting deliveries were not sent");
    let waiting = deliveries(&app, &bot).await;
    assert_eq!(waiting.len(), 6);
    assert!(
        waiting[..5]
            .iter()
            .all(|d| d["state"] == "pending" && d["attempts"] == 0),
        "{waiting:?}"
    );

    // The probe (the first delivery's second try) is answered: everything waiting goes.
    app.clock.advance(chrono::Duration::seconds(1));
    hook.wait_for(7).await;
    let done = all_settled(&app, &bot, 6, |d| d["state"] == "delivered").await;
    let tries: Vec<u64> = done
        .iter()
        .map(|d| d["attempts"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(
        tries,
        [1, 1, 1, 1, 1, 2],
        "newest first; only the probe was tried twice"
    );
    actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    let ids: Vec<String> = hook
        .all()
        .iter()
        .map(|r| r.header("x-botlist-delivery").unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        ids.len(),
        7,
        "the first delivery twice, the others once: {ids:?}"
    );
}

#[actix_web::test]
async fn deliveries_waiting_at_a_failing_receiver_are_given_up_when_their_tries_run_out() {
    let app = webhook_app().await;
    let hook = receiver(&[Reply::Status(500); 20]).await;
    let bot = bot_with_hook(&app, 42, &hook, "signed").await;
    app.vote_ok(&bot.id, 1).await;
    settled(&app, &bot, 1).await;
    app.vote_ok(&bot.id, 2).await;
    // An hour later the probes have failed all along (the receiver was tried once); two hours
    // later both deliveries' tries would have run out.
    app.clock.advance(chrono::Duration::hours(2));
    let done = all_settled(&app, &bot, 2, |d| d["state"] == "failed").await;
    for delivery in &done {
        assert!(
            delivery["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("tries ran out")),
            "{delivery}"
        );
        assert_eq!(delivery["next_attempt_at"], Value::Null);
    }
    let tries: Vec<u64> = done
        .iter()
        .map(|d| d["attempts"].as_u64().unwrap_or(9))
        .collect();
    assert_eq!(tries, [0, 1], "attempts counts what was really sent");
    assert_eq!(hook.all().len(), 1);

    // A redelivery is an operator's probe: it goes at once, failing receiver or not.
    let path = format!(
        "/admin/bots/{}/webhook/deliveries/{}/redeliver",
        bot.id,
        done[0]["id"].as_str().expect("id")
    );
    assert_eq!(
        app.admin(Method::POST, &path, None).await.status(),
        StatusCode::ACCEPTED
    );
    hook.wait_for(2).await;
}

#[actix_web::test]
async fn a_weekend_vote_says_is_weekend_in_legacy_and_its_weight_in_signed_deliveries() {
    let mut settings = test_settings();
    settings.allow_private_webhooks = true;
    settings.webhook_timeout = Duration::from_millis(500);
    settings.weekend_multiplier = 2;
    // The tests start on a Sunday: a weekend.
    let app = spawn_app_with(settings).await;
    let legacy_hook = receiver(&[]).await;
    let signed_hook = receiver(&[]).await;
    let legacy = bot_with_hook(&app, 42, &legacy_hook, "legacy").await;
    let signed = bot_with_hook(&app, 43, &signed_hook, "signed").await;
    app.vote_ok(&legacy.id, 77).await;
    app.vote_ok(&signed.id, 77).await;
    let got = legacy_hook.wait_for(1).await.remove(0);
    assert_eq!(
        got.json(),
        json!({ "bot": "42", "user": "77", "type": "upvote", "isWeekend": true, "query": "" })
    );
    let got = signed_hook.wait_for(1).await.remove(0);
    let event = got.json();
    assert_eq!(event["data"]["weight"], 2);
    assert_eq!(event["data"]["vote_count"], 2);
    assert_eq!(event["data"]["monthly_vote_count"], 2);
    // On Monday a vote weighs 1 again, and says nothing of a weight.
    app.clock.advance(chrono::Duration::hours(12));
    app.vote_ok(&signed.id, 78).await;
    app.vote_ok(&legacy.id, 78).await;
    let got = signed_hook.wait_for(2).await.remove(1);
    let event = got.json();
    assert!(event["data"].get("weight").is_none(), "{event}");
    assert_eq!(event["data"]["vote_count"], 3);
    let got = legacy_hook.wait_for(2).await.remove(1);
    assert_eq!(got.json()["isWeekend"], false);
}

/// A `v1` receiver written from the format's description (what the 2026 SDKs' webhook classes
/// check): `x-topgg-signature` is comma-separated `key=value` pairs with `t` (Unix seconds) and
/// `v1` (hex HMAC-SHA256 of `"<t>.<raw body>"` keyed with the secret), refused more than 30 s
/// from the receiver's time; `x-topgg-trace` must be there. Returns `t`.
fn verify_v1(secret: &str, got: &Received, now_seconds: i64) -> i64 {
    assert!(
        got.header("x-topgg-trace").is_some_and(|t| !t.is_empty()),
        "a trace"
    );
    let header = got.header("x-topgg-signature").expect("x-topgg-signature");
    let pairs: std::collections::HashMap<&str, &str> = header
        .split(',')
        .filter_map(|part| part.split_once('='))
        .collect();
    let t: i64 = pairs["t"].parse().expect("t is seconds");
    assert!((now_seconds - t).abs() <= 30, "signed within 30 s of now");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(format!("{t}.{}", got.body).as_bytes());
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(pairs["v1"], expected, "v1 verifies against the raw body");
    t
}

/// A Standard Webhooks receiver written from the specification: the key is the base64 after
/// `whsec_`; the signed content is `"<webhook-id>.<webhook-timestamp>.<raw body>"`;
/// `webhook-signature` is space-separated `v1,<base64 HMAC-SHA256>` entries, one of which must
/// match; the timestamp within 5 minutes of the receiver's time. Returns the timestamp.
fn verify_standard(secret: &str, got: &Received, now_seconds: i64) -> i64 {
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    let key = engine
        .decode(secret.strip_prefix("whsec_").expect("whsec_"))
        .expect("base64");
    let id = got.header("webhook-id").expect("webhook-id");
    let t: i64 = got
        .header("webhook-timestamp")
        .expect("webhook-timestamp")
        .parse()
        .expect("seconds");
    assert!((now_seconds - t).abs() <= 300, "within the tolerance");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("key");
    mac.update(format!("{id}.{t}.{}", got.body).as_bytes());
    let expected = engine.encode(mac.finalize().into_bytes());
    let signatures = got.header("webhook-signature").expect("webhook-signature");
    assert!(
        signatures
            .split(' ')
            .filter_map(|s| s.strip_prefix("v1,"))
            .any(|s| s == expected),
        "one v1 signature verifies: {signatures}"
    );
    t
}

fn now_seconds(app: &TestApp) -> i64 {
    use botlist::domain::time::Clock;
    app.clock.now().millis() / 1000
}

#[actix_web::test]
async fn a_v1_vote_verifies_as_the_2026_receivers_check_it_and_each_retry_is_signed_afresh() {
    let app = webhook_app().await;
    let hook = receiver(&[Reply::Status(500)]).await;
    let bot = bot_with_hook(&app, 42, &hook, "v1").await;
    let body = json!({ "user_id": "77", "username": "ada", "avatar": "https://cdn.example/a.png" });
    app.admin(
        Method::POST,
        &format!("/admin/bots/{}/votes", bot.id),
        Some(&body),
    )
    .await;
    let first = hook.wait_for(1).await.remove(0);
    let t1 = verify_v1("s3cret", &first, now_seconds(&app));
    let event = first.json();
    assert_eq!(event["type"], "vote.create");
    let data = &event["data"];
    assert!(
        data["id"].as_str().expect("an id").parse::<u64>().is_ok(),
        "{data}"
    );
    assert_eq!(data["weight"], 1);
    assert_eq!(data["created_at"], "2026-11-15T12:00:00.000Z");
    assert_eq!(data["expires_at"], "2026-11-16T00:00:00.000Z");
    assert_eq!(
        data["project"],
        json!({"id": "42", "type": "bot", "platform": "discord", "platform_id": "42"})
    );
    assert_eq!(
        data["user"],
        json!({"id": "77", "platform_id": "77", "name": "ada", "avatar_url": "https://cdn.example/a.png"})
    );
    assert_eq!(data["query"], json!({}));
    // The retry, 40 s later on the service's clock: signed at its own sending, not reused.
    settled(&app, &bot, 1).await;
    app.clock.advance(chrono::Duration::seconds(40));
    let second = hook.wait_for(2).await.remove(1);
    let t2 = verify_v1("s3cret", &second, now_seconds(&app));
    assert_eq!(t2 - t1, 40);
    assert_eq!(second.body, first.body, "the same body");
    assert_eq!(
        second.header("x-topgg-trace"),
        first.header("x-topgg-trace")
    );
}

#[actix_web::test]
async fn a_v1_test_event_names_the_bots_first_owner_with_a_platform_id() {
    let app = webhook_app().await;
    let hook = receiver(&[]).await;
    let plain = app.create_user("noplatform").await;
    let owner = app
        .create_profile(json!({"username": "ada", "platform_id": "160105994217586689"}))
        .await;
    let bot = app
        .create_bot(
            803190510032756736,
            json!({"webhook_url": hook.url, "webhook_secret": "s3cret", "webhook_format": "v1",
                   "owner_ids": [plain["id"], owner["id"]]}),
        )
        .await;
    let response = app
        .admin(
            Method::POST,
            &format!("/admin/bots/{}/webhook/test", bot.id),
            None,
        )
        .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let got = hook.wait_for(1).await.remove(0);
    verify_v1("s3cret", &got, now_seconds(&app));
    assert_eq!(
        got.json(),
        json!({"type": "webhook.test", "data": {
            "project": {"id": "803190510032756736", "type": "bot", "platform": "discord",
                        "platform_id": "803190510032756736"},
            "user": {"id": "160105994217586689", "platform_id": "160105994217586689",
                     "name": "ada", "avatar_url": null},
        }})
    );
    // A redelivery later is signed at its own time, and still verifies.
    settled(&app, &bot, 1).await;
    let id = deliveries(&app, &bot).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    app.clock.advance(chrono::Duration::minutes(10));
    let path = format!("/admin/bots/{}/webhook/deliveries/{id}/redeliver", bot.id);
    assert_eq!(
        app.admin(Method::POST, &path, None).await.status(),
        StatusCode::ACCEPTED
    );
    let again = hook.wait_for(2).await.remove(1);
    let t = verify_v1("s3cret", &again, now_seconds(&app));
    assert_eq!(t, now_seconds(&app));
}

const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[actix_web::test]
async fn a_standard_delivery_verifies_as_the_specification_describes() {
    let app = webhook_app().await;
    let hook = receiver(&[Reply::Status(503)]).await;
    let bot = app
        .create_bot(
            42,
            json!({"webhook_url": hook.url, "webhook_secret": STANDARD_SECRET,
                                "webhook_format": "standard"}),
        )
        .await;
    app.vote_ok(&bot.id, 77).await;
    let first = hook.wait_for(1).await.remove(0);
    let t1 = verify_standard(STANDARD_SECRET, &first, now_seconds(&app));
    let event = first.json();
    assert_eq!(event["type"], "vote.create");
    assert_eq!(event["timestamp"], "2026-11-15T12:00:00.000Z");
    assert_eq!(
        event["data"]["bot"],
        json!({"id": bot.id, "platform_id": "42"})
    );
    assert_eq!(event["data"]["user"]["id"], "77");
    assert_eq!(event["data"]["weight"], 1);
    settled(&app, &bot, 1).await;
    app.clock.advance(chrono::Duration::seconds(1));
    let second = hook.wait_for(2).await.remove(1);
    let t2 = verify_standard(STANDARD_SECRET, &second, now_seconds(&app));
    assert_eq!(t2 - t1, 1, "signed afresh");
    assert_eq!(second.header("webhook-id"), first.header("webhook-id"));
}

#[actix_web::test]
async fn a_v1_or_standard_webhook_is_not_set_without_a_secret() {
    let app = webhook_app().await;
    let hook = receiver(&[]).await;
    for format in ["v1", "standard"] {
        let body = json!({"platform_id": "42", "name": "B", "username": "b",
                          "short_description": "A bot", "webhook_url": hook.url,
                          "webhook_format": format});
        let response = app.admin(Method::POST, "/admin/bots", Some(&body)).await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains("webhook_secret"), "{format}: {message}");
    }
    // A bot without a secret cannot switch to either; nor can a v1 one drop its secret.
    let bot = app
        .create_bot(
            43,
            json!({"webhook_url": hook.url, "webhook_format": "signed"}),
        )
        .await;
    let path = format!("/admin/bots/{}", bot.id);
    for patch in [
        json!({"webhook_format": "v1"}),
        json!({"webhook_format": "standard"}),
    ] {
        let response = app.admin(Method::PATCH, &path, Some(&patch)).await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    let v1 = json!({"webhook_format": "v1", "webhook_secret": "s3cret"});
    assert_eq!(
        app.admin(Method::PATCH, &path, Some(&v1)).await.status(),
        StatusCode::OK
    );
    let unset = json!({"webhook_secret": null});
    let response = app.admin(Method::PATCH, &path, Some(&unset)).await;
    assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
}

#[actix_web::test]
async fn a_standard_secret_must_be_whsec_and_base64() {
    let app = webhook_app().await;
    let hook = receiver(&[]).await;
    for secret in ["s3cret", "whsec_not base64!", "whsec_c2hvcnQ="] {
        let body = json!({"platform_id": "42", "name": "B", "username": "b",
                          "short_description": "A bot", "webhook_url": hook.url,
                          "webhook_secret": secret, "webhook_format": "standard"});
        let response = app.admin(Method::POST, "/admin/bots", Some(&body)).await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains("webhook_secret"), "{message}");
    }
    // A bot with a plain secret cannot switch to `standard` without a new secret.
    let bot = bot_with_hook(&app, 43, &hook, "signed").await;
    let path = format!("/admin/bots/{}", bot.id);
    let to_standard = json!({"webhook_format": "standard"});
    let response = app.admin(Method::PATCH, &path, Some(&to_standard)).await;
    assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    let both = json!({"webhook_format": "standard", "webhook_secret": STANDARD_SECRET});
    assert_eq!(
        app.admin(Method::PATCH, &path, Some(&both)).await.status(),
        StatusCode::OK
    );
    let unknown = json!({"webhook_format": "v2"});
    let message = assert_error(
        app.admin(Method::PATCH, &path, Some(&unknown)).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert!(message.contains("standard"), "{message}");
}

/// CONTRACT section 14: `listing.delisted` is the last delivery a delisted bot is sent, its
/// other deliveries stop: a `vote.expired` that comes due after the delisting is given up
/// (never sent, not even once the listing is approved again).
#[actix_web::test]
async fn a_delisted_bots_pending_deliveries_stop_and_its_delisting_is_the_last_one_sent() {
    let app = webhook_app().await;
    let hook = receiver(&[]).await;
    let bot = app
        .create_bot(
            42,
            json!({ "webhook_url": hook.url, "webhook_events": ["vote.create", "vote.expired", "listing.delisted"] }),
        )
        .await;
    app.vote_ok(&bot.id, 7).await;
    hook.wait_for(1).await;
    let decide = |status: Value| {
        let app = &app;
        let path = format!("/admin/bots/{}", bot.id);
        async move {
            let response = app.admin(Method::PATCH, &path, Some(&status)).await;
            assert_eq!(response.status(), StatusCode::OK);
        }
    };
    decide(json!({ "status": "delisted", "reason": "spam" })).await;
    let all = hook.wait_for(2).await;
    assert!(all[1].body.contains("listing.delisted"), "{}", all[1].body);
    // The voter's 12 hours end while the bot is delisted: its `vote.expired` is given up.
    app.clock
        .advance(chrono::Duration::hours(12) + chrono::Duration::seconds(1));
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    decide(json!({ "status": "approved" })).await;
    for _ in 0..3 {
        app.clock.advance(chrono::Duration::minutes(30));
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    // (The delivery log is the admin API's view of a public bot: read once it is back.)
    let list = deliveries(&app, &bot).await;
    assert_eq!(list.len(), 3, "{list:?}");
    assert_eq!(list[0]["state"], "failed", "{list:?}");
    assert_eq!(hook.all().len(), 2, "nothing after the delisting");
}
