//! `vote.expired` (CONTRACT section 14): a bot that chose it is told, through its webhook and
//! its vote stream, when each voter's 12-hour window ends, on the injected clock, exactly once,
//! across restarts.

use std::time::{Duration, Instant};

use chrono::Duration as Span;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, start_time, test_settings, TestApp, TestBot};
use crate::webhooks::{receiver, Receiver};
use crate::weekend::serve_until_stopped;

fn settings() -> botlist::config::Settings {
    let mut settings = test_settings();
    settings.allow_private_webhooks = true;
    settings.webhook_timeout = Duration::from_millis(500);
    settings
}

/// A bot whose webhook goes to `hook`, with `vote.expired` chosen or not.
async fn hooked_bot(app: &TestApp, platform_id: u64, hook: &Receiver, expired: bool) -> TestBot {
    let bot = app
        .create_bot(
            platform_id,
            json!({ "webhook_url": hook.url, "webhook_secret": "s3cret" }),
        )
        .await;
    if expired {
        choose_expired(app, &bot).await;
    }
    bot
}

/// Chooses `vote.expired` beside the votes, through the admin API.
async fn choose_expired(app: &TestApp, bot: &TestBot) {
    let response = app
        .admin(
            Method::PATCH,
            &format!("/admin/bots/{}", bot.id),
            Some(&json!({ "webhook_events": ["vote.create", "vote.expired"] })),
        )
        .await;
    // A setup step that failed would leave the bot on the default kinds, and every test
    // here would then wait out its deadline for a delivery never sent: say so at once.
    let status = response.status();
    assert_eq!(
        status,
        StatusCode::OK,
        "choosing vote.expired: {}",
        response.text().await.unwrap_or_default()
    );
}

/// The deliveries of `kind` the receiver has had, in order.
fn of_kind(hook: &Receiver, kind: &str) -> Vec<Value> {
    hook.all()
        .iter()
        .map(|received| received.json())
        .filter(|body| body["type"] == kind)
        .collect()
}

/// Waits (real time, bounded) until the receiver has had `n` deliveries of `kind`.
async fn wait_for_kind(hook: &Receiver, kind: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = of_kind(hook, kind);
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} {kind} deliveries arrived",
            got.len()
        );
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Long enough (real time) for the dispatcher's loop to have looked many times (every 25 ms)
/// and for a delivery to have been sent had one been due.
async fn settle() {
    actix_web::rt::time::sleep(Duration::from_millis(400)).await;
}

fn at_ms(value: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(value.as_str().expect("a time"))
        .expect("RFC 3339")
        .timestamp_millis()
}

#[actix_web::test]
async fn a_vote_is_announced_once_when_its_window_ends_and_the_voter_may_vote_again() {
    let app = spawn_app_with(settings()).await;
    let hook = receiver(&[]).await;
    let bot = hooked_bot(&app, 42, &hook, true).await;
    app.vote_ok(&bot.id, 7).await;
    wait_for_kind(&hook, "vote.create", 1).await;
    let voted_at = start_time();

    // A millisecond before the end: nothing.
    app.clock.advance(Span::hours(12) - Span::milliseconds(1));
    settle().await;
    assert!(of_kind(&hook, "vote.expired").is_empty());
    // The voter may not vote yet either.
    assert_eq!(app.vote(&bot.id, 7).await.status(), StatusCode::CONFLICT);

    app.clock.advance(Span::milliseconds(1));
    let expired = wait_for_kind(&hook, "vote.expired", 1).await;
    let body = &expired[0];
    assert_eq!(body["data"]["bot"]["id"], bot.id.as_str(), "{body}");
    assert_eq!(body["data"]["bot"]["platform_id"], "42");
    assert_eq!(body["data"]["user"]["id"], "7");
    assert_eq!(at_ms(&body["data"]["voted_at"]), voted_at.millis());
    assert_eq!(
        at_ms(&body["data"]["expired_at"]),
        voted_at.plus(Span::hours(12)).millis()
    );
    assert!(body["id"].is_string(), "{body}");
    // Exactly once, however long the clock then runs.
    app.clock.advance(Span::hours(30));
    settle().await;
    assert_eq!(of_kind(&hook, "vote.expired").len(), 1);

    // The voter votes again, and that vote's window is announced in its turn.
    app.vote_ok(&bot.id, 7).await;
    wait_for_kind(&hook, "vote.create", 2).await;
    app.clock.advance(Span::hours(12));
    let expired = wait_for_kind(&hook, "vote.expired", 2).await;
    assert_eq!(expired[1]["data"]["user"]["id"], "7");
    assert_ne!(expired[0]["id"], expired[1]["id"]);

    // The delivery log names the kind.
    let log: Vec<Value> = app
        .admin(
            Method::GET,
            &format!("/admin/bots/{}/webhook/deliveries", bot.id),
            None,
        )
        .await
        .json()
        .await
        .expect("json");
    assert!(
        log.iter()
            .any(|delivery| delivery["event"] == "vote.expired"),
        "{log:?}"
    );
}

