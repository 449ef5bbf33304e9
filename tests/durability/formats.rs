//! Every earlier on-disk format this project has shipped opens (docs/UPGRADING.md): each
//! directory in tests/fixtures/format-v<N> was made by the build that wrote format N
//! (`generate`, then writes journaled after its snapshot, then kill -9), with what that build
//! answered in `expected.json`. Today's binary must serve the same.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::process::Server;

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut found: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("tests/fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().contains("format-v"))
        .collect();
    found.sort();
    found
}

/// A private copy of a fixture's data directory, as an operator's would be.
fn copy(fixture: &Path, to: &Path) {
    std::fs::create_dir(to).expect("made");
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).expect("private");
    for entry in std::fs::read_dir(fixture.join("data")).expect("a data directory") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("a name"));
        std::fs::copy(&path, &target).expect("copied");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("private");
    }
}

#[test]
fn every_earlier_format_opens_with_what_its_build_served() {
    let fixtures = fixtures();
    assert!(!fixtures.is_empty());
    for fixture in fixtures {
        let expected: Value = serde_json::from_slice(
            &std::fs::read(fixture.join("expected.json")).expect("expected.json"),
        )
        .expect("JSON");
        let root = tempfile::tempdir().expect("a directory");
        let dir = root.path().join("data");
        copy(&fixture, &dir);
        let server = Server::start(&dir, &[]);
        let (status, listing) = server.get("/bots?limit=100", None);
        assert!(status.is_success(), "{}: {listing}", fixture.display());
        let bots = listing["results"].as_array().expect("results");
        let mut ids: Vec<&str> = bots.iter().map(|b| b["id"].as_str().expect("id")).collect();
        ids.sort_unstable();
        let want: Vec<&str> = expected["bots"]
            .as_array()
            .expect("bots")
            .iter()
            .map(|b| b.as_str().expect("id"))
            .collect();
        assert_eq!(ids, want, "{}", fixture.display());
        for bot in bots {
            let id = bot["id"].as_str().expect("id");
            assert_eq!(
                bot["vote_count"],
                expected["counts"][id],
                "{}: bot {id}",
                fixture.display()
            );
        }
        let bot = expected["bot"].as_str().expect("bot");
        let (_, one) = server.get(&format!("/bots/{bot}"), None);
        assert_eq!(
            one["vote_count"],
            expected["vote_count"],
            "{}",
            fixture.display()
        );
        assert_eq!(
            one["server_count"],
            expected["server_count"],
            "{}",
            fixture.display()
        );
        served_as_recorded(&server, bot, &expected, &fixture);
        // It takes writes and keeps them, in the current format, across a clean stop.
        assert!(server.vote(bot, 410_000_000_000_000_099).is_success());
        assert_eq!(server.terminate().code(), Some(0), "{}", fixture.display());
        let server = Server::start(&dir, &[]);
        let (_, one) = server.get(&format!("/bots/{bot}"), None);
        let before = expected["vote_count"].as_u64().expect("a count");
        assert_eq!(one["vote_count"], before + 1, "{}", fixture.display());
    }
}

/// What fixtures made since the stats and reviews were recorded also hold: the server count as
/// `GET /bots/:id/stats` answered it, the short description (a later edit, from format 6), and
/// the reviews' count and rating (format 6). Older fixtures lack the keys and skip them.
fn served_as_recorded(server: &Server, bot: &str, expected: &Value, fixture: &Path) {
    if let Some(count) = expected.get("stats_server_count") {
        let (_, stats) = server.get(&format!("/bots/{bot}/stats"), None);
        assert_eq!(&stats["server_count"], count, "{}", fixture.display());
    }
    if let Some(text) = expected.get("short_description") {
        let (_, one) = server.get(&format!("/bots/{bot}"), None);
        assert_eq!(&one["short_description"], text, "{}", fixture.display());
    }
    if let Some(reviews) = expected.get("reviews") {
        let (_, list) = server.get(&format!("/bots/{bot}/reviews"), None);
        assert_eq!(list["count"], reviews["count"], "{}", fixture.display());
        assert_eq!(list["rating"], reviews["rating"], "{}", fixture.display());
    }
}
