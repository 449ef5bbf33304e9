//! The audit log on the real binary: a change answered 2xx and its entry survive kill -9
//! together, from the journal and from a snapshot after which the journal was cut.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::process::{Server, ADMIN};

fn entries(server: &Server) -> Vec<Value> {
    let (status, page) = server.get("/staff/audit?limit=100", Some(ADMIN));
    assert_eq!(status, StatusCode::OK, "{page}");
    page["results"].as_array().expect("results").clone()
}

#[test]
fn a_change_and_its_entry_survive_kill_9_together() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    let (bot, _) = server.create_bot(800);
    let (status, edited) = server.patch(
        &format!("/admin/bots/{bot}"),
        ADMIN,
        &json!({ "name": "Survivor" }),
    );
    assert_eq!(status, StatusCode::OK, "{edited}");
    // Killed right after the 200: nothing else happens in between.
    server.kill9();

    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    let (_, shown) = server.get(&format!("/bots/{bot}"), None);
    assert_eq!(shown["name"], "Survivor", "the change survived");
    let kept = entries(&server);
    let actions: Vec<&str> = kept
        .iter()
        .map(|e| e["action"].as_str().expect("action"))
        .collect();
    assert_eq!(
        actions,
        ["bot.update", "bot.create"],
        "each entry survived, once"
    );
    assert_eq!(kept[0]["changes"], json!(["name"]));

    // Two snapshots retire the journal they cover: the log is in them.
    server.snapshot();
    let (status, _) = server.patch(
        &format!("/admin/bots/{bot}"),
        ADMIN,
        &json!({ "name": "Again" }),
    );
    assert_eq!(status, StatusCode::OK);
    server.snapshot();
    let (status, _) = server.patch(
        &format!("/admin/bots/{bot}"),
        ADMIN,
        &json!({ "name": "Last" }),
    );
    assert_eq!(status, StatusCode::OK);
    server.kill9();

    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    let (_, shown) = server.get(&format!("/bots/{bot}"), None);
    assert_eq!(shown["name"], "Last");
    let after = entries(&server);
    assert_eq!(after.len(), 4, "{after:?}");
    let ids: Vec<&str> = after
        .iter()
        .map(|e| e["id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        &ids[2..],
        kept.iter()
            .map(|e| e["id"].as_str().expect("id"))
            .collect::<Vec<_>>()
    );
    server.kill9();
}
