//! Runs the real `botlist` binary on a data directory and talks to it over HTTP.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use reqwest::StatusCode;
use serde_json::{json, Value};

pub const ADMIN: &str = "durability-admin";

pub struct Server {
    child: Child,
    pub base: String,
    pub client: Client,
    /// What the server has written to standard error so far (its warnings).
    pub stderr: Arc<Mutex<String>>,
}

/// How a start ended when the server did not come up.
pub struct Refused {
    pub status: ExitStatus,
    pub stderr: String,
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_botlist")
}

fn command(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(binary());
    command.envs(env.iter().copied());
    command
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--admin-token",
            ADMIN,
            "--workers",
            "2",
        ])
        // Limits are tested in tests/api; here clients write as fast as they can.
        .args(["--rate-limit", "0"])
        .arg("--data-dir")
        .arg(dir)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

impl Server {
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        match Self::try_start(dir, extra) {
            Ok(server) => server,
            Err(refused) => panic!(
                "the server did not start ({}): {}",
                refused.status, refused.stderr
            ),
        }
    }

    /// Starts the server with `env` beside the environment it inherits.
    pub fn start_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        match Self::try_start_env(dir, extra, env) {
            Ok(server) => server,
            Err(refused) => panic!(
                "the server did not start ({}): {}",
                refused.status, refused.stderr
            ),
        }
    }

    /// Starts the server and waits for its `listening on` line, or for it to exit.
    pub fn try_start(dir: &Path, extra: &[&str]) -> Result<Server, Refused> {
        Self::try_start_env(dir, extra, &[])
    }

    pub fn try_start_env(
        dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Server, Refused> {
        Self::try_start_with(command(dir, extra, env))
    }

    /// Starts the server with `prepare` applied to its command first (limits, say).
    pub fn start_with(dir: &Path, extra: &[&str], prepare: impl FnOnce(&mut Command)) -> Server {
        let mut command = command(dir, extra, &[]);
        prepare(&mut command);
        match Self::try_start_with(command) {
            Ok(server) => server,
            Err(refused) => panic!(
                "the server did not start ({}): {}",
                refused.status, refused.stderr
            ),
        }
    }

    fn try_start_with(mut command: Command) -> Result<Server, Refused> {
        let mut child = command.spawn().expect("the binary starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let mut lines = BufReader::new(stdout).lines();
        let base = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(base) = line.strip_prefix("listening on ") {
                        break base.to_owned();
                    }
                }
                _ => {
                    let status = child.wait().expect("waited");
                    let mut stderr = String::new();
                    if let Some(mut err) = child.stderr.take() {
                        let _ = err.read_to_string(&mut stderr);
                    }
                    return Err(Refused { status, stderr });
                }
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let log = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
                    log.push_str(&line);
                    log.push('\n');
                }
            });
        }
        Ok(Server {
            child,
            base,
            stderr: log,
            client: Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .expect("client"),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the server's standard error holds `text`.
    pub fn wait_for_log(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let log = self.log();
            if log.contains(text) || Instant::now() > deadline {
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGKILL through a shared reference, for a server that clients still hold.
    pub fn kill9_now(&self) {
        let status = Command::new("kill")
            .args(["-KILL", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> (StatusCode, Value) {
        let mut request = self.client.get(format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.header("Authorization", token);
        }
        let response = request.send().expect("sent");
        let status = response.status();
        (status, response.json().unwrap_or(Value::Null))
    }

    pub fn post(
        &self,
        path: &str,
        token: &str,
        body: &Value,
    ) -> reqwest::Result<(StatusCode, Value)> {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .header("Authorization", token)
            .json(body)
            .send()?;
        let status = response.status();
        Ok((status, response.json().unwrap_or(Value::Null)))
    }

    pub fn patch(&self, path: &str, token: &str, body: &Value) -> (StatusCode, Value) {
        let response = self
            .client
            .patch(format!("{}{path}", self.base))
            .header("Authorization", token)
            .json(body)
            .send()
            .expect("sent");
        let status = response.status();
        (status, response.json().unwrap_or(Value::Null))
    }

    /// Lists a bot and returns its id and token.
    pub fn create_bot(&self, platform_id: u64) -> (String, String) {
        let body = json!({
            "platform_id": platform_id.to_string(),
            "name": format!("Bot {platform_id}"),
            "username": format!("bot{platform_id}"),
            "short_description": "durable",
        });
        let (status, created) = self.post("/admin/bots", ADMIN, &body).expect("sent");
        assert_eq!(status, StatusCode::CREATED, "{created}");
        (
            created["bot"]["id"].as_str().expect("id").to_owned(),
            created["token"].as_str().expect("token").to_owned(),
        )
    }
}

impl Server {
    pub fn log(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn vote(&self, bot: &str, user: u64) -> StatusCode {
        let body =
            json!({ "user_id": user.to_string(), "username": format!("u{user}"), "avatar": null });
        self.post(&format!("/admin/bots/{bot}/votes"), ADMIN, &body)
            .expect("sent")
            .0
    }

    pub fn snapshot(&self) -> Value {
        let (status, body) = self
            .post("/admin/snapshot", ADMIN, &json!({}))
            .expect("sent");
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    pub fn vote_count(&self, bot: &str) -> u64 {
        self.get(&format!("/bots/{bot}"), None).1["vote_count"]
            .as_u64()
            .expect("a count")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
}

pub fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with(prefix) && !name.ends_with(".corrupt") && !name.ends_with(".tmp")
        })
        .collect()
}
