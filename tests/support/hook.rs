//! A webhook receiver on a thread for the tests that run the real binary: it answers every
//! request 200 and keeps each one's delivery id and JSON body, in the order they came.
//! Include it with `#[path = "../support/hook.rs"]` beside `delivery.rs`.

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::delivery::read_delivery;

/// Every request the receiver had: (delivery id, body).
#[derive(Clone, Default)]
pub struct Hook {
    pub url: String,
    got: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Hook {
    pub fn start() -> Hook {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        let url = format!("http://{}/hook", listener.local_addr().expect("address"));
        let got: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let log = Arc::clone(&got);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (delivery, body) = read_delivery(&stream);
                let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                log.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((delivery, body));
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
            }
        });
        Hook { url, got }
    }

    /// Every request of event `kind` so far (every try of a delivery, each counted).
    pub fn of_kind(&self, kind: &str) -> Vec<(String, Value)> {
        self.got
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, body)| body["type"] == kind)
            .cloned()
            .collect()
    }

    /// Waits (at most `within`) until `n` requests of `kind` came, and returns them.
    pub fn wait_for(&self, kind: &str, n: usize, within: Duration) -> Vec<(String, Value)> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.of_kind(kind);
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} {kind} requests came: {got:?}",
                got.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Moves the real processes' clocks: the file `BOTLIST_TEST_CLOCK_OFFSET_FILE` names
/// (src/startup/clock.rs), written whole and renamed into place so no process reads half.
pub struct ClockFile {
    pub path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl ClockFile {
    pub fn new() -> ClockFile {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = ClockFile {
            path: dir.path().join("offset-ms"),
            _dir: dir,
        };
        file.set_ms(0);
        file
    }

    /// Every process on this file reads the system clock plus `offset_ms` from now on (within
    /// the clock's 50 ms between reads).
    pub fn set_ms(&self, offset_ms: i64) {
        let spare = self.path.with_extension("new");
        std::fs::write(&spare, offset_ms.to_string()).expect("written");
        std::fs::rename(&spare, &self.path).expect("renamed");
    }

    /// The variable and value a process needs to run on this clock.
    pub fn env(&self) -> (&'static str, &str) {
        (
            "BOTLIST_TEST_CLOCK_OFFSET_FILE",
            self.path.to_str().expect("a UTF-8 path"),
        )
    }
}
