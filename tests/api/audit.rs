//! The audit log over HTTP (CONTRACT section 14, issue 37 point 3): every management write
//! leaves exactly one entry, with the right actor, action, target and changed field names and
//! never a secret; staff and owners read it with filters and a cursor.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app_with, test_settings, TestApp, ADMIN};

async fn app() -> TestApp {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    spawn_app_with(settings).await
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let request = app.request(method, path, Some(token));
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    request.send().await.expect("sent")
}

/// Sends, asserts the status, and gives the body (Null when there is none).
async fn ok(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
    status: StatusCode,
) -> Value {
    let response = send(app, method.clone(), path, token, body).await;
    let got = response.status();
    let text = response.text().await.unwrap_or_default();
    assert_eq!(got, status, "{method} {path}: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Every entry, newest first, read by the admin token a page of 7 at a time (so the cursor is
/// walked too).
async fn all_entries(app: &TestApp) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(cursor) => format!("/staff/audit?limit=7&cursor={cursor}"),
            None => "/staff/audit?limit=7".to_string(),
        };
        let page = ok(app, Method::GET, &path, ADMIN, None, StatusCode::OK).await;
        entries.extend(page["results"].as_array().expect("results").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return entries,
        }
    }
}

async fn profile(app: &TestApp, username: &str, extra: Value) -> String {
    let mut body = json!({ "username": username });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    app.create_profile(body).await["id"]
        .as_str()
        .expect("an id")
        .to_owned()
}

async fn token(app: &TestApp, profile: &str, scopes: &[&str]) -> (String, String) {
    let issued = ok(
        app,
        Method::POST,
        &format!("/admin/users/{profile}/tokens"),
        ADMIN,
        Some(json!({ "scopes": scopes, "label": "test" })),
        StatusCode::CREATED,
    )
    .await;
    (
        issued["token"].as_str().expect("a token").to_owned(),
        issued["id"].as_str().expect("an id").to_owned(),
    )
}

/// What one write must have left: exactly one new entry, this one.
struct Expect<'a> {
    action: &'a str,
    actor: (&'a str, Option<&'a str>),
    target: (&'a str, &'a str),
    changes: &'a [&'a str],
    reason: Option<&'a str>,
}