#[actix_web::test]
async fn windows_ending_together_are_each_announced_and_in_order() {
    let app = spawn_app_with(settings()).await;
    let hook = receiver(&[]).await;
    let bot = hooked_bot(&app, 42, &hook, true).await;
    for user in 1..=3 {
        app.vote_ok(&bot.id, user).await;
    }
    app.clock.advance(Span::minutes(1));
    app.vote_ok(&bot.id, 4).await;
    wait_for_kind(&hook, "vote.create", 4).await;
    // All four at once, after the server was idle past every end.
    app.clock.advance(Span::hours(13));
    let expired = wait_for_kind(&hook, "vote.expired", 4).await;
    let mut users: Vec<&str> = expired
        .iter()
        .map(|body| body["data"]["user"]["id"].as_str().expect("an id"))
        .collect();
    users.sort_unstable();
    assert_eq!(users, ["1", "2", "3", "4"]);
    settle().await;
    assert_eq!(of_kind(&hook, "vote.expired").len(), 4);
}

#[actix_web::test]
async fn a_bot_that_did_not_choose_the_event_is_sent_nothing_new() {
    let app = spawn_app_with(settings()).await;
    let hook = receiver(&[]).await;
    let bot = hooked_bot(&app, 42, &hook, false).await;
    app.vote_ok(&bot.id, 7).await;
    wait_for_kind(&hook, "vote.create", 1).await;
    app.clock.advance(Span::hours(13));
    settle().await;
    assert_eq!(hook.all().len(), 1, "only the vote");
    // Choosing it later announces the windows that end from then on, not those before.
    choose_expired(&app, &bot).await;
    settle().await;
    assert_eq!(hook.all().len(), 1);
    app.vote_ok(&bot.id, 7).await;
    app.clock.advance(Span::hours(12));
    let expired = wait_for_kind(&hook, "vote.expired", 1).await;
    assert_eq!(expired[0]["data"]["user"]["id"], "7");
    settle().await;
    assert_eq!(of_kind(&hook, "vote.expired").len(), 1);
}

#[actix_web::test]
async fn a_window_that_ended_while_the_server_was_stopped_is_announced_once_after_the_start() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = settings();
    settings.data_dir = Some(dir.path().to_owned());
    let start = start_time();
    let hook = receiver(&[]).await;
    let (app, stop, task) = serve_until_stopped(settings.clone(), start).await;
    let bot = hooked_bot(&app, 42, &hook, true).await;
    app.vote_ok(&bot.id, 7).await;
    app.vote_ok(&bot.id, 8).await;
    wait_for_kind(&hook, "vote.create", 2).await;
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");

    // Down past both ends: announced at the start, once each.
    let (app, stop, task) =
        serve_until_stopped(settings.clone(), start.plus(Span::hours(13))).await;
    let expired = wait_for_kind(&hook, "vote.expired", 2).await;
    let mut users: Vec<&str> = expired
        .iter()
        .map(|body| body["data"]["user"]["id"].as_str().expect("an id"))
        .collect();
    users.sort_unstable();
    assert_eq!(users, ["7", "8"]);
    settle().await;
    // Voting again works after the restart.
    assert_eq!(app.vote(&bot.id, 7).await.status(), StatusCode::CREATED);
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");

    // Started again, from the journal (the stop's snapshot set aside, so the announcement is
    // replayed from its record), then from the snapshot that start's stop wrote: the mark
    // holds, nothing is announced twice.
    let all = snapshots(dir.path());
    std::fs::remove_file(&all[all.len() - 1]).expect("removed");
    let (app, stop, task) =
        serve_until_stopped(settings.clone(), start.plus(Span::hours(14))).await;
    settle().await;
    assert_eq!(of_kind(&hook, "vote.expired").len(), 2);
    drop(app);
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");
    let (app, stop, task) = serve_until_stopped(settings, start.plus(Span::hours(15))).await;
    settle().await;
    assert_eq!(of_kind(&hook, "vote.expired").len(), 2);
    // The second vote of user 7 (at 13 h) ends at 25 h, and is announced then, once.
    app.clock.set(start.plus(Span::hours(25)));
    let expired = wait_for_kind(&hook, "vote.expired", 3).await;
    assert_eq!(expired[2]["data"]["user"]["id"], "7");
    settle().await;
    assert_eq!(of_kind(&hook, "vote.expired").len(), 3);
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");
}

fn snapshots(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .expect("reads")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("snapshot-"))
        })
        .collect();
    found.sort();
    found
}

#[actix_web::test]
async fn the_vote_stream_is_told_after_the_vote_in_order() {
    let app = spawn_app_with(settings()).await;
    let hook = receiver(&[]).await;
    let bot = hooked_bot(&app, 42, &hook, true).await;
    let mut stream = Stream::open(&app, &bot).await;
    app.vote_ok(&bot.id, 7).await;
    assert_eq!(stream.next_event().await.0, "vote");
    app.clock.advance(Span::hours(12));
    let (kind, data) = stream.next_event().await;
    assert_eq!(kind, "vote.expired");
    let data: Value = serde_json::from_str(&data).expect("JSON");
    assert_eq!(data["user"]["id"], "7");
    assert_eq!(data["bot"]["id"], bot.id.as_str());
    // A vote after it comes after it.
    app.vote_ok(&bot.id, 7).await;
    assert_eq!(stream.next_event().await.0, "vote");
}

