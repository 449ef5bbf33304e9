//! No read shows a write that was not acknowledged: after the journal fails, the change whose
//! record failed is in no read, although the actor that made it had already applied it.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::process::{Server, ADMIN};

/// Makes the journal fail at its next rotation: where the next segments would go, directories
/// are in the way. A snapshot asks for that rotation.
fn break_the_journal(server: &Server, dir: &std::path::Path) {
    for seq in 1..=50u64 {
        let path = dir.join(format!("journal-{seq:020}.log"));
        if !path.exists() {
            std::fs::create_dir(&path).expect("created");
            std::fs::write(path.join("x"), b"x").expect("written");
        }
    }
    let (status, _) = server
        .post("/admin/snapshot", ADMIN, &json!({}))
        .expect("sent");
    assert!(status.is_server_error(), "{status}");
}

fn search(server: &Server, query: &str) -> Value {
    let (status, page) = server.get(&format!("/bots?{query}"), None);
    assert_eq!(status, StatusCode::OK, "{page}");
    page
}

#[test]
fn a_refused_write_is_shown_by_no_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &[]);
    let (bot, token) = server.create_bot(42);
    let (other, _) = server.create_bot(43);
    assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
    let stats = json!({ "server_count": 5 });
    let (status, _) = server
        .post(&format!("/bots/{bot}/stats"), &token, &stats)
        .expect("sent");
    assert_eq!(status, StatusCode::OK);
    break_the_journal(&server, dir.path());

    // Each write reaches its bot's actor, which applies it, and is then refused.
    assert_eq!(server.vote(&bot, 2), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.vote(&other, 3), StatusCode::SERVICE_UNAVAILABLE);
    let (status, _) = server
        .post(
            &format!("/bots/{bot}/stats"),
            &token,
            &json!({ "server_count": 50_000 }),
        )
        .expect("sent");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let (status, _) = server.patch(
        &format!("/admin/bots/{bot}"),
        ADMIN,
        &json!({ "name": "Renamed", "featured": true }),
    );
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);

    // The bot's own record, read without its actor.
    let (_, shown) = server.get(&format!("/bots/{bot}"), None);
    assert_eq!(shown["vote_count"], 1, "{shown}");
    assert_eq!(shown["server_count"], 5, "{shown}");
    assert_eq!(shown["name"], "Bot 42", "{shown}");
    assert_eq!(shown["featured"], false, "{shown}");
    let (_, stats) = server.get(&format!("/bots/{bot}/stats"), None);
    assert_eq!(stats["server_count"], 5, "{stats}");
    assert_eq!(server.vote_count(&other), 0);

    // Search: filters, order and totals as acknowledged.
    assert_eq!(search(&server, "q=renamed")["total"], 0);
    assert_eq!(search(&server, "invites=gt10000")["total"], 0);
    assert_eq!(search(&server, "votes=2")["total"], 0);
    let first = search(&server, "sort=votes&limit=1");
    assert_eq!(first["results"][0]["id"], bot.as_str(), "{first}");
    assert_eq!(first["results"][0]["vote_count"], 1, "{first}");

    // Reads through the actor that holds the refused change: refused, never shown.
    let (status, check) = server.get(&format!("/bots/{bot}/check?userId=2"), Some(&token));
    assert!(
        status == StatusCode::SERVICE_UNAVAILABLE || check["voted"] == 0,
        "{status} {check}"
    );
    let (status, voters) = server.get(&format!("/bots/{bot}/votes"), Some(&token));
    assert!(
        status == StatusCode::SERVICE_UNAVAILABLE
            || voters.as_array().is_some_and(|v| v.len() == 1),
        "{status} {voters}"
    );
    // A bot whose actor holds no refused change answers as before.
    let (status, check) = server.get(&format!("/bots/{bot}/check?userId=1"), Some(&token));
    assert!(
        status == StatusCode::SERVICE_UNAVAILABLE || check["voted"] == 1,
        "{status} {check}"
    );
}

const KEPT: u64 = 300_000_000_000_000_001;
const REFUSED: u64 = 300_000_000_000_000_002;

