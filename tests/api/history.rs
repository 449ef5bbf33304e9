//! `GET /bots/:id/votes/history` and `GET /bots/:id/votes/stream`.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app_with, test_settings, TestApp, TestBot};

async fn app() -> TestApp {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.vote_history.heartbeat = Duration::from_millis(100);
    settings.vote_history.max_streams_per_bot = 2;
    spawn_app_with(settings).await
}

async fn page(app: &TestApp, bot: &TestBot, query: &str) -> Value {
    let response = app
        .get_with(
            &format!("/bots/{}/votes/history{query}", bot.id),
            &bot.token,
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK, "{query}");
    response.json().await.expect("json")
}

fn users(page: &Value) -> Vec<u64> {
    page["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|e| {
            e["id"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .expect("an id")
        })
        .collect()
}

#[actix_web::test]
async fn history_is_every_vote_newest_first_with_its_times() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 1).await;
    app.clock.advance(chrono::Duration::minutes(1));
    app.vote_ok(&bot.id, 2).await;
    app.clock.advance(chrono::Duration::hours(12));
    app.vote_ok(&bot.id, 1).await;

    let body = page(&app, &bot, "").await;
    assert_eq!(
        body,
        json!({
            "results": [
                { "id": "1", "username": "user1", "avatar": null,
                  "voted_at": "2026-11-16T00:01:00.000Z", "expires_at": "2026-11-16T12:01:00.000Z" },
                { "id": "2", "username": "user2", "avatar": null,
                  "voted_at": "2026-11-15T12:01:00.000Z", "expires_at": "2026-11-16T00:01:00.000Z" },
                { "id": "1", "username": "user1", "avatar": null,
                  "voted_at": "2026-11-15T12:00:00.000Z", "expires_at": "2026-11-16T00:00:00.000Z" },
            ],
            "next": null,
        })
    );
    let classic: Value = app
        .get_with("/bots/votes/history", &bot.token)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(classic, body, "the classic route shows the token's bot");
}

#[actix_web::test]
async fn a_page_walk_while_votes_arrive_never_repeats_or_skips() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    for user in 1..=120 {
        app.vote_ok(&bot.id, user).await;
    }
    let writer = {
        let client = app.client.clone();
        let url = format!("{}/admin/bots/{}/votes", app.base, bot.id);
        actix_web::rt::spawn(async move {
            for user in 1000..1100u64 {
                let response = client
                    .post(&url)
                    .header("Authorization", crate::helpers::ADMIN)
                    .json(
                        &json!({ "user_id": user.to_string(), "username": format!("user{user}") }),
                    )
                    .send()
                    .await
                    .expect("sent");
                assert_eq!(response.status(), StatusCode::CREATED);
            }
        })
    };
    let mut seen = Vec::new();
    let mut query = "?limit=7".to_owned();
    loop {
        let body = page(&app, &bot, &query).await;
        seen.extend(users(&body));
        match body["next"].as_str() {
            Some(cursor) => query = format!("?limit=7&cursor={cursor}"),
            None => break,
        }
        actix_web::rt::task::yield_now().await;
    }
    writer.await.expect("the writer finished");
    let top = seen[0];
    let expected: Vec<u64> = if top >= 1000 {
        (1000..=top).rev().chain((1..=120).rev()).collect()
    } else {
        (1..=120).rev().collect()
    };
    assert_eq!(seen, expected, "each vote once, in order, none skipped");
    let all = users(&page(&app, &bot, "?limit=1000").await);
    assert_eq!(all.len(), 220);
}

