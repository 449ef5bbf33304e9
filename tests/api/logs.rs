//! The real binary's logs, in both formats: one line per request with its route pattern and
//! request id, webhook outcomes with the delivery id, and never a token or a secret.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const ADMIN_TOKEN: &str = "admin-log-probe-7f3a9c";
const WEBHOOK_SECRET: &str = "webhook-log-probe-51e0b2";

/// A receiver that answers 500 to the first delivery and 200 to the rest.
fn flaky_receiver() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
    let address = listener.local_addr().expect("an address");
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            // Headers, then the body its Content-Length announces.
            while let Ok(read) = stream.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                request.extend_from_slice(&buffer[..read]);
                let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let status = if n == 0 {
                "500 Internal Server Error"
            } else {
                "200 OK"
            };
            let _ = stream.write_all(
                format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .as_bytes(),
            );
        }
    });
    format!("http://{address}/hook")
}

struct Running {
    child: Child,
    base: String,
    root: String,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(format: &str, dir: &std::path::Path) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_botlist"))
        .args(["serve", "--bind", "127.0.0.1:0", "--workers", "1"])
        .args(["--admin-token", ADMIN_TOKEN, "--allow-private-webhooks"])
        .args(["--log-format", format])
        .arg("--data-dir")
        .arg(dir)
        // Everything, so that no level hides what a leak would look like.
        .env("RUST_LOG", "debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&stderr);
    let pipe = child.stderr.take().expect("stderr piped");
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let mut all = sink.lock().unwrap_or_else(|p| p.into_inner());
            all.push_str(&line);
            all.push('\n');
        }
    });
    let stdout = child.stdout.take().expect("stdout piped");
    let base = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .expect("the server says where it listens");
    let root = base.trim_end_matches("/api/v1").to_owned();
    Running {
        child,
        base,
        root,
        stderr,
    }
}

