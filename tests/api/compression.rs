//! Compression over real sockets: no stall on a reused connection, static documents compressed
//! once, `HEAD` compressing nothing.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use botlist::config::Settings;

use crate::helpers::{spawn_app, spawn_app_with, test_settings, TestApp};

/// One answer read off a raw connection: its head (lower-cased names) and body as sent.
pub struct RawAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawAnswer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A keep-alive HTTP/1.1 connection written and read by hand, so that nothing between the test
/// and the socket (a client's own buffering or pooling) hides how the server writes.
pub struct RawConnection {
    stream: TcpStream,
    buffered: Vec<u8>,
}

impl RawConnection {
    pub async fn open(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connects");
        Self {
            stream,
            buffered: Vec::new(),
        }
    }

    /// Sends `method path` with `headers`, and reads the whole answer (a `HEAD`'s has no body).
    pub async fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> RawAnswer {
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        self.stream
            .write_all(request.as_bytes())
            .await
            .expect("sent");
        let head_end = self
            .fill_until(|b| find(b, b"\r\n\r\n").map(|i| i + 4))
            .await;
        let head: Vec<u8> = self.buffered.drain(..head_end).collect();
        let head = String::from_utf8(head).expect("an ASCII head");
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .expect("a status line");
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut answer = RawAnswer {
            status,
            headers,
            body: Vec::new(),
        };
        if method == "HEAD" {
            return answer;
        }
        if answer.header("transfer-encoding") == Some("chunked") {
            loop {
                let line_end = self.fill_until(|b| find(b, b"\r\n").map(|i| i + 2)).await;
                let line: Vec<u8> = self.buffered.drain(..line_end).collect();
                let size =
                    usize::from_str_radix(std::str::from_utf8(&line).expect("ASCII").trim(), 16)
                        .expect("a chunk size");
                self.fill_until(|b| (b.len() >= size + 2).then_some(size + 2))
                    .await;
                answer.body.extend(self.buffered.drain(..size));
                self.buffered.drain(..2);
                if size == 0 {
                    break;
                }
            }
        } else {
            let length: usize = answer
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            self.fill_until(|b| (b.len() >= length).then_some(length))
                .await;
            answer.body = self.buffered.drain(..length).collect();
        }
        answer
    }