#[actix_web::test]
async fn since_and_until_bound_the_history() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    for user in 1..=6 {
        app.vote_ok(&bot.id, user).await;
        app.clock.advance(chrono::Duration::hours(1));
    }
    // Votes at 12:00 (user 1) .. 17:00 (user 6).
    let body = page(
        &app,
        &bot,
        "?since=2026-11-15T13:00:00Z&until=2026-11-15T16:00:00%2B00:00",
    )
    .await;
    assert_eq!(users(&body), [4, 3, 2], "since inclusive, until exclusive");
    let body = page(&app, &bot, "?since=2026-11-15T14:30:00Z&limit=2").await;
    assert_eq!(users(&body), [6, 5]);
    let cursor = body["next"].as_str().expect("one more");
    let body = page(
        &app,
        &bot,
        &format!("?since=2026-11-15T14:30:00Z&limit=2&cursor={cursor}"),
    )
    .await;
    assert_eq!(users(&body), [4]);
    assert_eq!(body["next"], Value::Null);
    for bad in [
        "?since=yesterday",
        "?until=2026-11-15",
        "?limit=0",
        "?limit=1001",
        "?limit=ten",
        "?limit=1&limit=2",
        "?limit=",
        "?since=",
        "?until=",
    ] {
        let response = app
            .get_with(&format!("/bots/{}/votes/history{bad}", bot.id), &bot.token)
            .await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(
            message.contains("since") || message.contains("until") || message.contains("limit"),
            "{bad}: {message}"
        );
    }
    // An empty cursor is the first page, as if none were given.
    assert_eq!(users(&page(&app, &bot, "?cursor=").await).len(), 6);
}

#[actix_web::test]
async fn a_forged_or_foreign_cursor_is_refused() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let other = app.create_bot(43, json!({})).await;
    for user in 1..=3 {
        app.vote_ok(&bot.id, user).await;
        app.vote_ok(&other.id, user).await;
    }
    let body = page(&app, &bot, "?limit=1").await;
    let cursor = body["next"].as_str().expect("a cursor").to_owned();
    assert_eq!(
        users(&page(&app, &bot, &format!("?limit=1&cursor={cursor}")).await),
        [2]
    );
    let mut forged: Vec<char> = cursor.chars().collect();
    // A different position, keeping the MAC: the 22nd character is in the position bytes.
    forged[21] = if forged[21] == 'A' { 'B' } else { 'A' };
    let forged: String = forged.into_iter().collect();
    let foreign = page(&app, &other, "?limit=1").await["next"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    for bad in [
        forged.as_str(),
        foreign.as_str(),
        "abc",
        "!!",
        &cursor[..30],
    ] {
        let response = app
            .get_with(
                &format!("/bots/{}/votes/history?cursor={bad}", bot.id),
                &bot.token,
            )
            .await;
        let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains("cursor"), "{message}");
    }
}

#[actix_web::test]
async fn history_keeps_votes_for_the_configured_days() {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.vote_history.retention = Some(chrono::Duration::days(2));
    let app = spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 1).await;
    app.clock.advance(chrono::Duration::days(1));
    app.vote_ok(&bot.id, 2).await;
    assert_eq!(users(&page(&app, &bot, "").await), [2, 1]);
    app.clock
        .advance(chrono::Duration::days(1) + chrono::Duration::minutes(1));
    assert_eq!(
        users(&page(&app, &bot, "").await),
        [2],
        "the vote of two days ago is gone, with no vote since"
    );
    app.clock.advance(chrono::Duration::days(1));
    app.vote_ok(&bot.id, 3).await;
    assert_eq!(users(&page(&app, &bot, "").await), [3]);
}

#[actix_web::test]
async fn history_and_stream_are_the_bots_own() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let other = app.create_bot(43, json!({})).await;
    for route in ["history", "stream"] {
        let path = format!("/bots/{}/votes/{route}", bot.id);
        assert_error(
            app.get(&path).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        )
        .await;
        assert_error(
            app.get_with(&path, "not-a-token").await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        )
        .await;
        assert_error(
            app.get_with(&format!("/bots/999/votes/{route}"), &bot.token)
                .await,
            StatusCode::NOT_FOUND,
            "not_found",
        )
        .await;
        assert_error(
            app.get_with(&path, &other.token).await,
            StatusCode::FORBIDDEN,
            "forbidden",
        )
        .await;
        assert_error(
            app.get(&format!("/bots/votes/{route}")).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        )
        .await;
    }
}

/// A Server-Sent Events reader over a real response.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

#[derive(Debug, Default, Clone)]
struct Event {
    id: Option<String>,
    event: Option<String>,
    data: String,
    comment: bool,
}

