//! Issue 27 at the process level: the data directory's modes and owner, files never opened
//! through a symlink, the admin token kept off the command line, `/metrics` on its own
//! listener, and the demo directory read the same on its first start as after a restart.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::blocking::Client;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::process::{binary, Server, ADMIN};

/// The exit code of a start refused for an unsafe setup (docs/PERSISTENCE.md, "Exit codes").
const UNSAFE: i32 = 6;

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).expect("metadata").mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// `serve` on port 0 with these arguments, no admin flag of the harness's own.
fn serve(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(binary());
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--workers", "1"])
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env("RUST_LOG", "warn")
        .env_remove("BOTLIST_ADMIN_TOKEN")
        .env_remove("BOTLIST_ADMIN_TOKEN_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// A server started by [`serve`]: the lines it printed before `listening on`.
struct Started {
    child: Child,
    printed: Vec<String>,
    base: String,
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the command and waits for `listening on`; Err holds the exit code and standard error.
fn start(mut command: Command) -> Result<Started, (Option<i32>, String)> {
    let mut child = command.spawn().expect("the binary starts");
    let stdout = child.stdout.take().expect("stdout piped");
    let mut lines = BufReader::new(stdout).lines();
    let mut printed = Vec::new();
    for line in lines.by_ref().map_while(Result::ok) {
        if let Some(base) = line.strip_prefix("listening on ") {
            let base = base.to_owned();
            std::thread::spawn(move || for _ in lines {});
            if let Some(stderr) = child.stderr.take() {
                std::thread::spawn(move || for _ in BufReader::new(stderr).lines() {});
            }
            return Ok(Started {
                child,
                printed,
                base,
            });
        }
        printed.push(line);
    }
    let status = child.wait().expect("waited");
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    Err((status.code(), stderr))
}

fn refused(command: Command) -> (Option<i32>, String) {
    match start(command) {
        Ok(started) => panic!("started: {:?}", started.printed),
        Err(refusal) => refusal,
    }
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

fn admin_post(base: &str, token: &str, path: &str, body: &Value) -> StatusCode {
    client()
        .post(format!("{base}{path}"))
        .header("Authorization", token)
        .json(body)
        .send()
        .expect("sent")
        .status()
}

// ---- the data directory ----

#[test]
fn the_data_directory_is_created_0700_and_every_file_in_it_is_0600() {
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("state").join("data");
    let server = Server::start(&dir, &["--snapshot-interval", "0"]);
    let (bot, token) = server.create_bot(42);
    assert_eq!(server.vote(&bot, 1), StatusCode::CREATED);
    // A history cursor makes sure the cursor key is on disk.
    let (status, _) = server.get(&format!("/bots/{bot}/votes/history?limit=1"), Some(&token));
    assert_eq!(status, StatusCode::OK);
    server.snapshot();
    assert_eq!(mode(&dir), 0o700, "the data directory");
    assert_eq!(
        mode(&root.path().join("state")),
        0o700,
        "a parent it created"
    );
    let files = crate::process::files(&dir);
    for name in [
        "botlist.lock",
        "history-cursor.key",
        "journal-",
        "snapshot-",
    ] {
        assert!(
            files.iter().any(|f| f
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(name))),
            "{name} in {files:?}"
        );
    }
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
}

#[test]
fn a_data_directory_group_or_others_can_write_to_is_refused_naming_the_fix() {
    for unsafe_mode in [0o777, 0o770, 0o702] {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("data");
        std::fs::create_dir(&dir).expect("created");
        set_mode(&dir, unsafe_mode);
        let (code, stderr) = refused(serve(&dir, &[]));
        assert_eq!(code, Some(UNSAFE), "{unsafe_mode:o}: {stderr}");
        assert!(
            stderr.contains(&dir.display().to_string()) && stderr.contains("chmod 700"),
            "names the directory and the fix: {stderr}"
        );
        assert_eq!(
            std::fs::read_dir(&dir).expect("read").count(),
            0,
            "nothing was written into it"
        );
    }
}

#[test]
fn a_data_directory_only_others_can_read_is_made_private_with_its_files() {
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("data");
    std::fs::create_dir(&dir).expect("created");
    set_mode(&dir, 0o755);
    let left = dir.join("notes.txt");
    std::fs::write(&left, b"written by an older botlist").expect("written");
    set_mode(&left, 0o644);
    let started = start(serve(&dir, &["--admin-token", ADMIN])).expect("starts");
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&left), 0o600);
    drop(started);
}

#[test]
fn a_data_directory_owned_by_another_user_is_refused() {
    // Only root can give a directory away; elsewhere there is no other user's directory to try.
    // SAFETY: geteuid only reads the process's user id.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("data");
    std::fs::create_dir(&dir).expect("created");
    set_mode(&dir, 0o700);
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown");
    let (code, stderr) = refused(serve(&dir, &[]));
    assert_eq!(code, Some(UNSAFE), "{stderr}");
    assert!(
        stderr.contains("owned by") && stderr.contains("chown"),
        "{stderr}"
    );
}

// ---- symlinks ----

#[test]
fn a_lock_file_that_is_a_symlink_is_refused_and_its_target_untouched() {
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("data");
    std::fs::create_dir(&dir).expect("created");
    set_mode(&dir, 0o700);
    let victim = root.path().join("precious");
    std::fs::write(&victim, b"precious contents").expect("written");
    symlink(&victim, dir.join("botlist.lock")).expect("symlink");
    let (code, stderr) = refused(serve(&dir, &["--admin-token", ADMIN]));
    assert_eq!(code, Some(UNSAFE), "{stderr}");
    assert!(
        stderr.contains("botlist.lock") && stderr.contains("symbolic link"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&victim).expect("read"), b"precious contents");
}

#[test]
fn a_temporary_file_that_is_a_symlink_is_never_written_through() {
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("data");
    std::fs::create_dir(&dir).expect("created");
    set_mode(&dir, 0o700);
    let victim = root.path().join("precious");
    std::fs::write(&victim, b"precious contents").expect("written");
    symlink(&victim, dir.join("history-cursor.key.tmp")).expect("symlink");
    let server = Server::start(&dir, &["--snapshot-interval", "0"]);
    let (bot, token) = server.create_bot(42);
    let (status, _) = server.get(&format!("/bots/{bot}/votes/history?limit=1"), Some(&token));
    assert_eq!(status, StatusCode::OK);
    server.snapshot();
    assert_eq!(std::fs::read(&victim).expect("read"), b"precious contents");
    let key = dir.join("history-cursor.key");
    assert!(!std::fs::symlink_metadata(&key)
        .expect("the key")
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&key).expect("read").len(), 32);
}

