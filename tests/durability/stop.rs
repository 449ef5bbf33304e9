//! A stop takes a second: SIGTERM ends every open vote stream with a last comment and a clean
//! end of the response, closes idle connections, writes the last snapshot and exits, within
//! 2 s whatever is open (docs/OPERATIONS.md, "Stop").

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::history::Stream;
use crate::process::{named, Server};

const STREAMS: usize = 100;
const IDLE: usize = 50;

/// The server's `host:port`.
fn address(server: &Server) -> String {
    server
        .base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host:port")
        .to_owned()
}

/// A vote stream opened by hand, read up to its first comment.
fn open_stream(address: &str, bot: &str, token: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).expect("connects");
    write!(
        stream,
        "GET /api/v1/bots/{bot}/votes/stream HTTP/1.1\r\nHost: x\r\nAuthorization: {token}\r\n\r\n"
    )
    .expect("sent");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("votes stream open") {
        let n = stream.read(&mut buf).expect("reads the opening");
        assert!(n > 0, "the stream ended early");
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
    stream
}

#[test]
fn sigterm_with_100_streams_and_idle_connections_exits_within_2_s_with_a_snapshot() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(
        dir.path(),
        &[
            "--snapshot-interval",
            "0",
            "--max-streams-per-bot",
            "200",
            "--keep-alive",
            "600",
        ],
    );
    let (bot, token) = server.create_bot(7);
    assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
    let address = address(&server);
    let streams: Vec<TcpStream> = (0..STREAMS)
        .map(|_| open_stream(&address, &bot, &token))
        .collect();
    // Idle connections: half never sent a request, half are keep-alive after one.
    let mut idle = Vec::new();
    for n in 0..IDLE {
        let mut connection = TcpStream::connect(&address).expect("connects");
        connection
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        if n % 2 == 0 {
            write!(connection, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").expect("sent");
            let mut buf = [0u8; 512];
            assert!(connection.read(&mut buf).expect("answered") > 0);
        }
        idle.push(connection);
    }
    assert!(named(dir.path(), "snapshot-").is_empty());

    eprintln!("{STREAMS} streams and {IDLE} idle connections open");
    let began = Instant::now();
    let exit = server.terminate();
    let took = began.elapsed();
    assert_eq!(exit.code(), Some(0));
    assert!(
        took < Duration::from_secs(2),
        "the stop took {took:?} with {STREAMS} streams and {IDLE} idle connections open"
    );
    assert_eq!(named(dir.path(), "snapshot-").len(), 1, "a last snapshot");

    // Each stream ended cleanly: the last comment, then the end of the chunked response.
    for mut stream in streams {
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        let rest = String::from_utf8_lossy(&rest);
        assert!(rest.contains(": the server is stopping"), "{rest:?}");
        assert!(rest.ends_with("0\r\n\r\n"), "a clean end: {rest:?}");
    }

    // The receiver comes back with its last id and gets what it missed.
    let again = Server::start(dir.path(), &[]);
    assert_eq!(again.vote(&bot, 2), StatusCode::CREATED);
    // Vote ids count from 0: the receiver had vote 0 and gets vote 1, the one it missed.
    let mut resumed = Stream::open(&again, &bot, &token, Some(0));
    assert_eq!(resumed.vote(), (1, 2));
}