impl Running {
    fn logs(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn wait_for(&self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let logs = self.logs();
            if logs.contains(what) {
                return logs;
            }
            assert!(Instant::now() < deadline, "no `{what}` in:\n{logs}");
            actix_web::rt::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Uses every secret the service knows of, with request ids of our own, and returns the logs
/// once the webhook was retried and delivered.
async fn exercise(format: &str) -> (String, String, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = start(format, dir.path());
    let client = reqwest::Client::new();
    let created: Value = client
        .post(format!("{}/admin/bots", server.base))
        .header("Authorization", ADMIN_TOKEN)
        .header("X-Request-Id", "log-create")
        .json(&json!({
            "platform_id": "42", "name": "Logged", "username": "logged",
            "short_description": "A bot whose secrets must stay out of logs",
            "webhook_url": flaky_receiver(), "webhook_secret": WEBHOOK_SECRET,
            "webhook_format": "legacy",
        }))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let id = created["bot"]["id"].as_str().expect("an id").to_owned();
    let token = created["token"].as_str().expect("a token").to_owned();

    let stats = client
        .post(format!("{}/bots/{id}/stats", server.base))
        .header("Authorization", &token)
        .header("X-Request-Id", "log-stats")
        .json(&json!({ "server_count": 5 }))
        .send()
        .await
        .expect("sent");
    assert_eq!(stats.status(), StatusCode::OK);
    let vote = client
        .post(format!("{}/admin/bots/{id}/votes", server.base))
        .header("Authorization", ADMIN_TOKEN)
        .json(&json!({ "user_id": "7", "username": "voter", "avatar": null }))
        .send()
        .await
        .expect("sent");
    assert_eq!(vote.status(), StatusCode::CREATED);
    // Client mistakes with the secrets in every place a client could put them.
    for (path, authorization) in [
        (format!("/bots/{id}/check?userId={token}"), token.clone()),
        (format!("/{token}/{ADMIN_TOKEN}"), format!("{token}x")),
        (
            format!("/admin/bots?secret={WEBHOOK_SECRET}"),
            ADMIN_TOKEN.into(),
        ),
    ] {
        let response = client
            .request(Method::GET, format!("{}{path}", server.base))
            .header("Authorization", authorization)
            .header("X-Request-Id", "log-mistake")
            .send()
            .await
            .expect("sent");
        assert!(response.status().is_client_error(), "{path}");
    }
    let metrics = client
        .get(format!("{}/metrics", server.root))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("text");
    let logs = server.wait_for("webhook delivered").await;
    (logs, token, metrics)
}

fn assert_no_secrets(logs: &str, token: &str) {
    for secret in [token, ADMIN_TOKEN, WEBHOOK_SECRET] {
        assert!(!logs.contains(secret), "`{secret}` is in the logs:\n{logs}");
    }
    // Not even the hex part of the bot's token on its own.
    let hex = token.trim_start_matches("blt_");
    assert!(!logs.contains(&hex[..16]), "{logs}");
}

#[actix_web::test]
async fn text_logs_have_a_line_per_request_and_webhook_outcomes_but_no_secret() {
    let (logs, token, metrics) = exercise("text").await;
    assert_no_secrets(&logs, &token);
    assert!(!logs.contains('\u{1b}'), "no colour codes into a pipe");
    let stats_line = logs
        .lines()
        .find(|l| l.contains("request_id=\"log-stats\""))
        .unwrap_or_else(|| panic!("the stats post's line in:\n{logs}"));
    for part in [
        "INFO",
        "method=\"POST\"",
        "route=\"/api/v1/bots/{id}/stats\"",
        "status=200",
        "latency_ms=",
        "rate_key=\"bot\"",
    ] {
        assert!(stats_line.contains(part), "{part} in {stats_line}");
    }
    let mistakes: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("request_id=\"log-mistake\""))
        .collect();
    assert_eq!(mistakes.len(), 3, "{logs}");
    for line in &mistakes {
        assert!(
            line.contains("DEBUG"),
            "a client's mistake is DEBUG: {line}"
        );
    }
    assert!(mistakes.iter().any(|l| l.contains("route=\"unmatched\"")));
    assert!(
        !logs.lines().any(|l| l.contains("ERROR")),
        "nothing here is an error:\n{logs}"
    );
    let retry = logs
        .lines()
        .find(|l| l.contains("webhook attempt failed; retrying"))
        .unwrap_or_else(|| panic!("a retry in:\n{logs}"));
    assert!(
        retry.contains("WARN") && retry.contains("delivery="),
        "{retry}"
    );
    assert!(retry.contains("status=500"), "{retry}");
    let delivered = logs
        .lines()
        .find(|l| l.contains("webhook delivered"))
        .expect("delivered");
    assert!(
        delivered.contains("INFO") && delivered.contains("attempts=2"),
        "{delivered}"
    );

    // The metrics of the same run; this process is the only one counting.
    assert!(
        metrics.contains("botlist_votes_total{outcome=\"accepted\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("botlist_stats_posts_total 1"), "{metrics}");
}

#[actix_web::test]
async fn json_logs_are_one_object_a_line_and_hold_no_secret() {
    let (logs, token, _) = exercise("json").await;
    assert_no_secrets(&logs, &token);
    let lines: Vec<Value> = logs
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let stats = lines
        .iter()
        .find(|l| l["request_id"] == "log-stats")
        .expect("the stats post's line");
    assert_eq!(stats["level"], "INFO");
    assert_eq!(stats["target"], "botlist::access");
    assert_eq!(stats["method"], "POST");
    assert_eq!(stats["route"], "/api/v1/bots/{id}/stats");
    assert_eq!(stats["status"], 200);
    assert_eq!(stats["rate_key"], "bot");
    assert!(stats["latency_ms"].as_f64().is_some());
    let delivered = lines
        .iter()
        .find(|l| l["message"] == "webhook delivered")
        .expect("delivered");
    let retried = lines
        .iter()
        .find(|l| l["message"] == "webhook attempt failed; retrying")
        .expect("retried");
    assert_eq!(retried["level"], "WARN");
    assert!(delivered["delivery"]
        .as_str()
        .is_some_and(|d| d.len() == 36));
    assert_eq!(delivered["delivery"], retried["delivery"]);
    let webhook_metrics_after_delivery = delivered["attempts"].as_u64();
    assert_eq!(webhook_metrics_after_delivery, Some(2));
}

#[actix_web::test]
async fn a_failed_admin_authentication_is_a_warning_with_the_client_address_but_not_the_token() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = start("text", dir.path());
    let guess = "admin-guess-3c9d1e7f0a";
    let response = reqwest::Client::new()
        .post(format!("{}/admin/users", server.base))
        .header("Authorization", guess)
        .json(&json!({ "username": "guessed" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let logs = server.wait_for("admin authentication failed").await;
    let line = logs
        .lines()
        .find(|l| l.contains("admin authentication failed"))
        .expect("the line");
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("client=127.0.0.1"), "{line}");
    assert!(
        !logs.contains(guess),
        "the value tried is never logged:\n{logs}"
    );
    assert!(!logs.contains("3c9d1e7f0a"), "{logs}");
}

#[actix_web::test]
async fn a_failed_webhook_attempt_logs_the_receivers_host_but_not_its_path_or_query() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = start("text", dir.path());
    // A port nothing listens on: every attempt fails to connect.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/hooks/path-secret-8d1e?key=query-secret-4b7c");
    let client = reqwest::Client::new();
    let created: Value = client
        .post(format!("{}/admin/bots", server.base))
        .header("Authorization", ADMIN_TOKEN)
        .json(&json!({
            "platform_id": "43", "name": "Unreachable", "username": "unreachable",
            "short_description": "Its receiver keeps a secret in the path",
            "webhook_url": url,
        }))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let id = created["bot"]["id"].as_str().expect("an id").to_owned();
    let vote = client
        .post(format!("{}/admin/bots/{id}/votes", server.base))
        .header("Authorization", ADMIN_TOKEN)
        .json(&json!({ "user_id": "7", "username": "voter", "avatar": null }))
        .send()
        .await
        .expect("sent");
    assert_eq!(vote.status(), StatusCode::CREATED);
    server.wait_for("webhook receiver did not answer").await;
    let logs = server.wait_for("webhook attempt failed; retrying").await;
    for secret in ["path-secret-8d1e", "query-secret-4b7c", "/hooks"] {
        assert!(!logs.contains(secret), "`{secret}` is in the logs:\n{logs}");
    }
    let line = logs
        .lines()
        .find(|l| l.contains("webhook receiver did not answer"))
        .expect("the line");
    assert!(line.contains("host=127.0.0.1"), "{line}");
}
