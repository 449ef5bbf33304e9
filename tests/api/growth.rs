//! `GET /bots/:id/stats/history`: server counts and votes per UTC hour or day.

use chrono::Duration;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, test_settings, TestApp, TestBot};
use crate::weekend::{serve_until_stopped, snapshots};

async fn history(app: &TestApp, bot: &str, query: &str) -> Value {
    let response = app.get(&format!("/bots/{bot}/stats/history{query}")).await;
    assert_eq!(response.status(), StatusCode::OK, "{query}");
    response.json().await.expect("json")
}

/// `(at, server_count, votes)` of each point.
fn points(body: &Value) -> Vec<(String, Option<u64>, u64)> {
    body["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| {
            assert_eq!(p.as_object().map(|o| o.len()), Some(3), "{p}");
            (
                p["at"].as_str().expect("at").to_owned(),
                p["server_count"].as_u64(),
                p["votes"].as_u64().expect("votes"),
            )
        })
        .collect()
}

fn point(at: &str, count: Option<u64>, votes: u64) -> (String, Option<u64>, u64) {
    (at.to_owned(), count, votes)
}

async fn post(app: &TestApp, bot: &TestBot, count: u64) {
    app.post_stats(bot, count).await;
}

#[actix_web::test]
async fn by_hour_each_point_has_its_last_count_carried_forward_and_its_votes() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    // The tests start at 2026-11-15T12:00Z.
    app.clock.advance(Duration::minutes(10));
    post(&app, &bot, 100).await;
    app.vote_ok(&bot.id, 1).await;
    app.vote_ok(&bot.id, 2).await;
    app.clock.advance(Duration::hours(2));
    post(&app, &bot, 120).await;
    post(&app, &bot, 125).await;
    app.vote_ok(&bot.id, 3).await;
    let body = history(
        &app,
        &bot.id,
        "?interval=hour&from=2026-11-15T11:30:00Z&to=2026-11-15T15:00:00Z",
    )
    .await;
    assert_eq!(body["interval"], "hour");
    assert_eq!(
        points(&body),
        [
            point("2026-11-15T11:00:00.000Z", None, 0),
            point("2026-11-15T12:00:00.000Z", Some(100), 2),
            point("2026-11-15T13:00:00.000Z", Some(100), 0),
            point("2026-11-15T14:00:00.000Z", Some(125), 1),
        ]
    );
    // `to` is exclusive; an offset other than Z is read as the same instant.
    let body = history(
        &app,
        &bot.id,
        "?interval=hour&from=2026-11-15T13:00:00%2B01:00&to=2026-11-15T13:00:00Z",
    )
    .await;
    assert_eq!(
        points(&body),
        [point("2026-11-15T12:00:00.000Z", Some(100), 2)]
    );
}

#[actix_web::test]
async fn by_day_the_defaults_are_the_last_30_days_and_by_hour_the_last_48_hours() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    post(&app, &bot, 7).await;
    app.vote_ok(&bot.id, 1).await;
    let body = history(&app, &bot.id, "").await;
    assert_eq!(body["interval"], "day");
    let days = points(&body);
    assert_eq!(days.len(), 30);
    assert_eq!(days[0], point("2026-10-17T00:00:00.000Z", None, 0));
    assert_eq!(days[29], point("2026-11-15T00:00:00.000Z", Some(7), 1));
    let hours = points(&history(&app, &bot.id, "?interval=hour").await);
    assert_eq!(hours.len(), 48);
    assert_eq!(hours[0].0, "2026-11-13T13:00:00.000Z");
    assert_eq!(hours[47], point("2026-11-15T12:00:00.000Z", Some(7), 1));
    // Only `from`: up to the current interval; only `to`: 30 intervals before it.
    let from = points(&history(&app, &bot.id, "?from=2026-11-14T05:00:00Z").await);
    assert_eq!(from.len(), 2);
    let to = points(&history(&app, &bot.id, "?to=2026-11-16T00:00:00Z").await);
    assert_eq!(
        (to.len(), to[29].0.as_str()),
        (30, "2026-11-15T00:00:00.000Z")
    );
    // By snowflake too.
    assert_eq!(points(&history(&app, "42", "").await), days);
}

#[actix_web::test]
async fn weekend_votes_count_their_weight_and_the_history_survives_replay_and_snapshots() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = test_settings();
    settings.data_dir = Some(dir.path().to_owned());
    settings.weekend_multiplier = 2;
    // 2026-11-15T12:00Z is a Sunday.
    let (app, stop, task) =
        serve_until_stopped(settings.clone(), crate::helpers::start_time()).await;
    let bot = app.create_bot(42, json!({})).await;
    let snapshot = app
        .admin(reqwest::Method::POST, "/admin/snapshot", None)
        .await;
    assert_eq!(snapshot.status(), StatusCode::OK);
    post(&app, &bot, 10).await;
    app.vote_ok(&bot.id, 1).await;
    app.clock.advance(Duration::hours(13));
    post(&app, &bot, 11).await;
    app.vote_ok(&bot.id, 2).await;
    let query = "?from=2026-11-15T00:00:00Z&to=2026-11-17T00:00:00Z";
    let expected = [
        point("2026-11-15T00:00:00.000Z", Some(10), 2),
        point("2026-11-16T00:00:00.000Z", Some(11), 1),
    ];
    assert_eq!(points(&history(&app, &bot.id, query).await), expected);
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");

    // Replayed from the journal (the last snapshot set aside), then from a snapshot.
    let all = snapshots(dir.path());
    std::fs::remove_file(&all[all.len() - 1]).expect("removed");
    let now = crate::helpers::start_time().plus(Duration::hours(14));
    let (app, stop, task) = serve_until_stopped(settings.clone(), now).await;
    assert_eq!(points(&history(&app, &bot.id, query).await), expected);
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");
    let (app, stop, task) = serve_until_stopped(settings, now).await;
    assert_eq!(points(&history(&app, &bot.id, query).await), expected);
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");
}