// ---- the admin token ----

#[test]
fn an_admin_token_under_16_characters_is_refused_at_start() {
    let root = tempfile::tempdir().expect("temp dir");
    for (how, token) in [("flag", "fifteen-chars-x"), ("env", "short")] {
        let mut command = serve(root.path(), &[]);
        match how {
            "flag" => command.args(["--admin-token", token]),
            _ => command.env("BOTLIST_ADMIN_TOKEN", token),
        };
        let (code, stderr) = refused(command);
        assert_eq!(code, Some(UNSAFE), "{how}: {stderr}");
        assert!(stderr.contains("16 characters"), "{how}: {stderr}");
        assert!(
            !stderr.contains(token),
            "the token is not repeated: {stderr}"
        );
    }
}

#[test]
fn the_admin_token_is_read_from_a_file_named_by_flag_or_environment() {
    let root = tempfile::tempdir().expect("temp dir");
    let file = root.path().join("admin-token");
    let token = "from-a-file-0123456789";
    std::fs::write(&file, format!("{token}\n")).expect("written");
    for how in ["flag", "env"] {
        let dir = root.path().join(format!("data-{how}"));
        let mut command = serve(&dir, &[]);
        match how {
            "flag" => command.arg("--admin-token-file").arg(&file),
            _ => command.env("BOTLIST_ADMIN_TOKEN_FILE", &file),
        };
        let started = start(command).unwrap_or_else(|e| panic!("{how}: {e:?}"));
        let body = json!({ "username": "fromfile" });
        assert_eq!(
            admin_post(&started.base, token, "/admin/users", &body),
            StatusCode::CREATED,
            "{how}: the file's token, without its line break"
        );
    }
    // A short token in the file is refused like one on the command line.
    std::fs::write(&file, "short\n").expect("written");
    let mut command = serve(&root.path().join("data-short"), &[]);
    command.arg("--admin-token-file").arg(&file);
    let (code, stderr) = refused(command);
    assert_eq!(code, Some(UNSAFE), "{stderr}");
    // A file that cannot be read is named.
    let mut command = serve(&root.path().join("data-missing"), &[]);
    command
        .arg("--admin-token-file")
        .arg(root.path().join("missing"));
    let (code, stderr) = refused(command);
    // A setting that cannot be used (exit 7), not an unsafe setup.
    assert_eq!(code, Some(7), "{stderr}");
    assert!(stderr.contains("missing"), "{stderr}");
}

// ---- metrics ----

#[test]
fn metrics_bind_serves_metrics_on_its_own_listener_and_not_on_the_api_address() {
    let root = tempfile::tempdir().expect("temp dir");
    let command = serve(
        root.path(),
        &["--admin-token", ADMIN, "--metrics-bind", "127.0.0.1:0"],
    );
    let started = start(command).expect("starts");
    let metrics_base = started
        .printed
        .iter()
        .find_map(|line| line.strip_prefix("metrics on "))
        .unwrap_or_else(|| panic!("the metrics address is printed: {:?}", started.printed))
        .to_owned();
    let api_root = started.base.trim_end_matches("/api/v1").to_owned();
    let metrics = client()
        .get(format!("{metrics_base}/metrics"))
        .send()
        .expect("sent");
    assert_eq!(metrics.status(), StatusCode::OK);
    let text = metrics.text().expect("text");
    assert!(text.contains("botlist_"), "{text}");
    let on_api = client()
        .get(format!("{api_root}/metrics"))
        .send()
        .expect("sent");
    assert_eq!(on_api.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        client()
            .get(format!("{api_root}/healthz"))
            .send()
            .expect("sent")
            .status(),
        StatusCode::OK
    );
    // Only /metrics is on the metrics listener.
    let other = client()
        .get(format!("{metrics_base}/api/v1/bots"))
        .send()
        .expect("sent");
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
}

