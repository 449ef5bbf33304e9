//! Property: any sequence of audited operations (and votes, which are not audited, and
//! snapshots, after which the journal is cut), applied live (the real server over HTTP, on a
//! data directory), leaves exactly one entry per change that was answered 2xx; and the log
//! recovered from the files (snapshot and journal) is the live log, entry for entry.

use botlist::persist::recovery::recover;
use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, test_settings, TestApp, ADMIN};

#[derive(Clone, Debug)]
enum Op {
    CreateProfile,
    EditProfile(u8),
    DeleteProfile(u8),
    IssueToken(u8),
    RevokeToken(u8),
    CreateBot,
    EditBot(u8),
    RotateToken(u8),
    DelistBot(u8),
    /// Not audited.
    Vote(u8),
    /// A snapshot: the journal before the older of the two kept is retired.
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::CreateProfile),
        2 => any::<u8>().prop_map(Op::EditProfile),
        1 => any::<u8>().prop_map(Op::DeleteProfile),
        2 => any::<u8>().prop_map(Op::IssueToken),
        1 => any::<u8>().prop_map(Op::RevokeToken),
        2 => Just(Op::CreateBot),
        3 => any::<u8>().prop_map(Op::EditBot),
        1 => any::<u8>().prop_map(Op::RotateToken),
        1 => any::<u8>().prop_map(Op::DelistBot),
        2 => any::<u8>().prop_map(Op::Vote),
        2 => Just(Op::Snapshot),
    ]
}

fn pick(items: &[String], nth: u8) -> Option<String> {
    (!items.is_empty()).then(|| items[usize::from(nth) % items.len()].clone())
}

/// Sends the admin request; whether it was answered 2xx, and its body.
async fn admin(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> (bool, Value) {
    let response = app.admin(method, path, body.as_ref()).await;
    let success = response.status().is_success();
    (success, response.json().await.unwrap_or(Value::Null))
}

async fn live_entries(app: &TestApp) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut path = "/staff/audit?limit=100".to_string();
    loop {
        let response = app
            .request(Method::GET, &path, Some(ADMIN))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK);
        let page: Value = response.json().await.expect("json");
        entries.extend(page["results"].as_array().expect("results").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => path = format!("/staff/audit?limit=100&cursor={next}"),
            None => return entries,
        }
    }
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.data_dir = Some(dir.path().to_owned());
    let app = spawn_app_with(settings).await;
    let (mut profiles, mut tokens, mut bots) = (Vec::new(), Vec::new(), Vec::new());
    let mut changes = 0usize;
    let mut next = 0u32;
    for op in ops {
        next += 1;
        let done = match op {
            Op::CreateProfile => {
                let (ok, body) = admin(
                    &app,
                    Method::POST,
                    "/admin/users",
                    Some(json!({"username": format!("p{next}")})),
                )
                .await;
                if ok {
                    profiles.push(body["id"].as_str().expect("id").to_owned());
                }
                ok
            }
            Op::EditProfile(n) => match pick(&profiles, n) {
                Some(p) => {
                    admin(
                        &app,
                        Method::PATCH,
                        &format!("/admin/users/{p}"),
                        Some(json!({"bio": format!("bio {next}")})),
                    )
                    .await
                    .0
                }
                None => false,
            },
            Op::DeleteProfile(n) => match pick(&profiles, n) {
                Some(p) => {
                    let ok = admin(&app, Method::DELETE, &format!("/admin/users/{p}"), None)
                        .await
                        .0;
                    if ok {
                        profiles.retain(|kept| *kept != p);
                        tokens.retain(|(owner, _): &(String, String)| *owner != p);
                    }
                    ok
                }
                None => false,
            },
            Op::IssueToken(n) => match pick(&profiles, n) {
                Some(p) => {
                    let (ok, body) = admin(
                        &app,
                        Method::POST,
                        &format!("/admin/users/{p}/tokens"),
                        Some(json!({"scopes": ["bots"], "label": "t"})),
                    )
                    .await;
                    if ok {
                        tokens.push((p, body["id"].as_str().expect("id").to_owned()));
                    }
                    ok
                }
                None => false,
            },
            Op::RevokeToken(n) => {
                if tokens.is_empty() {
                    false
                } else {
                    let (p, t) = tokens.remove(usize::from(n) % tokens.len());
                    admin(
                        &app,
                        Method::DELETE,
                        &format!("/admin/users/{p}/tokens/{t}"),
                        None,
                    )
                    .await
                    .0
                }
            }
            Op::CreateBot => {
                let body = json!({"platform_id": (1000 + next).to_string(), "name": format!("B{next}"), "username": format!("b{next}"), "short_description": "A bot"});
                let (ok, body) = admin(&app, Method::POST, "/admin/bots", Some(body)).await;
                if ok {
                    bots.push(body["bot"]["id"].as_str().expect("id").to_owned());
                }
                ok
            }
            Op::EditBot(n) => match pick(&bots, n) {
                Some(b) => {
                    admin(
                        &app,
                        Method::PATCH,
                        &format!("/admin/bots/{b}"),
                        Some(json!({"name": format!("Name {next}")})),
                    )
                    .await
                    .0
                }
                None => false,
            },
            Op::RotateToken(n) => match pick(&bots, n) {
                Some(b) => {
                    admin(&app, Method::POST, &format!("/admin/bots/{b}/token"), None)
                        .await
                        .0
                }
                None => false,
            },
            Op::DelistBot(n) => match pick(&bots, n) {
                Some(b) => {
                    let ok = admin(&app, Method::DELETE, &format!("/admin/bots/{b}"), None)
                        .await
                        .0;
                    bots.retain(|kept| *kept != b);
                    ok
                }
                None => false,
            },
            Op::Vote(n) => {
                if let Some(b) = pick(&bots, n) {
                    app.vote(&b, u64::from(next)).await;
                }
                false
            }
            Op::Snapshot => {
                let (ok, _) = admin(&app, Method::POST, "/admin/snapshot", None).await;
                prop_assert!(ok);
                false
            }
        };
        changes += usize::from(done);
    }

    // Every change answered 2xx has its entry, and nothing else has one.
    let live = live_entries(&app).await;
    prop_assert_eq!(live.len(), changes);

    // Recovered from the files: the same log, entry for entry (newest first, as read live).
    let recovered = recover(dir.path(), false).expect("recovers");
    prop_assert!(recovered.warnings.is_empty(), "{:?}", recovered.warnings);
    let log = &recovered.state.audit;
    prop_assert_eq!(log.len(), live.len());
    for (position, shown) in live.iter().rev().enumerate() {
        let (seq, entry) = log.entry(position).expect("an entry");
        prop_assert_eq!(
            shown["id"].as_str().map(String::from),
            Some(seq.to_string())
        );
        prop_assert_eq!(shown["action"].as_str(), Some(entry.action.name()));
        prop_assert_eq!(shown["actor"]["kind"].as_str(), Some(entry.actor.kind()));
        prop_assert_eq!(
            shown["target"]["id"].as_str().map(String::from),
            Some(entry.target.to_string())
        );
        prop_assert_eq!(
            shown["at"].as_str().map(String::from),
            Some(entry.at.to_string())
        );
        let names: Vec<String> = shown["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .map(|c| c.as_str().expect("name").to_owned())
            .collect();
        prop_assert_eq!(names, entry.changes);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10))]

    #[test]
    fn every_change_has_its_entry_live_and_replayed(ops in prop::collection::vec(op(), 1..40)) {
        actix_web::rt::System::new().block_on(run(ops))?;
    }
}
