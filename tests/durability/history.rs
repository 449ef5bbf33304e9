//! Vote history and the live stream across kill -9: a reader that reconnects with its last
//! event id gets exactly the votes it missed, and history cursors still work.

use std::io::{BufRead, BufReader};

use reqwest::blocking::{Client, Response};
use reqwest::StatusCode;

use crate::process::Server;

/// Reads `vote` events as (id, voter), skipping comments.
pub(crate) struct Stream {
    lines: std::io::Lines<BufReader<Response>>,
}

impl Stream {
    pub(crate) fn open(server: &Server, bot: &str, token: &str, last: Option<u64>) -> Stream {
        let client = Client::builder().timeout(None).build().expect("client");
        let mut request = client
            .get(format!("{}/bots/{bot}/votes/stream", server.base))
            .header("Authorization", token);
        if let Some(last) = last {
            request = request.header("Last-Event-ID", last.to_string());
        }
        let response = request.send().expect("sent");
        assert_eq!(response.status(), StatusCode::OK);
        Stream {
            lines: BufReader::new(response).lines(),
        }
    }

    pub(crate) fn vote(&mut self) -> (u64, u64) {
        let mut id = None;
        loop {
            let line = self
                .lines
                .next()
                .expect("the stream goes on")
                .expect("reads");
            if let Some(value) = line.strip_prefix("id: ") {
                id = value.parse().ok();
            } else if let Some(data) = line.strip_prefix("data: ") {
                let data: serde_json::Value = serde_json::from_str(data).expect("json");
                let user = data["id"]
                    .as_str()
                    .and_then(|u| u.parse().ok())
                    .expect("user");
                return (id.expect("an id before the data"), user);
            }
        }
    }
}

#[test]
fn a_reader_resumes_after_kill_9_with_exactly_the_votes_it_missed() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    let (bot, token) = server.create_bot(42);
    for user in 1..=3 {
        assert_eq!(server.vote(&bot, user), StatusCode::CREATED);
    }
    server.snapshot();
    let mut stream = Stream::open(&server, &bot, &token, Some(0));
    assert_eq!(stream.vote(), (1, 2));
    assert_eq!(stream.vote(), (2, 3));
    for user in 4..=8 {
        assert_eq!(server.vote(&bot, user), StatusCode::CREATED);
    }
    assert_eq!(stream.vote(), (3, 4), "live after history");
    // The reader stops at id 3; the votes of users 5 to 8 are acknowledged, then the crash.
    let (status, first_page) =
        server.get(&format!("/bots/{bot}/votes/history?limit=3"), Some(&token));
    assert_eq!(status, StatusCode::OK);
    let cursor = first_page["next"].as_str().expect("a cursor").to_owned();
    drop(stream);
    server.kill9();

    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    for user in 9..=10 {
        assert_eq!(server.vote(&bot, user), StatusCode::CREATED);
    }
    let mut stream = Stream::open(&server, &bot, &token, Some(3));
    let resumed: Vec<(u64, u64)> = (0..6).map(|_| stream.vote()).collect();
    assert_eq!(resumed, (4..=9).zip(5..=10).collect::<Vec<_>>());
    assert_eq!(server.vote(&bot, 11), StatusCode::CREATED);
    assert_eq!(stream.vote(), (10, 11), "then live, nothing repeated");

    // A cursor given before the crash reads on after it.
    let (status, second_page) = server.get(
        &format!("/bots/{bot}/votes/history?limit=3&cursor={cursor}"),
        Some(&token),
    );
    assert_eq!(status, StatusCode::OK, "{second_page}");
    let users: Vec<&str> = second_page["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|e| e["id"].as_str().expect("id"))
        .collect();
    assert_eq!(users, ["5", "4", "3"]);
}