// ---- the demo, on its first start and after a restart ----

/// The README's read-only examples: each `curl "$BASE/..."` line without a method of its own or
/// a stream, with the README's own `BOT` and `TOKEN`; (path, whether the token is sent).
fn readme_reads() -> Vec<(String, bool)> {
    let readme = include_str!("../../README.md");
    let value = |name: &str| {
        readme
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("README sets {name}"))
            .to_owned()
    };
    let bot = value("BOT");
    let mut reads = Vec::new();
    for line in readme.lines() {
        let Some(rest) = line.trim().strip_prefix("curl \"$BASE") else {
            continue;
        };
        if line.contains(" -X ") || line.contains(" -N ") || line.trim_end().ends_with('\\') {
            continue;
        }
        let path = rest.split('"').next().expect("a quoted URL");
        reads.push((path.replace("$BOT", &bot), line.contains("$TOKEN")));
    }
    reads
}

fn readme_token() -> String {
    include_str!("../../README.md")
        .lines()
        .find_map(|l| l.strip_prefix("TOKEN="))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("README sets TOKEN")
        .to_owned()
}

fn answers(
    server: &Server,
    reads: &[(String, bool)],
    token: &str,
) -> Vec<(String, StatusCode, Value)> {
    reads
        .iter()
        .map(|(path, with_token)| {
            // The project API takes the same token as `Bearer`, as the README's example sends it.
            let token = if path.starts_with("/projects/") {
                format!("Bearer {token}")
            } else {
                token.to_owned()
            };
            let (status, body) = server.get(path, with_token.then_some(token.as_str()));
            (path.clone(), status, body)
        })
        .collect()
}

#[test]
fn the_readmes_examples_answer_the_same_on_the_first_demo_start_and_after_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reads = readme_reads();
    assert!(reads.len() >= 10, "{reads:?}");
    assert!(reads.iter().any(|(p, _)| p.contains("/check?userId=")));
    let token = readme_token();
    let first = Server::start(dir.path(), &["--demo", "--snapshot-interval", "0"]);
    let fresh = answers(&first, &reads, &token);
    let status = first.terminate();
    assert!(status.success(), "{status}");
    let second = Server::start(dir.path(), &["--demo", "--snapshot-interval", "0"]);
    let restarted = answers(&second, &reads, &token);
    for ((path, status, body), (_, status_after, body_after)) in fresh.iter().zip(&restarted) {
        assert_eq!(*status, StatusCode::OK, "{path}: {body}");
        assert_eq!(
            (status, body),
            (status_after, body_after),
            "{path} on the first start, then after a restart"
        );
    }
    let checks: Vec<&Value> = fresh
        .iter()
        .filter(|(path, ..)| path.contains("check?userId="))
        .map(|(.., body)| body)
        .collect();
    assert_eq!(checks.len(), 2, "both check routes are in the README");
    for check in checks {
        assert_eq!(
            check,
            &json!({ "voted": 1 }),
            "the voter of a minute before start"
        );
    }
}

/// Issue 41, point 7: the demo looks lived in. Its bot's growth history holds every one of its
/// demo votes (all cast in the last 45 days) and a server count that rises day by day to the
/// one `GET /bots/:id/stats` answers.
#[test]
fn the_demo_bots_growth_history_holds_its_votes_and_a_rising_server_count() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bot = include_str!("../../README.md")
        .lines()
        .find_map(|l| l.strip_prefix("BOT="))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("README sets BOT")
        .to_owned();
    let server = Server::start(dir.path(), &["--demo", "--snapshot-interval", "0"]);
    let from = (chrono::Utc::now() - chrono::Duration::days(47)).format("%Y-%m-%dT00:00:00Z");
    let (status, history) = server.get(
        &format!("/bots/{bot}/stats/history?interval=day&from={from}"),
        None,
    );
    assert_eq!(status, StatusCode::OK, "{history}");
    let points = history["points"].as_array().expect("points");
    assert!(points.len() >= 47, "{}", points.len());
    let votes: u64 = points.iter().filter_map(|p| p["votes"].as_u64()).sum();
    let total = server.vote_count(&bot);
    assert!(total > 1_000, "the demo bot is a popular one: {total}");
    assert_eq!(votes, total, "every demo vote is in the history");
    let counts: Vec<u64> = points
        .iter()
        .filter_map(|p| p["server_count"].as_u64())
        .collect();
    assert!(!counts.is_empty(), "the history has server counts");
    let distinct: std::collections::BTreeSet<_> = counts.iter().collect();
    assert!(distinct.len() >= 2, "the count changes: {counts:?}");
    let (_, stats) = server.get(&format!("/bots/{bot}/stats"), None);
    assert_eq!(counts.last().copied(), stats["server_count"].as_u64());
    assert!(counts[0] < *counts.last().expect("a count"), "{counts:?}");
}
