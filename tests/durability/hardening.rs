//! Issue 27 at the process level: the demo directory read the same on its first start as
//! after a restart.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::process::Server;

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
            let (status, body) = server.get(path, with_token.then_some(token));
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
