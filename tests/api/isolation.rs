//! Two applications built in one process share nothing: each state has its own voter table
//! (issue 24), so a vote in one is never seen, numbered or held by the other.

use std::sync::Arc;

use botlist::domain::time::ManualClock;
use botlist::domain::votes::VoterTable;
use botlist::startup::Application;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{serve, start_time, test_settings, TestApp};

/// An application on port 0, with its voter table.
async fn start() -> (TestApp, Arc<VoterTable>) {
    let clock = Arc::new(ManualClock::new(start_time()));
    let app = Application::build(test_settings(), clock.clone())
        .await
        .expect("the app builds");
    let voters = Arc::clone(&app.voters);
    (serve(app, clock), voters)
}

async fn voters_of(app: &TestApp, bot: &crate::helpers::TestBot) -> Value {
    let response = app
        .get_with(&format!("/bots/{}/votes", bot.id), &bot.token)
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("json")
}

#[actix_web::test]
async fn two_applications_in_one_process_share_nothing() {
    let (a, a_voters) = start().await;
    let (b, b_voters) = start().await;
    assert!(!Arc::ptr_eq(&a_voters, &b_voters), "one voter table each");

    // The same bot listed in both, and one user voting in A only.
    let in_a = a.create_bot(700, json!({})).await;
    let in_b = b.create_bot(700, json!({})).await;
    a.vote_ok(&in_a.id, 41).await;
    assert_eq!(a_voters.len(), 1);
    assert_eq!(b_voters.len(), 0, "B's table never saw A's voter");
    assert_eq!(voters_of(&b, &in_b).await, json!([]));
    let bot: Value = b
        .get(&format!("/bots/{}", in_b.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(bot["vote_count"], 0);
    assert_eq!(
        b.get(&format!("/bots/{}", in_a.id)).await.status(),
        StatusCode::NOT_FOUND,
        "A's bot is not listed in B"
    );

    // The same user votes in B under another name: each application shows its own.
    let response = b.vote_as(&in_b.id, 41, "renamed").await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!((a_voters.len(), b_voters.len()), (1, 1));
    assert_eq!(
        voters_of(&a, &in_a).await,
        json!([{ "username": "user41", "id": "41", "avatar": null }])
    );
    assert_eq!(
        voters_of(&b, &in_b).await,
        json!([{ "username": "renamed", "id": "41", "avatar": null }])
    );
}

/// Which of these threads of this process are running (Linux: `/proc/self/task/*/comm`).
fn running(names: &[String]) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir("/proc/self/task")
        .expect("the process's threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .filter(|name| names.contains(name))
        .collect();
    found.sort();
    found
}

#[actix_web::test]
async fn an_applications_telemetry_threads_end_when_it_stops() {
    let clock = Arc::new(ManualClock::new(start_time()));
    let app = Application::build(test_settings(), clock)
        .await
        .expect("the app builds");
    let port = app.port();
    // Named after the application's port: other tests' applications run beside this one.
    let ours = vec![format!("access-{port}"), format!("metrics-{port}")];
    assert_eq!(running(&ours), ours, "each application starts its own");

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = actix_web::rt::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    let response = reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    stop.send(()).expect("the application is serving");
    serving
        .await
        .expect("run_until ran to its end")
        .expect("the application stopped cleanly");
    // `run_until` has joined them; the kernel lets a joined thread's entry go a moment later.
    let mut left = running(&ours);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        left = running(&ours);
    }
    assert_eq!(
        left,
        Vec::<String>::new(),
        "no telemetry thread outlives the application"
    );
}

#[actix_web::test]
async fn an_applications_journal_threads_and_actors_end_when_it_stops() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = test_settings();
    settings.data_dir = Some(dir.path().to_owned());
    settings.actor_threads = 1;
    let clock = Arc::new(ManualClock::new(start_time()));
    let app = Application::build(settings, clock)
        .await
        .expect("the app builds");
    let (journal, registry, port) = (app.journal(), app.registry.clone(), app.port());
    let directory = Arc::clone(&app.directory);
    assert_eq!(journal.threads_running(), 2, "the writer and the publisher");

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = actix_web::rt::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    let created = list_bot(&reqwest::Client::new(), port, "77").await;
    let id = botlist::domain::ids::BotId::parse(created["bot"]["id"].as_str().expect("id"))
        .expect("a bot id");
    let bot = directory.get(id).expect("listed");
    assert!(bot.addr.connected());
    stop.send(()).expect("the application is serving");
    serving
        .await
        .expect("run_until ran to its end")
        .expect("the application stopped cleanly");
    assert_eq!(journal.threads_running(), 0, "the journal's threads ended");
    assert!(!registry.connected(), "the registry stopped");
    assert!(!bot.addr.connected(), "the bots' threads stopped");
    let (_, refused) = journal.submit(&botlist::persist::state::Record::BotDelisted(id));
    assert!(
        refused.wait().await.is_err(),
        "a closed journal takes nothing"
    );
}