#[actix_web::test]
async fn hours_older_than_90_days_are_kept_by_day() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    post(&app, &bot, 5).await;
    app.vote_ok(&bot.id, 1).await;
    app.clock.advance(Duration::hours(1));
    post(&app, &bot, 6).await;
    app.clock.advance(Duration::days(100));
    post(&app, &bot, 9).await;
    let message = assert_error(
        app.get(&format!(
            "/bots/{}/stats/history?interval=hour&from=2026-11-15T00:00:00Z&to=2026-11-16T00:00:00Z",
            bot.id
        ))
        .await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert!(
        message.contains("`from`") && message.contains("90 days"),
        "{message}"
    );
    let body = history(
        &app,
        &bot.id,
        "?from=2026-11-14T00:00:00Z&to=2026-11-17T00:00:00Z",
    )
    .await;
    assert_eq!(
        points(&body),
        [
            point("2026-11-14T00:00:00.000Z", None, 0),
            point("2026-11-15T00:00:00.000Z", Some(6), 1),
            point("2026-11-16T00:00:00.000Z", Some(6), 0),
        ]
    );
}

#[actix_web::test]
async fn an_etag_answers_304_until_a_post_changes_the_history() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let path = format!("/bots/{}/stats/history", bot.id);
    let first = app.get(&path).await;
    let etag = first.headers()["etag"].to_str().expect("ascii").to_owned();
    let again = app.revalidate(&path, &etag).await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    post(&app, &bot, 3).await;
    let changed = app.revalidate(&path, &etag).await;
    assert_eq!(changed.status(), StatusCode::OK);
    // A vote changes it too; another range of the same bot has a validator of its own.
    let etag = changed.headers()["etag"]
        .to_str()
        .expect("ascii")
        .to_owned();
    app.vote_ok(&bot.id, 7).await;
    let voted = app.revalidate(&path, &etag).await;
    assert_eq!(voted.status(), StatusCode::OK);
    let etag = voted.headers()["etag"].to_str().expect("ascii").to_owned();
    let hourly = app
        .revalidate(&format!("{path}?interval=hour"), &etag)
        .await;
    assert_eq!(hourly.status(), StatusCode::OK);
}

#[actix_web::test]
async fn bad_input_is_400_naming_the_parameter() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    for (query, name) in [
        ("interval=week", "`interval`"),
        ("interval=", "`interval`"),
        ("interval=day&interval=hour", "`interval`"),
        ("from=yesterday", "`from`"),
        ("from=2026-11-15", "`from`"),
        ("to=2026-13-01T00:00:00Z", "`to`"),
        ("from=2026-11-15T00:00:00Z&to=2026-11-14T00:00:00Z", "`to`"),
        (
            "from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z",
            "1000 points",
        ),
        (
            "interval=hour&from=2026-11-01T00:00:00Z&to=2026-12-15T00:00:00Z",
            "1000 points",
        ),
        ("from=%zz", "`from`"),
    ] {
        let message = assert_error(
            app.get(&format!("/bots/{}/stats/history?{query}", bot.id))
                .await,
            StatusCode::BAD_REQUEST,
            "bad_request",
        )
        .await;
        assert!(message.contains(name), "{query}: {message}");
    }
    // An empty range has no point.
    let body = history(
        &app,
        &bot.id,
        "?from=2026-11-15T00:00:00Z&to=2026-11-15T00:00:00Z",
    )
    .await;
    assert_eq!(body["points"], json!([]));
    // Exactly 1000 points is allowed.
    let body = history(
        &app,
        &bot.id,
        "?from=2024-02-19T00:00:00Z&to=2026-11-15T00:00:00Z",
    )
    .await;
    assert_eq!(body["points"].as_array().map(Vec::len), Some(1000));
    assert_error(
        app.get("/bots/999/stats/history").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

/// The last point of the default (daily) history of the bot listed as platform id 42.
async fn today(app: &TestApp) -> (String, Option<u64>, u64) {
    let days = points(&history(app, "42", "").await);
    assert_eq!(days.len(), 30);
    days[29].clone()
}

#[actix_web::test]
async fn a_kept_history_shows_every_change_the_clocks_day_and_a_bot_listed_again() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let day = "2026-11-15T00:00:00.000Z";
    // Each answer is asked twice: the second is the kept one.
    for _ in 0..2 {
        assert_eq!(today(&app).await, point(day, None, 0));
    }
    post(&app, &bot, 5).await;
    for _ in 0..2 {
        assert_eq!(today(&app).await, point(day, Some(5), 0));
    }
    app.vote_ok(&bot.id, 1).await;
    for _ in 0..2 {
        assert_eq!(today(&app).await, point(day, Some(5), 1));
    }
    // The same URL means another range on the next day.
    app.clock.advance(Duration::days(1));
    for _ in 0..2 {
        assert_eq!(
            today(&app).await,
            point("2026-11-16T00:00:00.000Z", Some(5), 0)
        );
    }
    // A bot listed again under the same platform id has made as many changes to a history of
    // its own: the URL is the same, the answer is not.
    let deleted = app
        .admin(Method::DELETE, &format!("/admin/bots/{}", bot.id), None)
        .await;
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let again = app.create_bot(42, json!({})).await;
    post(&app, &again, 9).await;
    app.vote_ok(&again.id, 2).await;
    for _ in 0..2 {
        assert_eq!(
            today(&app).await,
            point("2026-11-16T00:00:00.000Z", Some(9), 1)
        );
    }
}