    /// Reads until `enough` finds what it needs in the buffer; returns what it found.
    async fn fill_until(&mut self, enough: impl Fn(&[u8]) -> Option<usize>) -> usize {
        loop {
            if let Some(found) = enough(&self.buffered) {
                return found;
            }
            // On the heap: a test's future holds several of these reads at once.
            let mut chunk = vec![0u8; 64 * 1024];
            let read = tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut chunk))
                .await
                .expect("the server answers within 10 s")
                .expect("reads");
            assert!(read > 0, "the server closed the connection mid-answer");
            self.buffered.extend_from_slice(&chunk[..read]);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The shortest wait for a delayed ACK.
const STALL: Duration = Duration::from_millis(40);

/// A directory whose pages are large enough to be compressed.
async fn listed() -> TestApp {
    let app = spawn_app().await;
    for n in 0..30 {
        app.create_bot(100 + n, json!({ "long_description": "z".repeat(400) }))
            .await;
    }
    app
}

/// Nagle's algorithm holding the second write of an answer until the client's delayed ACK
/// (at least 40 ms on Linux) shows as one slow answer among fast ones on a reused connection,
/// in every round. A loaded machine may make any one answer slow (and brotli, generic code
/// built without optimization in a test build, costs some 10 ms an answer here); a stall makes
/// every round slow, so the test asks for one round (of a few) whose answers all come in under
/// 40 ms.
#[actix_web::test]
async fn compressed_answers_on_a_reused_connection_do_not_stall() {
    let app = listed().await;
    for encoding in ["gzip", "br"] {
        let mut rounds = Vec::new();
        for _ in 0..5 {
            let mut connection = RawConnection::open(app.port).await;
            let mut took = Vec::new();
            for limit in [24, 20, 10] {
                let path = format!("/api/v1/bots?limit={limit}");
                let started = Instant::now();
                let answer = connection
                    .exchange("GET", &path, &[("Accept-Encoding", encoding)])
                    .await;
                took.push(started.elapsed());
                assert_eq!(answer.status, 200);
                assert_eq!(answer.header("content-encoding"), Some(encoding), "{path}");
            }
            let fast = took.iter().all(|t| *t < STALL);
            rounds.push(took);
            if fast {
                break;
            }
        }
        let last = rounds.last().expect("a round");
        assert!(
            last.iter().all(|t| *t < STALL),
            "with {encoding}, no round of three answers on one connection was fast: {rounds:?}"
        );
    }
}

/// Asks for `path` in `encoding` until the server answers in it (a static document is compressed
/// on a thread of its own after the first ask), and returns that answer.
async fn once_compressed(app: &TestApp, path: &str, encoding: &str) -> RawAnswer {
    let mut connection = RawConnection::open(app.port).await;
    let started = Instant::now();
    loop {
        let answer = connection
            .exchange("GET", path, &[("Accept-Encoding", encoding)])
            .await;
        assert_eq!(answer.status, 200, "{path}");
        assert_eq!(answer.header("vary"), Some("accept-encoding"), "{path}");
        if answer.header("content-encoding") == Some(encoding) {
            return answer;
        }
        assert_eq!(answer.header("content-encoding"), None, "{path}");
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{path} never compressed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn decoded(encoding: &str, body: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    match encoding {
        "br" => brotli::Decompressor::new(body, 4096)
            .read_to_end(&mut out)
            .expect("valid brotli"),
        "gzip" => flate2::read::GzDecoder::new(body)
            .read_to_end(&mut out)
            .expect("valid gzip"),
        other => panic!("no decoder for {other}"),
    };
    out
}

/// The OpenAPI document and a file of the API reference are compressed once and then served
/// from memory: each encoding's bytes are the same every time, with their length, a `Vary`, and
/// the identity's tag weakened; a HEAD gets the same head and no body; a matching
/// `If-None-Match` is 304.
#[actix_web::test]
async fn static_documents_are_compressed_once_and_served_from_memory() {
    let app = spawn_app().await;
    for path in ["/api/v1/openapi.json", "/docs/swagger-ui.css"] {
        let mut connection = RawConnection::open(app.port).await;
        let plain = connection.exchange("GET", path, &[]).await;
        assert_eq!(
            plain.status,
            200,
            "{path}: {}",
            String::from_utf8_lossy(&plain.body)
        );
        assert_eq!(plain.header("content-encoding"), None);
        assert_eq!(plain.header("vary"), Some("accept-encoding"));
        let strong = plain.header("etag").expect("a tag").to_owned();
        assert!(strong.starts_with('"'), "{strong}");
        for encoding in ["br", "gzip"] {
            let first = once_compressed(&app, path, encoding).await;
            assert_eq!(decoded(encoding, &first.body), plain.body, "{path}");
            assert!(first.body.len() < plain.body.len() / 2, "{path}");
            assert_eq!(first.header("etag"), Some(format!("W/{strong}").as_str()));
            let again = connection
                .exchange("GET", path, &[("Accept-Encoding", encoding)])
                .await;
            assert_eq!(again.body, first.body, "{path} is compressed once");
            let head = connection
                .exchange("HEAD", path, &[("Accept-Encoding", encoding)])
                .await;
            assert_eq!(head.status, 200);
            assert_eq!(head.header("content-encoding"), Some(encoding));
            assert_eq!(
                head.header("content-length"),
                Some(first.body.len().to_string().as_str())
            );
            let cached = connection
                .exchange(
                    "GET",
                    path,
                    &[("Accept-Encoding", encoding), ("If-None-Match", &strong)],
                )
                .await;
            assert_eq!(cached.status, 304, "{path}");
            assert!(cached.body.is_empty());
        }
        // An encoding not kept is answered with the identity.
        let deflate = connection
            .exchange("GET", path, &[("Accept-Encoding", "deflate")])
            .await;
        assert_eq!(deflate.header("content-encoding"), None);
        assert_eq!(deflate.body, plain.body);
    }
}

/// A HEAD is answered with the head a GET would get, without compressing anything: the
/// encoding and `Vary` are there, the length (which only compressing would tell) is not.
#[actix_web::test]
async fn a_head_of_a_compressible_route_compresses_nothing() {
    let app = listed().await;
    let mut connection = RawConnection::open(app.port).await;
    for encoding in ["br", "gzip"] {
        let get = connection
            .exchange(
                "GET",
                "/api/v1/bots?limit=30",
                &[("Accept-Encoding", encoding)],
            )
            .await;
        assert_eq!(get.header("content-encoding"), Some(encoding));
        assert!(get.header("content-length").is_some(), "sent in one piece");
        let head = connection
            .exchange(
                "HEAD",
                "/api/v1/bots?limit=30",
                &[("Accept-Encoding", encoding)],
            )
            .await;
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-encoding"), Some(encoding));
        assert_eq!(head.header("vary"), Some("accept-encoding"));
        assert_eq!(head.header("etag"), get.header("etag"));
        assert_eq!(
            head.header("content-length"),
            None,
            "nothing was compressed"
        );
        assert_eq!(head.header("transfer-encoding"), None);
    }
    // And the connection still works after it.
    let after = connection
        .exchange("GET", "/api/v1/bots?limit=1", &[])
        .await;
    assert_eq!(after.status, 200);
}

/// A burst of connections that ended has the allocator give its free memory back (the
/// connections' buffers and the encoders' windows stayed resident before): 280 connections
/// each answered a compressed page, then all closed. The recorder is one per process, so the
/// count is checked as having grown.
#[actix_web::test]
async fn the_end_of_a_burst_of_connections_gives_the_memory_back() {
    // 280 requests from one address: the per-address limit would refuse most of them.
    let app = spawn_app_with(Settings {
        rate_limit: 0,
        ..test_settings()
    })
    .await;
    for n in 0..30 {
        app.create_bot(100 + n, json!({ "long_description": "z".repeat(400) }))
            .await;
    }
    let before = given_back(&app).await;
    let mut connections = Vec::new();
    for _ in 0..280 {
        let mut connection = RawConnection::open(app.port).await;
        let answer = connection
            .exchange("GET", "/api/v1/bots?limit=24", &[("Accept-Encoding", "br")])
            .await;
        assert_eq!(answer.header("content-encoding"), Some("br"));
        connections.push(connection);
    }
    assert_eq!(
        given_back(&app).await,
        before,
        "nothing is given back while the connections are open"
    );
    drop(connections);
    let started = Instant::now();
    while given_back(&app).await == before {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the memory was not given back within 15 s of the burst's end"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `botlist_memory_given_back_total` as `/metrics` shows it.
async fn given_back(app: &TestApp) -> u64 {
    app.metrics_text()
        .await
        .lines()
        .find_map(|line| line.strip_prefix("botlist_memory_given_back_total "))
        .and_then(|value| value.trim().parse().ok())
        .expect("the counter is exposed")
}