impl Events {
    async fn open(app: &TestApp, path: &str, token: &str, last: Option<u64>) -> reqwest::Response {
        let mut request = app
            .client
            .get(format!("{}{path}", app.base))
            .header("Authorization", token);
        if let Some(last) = last {
            request = request.header("Last-Event-ID", last.to_string());
        }
        request.send().await.expect("sent")
    }

    async fn start(app: &TestApp, bot: &TestBot, last: Option<u64>) -> Events {
        let response = Self::open(
            app,
            &format!("/bots/{}/votes/stream", bot.id),
            &bot.token,
            last,
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()["content-type"].to_str().ok(),
            Some("text/event-stream")
        );
        Events {
            response,
            buffer: String::new(),
        }
    }

    /// The next event or comment; `None` when the stream ended.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event::default();
                for line in block.lines() {
                    if line.starts_with(':') {
                        event.comment = true;
                    } else if let Some((field, value)) = line.split_once(": ") {
                        match field {
                            "id" => event.id = Some(value.to_owned()),
                            "event" => event.event = Some(value.to_owned()),
                            "data" => event.data.push_str(value),
                            _ => {}
                        }
                    }
                }
                return Some(event);
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.response.chunk())
                .await
                .expect("the stream sends within 10 s")
                .expect("the stream reads")?;
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
    }

    /// The next vote event: (id, voter id).
    async fn vote(&mut self) -> (u64, u64) {
        loop {
            let event = self.next().await.expect("the stream goes on");
            if event.comment {
                continue;
            }
            assert_eq!(event.event.as_deref(), Some("vote"), "{event:?}");
            let data: Value = serde_json::from_str(&event.data).expect("json data");
            let keys: HashSet<&str> = data
                .as_object()
                .expect("an object")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                keys,
                HashSet::from(["id", "username", "avatar", "voted_at", "expires_at"])
            );
            return (
                event.id.and_then(|id| id.parse().ok()).expect("an id"),
                data["id"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .expect("a user"),
            );
        }
    }
}

#[actix_web::test]
async fn the_stream_sends_votes_in_order_and_resumes_after_the_last_id() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.vote_ok(&bot.id, 1).await;
    let mut events = Events::start(&app, &bot, None).await;
    assert!(events.next().await.expect("opened").comment);
    for user in 2..=6 {
        app.vote_ok(&bot.id, user).await;
    }
    for (position, user) in (1..=5).zip(2..=6) {
        assert_eq!(events.vote().await, (position, user));
    }
    drop(events);

    for user in 7..=9 {
        app.vote_ok(&bot.id, user).await;
    }
    // Resumes from the id after 3: history first, then what comes live, no gap, no repeat.
    let mut events = Events::start(&app, &bot, Some(3)).await;
    for (position, user) in (4..=8).zip(5..=9) {
        assert_eq!(events.vote().await, (position, user));
    }
    app.vote_ok(&bot.id, 10).await;
    assert_eq!(events.vote().await, (9, 10));

    // The classic route, from the very first vote.
    let response = Events::open(&app, "/bots/votes/stream", &bot.token, Some(0)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut classic = Events {
        response,
        buffer: String::new(),
    };
    assert_eq!(classic.vote().await, (1, 2));
}

/// 200 votes from four concurrent voters, 50 each.
async fn vote_in_four_lanes(app: &TestApp, bot: &TestBot) {
    let voters = (0..4u64).map(|lane| async move {
        for user in (1..=50).map(|n| lane * 1000 + n) {
            app.vote_ok(&bot.id, user).await;
        }
    });
    futures_util::future::join_all(voters).await;
}

/// Each reader's first 200 votes, by user, after checking their ids are 0 to 199.
async fn two_hundred_votes_each(readers: &mut [Events]) -> Vec<Vec<u64>> {
    let mut orders = Vec::new();
    for (number, events) in readers.iter_mut().enumerate() {
        let mut users = Vec::new();
        for position in 0..200 {
            let (id, user) = events.vote().await;
            assert_eq!(id, position, "reader {number}");
            users.push(user);
        }
        orders.push(users);
    }
    orders
}

