//! The 12-hour window and the monthly reset, moved by the manual clock, never by sleeping.

use chrono::{Duration, TimeZone, Utc};
use reqwest::StatusCode;
use serde_json::{json, Value};

use botlist::domain::time::Timestamp;

use crate::helpers::spawn_app;

async fn voted(app: &crate::helpers::TestApp, bot: &crate::helpers::TestBot, user: u64) -> u64 {
    let body: Value = app
        .get_with(&format!("/bots/{}/check?userId={user}", bot.id), &bot.token)
        .await
        .json()
        .await
        .expect("json");
    body["voted"].as_u64().expect("a number")
}

#[actix_web::test]
async fn a_vote_is_active_for_exactly_12_hours() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 9).await;
    app.clock
        .advance(Duration::hours(12) - Duration::milliseconds(1));
    assert_eq!(voted(&app, &bot, 9).await, 1);
    assert_eq!(app.vote(&bot.id, 9).await.status(), StatusCode::CONFLICT);
    app.clock.advance(Duration::milliseconds(1));
    assert_eq!(voted(&app, &bot, 9).await, 0);
    app.vote_ok(&bot.id, 9).await;
    assert_eq!(voted(&app, &bot, 9).await, 1);
}

#[actix_web::test]
async fn monthly_votes_read_zero_from_the_first_instant_of_a_new_month() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let last_instant = Utc
        .with_ymd_and_hms(2026, 11, 30, 23, 59, 59)
        .single()
        .expect("date")
        + Duration::milliseconds(999);
    app.clock.set(Timestamp::from_datetime(last_instant));
    app.vote_ok(&bot.id, 1).await;
    app.vote_ok(&bot.id, 2).await;
    let body: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        (
            body["vote_count"].as_u64(),
            body["monthly_vote_count"].as_u64()
        ),
        (Some(2), Some(2))
    );

    app.clock.advance(Duration::milliseconds(1));
    let body: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        (
            body["vote_count"].as_u64(),
            body["monthly_vote_count"].as_u64()
        ),
        (Some(2), Some(0)),
        "no write needed"
    );
    let search: Value = app
        .get("/bots?sort=monthly_votes")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(search["results"][0]["monthly_vote_count"], 0);

    app.vote_ok(&bot.id, 3).await;
    let body: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        (
            body["vote_count"].as_u64(),
            body["monthly_vote_count"].as_u64()
        ),
        (Some(3), Some(1))
    );
}

#[actix_web::test]
async fn monthly_votes_sort_uses_the_current_month() {
    let app = spawn_app().await;
    let old = app.create_bot(1, json!({})).await;
    let new = app.create_bot(2, json!({})).await;
    for user in 1..=3 {
        app.vote_ok(&old.id, user).await;
    }
    app.clock.set(Timestamp::from_datetime(
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0)
            .single()
            .expect("date"),
    ));
    app.vote_ok(&new.id, 1).await;
    let search: Value = app
        .get("/bots?sort=monthly_votes")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(search["results"][0]["id"], new.id.as_str());
    let search: Value = app
        .get("/bots?sort=votes")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(search["results"][0]["id"], old.id.as_str());
}