/// The disk fails in one of three ways (injected into the real binary's journal with the hidden
/// `--inject-journal-fault fail-from:1:<errno>`: every write from the first record of this start
/// on fails with that error). Writes are refused with 503; every read route answers 200 from what
/// was acknowledged and shows none of the refused writes.
fn reads_stay_up_while_the_disk(errno: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bot, token, user) = {
        let server = Server::start(dir.path(), &[]);
        let (bot, token) = server.create_bot(42);
        assert_eq!(server.vote(&bot, KEPT), StatusCode::CREATED);
        let (status, _) = server
            .post(
                &format!("/bots/{bot}/stats"),
                &token,
                &json!({ "server_count": 5 }),
            )
            .expect("sent");
        assert_eq!(status, StatusCode::OK);
        let (status, profile) = server
            .post("/admin/users", ADMIN, &json!({ "username": "ada" }))
            .expect("sent");
        assert_eq!(status, StatusCode::CREATED, "{profile}");
        let user = profile["id"].as_str().expect("an id").to_owned();
        server.kill9();
        (bot, token, user)
    };
    let fault = format!("fail-from:1:{errno}");
    let server = Server::start(dir.path(), &["--inject-journal-fault", &fault]);

    // Four writers: each refused, the first while its record is in a failing batch, the later
    // ones by a journal already failed.
    std::thread::scope(|scope| {
        let writes = [
            scope.spawn(|| server.vote(&bot, REFUSED)),
            scope.spawn(|| {
                server
                    .post(
                        &format!("/bots/{bot}/stats"),
                        &token,
                        &json!({ "server_count": 9_999 }),
                    )
                    .expect("sent")
                    .0
            }),
            scope.spawn(|| {
                server
                    .patch(
                        &format!("/admin/bots/{bot}"),
                        ADMIN,
                        &json!({ "name": "Renamed" }),
                    )
                    .0
            }),
            scope.spawn(|| {
                server
                    .post("/admin/users", ADMIN, &json!({ "username": "bob" }))
                    .expect("sent")
                    .0
            }),
        ];
        for write in writes {
            assert_eq!(
                write.join().expect("joined"),
                StatusCode::SERVICE_UNAVAILABLE
            );
        }
    });
    assert_eq!(
        server.vote(&bot, REFUSED + 1),
        StatusCode::SERVICE_UNAVAILABLE
    );

    let refused = [REFUSED.to_string(), (REFUSED + 1).to_string()];
    let read = |path: &str, token: Option<&str>| {
        let (status, body) = server.get(path, token);
        assert_eq!(status, StatusCode::OK, "{errno}: GET {path}: {body}");
        let text = body.to_string();
        for id in &refused {
            assert!(
                !text.contains(id.as_str()),
                "{errno}: GET {path} shows a refused vote: {text}"
            );
        }
        assert!(!text.contains("9999") && !text.contains("Renamed") && !text.contains("bob"));
        body
    };
    assert_eq!(read(&format!("/bots/{bot}"), None)["vote_count"], 1);
    assert_eq!(read(&format!("/bots/{bot}/stats"), None)["server_count"], 5);
    assert_eq!(read("/bots?q=bot", None)["total"], 1);
    let check = format!("/bots/{bot}/check?userId={REFUSED}");
    assert_eq!(read(&check, Some(&token))["voted"], 0);
    let check = format!("/bots/{bot}/check?userId={KEPT}");
    assert_eq!(read(&check, Some(&token))["voted"], 1);
    assert_eq!(
        read(&format!("/bots/check?userId={KEPT}"), Some(&token))["voted"],
        1
    );
    let voters = read(&format!("/bots/{bot}/votes"), Some(&token));
    assert_eq!(voters.as_array().map(Vec::len), Some(1), "{voters}");
    assert_eq!(voters[0]["id"], KEPT.to_string());
    let voters = read("/bots/votes", Some(&token));
    assert_eq!(voters.as_array().map(Vec::len), Some(1), "{voters}");
    let history = read(&format!("/bots/{bot}/votes/history"), Some(&token));
    assert_eq!(
        history["results"].as_array().map(Vec::len),
        Some(1),
        "{history}"
    );
    read(&format!("/users/{user}"), None);
    read(
        &format!("/admin/bots/{bot}/webhook/deliveries"),
        Some(ADMIN),
    );
}

#[test]
fn reads_stay_up_while_the_disk_fails_with_eio() {
    reads_stay_up_while_the_disk("eio");
}

#[test]
fn reads_stay_up_while_the_disk_is_full() {
    reads_stay_up_while_the_disk("enospc");
}

#[test]
fn reads_stay_up_while_the_disk_is_read_only() {
    reads_stay_up_while_the_disk("erofs");
}
