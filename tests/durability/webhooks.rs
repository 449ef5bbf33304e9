//! A webhook delivery queued or in retry when the process dies is sent after the restart.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::process::{Server, ADMIN};

/// A receiver on a thread: answers 503 to the first request and 200 after; records the
/// delivery id of each request and when it came.
/// Delivery ids with the time each arrived.
type Log = Arc<Mutex<Vec<(String, Instant)>>>;

fn receiver() -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let (mut length, mut id) = (0usize, String::new());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if let Some(v) = lower.strip_prefix("x-botlist-delivery:") {
                    id = v.trim().to_owned();
                }
                line.clear();
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let first = {
                let mut log = log.lock().expect("lock");
                log.push((id, Instant::now()));
                log.len() == 1
            };
            let status = if first {
                "503 Service Unavailable"
            } else {
                "200 OK"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    (url, seen)
}

fn wait_for(seen: &Mutex<Vec<(String, Instant)>>, n: usize) -> Vec<(String, Instant)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = seen.lock().expect("lock").clone();
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} requests arrived",
            got.len()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_delivery_in_retry_when_the_process_dies_is_sent_after_the_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, seen) = receiver();
    let server = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let body = json!({
        "platform_id": "42", "name": "Hooked", "username": "hooked", "short_description": "d",
        "webhook_url": url, "webhook_secret": "s3cret",
    });
    let (status, created) = server.post("/admin/bots", ADMIN, &body).expect("sent");
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let bot = created["bot"]["id"].as_str().expect("id").to_owned();
    assert_eq!(server.vote(&bot, 7), StatusCode::CREATED);

    // The first try gets 503; the retry is due a second later. Kill before it.
    let first = wait_for(&seen, 1);
    server.kill9();
    let restarted_at = Instant::now();
    assert_eq!(
        seen.lock().expect("lock").len(),
        1,
        "the retry had not gone out before the kill"
    );

    let _again = Server::start(dir.path(), &["--allow-private-webhooks"]);
    let all = wait_for(&seen, 2);
    assert_eq!(all[1].0, first[0].0, "the same delivery, after the restart");
    assert!(all[1].1 >= restarted_at);
}