/// Ten readers of one bot, and votes that arrive concurrently and faster than a stream writes:
/// every reader gets every vote once, in order, with consecutive ids.
#[actix_web::test]
async fn many_readers_each_get_every_vote_in_order() {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.vote_history.max_streams_per_bot = 10;
    let app = spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;
    let mut readers = Vec::new();
    for _ in 0..10 {
        let mut events = Events::start(&app, &bot, None).await;
        assert!(events.next().await.expect("opened").comment);
        readers.push(events);
    }
    vote_in_four_lanes(&app, &bot).await;
    let orders = two_hundred_votes_each(&mut readers).await;
    let first_reader = &orders[0];
    for (number, users) in orders.iter().enumerate() {
        assert_eq!(
            users, first_reader,
            "reader {number} saw the votes in another order"
        );
    }
    let mut sorted = first_reader.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 200, "every vote once");
}

/// A stream that has written waits out its write interval before it writes again, so the
/// votes of that time go out together (here the interval is long beside a vote, so most
/// go out in batches): still each once, in order, to every reader, and a reader that resumes
/// from an id in the middle of a batch gets exactly the votes after it.
#[actix_web::test]
async fn votes_within_a_write_interval_go_out_together_each_once_in_order() {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.vote_history.max_streams_per_bot = 4;
    settings.vote_history.write_interval = Duration::from_millis(300);
    let app = spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;
    let mut readers = Vec::new();
    for _ in 0..3 {
        let mut events = Events::start(&app, &bot, None).await;
        assert!(events.next().await.expect("opened").comment);
        readers.push(events);
    }
    vote_in_four_lanes(&app, &bot).await;
    let orders = two_hundred_votes_each(&mut readers).await;
    assert!(orders.iter().all(|users| *users == orders[0]), "one order");
    let mut once = orders[0].clone();
    once.sort_unstable();
    once.dedup();
    assert_eq!(once.len(), 200, "every vote once");

    // Resumed from the middle: history after the id, then live votes, no gap, no repeat.
    let mut resumed = Events::start(&app, &bot, Some(136)).await;
    for (position, user) in (137..200).zip(&orders[0][137..]) {
        assert_eq!(resumed.vote().await, (position, *user));
    }
    for user in 9001..=9003 {
        app.vote_ok(&bot.id, user).await;
    }
    for (position, user) in (200..).zip(9001..=9003) {
        assert_eq!(resumed.vote().await, (position, user));
        assert_eq!(readers[0].vote().await, (position, user));
    }
}

#[actix_web::test]
async fn delisting_the_bot_ends_its_streams() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let mut events = Events::start(&app, &bot, None).await;
    app.vote_ok(&bot.id, 1).await;
    assert_eq!(events.vote().await, (0, 1));
    let response = app
        .admin(
            reqwest::Method::DELETE,
            &format!("/admin/bots/{}", bot.id),
            None,
        )
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    while let Some(event) = events.next().await {
        assert!(
            event.comment,
            "nothing but comments after the delisting: {event:?}"
        );
    }
}

#[actix_web::test]
async fn an_idle_stream_gets_heartbeats_and_a_bad_last_id_is_refused() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let mut events = Events::start(&app, &bot, None).await;
    let opened = events.next().await.expect("opened");
    assert!(opened.comment);
    let beat = events.next().await.expect("a heartbeat");
    assert!(beat.comment && beat.id.is_none(), "{beat:?}");
    let response = app
        .client
        .get(format!("{}/bots/{}/votes/stream", app.base, bot.id))
        .header("Authorization", &bot.token)
        .header("Last-Event-ID", "seven")
        .send()
        .await
        .expect("sent");
    let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    assert!(message.contains("Last-Event-ID"), "{message}");
    // Digits past u64 are still an id (past every vote), as the schema's pattern says.
    drop(events);
    let response = app
        .client
        .get(format!("{}/bots/{}/votes/stream", app.base, bot.id))
        .header("Authorization", &bot.token)
        .header("Last-Event-ID", "89846761039928811324")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
}

