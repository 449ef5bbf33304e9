//! `GET /weekend` and the weekend multiplier, on the manual clock across Friday 00:00 and
//! Monday 00:00 UTC.

use chrono::{Duration, TimeZone, Utc};
use reqwest::StatusCode;
use serde_json::{json, Value};

use botlist::domain::time::Timestamp;

use crate::helpers::{assert_json_utf8, spawn_app, spawn_app_with, test_settings, TestApp};

fn utc(y: i32, m: u32, d: u32, h: u32, min: u32, s: u32) -> Timestamp {
    Timestamp::from_datetime(
        Utc.with_ymd_and_hms(y, m, d, h, min, s)
            .single()
            .expect("a date"),
    )
}

/// 2026-11-20 is a Friday; 2026-11-23 the Monday after it.
fn friday() -> Timestamp {
    utc(2026, 11, 20, 0, 0, 0)
}

fn monday() -> Timestamp {
    utc(2026, 11, 23, 0, 0, 0)
}

async fn weekend_app(multiplier: u32) -> TestApp {
    let mut settings = test_settings();
    settings.weekend_multiplier = multiplier;
    spawn_app_with(settings).await
}

async fn is_weekend(app: &TestApp) -> bool {
    let response = app.get("/weekend").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_json_utf8(&response);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body.as_object().map(|o| o.len()), Some(1), "{body}");
    body["is_weekend"].as_bool().expect("a bool")
}

async fn counts(app: &TestApp, bot: &str) -> (u64, u64) {
    let body: Value = app
        .get(&format!("/bots/{bot}"))
        .await
        .json()
        .await
        .expect("json");
    (
        body["vote_count"].as_u64().expect("a count"),
        body["monthly_vote_count"].as_u64().expect("a count"),
    )
}

#[actix_web::test]
async fn with_a_multiplier_votes_count_n_from_friday_midnight_to_monday_midnight() {
    let app = weekend_app(3).await;
    let bot = app.create_bot(42, json!({})).await;
    let last_thursday_instant = friday().minus(Duration::milliseconds(1));
    app.clock.set(last_thursday_instant);
    assert!(!is_weekend(&app).await);
    app.vote_ok(&bot.id, 1).await;
    assert_eq!(counts(&app, &bot.id).await, (1, 1));

    app.clock.set(friday());
    assert!(is_weekend(&app).await);
    app.vote_ok(&bot.id, 2).await;
    assert_eq!(counts(&app, &bot.id).await, (4, 4));

    app.clock.set(monday().minus(Duration::milliseconds(1)));
    assert!(is_weekend(&app).await);
    app.vote_ok(&bot.id, 3).await;
    assert_eq!(counts(&app, &bot.id).await, (7, 7));

    app.clock.set(monday());
    assert!(!is_weekend(&app).await);
    app.vote_ok(&bot.id, 4).await;
    assert_eq!(counts(&app, &bot.id).await, (8, 8));
    // The stats route and the voters list see the same: four voters, eight votes counted.
    let voters: Value = app
        .get_with(&format!("/bots/{}/votes", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(voters.as_array().map(Vec::len), Some(4));
}

#[actix_web::test]
async fn without_a_multiplier_it_is_never_the_weekend_and_a_vote_counts_one() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    // A Saturday.
    app.clock.set(utc(2026, 11, 21, 12, 0, 0));
    assert!(!is_weekend(&app).await);
    app.vote_ok(&bot.id, 1).await;
    assert_eq!(counts(&app, &bot.id).await, (1, 1));
}

#[actix_web::test]
async fn the_weekend_route_is_public_and_accepts_a_token_good_or_not() {
    let app = weekend_app(2).await;
    let bot = app.create_bot(42, json!({})).await;
    app.clock.set(utc(2026, 11, 21, 12, 0, 0));
    for token in [bot.token.as_str(), "not-a-token", "Bearer x"] {
        let response = app.get_with("/weekend", token).await;
        assert_eq!(response.status(), StatusCode::OK, "{token}");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body, json!({ "is_weekend": true }));
    }
    // Query parameters are not read: the answer is the same.
    assert_eq!(app.get("/weekend?x=1").await.status(), StatusCode::OK);
    let response = app
        .request(reqwest::Method::POST, "/weekend", None)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}

/// Serves until the returned sender fires; the task ends after the last snapshot.
pub async fn serve_until_stopped(
    settings: botlist::config::Settings,
    at: Timestamp,
) -> (
    TestApp,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let clock = std::sync::Arc::new(botlist::domain::time::ManualClock::new(at));
    let app = botlist::startup::Application::build(settings, clock.clone())
        .await
        .expect("the app builds");
    let port = app.port();
    let base = app.base_url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = actix_web::rt::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    let test_app = TestApp {
        root: format!("http://127.0.0.1:{port}"),
        base,
        port,
        client: reqwest::Client::new(),
        clock,
    };
    (test_app, stop, task)
}

pub fn snapshots(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .expect("the directory")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("snapshot-"))
        })
        .collect();
    found.sort();
    found
}

#[actix_web::test]
async fn a_weekend_vote_keeps_its_weight_across_a_replay_of_the_journal_and_a_snapshot() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = test_settings();
    settings.data_dir = Some(dir.path().to_owned());
    settings.weekend_multiplier = 3;
    let (app, stop, task) = serve_until_stopped(settings.clone(), friday()).await;
    let bot = app.create_bot(42, json!({})).await;
    // A snapshot before the votes: they are then only in the journal.
    let snapshot = app
        .admin(reqwest::Method::POST, "/admin/snapshot", None)
        .await;
    assert_eq!(snapshot.status(), StatusCode::OK);
    app.vote_ok(&bot.id, 1).await;
    app.vote_ok(&bot.id, 2).await;
    assert_eq!(counts(&app, &bot.id).await, (6, 6));
    stop.send(()).expect("the server listens");
    task.await
        .expect("joined")
        .expect("a clean stop with a last snapshot");

    // The last snapshot set aside: the votes are replayed from the journal, on a Monday, with
    // the multiplier turned off, and keep the weight they were given.
    let all = snapshots(dir.path());
    assert_eq!(all.len(), 2, "{all:?}");
    std::fs::remove_file(&all[1]).expect("removed");
    settings.weekend_multiplier = 1;
    let (app, stop, task) = serve_until_stopped(settings.clone(), monday()).await;
    assert_eq!(counts(&app, &bot.id).await, (6, 6));
    app.vote_ok(&bot.id, 3).await;
    assert_eq!(counts(&app, &bot.id).await, (7, 7));
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");

    // From the snapshot written on the way out: the same counts.
    let (app, stop, task) = serve_until_stopped(settings, monday()).await;
    assert_eq!(counts(&app, &bot.id).await, (7, 7));
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");
}