/// Checks that exactly one entry was added since `before` entries, that it is `expect`, and
/// that no secret appears anywhere in the log.
async fn one_more(app: &TestApp, before: &mut usize, expect: Expect<'_>, secrets: &[&str]) {
    let entries = all_entries(app).await;
    assert_eq!(
        entries.len(),
        *before + 1,
        "{}: one entry, got {:#?}",
        expect.action,
        &entries[..entries.len().saturating_sub(*before)]
    );
    *before = entries.len();
    let entry = &entries[0];
    assert_eq!(entry["action"], expect.action, "{entry}");
    assert_eq!(entry["actor"]["kind"], expect.actor.0, "{entry}");
    assert_eq!(entry["actor"]["id"].as_str(), expect.actor.1, "{entry}");
    assert_eq!(entry["target"]["kind"], expect.target.0, "{entry}");
    assert_eq!(entry["target"]["id"], expect.target.1, "{entry}");
    assert_eq!(entry["reason"].as_str(), expect.reason, "{entry}");
    let changes: Vec<&str> = entry["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| c.as_str().expect("a name"))
        .collect();
    for name in expect.changes {
        assert!(
            changes.contains(name),
            "{}: {name} in {changes:?}",
            expect.action
        );
    }
    assert!(entry["id"].as_str().is_some() && entry["at"].as_str().is_some());
    let whole = serde_json::to_string(&entries).expect("json");
    for secret in secrets {
        assert!(
            !whole.contains(secret),
            "a secret in the audit log: {whole}"
        );
    }
}

#[actix_web::test]
async fn every_management_write_leaves_exactly_one_entry_and_no_secret() {
    let app = app().await;
    let mut seen = 0;
    let admin = ("admin", None);

    // The admin API: profiles.
    let alice = profile(&app, "alice", json!({})).await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "profile.create",
            actor: admin,
            target: ("profile", &alice),
            changes: &["username"],
            reason: None,
        },
        &[],
    )
    .await;
    ok(
        &app,
        Method::PATCH,
        &format!("/admin/users/{alice}"),
        ADMIN,
        Some(json!({"display_name": "Alice"})),
        StatusCode::OK,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "profile.update",
            actor: admin,
            target: ("profile", &alice),
            changes: &["display_name"],
            reason: None,
        },
        &[],
    )
    .await;

    // Tokens.
    let (owner_token, owner_token_id) = token(&app, &alice, &["bots"]).await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "token.issue",
            actor: admin,
            target: ("token", &owner_token_id),
            changes: &["scopes", "label"],
            reason: None,
        },
        &[&owner_token],
    )
    .await;
    let (spare, spare_id) = token(&app, &alice, &["vote"]).await;
    seen += 1;
    ok(
        &app,
        Method::DELETE,
        &format!("/admin/users/{alice}/tokens/{spare_id}"),
        ADMIN,
        None,
        StatusCode::NO_CONTENT,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "token.revoke",
            actor: admin,
            target: ("token", &spare_id),
            changes: &[],
            reason: None,
        },
        &[&spare],
    )
    .await;

    // The admin API: bots.
    let secret = "whsec_dGhpcyBpcyBhIHNlY3JldCBvZiB0aGUgdGVzdA==";
    let bot = app
        .create_bot(
            42,
            json!({"webhook_url": "https://example.com/hook", "webhook_secret": secret}),
        )
        .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.create",
            actor: admin,
            target: ("bot", &bot.id),
            changes: &["name", "webhook_secret"],
            reason: None,
        },
        &[secret, &bot.token],
    )
    .await;
    let path = format!("/admin/bots/{}", bot.id);
    let new_secret = "whsec_YW5vdGhlciBzZWNyZXQgb2YgdGhlIHRlc3Q=";
    ok(
        &app,
        Method::PATCH,
        &path,
        ADMIN,
        Some(json!({"name": "Renamed", "webhook_secret": new_secret})),
        StatusCode::OK,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.update",
            actor: admin,
            target: ("bot", &bot.id),
            changes: &["name", "webhook_secret"],
            reason: None,
        },
        &[secret, new_secret],
    )
    .await;
    let rotated = ok(
        &app,
        Method::POST,
        &format!("{path}/token"),
        ADMIN,
        None,
        StatusCode::OK,
    )
    .await;
    let rotated = rotated["token"].as_str().expect("token").to_owned();
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.token.rotate",
            actor: admin,
            target: ("bot", &bot.id),
            changes: &["token"],
            reason: None,
        },
        &[&rotated, &bot.token],
    )
    .await;

    // The bot's own token, where it manages its listing (the project API).
    let bearer = |method: Method, path: &str| {
        app.client
            .request(method, format!("{}{path}", app.base))
            .header("Authorization", format!("Bearer {rotated}"))
    };
    let edited = bearer(Method::PATCH, "/projects/@me")
        .json(&json!({"headline": {"en": "A new headline for the bot"}}))
        .send()
        .await
        .expect("sent");
    assert_eq!(edited.status(), StatusCode::NO_CONTENT);
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.update",
            actor: ("bot", Some(&bot.id)),
            target: ("bot", &bot.id),
            changes: &["short_description"],
            reason: None,
        },
        &[&rotated],
    )
    .await;
    let commands = json!([{"name": "test", "description": "command description", "options": []}]);
    let set = bearer(Method::PUT, "/projects/@me/commands")
        .json(&commands)
        .send()
        .await
        .expect("sent");
    assert_eq!(set.status(), StatusCode::NO_CONTENT);
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.commands.set",
            actor: ("bot", Some(&bot.id)),
            target: ("bot", &bot.id),
            changes: &["commands"],
            reason: None,
        },
        &[],
    )
    .await;
    let posted = bearer(Method::POST, "/projects/@me/announcements")
        .json(&json!({"title": "Version 2", "content": "We just released version 2.0 with new features."}))
        .send().await.expect("sent");
    assert_eq!(posted.status(), StatusCode::CREATED);
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.announcement.post",
            actor: ("bot", Some(&bot.id)),
            target: ("bot", &bot.id),
            changes: &["announcements"],
            reason: None,
        },
        &[],
    )
    .await;

    // Votes and stats are the directory's data: not audited.
    app.vote_ok(&bot.id, 7).await;
    let stats = app
        .post_json(
            &format!("/bots/{}/stats", bot.id),
            Some(&rotated),
            &json!({"server_count": 5}),
        )
        .await;
    assert_eq!(stats.status(), StatusCode::OK);
    assert_eq!(
        all_entries(&app).await.len(),
        seen,
        "votes and stats leave no entry"
    );

    // Reviews: a review, its edit, its owner's reply and its author's deletion are the
    // directory's data (not audited); staff's removal is management: one entry, with its reason.
    let moderator = profile(&app, "moderator", json!({"mod": true})).await;
    let (mod_staff, _) = token(&app, &moderator, &["staff"]).await;
    // Not an owner: owners may not review their own bot.
    let carol = profile(&app, "carol", json!({})).await;
    let (reviewer, _) = token(&app, &carol, &["reviews"]).await;
    ok(
        &app,
        Method::PATCH,
        &path,
        ADMIN,
        Some(json!({"owner_ids": [alice]})),
        StatusCode::OK,
    )
    .await;
    // The profiles, their tokens and the owner list: each kind walked above.
    seen += 5;
    assert_eq!(all_entries(&app).await.len(), seen);
    let reviews = format!("/bots/{}/reviews", bot.id);
    let written = ok(
        &app,
        Method::POST,
        &reviews,
        &reviewer,
        Some(json!({"rating": 4, "content": "good"})),
        StatusCode::CREATED,
    )
    .await;
    let review = format!("{reviews}/{}", written["id"].as_str().expect("id"));
    ok(
        &app,
        Method::PATCH,
        &review,
        &reviewer,
        Some(json!({"rating": 5})),
        StatusCode::OK,
    )
    .await;
    ok(
        &app,
        Method::PUT,
        &format!("{review}/reply"),
        &owner_token,
        Some(json!({"content": "thanks"})),
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        all_entries(&app).await.len(),
        seen,
        "a review, its edit and its reply leave no entry"
    );
    ok(
        &app,
        Method::POST,
        &format!("{review}/remove"),
        &mod_staff,
        Some(json!({"reason": "off topic"})),
        StatusCode::NO_CONTENT,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.review.remove",
            actor: ("profile", Some(&moderator)),
            target: ("bot", &bot.id),
            changes: &["reviews"],
            reason: Some("off topic"),
        },
        &[&mod_staff, &reviewer],
    )
    .await;
    let written = ok(
        &app,
        Method::POST,
        &reviews,
        &reviewer,
        Some(json!({"rating": 2, "content": "again"})),
        StatusCode::CREATED,
    )
    .await;
    ok(
        &app,
        Method::DELETE,
        &format!("{reviews}/{}", written["id"].as_str().expect("id")),
        &reviewer,
        None,
        StatusCode::NO_CONTENT,
    )
    .await;
    assert_eq!(
        all_entries(&app).await.len(),
        seen,
        "an author's deletion of their review leaves no entry"
    );

    // The owners' routes.
    let submitted = ok(&app, Method::POST, "/bots", &owner_token, Some(json!({
        "platform_id": "77", "name": "Owned", "username": "owned", "short_description": "An owned bot",
    })), StatusCode::CREATED).await;
    let owned = submitted["bot"]["id"].as_str().expect("id").to_owned();
    let owned_token = submitted["token"].as_str().expect("token").to_owned();
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.submit",
            actor: ("profile", Some(&alice)),
            target: ("bot", &owned),
            changes: &["name", "owner_ids"],
            reason: None,
        },
        &[&owner_token, &owned_token],
    )
    .await;
    ok(
        &app,
        Method::PATCH,
        &format!("/bots/{owned}"),
        &owner_token,
        Some(json!({"tags": ["music"]})),
        StatusCode::OK,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.update",
            actor: ("profile", Some(&alice)),
            target: ("bot", &owned),
            changes: &["tags"],
            reason: None,
        },
        &[&owner_token],
    )
    .await;
    // The operator's decision, with its reason.
    ok(
        &app,
        Method::PATCH,
        &format!("/admin/bots/{owned}"),
        ADMIN,
        Some(json!({"status": "denied", "reason": "Needs a description"})),
        StatusCode::OK,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.update",
            actor: admin,
            target: ("bot", &owned),
            changes: &["status", "reason"],
            reason: Some("Needs a description"),
        },
        &[],
    )
    .await;
    ok(
        &app,
        Method::PATCH,
        &format!("/bots/{owned}"),
        &owner_token,
        Some(json!({"short_description": "A better description"})),
        StatusCode::OK,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.update",
            actor: ("profile", Some(&alice)),
            target: ("bot", &owned),
            changes: &["short_description", "status"],
            reason: None,
        },
        &[],
    )
    .await;
    ok(
        &app,
        Method::PATCH,
        &format!("/admin/bots/{owned}"),
        ADMIN,
        Some(json!({"status": "approved"})),
        StatusCode::OK,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.update",
            actor: admin,
            target: ("bot", &owned),
            changes: &["status"],
            reason: None,
        },
        &[],
    )
    .await;
    let again = ok(
        &app,
        Method::POST,
        &format!("/bots/{owned}/token"),
        &owner_token,
        None,
        StatusCode::OK,
    )
    .await;
    let again = again["token"].as_str().expect("token").to_owned();
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.token.rotate",
            actor: ("profile", Some(&alice)),
            target: ("bot", &owned),
            changes: &["token"],
            reason: None,
        },
        &[&again],
    )
    .await;
    let bob = profile(&app, "bob", json!({})).await;
    seen += 1;
    ok(
        &app,
        Method::PUT,
        &format!("/bots/{owned}/owners"),
        &owner_token,
        Some(json!({"owner_ids": [alice, bob]})),
        StatusCode::OK,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.owners",
            actor: ("profile", Some(&alice)),
            target: ("bot", &owned),
            changes: &["owner_ids"],
            reason: None,
        },
        &[],
    )
    .await;
    ok(
        &app,
        Method::DELETE,
        &format!("/bots/{owned}"),
        &owner_token,
        None,
        StatusCode::NO_CONTENT,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.delete",
            actor: ("profile", Some(&alice)),
            target: ("bot", &owned),
            changes: &[],
            reason: None,
        },
        &[],
    )
    .await;

    // Staff's decisions, one entry each, by the staff member, with the reason when one is
    // given. Two listings submitted by an owner: one denied, one walked through the rest.
    let boss = profile(&app, "boss", json!({"admin": true})).await;
    let (admin_staff, _) = token(&app, &boss, &["staff"]).await;
    seen += 2;
    async fn submit(app: &TestApp, owner_token: &str, platform_id: u64) -> String {
        let body = ok(
            app,
            Method::POST,
            "/bots",
            owner_token,
            Some(json!({
                "platform_id": platform_id.to_string(), "name": "Queued", "username": "queued",
                "short_description": "Waiting for staff",
            })),
            StatusCode::CREATED,
        )
        .await;
        body["bot"]["id"].as_str().expect("id").to_owned()
    }
    let denied = submit(&app, &owner_token, 78).await;
    let decided = submit(&app, &owner_token, 79).await;
    seen += 2;
    assert_eq!(all_entries(&app).await.len(), seen);
    let moderator_actor = ("profile", Some(moderator.as_str()));
    let boss_actor = ("profile", Some(boss.as_str()));
    for (bot, action, token, actor, reason) in [
        (&denied, "claim", &mod_staff, moderator_actor, None),
        (&denied, "deny", &mod_staff, moderator_actor, Some("rule 3")),
        (&decided, "approve", &mod_staff, moderator_actor, None),
        (
            &decided,
            "delist",
            &mod_staff,
            moderator_actor,
            Some("spam"),
        ),
        (&decided, "approve", &admin_staff, boss_actor, None),
        (&decided, "certify", &mod_staff, moderator_actor, None),
        (&decided, "uncertify", &mod_staff, moderator_actor, None),
        (&decided, "feature", &admin_staff, boss_actor, None),
        (&decided, "unfeature", &admin_staff, boss_actor, None),
    ] {
        ok(
            &app,
            Method::POST,
            &format!("/staff/bots/{bot}/{action}"),
            token,
            reason.map(|reason| json!({ "reason": reason })),
            StatusCode::OK,
        )
        .await;
        let action = format!("bot.{action}");
        one_more(
            &app,
            &mut seen,
            Expect {
                action: &action,
                actor,
                target: ("bot", bot),
                changes: &[],
                reason,
            },
            &[&mod_staff, &admin_staff, &owner_token],
        )
        .await;
    }
    ok(
        &app,
        Method::POST,
        &format!("/staff/users/{bob}/vote-ban"),
        &mod_staff,
        Some(json!({"reason": "vote ring"})),
        StatusCode::OK,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "profile.vote_ban",
            actor: moderator_actor,
            target: ("profile", &bob),
            changes: &[],
            reason: Some("vote ring"),
        },
        &[&mod_staff],
    )
    .await;
    ok(
        &app,
        Method::DELETE,
        &format!("/staff/users/{bob}/vote-ban"),
        &mod_staff,
        None,
        StatusCode::NO_CONTENT,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "profile.vote_unban",
            actor: moderator_actor,
            target: ("profile", &bob),
            changes: &[],
            reason: None,
        },
        &[&mod_staff],
    )
    .await;

    // Removals through the admin API.
    ok(
        &app,
        Method::DELETE,
        &path,
        ADMIN,
        None,
        StatusCode::NO_CONTENT,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "bot.delete",
            actor: admin,
            target: ("bot", &bot.id),
            changes: &[],
            reason: None,
        },
        &[],
    )
    .await;
    ok(
        &app,
        Method::DELETE,
        &format!("/admin/users/{bob}"),
        ADMIN,
        None,
        StatusCode::NO_CONTENT,
    )
    .await;
    one_more(
        &app,
        &mut seen,
        Expect {
            action: "profile.delete",
            actor: admin,
            target: ("profile", &bob),
            changes: &[],
            reason: None,
        },
        &[],
    )
    .await;

    // A refused write leaves nothing.
    let refused = send(
        &app,
        Method::PATCH,
        &format!("/admin/users/{alice}"),
        ADMIN,
        Some(json!({"username": "NOT VALID"})),
    )
    .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(all_entries(&app).await.len(), seen);

    // Ids are unique and newest first.
    let ids: Vec<u64> = all_entries(&app)
        .await
        .iter()
        .map(|e| e["id"].as_str().expect("id").parse().expect("a number"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
}

#[actix_web::test]
async fn staff_read_with_filters_and_a_cursor_and_only_staff_may() {
    let app = app().await;
    let moderator = profile(&app, "mod", json!({"mod": true})).await;
    let plain = profile(&app, "plain", json!({})).await;
    let (staff, _) = token(&app, &moderator, &["staff"]).await;
    let (not_staff_scope, _) = token(&app, &moderator, &["bots"]).await;
    let (plain_staff, _) = token(&app, &plain, &["staff"]).await;
    let one = app.create_bot(1, json!({})).await;
    let two = app.create_bot(2, json!({})).await;
    for name in ["A", "B", "C"] {
        ok(
            &app,
            Method::PATCH,
            &format!("/admin/bots/{}", one.id),
            ADMIN,
            Some(json!({"name": format!("One {name}")})),
            StatusCode::OK,
        )
        .await;
    }
    ok(
        &app,
        Method::PATCH,
        &format!("/admin/bots/{}", two.id),
        ADMIN,
        Some(json!({"name": "Two"})),
        StatusCode::OK,
    )
    .await;

    // A staff profile's token reads as the admin token does.
    let by_target = ok(
        &app,
        Method::GET,
        &format!("/staff/audit?target={}&limit=2", one.id),
        &staff,
        None,
        StatusCode::OK,
    )
    .await;
    let results = by_target["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|e| e["target"]["id"] == one.id.as_str()));
    let next = by_target["next_cursor"].as_str().expect("a cursor");
    let rest = ok(
        &app,
        Method::GET,
        &format!("/staff/audit?target={}&cursor={next}", one.id),
        &staff,
        None,
        StatusCode::OK,
    )
    .await;
    // Three edits and the creation.
    assert_eq!(rest["results"].as_array().expect("results").len(), 2);
    assert_eq!(rest["next_cursor"], Value::Null);
    let created = ok(
        &app,
        Method::GET,
        "/staff/audit?action=bot.create",
        &staff,
        None,
        StatusCode::OK,
    )
    .await;
    assert_eq!(created["results"].as_array().expect("results").len(), 2);
    let by_admin = ok(
        &app,
        Method::GET,
        &format!(
            "/staff/audit?actor=admin&action=bot.update&target={}",
            two.id
        ),
        &staff,
        None,
        StatusCode::OK,
    )
    .await;
    assert_eq!(by_admin["results"].as_array().expect("results").len(), 1);
    let by_profile = ok(
        &app,
        Method::GET,
        &format!("/staff/audit?actor={plain}"),
        &staff,
        None,
        StatusCode::OK,
    )
    .await;
    assert_eq!(by_profile["results"], json!([]));

    // Refusals.
    for query in [
        "target=nope",
        "actor=someone",
        "action=bot.explode",
        "cursor=x",
        "limit=0",
        "limit=101",
        "action=bot.update&action=bot.create",
    ] {
        let response = send(
            &app,
            Method::GET,
            &format!("/staff/audit?{query}"),
            &staff,
            None,
        )
        .await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    let response = app.get("/staff/audit").await;
    assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let response = send(&app, Method::GET, "/staff/audit", "usr_unknown", None).await;
    assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let response = send(&app, Method::GET, "/staff/audit", &one.token, None).await;
    assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let response = send(&app, Method::GET, "/staff/audit", &not_staff_scope, None).await;
    let message = assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(message.contains("staff"), "{message}");
    let response = send(&app, Method::GET, "/staff/audit", &plain_staff, None).await;
    assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;

    // A profile that loses `mod` loses the right at once.
    ok(
        &app,
        Method::PATCH,
        &format!("/admin/users/{moderator}"),
        ADMIN,
        Some(json!({"mod": false})),
        StatusCode::OK,
    )
    .await;
    let response = send(&app, Method::GET, "/staff/audit", &staff, None).await;
    assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
}

#[actix_web::test]
async fn owners_read_only_their_bots_entries() {
    let app = app().await;
    let alice = profile(&app, "alice", json!({})).await;
    let bob = profile(&app, "bob", json!({})).await;
    let (alice_token, _) = token(&app, &alice, &["bots"]).await;
    let (bob_token, _) = token(&app, &bob, &["bots"]).await;
    let (alice_votes, _) = token(&app, &alice, &["vote"]).await;
    let mine = app.create_bot(1, json!({"owner_ids": [alice]})).await;
    let theirs = app.create_bot(2, json!({"owner_ids": [bob]})).await;
    ok(
        &app,
        Method::PATCH,
        &format!("/bots/{}", mine.id),
        &alice_token,
        Some(json!({"prefix": "!"})),
        StatusCode::OK,
    )
    .await;
    ok(
        &app,
        Method::PATCH,
        &format!("/bots/{}", theirs.id),
        &bob_token,
        Some(json!({"prefix": "?"})),
        StatusCode::OK,
    )
    .await;

    let page = ok(
        &app,
        Method::GET,
        &format!("/bots/{}/audit", mine.id),
        &alice_token,
        None,
        StatusCode::OK,
    )
    .await;
    let results = page["results"].as_array().expect("results");
    assert_eq!(results.len(), 2, "{page}");
    assert!(results
        .iter()
        .all(|e| e["target"]["id"] == mine.id.as_str()));
    assert_eq!(results[0]["action"], "bot.update");
    assert_eq!(results[0]["changes"], json!(["prefix"]));
    assert_eq!(results[1]["action"], "bot.create");
    // `target` cannot reach another bot's entries.
    let page = ok(
        &app,
        Method::GET,
        &format!("/bots/{}/audit?target={}", mine.id, theirs.id),
        &alice_token,
        None,
        StatusCode::OK,
    )
    .await;
    assert!(page["results"]
        .as_array()
        .expect("results")
        .iter()
        .all(|e| e["target"]["id"] == mine.id.as_str()));
    let page = ok(
        &app,
        Method::GET,
        &format!("/bots/{}/audit?limit=1", mine.id),
        &alice_token,
        None,
        StatusCode::OK,
    )
    .await;
    let next = page["next_cursor"].as_str().expect("a cursor");
    let page = ok(
        &app,
        Method::GET,
        &format!("/bots/{}/audit?cursor={next}", mine.id),
        &alice_token,
        None,
        StatusCode::OK,
    )
    .await;
    assert_eq!(page["results"][0]["action"], "bot.create");

    let response = send(
        &app,
        Method::GET,
        &format!("/bots/{}/audit", theirs.id),
        &alice_token,
        None,
    )
    .await;
    assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    let response = send(
        &app,
        Method::GET,
        &format!("/bots/{}/audit", mine.id),
        &alice_votes,
        None,
    )
    .await;
    let message = assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(message.contains("bots"), "{message}");
    let response = app.get(&format!("/bots/{}/audit", mine.id)).await;
    assert_error(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let response = send(
        &app,
        Method::GET,
        "/bots/7e1f7c2a-0000-4000-8000-000000000000/audit",
        &alice_token,
        None,
    )
    .await;
    assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
    let response = send(
        &app,
        Method::GET,
        &format!("/bots/{}/audit?limit=abc", mine.id),
        &alice_token,
        None,
    )
    .await;
    assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
}

#[actix_web::test]
async fn the_entries_written_are_counted_in_metrics() {
    let app = app().await;
    app.create_user("someone").await;
    let text = app.metrics_text().await;
    assert!(
        text.lines()
            .any(|l| l.starts_with("botlist_audit_entries_written_total") && !l.ends_with(" 0")),
        "{text}"
    );
    assert!(text.contains("botlist_audit_entries "), "{text}");
}
