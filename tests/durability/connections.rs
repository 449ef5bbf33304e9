//! The connection cap never locks a new client out: with the default `--max-connections`
//! (10,000) held by idle keep-alive clients, a new client is answered at once, because the
//! longest-idle keep-alive connection is closed to make room. Connections with a request in
//! flight or a vote stream open are never the ones closed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::history::Stream;
use crate::process::Server;

const IDLE: usize = 10_000;

/// Reads one response to `GET /healthz` off a keep-alive connection.
fn read_response(reader: &mut BufReader<TcpStream>) -> bool {
    let mut line = String::new();
    let mut length = 0usize;
    let mut first = true;
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        if first {
            if !line.starts_with("HTTP/1.1 200") {
                return false;
            }
            first = false;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).is_ok()
}

#[test]
fn a_new_client_is_answered_while_the_cap_is_held_by_idle_keep_alive_clients() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Idle clients stay for the whole test: none leaves by the keep-alive timeout.
    let server = Server::start(dir.path(), &["--keep-alive", "600"]);
    let (bot, token) = server.create_bot(42);
    let address = server
        .base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host:port")
        .to_owned();
    // A live vote stream, opened first: the longest idle of all, but never closed.
    let mut stream = Stream::open(&server, &bot, &token, None);

    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        let mut connection = TcpStream::connect(&address).expect("connects");
        connection
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: botlist\r\n\r\n")
            .expect("sent");
        idle.push(connection);
    }
    let mut answered = 0;
    let mut readers: Vec<BufReader<TcpStream>> = idle.into_iter().map(BufReader::new).collect();
    for reader in &mut readers {
        // A connection past the cap that was never taken gets no answer: stop waiting at once.
        reader
            .get_ref()
            .set_read_timeout(Some(Duration::from_secs(3)))
            .expect("timeout set");
        if !read_response(reader) {
            break;
        }
        answered += 1;
    }
    // Past the cap, each new one made room by closing the longest idle.
    assert_eq!(answered, IDLE, "{answered} of {IDLE} answered");

    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let started = Instant::now();
        let response = client
            .get(server.base.replace("/api/v1", "/healthz"))
            .send()
            .expect("a new client is answered");
        assert_eq!(response.status(), StatusCode::OK);
        slowest = slowest.max(started.elapsed());
    }
    // Without room made, the answer would wait for idle clients' 15 s keep-alive to run out.
    assert!(
        slowest < Duration::from_secs(2),
        "answered after {slowest:?}"
    );
    println!("a new client at the cap was answered within {slowest:?}");

    // The stream, busy, was not closed to make room: it still gets votes.
    assert_eq!(server.vote(&bot, 7), StatusCode::CREATED);
    assert_eq!(stream.vote().1, 7);
    drop(readers);
}