#[actix_web::test]
async fn streams_past_the_limit_are_refused_with_429() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let first = Events::start(&app, &bot, None).await;
    let second = Events::start(&app, &bot, None).await;
    let path = format!("/bots/{}/votes/stream", bot.id);
    let refused = Events::open(&app, &path, &bot.token, None).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.expect("json");
    assert!(body["retry_after"].as_u64().is_some(), "{body}");
    drop(first);
    drop(second);
    assert_eq!(
        open_once_a_place_is_free(&app, &path, &bot.token).await,
        StatusCode::OK,
        "a closed stream gives its place back"
    );
}

/// Opens a stream, trying again for up to two seconds while the bot's places are all taken:
/// a place comes back a moment after its stream's client closes, when the server reads that.
async fn open_once_a_place_is_free(app: &TestApp, path: &str, token: &str) -> StatusCode {
    let mut status = StatusCode::TOO_MANY_REQUESTS;
    for _ in 0..100 {
        status = Events::open(app, path, token, None).await.status();
        if status != StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    status
}

/// A client that closes its stream frees its place when the server reads the close, not at
/// the stream's next write (with these settings, ten minutes away).
#[actix_web::test]
async fn a_stream_whose_client_left_gives_its_place_back_at_once() {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.vote_history.max_streams_per_bot = 1;
    settings.vote_history.heartbeat = Duration::from_secs(600);
    let app = spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;
    let mut events = Events::start(&app, &bot, None).await;
    assert!(events.next().await.expect("opened").comment);
    drop(events);
    let path = format!("/bots/{}/votes/stream", bot.id);
    assert_eq!(
        open_once_a_place_is_free(&app, &path, &bot.token).await,
        StatusCode::OK,
        "the closed stream's place"
    );
}

/// A reader that never reads is cut off with an `overflow` event; votes go on at full speed
/// meanwhile, measured against the same ingest with no reader, in the same run.
#[actix_web::test]
async fn a_stalled_reader_is_cut_off_without_slowing_votes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.vote_history.buffer = 16;
    settings.vote_history.max_streams_per_bot = 1;
    settings.vote_history.heartbeat = Duration::from_millis(100);
    let app = spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;

    // Votes with 2 KB avatars: a few MB of events fill what the kernel buffers for a socket.
    async fn ingest(app: &TestApp, bot: &TestBot, users: std::ops::Range<u64>) -> f64 {
        let avatar = format!("https://cdn.example/{}", "a".repeat(2000));
        let started = std::time::Instant::now();
        let count = users.end - users.start;
        for user in users {
            let body = json!({ "user_id": user.to_string(), "username": format!("user{user}"), "avatar": avatar });
            let response = app
                .admin(
                    reqwest::Method::POST,
                    &format!("/admin/bots/{}/votes", bot.id),
                    Some(&body),
                )
                .await;
            assert_eq!(response.status(), StatusCode::CREATED);
        }
        count as f64 / started.elapsed().as_secs_f64()
    }
    // Warm up, then the same ingest alone and beside a reader that reads nothing.
    ingest(&app, &bot, 1..201).await;
    let alone = ingest(&app, &bot, 201..3201).await;
    // A small receive buffer, so that what the kernel holds for the reader stays small.
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("buffer size");
    let mut stalled = socket
        .connect(format!("127.0.0.1:{}", app.port).parse().expect("address"))
        .await
        .expect("connected");
    let request = format!(
        "GET /api/v1/bots/{}/votes/stream HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\n\r\n",
        bot.id, bot.token
    );
    stalled.write_all(request.as_bytes()).await.expect("sent");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let with_stalled = ingest(&app, &bot, 3201..6201).await;
    eprintln!(
        "votes/s alone {alone:.0}, beside a stalled reader {with_stalled:.0} (ratio {:.2})",
        with_stalled / alone
    );
    // The reader fell behind by more than its buffer: its place is given back to a new stream
    // although its connection is still open.
    let path = format!("/bots/{}/votes/stream", bot.id);
    let other = Events::open(&app, &path, &bot.token, None).await;
    assert_eq!(other.status(), StatusCode::OK, "the stalled reader's place");
    drop(other);
    // Now read: what was buffered, then the overflow event, then the end of the stream.
    let mut text = Vec::new();
    let mut chunk = [0u8; 65536];
    let read_all = async {
        loop {
            let n = stalled.read(&mut chunk).await.expect("reads");
            text.extend_from_slice(&chunk[..n]);
            if n == 0 || text.ends_with(b"0\r\n\r\n") {
                break;
            }
        }
    };
    let ended = tokio::time::timeout(Duration::from_secs(10), read_all).await;
    let text = String::from_utf8_lossy(&text);
    assert!(ended.is_ok(), "the stream ends after the overflow event");
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "{}",
        &text[..100.min(text.len())]
    );
    let overflow = text.find("event: overflow").expect("an overflow event");
    let last: u64 = text[..overflow]
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("id: "))
        .and_then(|id| id.parse().ok())
        .expect("votes before the overflow");
    assert!(last < 6199, "cut off before the end: {last}");
    assert!(
        text[overflow..].lines().all(|l| !l.starts_with("id: ")),
        "nothing after it"
    );
    // The client resumes with its last id and gets the rest, once the server has seen the
    // other stream gone (at its next heartbeat).
    let mut resumed = None;
    for _ in 0..100 {
        let response = Events::open(&app, &path, &bot.token, Some(last)).await;
        if response.status() == StatusCode::OK {
            resumed = Some(Events {
                response,
                buffer: String::new(),
            });
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut resumed = resumed.expect("a place once the other stream is gone");
    assert_eq!(resumed.vote().await.0, last + 1);
}

/// The stream's entry is the signed webhook's vote, flattened: same fields, same values.
#[actix_web::test]
async fn the_stream_entry_and_the_webhook_vote_agree() {
    use actix_web::{web, App, HttpResponse, HttpServer};
    use std::sync::{Arc, Mutex};

    let bodies: Arc<Mutex<Vec<String>>> = Arc::default();
    let kept = Arc::clone(&bodies);
    let server = HttpServer::new(move || {
        let kept = Arc::clone(&kept);
        App::new().default_service(web::to(move |body: web::Bytes| {
            kept.lock()
                .expect("lock")
                .push(String::from_utf8_lossy(&body).into_owned());
            async { HttpResponse::Ok().finish() }
        }))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("binds");
    let hook = format!("http://127.0.0.1:{}/hook", server.addrs()[0].port());
    actix_web::rt::spawn(server.run());

    let mut settings = test_settings();
    settings.allow_private_webhooks = true;
    let app = spawn_app_with(settings).await;
    let bot = app
        .create_bot(
            42,
            json!({ "webhook_url": hook, "webhook_format": "signed" }),
        )
        .await;
    let mut events = Events::start(&app, &bot, None).await;
    let vote = json!({ "user_id": "77", "username": "ada", "avatar": "https://cdn.example/a.png" });
    let response = app
        .admin(
            reqwest::Method::POST,
            &format!("/admin/bots/{}/votes", bot.id),
            Some(&vote),
        )
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let entry: Value = loop {
        let event = events.next().await.expect("an event");
        if event.event.as_deref() == Some("vote") {
            break serde_json::from_str(&event.data).expect("json");
        }
    };
    let webhook: Value = loop {
        if let Some(body) = bodies.lock().expect("lock").first() {
            break serde_json::from_str(body).expect("json");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let data = &webhook["data"];
    assert_eq!(
        entry,
        json!({
            "id": data["user"]["id"], "username": data["user"]["username"],
            "avatar": data["user"]["avatar"], "voted_at": data["voted_at"],
            "expires_at": data["expires_at"],
        })
    );
    assert_eq!(entry["avatar"], "https://cdn.example/a.png");
    let page = page(&app, &bot, "").await;
    assert_eq!(page["results"][0], entry, "history shows the same entry");
}

/// A HEAD of the stream answers the stream's headers and ends, on the connection it came on,
/// without taking one of the bot's places: more HEADs than there are places, then every place
/// is still free for a real stream.
#[actix_web::test]
async fn a_head_of_the_stream_answers_its_headers_and_takes_no_place() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let path = format!("/api/v1/bots/{}/votes/stream", bot.id);
    let mut connection = crate::compression::RawConnection::open(app.port).await;
    for _ in 0..4 {
        let head = connection
            .exchange("HEAD", &path, &[("Authorization", &bot.token)])
            .await;
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-type"), Some("text/event-stream"));
    }
    let first = Events::start(&app, &bot, None).await;
    let second = Events::start(&app, &bot, None).await;
    drop((first, second));
}

/// `count` votes of distinct users, in four concurrent lanes, users from `first` on.
async fn votes_in_lanes(app: &TestApp, bot: &TestBot, first: u64, count: u64) {
    let lanes = (0..4u64).map(|lane| async move {
        for user in (first..first + count).skip(lane as usize).step_by(4) {
            app.vote_ok(&bot.id, user).await;
        }
    });
    futures_util::future::join_all(lanes).await;
}

/// What `/metrics` says of the votes of history rendered per poll of a stream's connection:
/// (polls counted, the polls that rendered at most `page`). Every stream of this test
/// process is counted, each held to its own page of at most the default.
async fn replay_polls(app: &TestApp, page: f64) -> (f64, f64) {
    let text = app.metrics_text().await;
    let value = |line: &str| line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
    let count = text
        .lines()
        .find(|l| l.starts_with("botlist_stream_replay_votes_per_poll_count"))
        .and_then(value)
        .expect("the family is in the scrape");
    let within = text
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("botlist_stream_replay_votes_per_poll_bucket{le=\"")?;
            let bound: f64 = rest.split('"').next()?.parse().ok()?;
            (bound == page).then(|| value(l)).flatten()
        })
        .next()
        .expect("a bucket at the page");
    (count, within)
}

/// A replay of many votes from `Last-Event-ID` arrives whole and in order, and the server
/// renders at most one page of it (256 votes) in any poll of the connection: the stream yields
/// after each, so the 3,000 votes here take at least twelve polls, none of them more.
#[actix_web::test]
async fn a_long_replay_arrives_whole_and_in_order_a_page_a_poll() {
    let app = app().await;
    let bot = app.create_bot(42, json!({})).await;
    let (polls_before, _) = replay_polls(&app, 256.0).await;
    votes_in_lanes(&app, &bot, 1, 3_000).await;
    let mut events = Events::start(&app, &bot, Some(0)).await;
    let mut users = HashSet::new();
    for position in 1..3_000 {
        let (id, user) = events.vote().await;
        assert_eq!(id, position, "in order, none skipped or repeated");
        assert!(users.insert(user), "user {user} twice");
    }
    let (polls, within) = replay_polls(&app, 256.0).await;
    assert!(
        polls - polls_before >= (2_999 / 256) as f64,
        "{polls_before} then {polls} polls"
    );
    assert_eq!(within, polls, "no poll rendered more than a page");
}

/// Votes that arrive while a stream replays history (a small page here, so that the replay
/// takes many asks of the bot and the votes land between them) are each sent exactly once,
/// in order, at the junction of history and the live feed as anywhere else.
#[actix_web::test]
async fn votes_during_a_replay_are_sent_once_each() {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.vote_history.max_streams_per_bot = 2;
    settings.vote_history.replay_page = 8;
    let app = spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;
    votes_in_lanes(&app, &bot, 1, 1_000).await;
    let mut events = Events::start(&app, &bot, Some(0)).await;
    let (mut seen, mut users) = (Vec::new(), HashSet::new());
    let reading = async {
        for _ in 1..1_400 {
            let (id, user) = events.vote().await;
            seen.push(id);
            assert!(users.insert(user), "user {user} twice");
        }
    };
    // The new votes are cast as the replay is read.
    tokio::join!(reading, votes_in_lanes(&app, &bot, 10_001, 400));
    assert_eq!(
        seen,
        (1..1_400).collect::<Vec<u64>>(),
        "each id once, in order"
    );
    // And nothing was held back or doubled at the junction: the next vote is the next event.
    app.vote_ok(&bot.id, 20_000).await;
    assert_eq!(events.vote().await, (1_400, 20_000));
    let (polls, within) = replay_polls(&app, 256.0).await;
    assert_eq!(within, polls, "no poll rendered more than a page");
}