/// The graceful stop reaches every worker's connections: an idle keep-alive client is let go at
/// once, rather than holding the stop until its keep-alive (here ten minutes) or the stop's
/// 30 s limit runs out.
#[actix_web::test]
async fn a_stop_lets_idle_keep_alive_clients_go_at_once() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut settings = test_settings();
    settings.keep_alive = std::time::Duration::from_secs(600);
    let clock = Arc::new(ManualClock::new(start_time()));
    let app = Application::build(settings, clock)
        .await
        .expect("the app builds");
    let port = app.port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = actix_web::rt::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    let mut idle = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connected");
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: botlist\r\n\r\n")
        .await
        .expect("sent");
    let mut answer = Vec::new();
    while !String::from_utf8_lossy(&answer).contains(r#"{"status":"ok"}"#) {
        let mut buffer = [0; 1024];
        let read = idle.read(&mut buffer).await.expect("read");
        assert!(read > 0, "the connection stays open after its answer");
        answer.extend_from_slice(&buffer[..read]);
    }
    stop.send(()).expect("the application is serving");
    let limit = std::time::Duration::from_secs(10);
    tokio::time::timeout(limit, serving)
        .await
        .expect("the stop did not wait for the idle client")
        .expect("run_until ran to its end")
        .expect("the application stopped cleanly");
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(limit, idle.read_to_end(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(_)) | Ok(Err(_))),
        "the idle connection was closed"
    );
}

/// By default the bots live on the HTTP workers' threads: the stop lets the connections end,
/// takes the last snapshot while the workers, and the bots on them, still run, and only then
/// ends the workers and the bots with them.
#[actix_web::test]
async fn the_last_snapshot_reaches_the_bots_on_the_http_workers_then_they_end() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = test_settings();
    settings.data_dir = Some(dir.path().to_owned());
    settings.workers = 2;
    assert_eq!(settings.actor_threads, 0, "the bots on the HTTP workers");
    let clock = Arc::new(ManualClock::new(start_time()));
    let app = Application::build(settings.clone(), clock.clone())
        .await
        .expect("the app builds");
    let (registry, port) = (app.registry.clone(), app.port());
    let directory = Arc::clone(&app.directory);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = actix_web::rt::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let created = list_bot(&client, port, "78").await;
    let token = created["token"].as_str().expect("a token").to_owned();
    let id = botlist::domain::ids::BotId::parse(created["bot"]["id"].as_str().expect("id"))
        .expect("a bot id");
    let posted = client
        .post(format!("http://127.0.0.1:{port}/api/v1/bots/{id}/stats"))
        .header("Authorization", &token)
        .json(&json!({ "server_count": 7 }))
        .send()
        .await
        .expect("answered");
    assert_eq!(posted.status(), StatusCode::OK);
    let bot = directory.get(id).expect("listed");
    stop.send(()).expect("the application is serving");
    serving
        .await
        .expect("run_until ran to its end")
        .expect("the last snapshot asked every bot, alive on its worker");
    assert!(!registry.connected(), "the registry stopped");
    assert!(!bot.addr.connected(), "the bots ended with the workers");

    let again = Application::build(settings, clock.clone())
        .await
        .expect("the app builds again");
    let app = serve(again, clock);
    let stats: Value = app
        .get(&format!("/bots/{id}/stats"))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats["server_count"], 7);
}

/// The HTTP workers run, and accept, before the application is loaded: a request sent before
/// it opens waits for it (as it waited in the listen backlog before), then is answered by the
/// app made from what it opened with.
#[actix_web::test]
async fn a_request_sent_before_the_server_opens_is_answered_once_it_opens() {
    use actix_web::{web, App, HttpResponse};
    use botlist::api::connection::{self, ServerOptions, SHUTDOWN_PATIENCE};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bound");
    let port = listener.local_addr().expect("an address").port();
    let options = ServerOptions {
        workers: 2,
        max_connections: 100,
        client_request_timeout: std::time::Duration::from_secs(10),
        client_disconnect_timeout: std::time::Duration::from_secs(1),
        keep_alive: std::time::Duration::from_secs(10),
    };
    let serving = connection::serve(listener, options, |opened: &String| {
        let opened = opened.clone();
        App::new().route(
            "/",
            web::get().to(move || {
                let opened = opened.clone();
                async move { HttpResponse::Ok().body(opened) }
            }),
        )
    })
    .await
    .expect("the workers start");
    assert_eq!(serving.workers.len(), 2, "each worker reports its arbiter");
    let handle = serving.server.handle();
    actix_web::rt::spawn(serving.server);

    let mut early = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connected");
    early
        .write_all(b"GET / HTTP/1.1\r\nHost: botlist\r\n\r\n")
        .await
        .expect("sent");
    serving.opener.open("opened with this".to_owned());
    let mut answer = Vec::new();
    while !String::from_utf8_lossy(&answer).contains("opened with this") {
        let mut buffer = [0; 1024];
        let read = early.read(&mut buffer).await.expect("read");
        assert!(
            read > 0,
            "answered, not closed: {:?}",
            String::from_utf8_lossy(&answer)
        );
        answer.extend_from_slice(&buffer[..read]);
    }
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"));

    // The drain closes the idle connection and finds none left; then the workers stop.
    assert!(serving.drain.drain(&handle, SHUTDOWN_PATIENCE).await);
    let mut rest = Vec::new();
    early.read_to_end(&mut rest).await.expect("closed");
    handle.stop(true).await;
}

/// Lists a bot through the admin API of the application serving on `port`: its answer.
async fn list_bot(client: &reqwest::Client, port: u16, platform_id: &str) -> Value {
    client
        .post(format!("http://127.0.0.1:{port}/api/v1/admin/bots"))
        .header("Authorization", crate::helpers::ADMIN)
        .json(&json!({"platform_id": platform_id, "name": "Bot", "username": "bot", "short_description": "d"}))
        .send()
        .await
        .expect("answered")
        .json()
        .await
        .expect("json")
}