/// A minimal reader of the bot's vote stream.
pub(crate) struct Stream {
    response: reqwest::Response,
    buffer: String,
}

impl Stream {
    pub(crate) async fn open(app: &TestApp, bot: &TestBot) -> Stream {
        let response = app
            .client
            .get(format!("{}/bots/{}/votes/stream", app.base, bot.id))
            .header("Authorization", &bot.token)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK);
        Stream {
            response,
            buffer: String::new(),
        }
    }

    /// The next event's name and data, comments passed over.
    pub(crate) async fn next_event(&mut self) -> (String, String) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = (String::new(), String::new());
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event: ") {
                        event.0 = name.to_owned();
                    } else if let Some(data) = line.strip_prefix("data: ") {
                        event.1.push_str(data);
                    }
                }
                if !event.0.is_empty() {
                    return event;
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.response.chunk())
                .await
                .expect("the stream sends within 10 s")
                .expect("the stream reads")
                .expect("the stream goes on");
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
    }
}

/// Stops a server whose journal may have failed (its stop is then not a clean one).
async fn stop_anyhow(
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let _ = stop.send(());
    let _ = task.await;
}

#[actix_web::test]
async fn an_announcement_the_journal_did_not_keep_is_never_sent_and_is_made_once_after_the_start() {
    use botlist::persist::journal::JournalFault;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = settings();
    settings.data_dir = Some(dir.path().to_owned());
    let start = start_time();
    let hook = receiver(&[]).await;
    let (app, stop, task) = serve_until_stopped(settings.clone(), start).await;
    let bot = hooked_bot(&app, 42, &hook, true).await;
    app.vote_ok(&bot.id, 7).await;
    wait_for_kind(&hook, "vote.create", 1).await;
    settle().await;
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");

    // Past the end, on a disk that refuses every write: the announcement is made, refused by
    // the journal, and never leaves.
    let mut failing = settings.clone();
    failing.journal_fault = JournalFault::FailFrom(1, 5);
    let (_app, stop, task) = serve_until_stopped(failing, start.plus(Span::hours(13))).await;
    settle().await;
    assert!(of_kind(&hook, "vote.expired").is_empty());
    stop_anyhow(stop, task).await;

    // On a good disk: announced once.
    let (_app, stop, task) =
        serve_until_stopped(settings.clone(), start.plus(Span::hours(14))).await;
    wait_for_kind(&hook, "vote.expired", 1).await;
    settle().await;
    assert_eq!(of_kind(&hook, "vote.expired").len(), 1);
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");
}

#[actix_web::test]
async fn a_vote_the_journal_did_not_keep_is_never_announced() {
    use botlist::persist::journal::JournalFault;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = settings();
    settings.data_dir = Some(dir.path().to_owned());
    let start = start_time();
    let hook = receiver(&[]).await;
    let (app, stop, task) = serve_until_stopped(settings.clone(), start).await;
    let bot = hooked_bot(&app, 42, &hook, true).await;
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");

    // A vote the disk refuses: not acknowledged, and its window's end is never announced,
    // neither by this start (whose journal failed) nor by the next.
    let mut failing = settings.clone();
    failing.journal_fault = JournalFault::FailFrom(1, 5);
    let (app, stop, task) = serve_until_stopped(failing, start).await;
    let refused = app.vote(&bot.id, 7).await;
    assert!(refused.status().is_server_error(), "{}", refused.status());
    app.clock.advance(Span::hours(13));
    settle().await;
    stop_anyhow(stop, task).await;
    let (app, stop, task) = serve_until_stopped(settings, start.plus(Span::hours(13))).await;
    app.clock.advance(Span::hours(13));
    settle().await;
    assert!(hook.all().is_empty(), "{:?}", hook.all());
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");
}

#[actix_web::test]
async fn the_openapi_document_names_the_kind_and_describes_its_body() {
    let app = crate::helpers::spawn_app().await;
    let doc: Value = app.get("/openapi.json").await.json().await.expect("json");
    let schemas = &doc["components"]["schemas"];
    let kinds = schemas["Event"]["enum"].as_array().expect("the kinds");
    assert!(kinds.contains(&json!("vote.expired")), "{kinds:?}");
    let body = &schemas["VoteExpiredEvent"];
    for field in ["type", "id", "created_at", "data"] {
        assert!(body["properties"][field].is_object(), "{field}: {body}");
    }
    // Every schema the body refers to is in the document.
    let data = schemas["VoteExpiredData"]["properties"].clone();
    for field in ["bot", "user", "voted_at", "expired_at"] {
        assert!(data[field].is_object(), "{field}: {data}");
    }
    for name in ["VoteExpiredBot", "VoteExpiredUser"] {
        assert!(schemas[name].is_object(), "{name} is missing");
    }
}
