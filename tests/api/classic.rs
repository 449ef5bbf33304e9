//! The classic surface under `/api` (docs/API.md, "The classic surface"): every route the
//! released client libraries call, with the classic shapes and parameters, over the same
//! data, tokens and limits as `{base}`, whose answers stay SPEC.md's.

use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{
    assert_error, assert_json_utf8, key_set, keys, spawn_app, spawn_app_with, test_settings,
    TestApp, TestBot, BOT_FIELDS,
};

/// Every field of a classic bot, in the order it is written (`server_count` once posted).
const CLASSIC_BOT_FIELDS: [&str; 22] = [
    "id",
    "username",
    "discriminator",
    "avatar",
    "defAvatar",
    "lib",
    "prefix",
    "shortdesc",
    "longdesc",
    "tags",
    "website",
    "support",
    "github",
    "owners",
    "guilds",
    "invite",
    "date",
    "certifiedBot",
    "vanity",
    "points",
    "monthlyPoints",
    "donatebotguildid",
];

fn classic(app: &TestApp, path: &str) -> String {
    format!("{}/api{path}", app.root)
}

async fn get(app: &TestApp, path: &str, token: Option<&str>) -> Response {
    let request = app.client.get(classic(app, path));
    let request = match token {
        Some(token) => request.header("Authorization", token),
        None => request,
    };
    request.send().await.expect("request sent")
}

async fn get_json(app: &TestApp, path: &str) -> Value {
    let response = get(app, path, None).await;
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    assert_json_utf8(&response);
    response.json().await.expect("json")
}

async fn post(app: &TestApp, path: &str, token: Option<&str>, body: &Value) -> Response {
    let request = app.client.post(classic(app, path)).json(body);
    let request = match token {
        Some(token) => request.header("Authorization", token),
        None => request,
    };
    request.send().await.expect("request sent")
}

/// A bot with every optional field set, two owners (one linked to a platform id, one not) and
/// two votes.
async fn full_bot(app: &TestApp) -> (TestBot, Value, Value) {
    let linked = app
        .create_profile(json!({ "username": "owner", "platform_id": "300000000000000001" }))
        .await;
    let unlinked = app.create_user("unlinked").await;
    let bot = app
        .create_bot(
            700_000_000_000_000_001,
            json!({
                "name": "Shiro",
                "username": "shiro",
                "short_description": "Plays music",
                "long_description": "# Shiro",
                "avatar": "https://cdn.example.test/a.png",
                "tags": ["music", "fun"],
                "prefix": "!",
                "invite_url": "https://invite.example.test/",
                "website_url": "https://shiro.example.test/",
                "support_server_url": "https://support.example.test/",
                "github_url": "https://github.example.test/shiro",
                "owner_ids": [unlinked["id"], linked["id"]],
                "certified": true,
            }),
        )
        .await;
    app.vote_ok(&bot.id, 11).await;
    app.vote_ok(&bot.id, 12).await;
    (bot, linked, unlinked)
}

#[actix_web::test]
async fn a_bot_reads_in_the_classic_shape_by_snowflake_and_by_uuid() {
    let app = spawn_app().await;
    let (bot, _, _) = full_bot(&app).await;
    let body = get_json(&app, &format!("/bots/{}", bot.platform_id)).await;
    assert_eq!(keys(&body), key_set(&CLASSIC_BOT_FIELDS), "{body}");
    let created_at = bot.body["created_at"].clone();
    assert_eq!(
        body,
        json!({
            "id": "700000000000000001",
            "username": "shiro",
            "discriminator": "0",
            "avatar": "https://cdn.example.test/a.png",
            "defAvatar": "",
            "lib": "",
            "prefix": "!",
            "shortdesc": "Plays music",
            "longdesc": "# Shiro",
            "tags": ["music", "fun"],
            "website": "https://shiro.example.test/",
            "support": "https://support.example.test/",
            "github": "https://github.example.test/shiro",
            "owners": ["300000000000000001"],
            "guilds": [],
            "invite": "https://invite.example.test/",
            "date": created_at,
            "certifiedBot": true,
            "vanity": null,
            "points": 2,
            "monthlyPoints": 2,
            "donatebotguildid": "",
        })
    );
    // `%Y-%m-%dT%H:%M:%S.%fZ`, as topggpy parses it.
    let date = body["date"].as_str().expect("a date");
    assert_eq!(date.len(), "2026-11-15T12:00:00.000Z".len(), "{date}");
    assert!(date.ends_with('Z') && date.as_bytes()[19] == b'.', "{date}");

    let by_uuid = get_json(&app, &format!("/bots/{}", bot.id)).await;
    assert_eq!(by_uuid, body);

    app.post_stats(&bot, 1234).await;
    let posted = get_json(&app, &format!("/bots/{}", bot.platform_id)).await;
    assert_eq!(posted["server_count"], 1234);

    // Unset optional fields: the classic shape's required strings are "", the others null.
    let bare = app.create_bot(700_000_000_000_000_002, json!({})).await;
    let body = get_json(&app, &format!("/bots/{}", bare.platform_id)).await;
    assert_eq!(keys(&body), key_set(&CLASSIC_BOT_FIELDS));
    for field in ["prefix", "longdesc", "defAvatar", "lib", "donatebotguildid"] {
        assert_eq!(body[field], "", "{field}");
    }
    for field in ["avatar", "website", "support", "github", "invite", "vanity"] {
        assert_eq!(body[field], Value::Null, "{field}");
    }
    assert_eq!(body["owners"], json!([]));
    assert_eq!(body["points"], 0);
}

#[actix_web::test]
async fn an_unknown_bot_is_404_with_the_envelope_on_the_classic_surface() {
    let app = spawn_app().await;
    for path in [
        "/bots/123456789012345678",
        "/bots/not-an-id",
        "/bots/123456789012345678/stats",
        "/users/123456789012345678",
        "/users/8c7f4a56-3d4b-4c5e-9f00-000000000000",
        "/nothing/here",
    ] {
        assert_error(
            get(&app, path, None).await,
            StatusCode::NOT_FOUND,
            "not_found",
        )
        .await;
    }
}

#[actix_web::test]
async fn the_classic_search_reads_search_sort_fields_limit_and_offset() {
    let app = spawn_app().await;
    let music = app
        .create_bot(
            1,
            json!({ "name": "Shiro", "username": "shiro", "tags": ["music"] }),
        )
        .await;
    // A second apart, so that `date` ranks them without a tie.
    app.clock.advance(chrono::Duration::seconds(1));
    let games = app
        .create_bot(2, json!({ "name": "Mimu", "tags": ["games"] }))
        .await;
    app.clock.advance(chrono::Duration::seconds(1));
    let other = app
        .create_bot(3, json!({ "name": "Shiro Two", "tags": ["games"] }))
        .await;
    for user in 10..13 {
        app.vote_ok(&games.id, user).await;
    }
    app.vote_ok(&other.id, 20).await;

    let all = get_json(&app, "/bots").await;
    assert_eq!(all["limit"], 50, "the classic default page");
    assert_eq!(all["offset"], 0);
    assert_eq!(all["count"], 3);
    assert_eq!(all["total"], 3);
    let ids: Vec<&str> = all["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|bot| bot["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["2", "3", "1"], "by votes, the default order");
    for bot in all["results"].as_array().expect("results") {
        assert_eq!(keys(bot), key_set(&CLASSIC_BOT_FIELDS));
    }

    // As topggpy sends it: every parameter, the empty ones too.
    let found = get_json(
        &app,
        "/bots?limit=50&offset=0&sort=&search=username%3A+shiro&fields=",
    )
    .await;
    let names: Vec<&str> = found["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|bot| bot["username"].as_str().expect("username"))
        .collect();
    assert_eq!(found["total"], 2);
    assert_eq!(names, ["bot3", "shiro"]);

    // As @top-gg/sdk writes an object search and an array of fields.
    let picked = get_json(
        &app,
        "/bots?search=username%3A+shiro+tags%3A+games&fields=username%2C+id&limit=1",
    )
    .await;
    assert_eq!(
        picked,
        json!({
            "results": [{ "id": "3", "username": "bot3" }],
            "limit": 1, "offset": 0, "count": 1, "total": 1,
        })
    );

    let newest = get_json(&app, "/bots?sort=-date&fields=id&limit=2&offset=1").await;
    // 3 is the newest, skipped by the offset.
    assert_eq!(newest["results"], json!([{ "id": "2" }, { "id": "1" }]));
    assert_eq!(newest["offset"], 1);
    let clamped = get_json(&app, "/bots?limit=500&fields=id").await;
    assert_eq!(clamped["limit"], 100, "the base's bound holds");
    let _ = music;
}

#[actix_web::test]
async fn bad_classic_search_parameters_are_400_naming_them() {
    let app = spawn_app().await;
    for (query, named) in [
        ("sort=rank", "`sort`"),
        ("fields=id,secret", "`fields`"),
        ("search=certifiedBot%3A+true", "`search`"),
        ("search=just+words", "`search`"),
        ("search=username%3A+a+shortdesc%3A+b", "`search`"),
        ("limit=ten", "`limit`"),
        ("offset=-1", "`offset`"),
        ("sort=points&sort=date", "`sort`"),
        ("search=%FF", "`search`"),
    ] {
        let message = assert_error(
            get(&app, &format!("/bots?{query}"), None).await,
            StatusCode::BAD_REQUEST,
            "bad_request",
        )
        .await;
        assert!(message.contains(named), "{query}: {message}");
    }
}

#[actix_web::test]
async fn a_profile_reads_in_the_classic_shape_by_platform_id_and_by_uuid() {
    let app = spawn_app().await;
    let linked = app
        .create_profile(json!({
            "username": "xignotic",
            "platform_id": "205680187394752512",
            "avatar": "https://cdn.example.test/u.png",
            "bio": "hello",
            "socials": [
                { "type": "github", "url": "https://github.example.test/x" },
                { "type": "bluesky", "url": "https://bsky.example.test/x" },
            ],
            "mod": true,
        }))
        .await;
    let expected = json!({
        "id": "205680187394752512",
        "username": "xignotic",
        "discriminator": "0",
        "avatar": "https://cdn.example.test/u.png",
        "defAvatar": "",
        "bio": "hello",
        "banner": null,
        "social": { "github": "https://github.example.test/x" },
        "color": "",
        "supporter": false,
        "certifiedDev": false,
        "mod": true,
        "webMod": true,
        "admin": false,
    });
    assert_eq!(get_json(&app, "/users/205680187394752512").await, expected);
    let uuid = linked["id"].as_str().expect("id");
    assert_eq!(get_json(&app, &format!("/users/{uuid}")).await, expected);

    let unlinked = app.create_user("nobody").await;
    let uuid = unlinked["id"].as_str().expect("id");
    let body = get_json(&app, &format!("/users/{uuid}")).await;
    assert_eq!(body["id"], uuid, "an unlinked profile's only id");
    assert_eq!(body["avatar"], Value::Null);
    assert_eq!(body["social"], json!({}));

    // A platform id moved to another profile names that one; the old holder no longer has it.
    let linked_id = linked["id"].as_str().expect("id");
    let response = app
        .patch_user(linked_id, json!({ "platform_id": null }))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_error(
        get(&app, "/users/205680187394752512", None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

#[actix_web::test]
async fn stats_check_voters_and_weekend_work_as_the_libraries_call_them() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let other = app.create_bot(43, json!({})).await;
    app.vote_as(&bot.id, 205680187394752512, "xignotic").await;

    let stats = get_json(&app, "/bots/42/stats").await;
    assert_eq!(
        stats,
        json!({ "server_count": 0, "shards": [], "shard_count": null })
    );
    // dblapi.js and @top-gg/sdk: no id, the token's bot; a shard of two.
    let response = post(
        &app,
        "/bots/stats",
        Some(&bot.token),
        &json!({ "server_count": 10, "shard_id": 0, "shard_count": 2 }),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        json!({ "ok": true })
    );
    // top.py: the id in the path, every shard's count.
    let response = post(
        &app,
        "/bots/42/stats",
        Some(&bot.token),
        &json!({ "server_count": 30, "shards": [10, 20], "shard_count": 2 }),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(get_json(&app, "/bots/42/stats").await["server_count"], 30);
    assert_eq!(
        app.get(&format!("/bots/{}/stats", bot.id))
            .await
            .json::<Value>()
            .await
            .expect("json"),
        json!({ "server_count": 30 }),
        "the base's shape and the same count"
    );
    assert_error(
        post(
            &app,
            "/bots/42/stats",
            Some(&other.token),
            &json!({ "server_count": 1 }),
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert_error(
        post(&app, "/bots/stats", None, &json!({ "server_count": 1 })).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    assert_error(
        post(
            &app,
            "/bots/stats",
            Some(&bot.token),
            &json!({ "server_count": -1 }),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;

    for path in [
        "/bots/check?userId=205680187394752512",
        "/bots/42/check?userId=205680187394752512",
    ] {
        let response = get(&app, path, Some(&bot.token)).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(
            response.json::<Value>().await.expect("json"),
            json!({ "voted": 1 })
        );
    }
    let response = get(&app, "/bots/check?userId=1", Some(&bot.token)).await;
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        json!({ "voted": 0 })
    );
    assert_error(
        get(&app, "/bots/check?userId=x", Some(&bot.token)).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert_error(
        get(&app, "/bots/check?userId=1", None).await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;

    for path in ["/bots/votes", "/bots/42/votes"] {
        let response = get(&app, path, Some(&bot.token)).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(
            response.json::<Value>().await.expect("json"),
            json!([{ "username": "xignotic", "id": "205680187394752512", "avatar": null }])
        );
    }
    assert_error(
        get(&app, "/bots/42/votes", Some(&other.token)).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;

    let weekend = get(&app, "/weekend", Some(&bot.token)).await;
    assert_eq!(weekend.status(), StatusCode::OK);
    assert_eq!(
        weekend.json::<Value>().await.expect("json"),
        json!({ "is_weekend": false })
    );
}

#[actix_web::test]
async fn the_two_surfaces_share_one_rate_limit_bucket() {
    let mut settings = test_settings();
    settings.rate_limit = 4;
    let app = spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;
    let remaining = |response: &Response| {
        response
            .headers()
            .get("x-ratelimit-remaining")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u32>().ok())
    };
    let first = get(&app, "/bots/42", Some(&bot.token)).await;
    assert_eq!(remaining(&first), Some(3));
    let second = app.get_with("/bots/42", &bot.token).await;
    assert_eq!(
        remaining(&second),
        Some(2),
        "the base spends the same bucket"
    );
    get(&app, "/bots", Some(&bot.token)).await;
    app.get_with("/bots", &bot.token).await;
    let refused = get(&app, "/bots/42", Some(&bot.token)).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let refused = app.get_with("/bots/42", &bot.token).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[actix_web::test]
async fn classic_reads_carry_an_etag_and_answer_304() {
    let app = spawn_app().await;
    app.create_bot(42, json!({})).await;
    for path in ["/bots/42", "/bots?fields=id", "/bots/42/stats"] {
        let first = get(&app, path, None).await;
        let tag = first
            .headers()
            .get("etag")
            .expect("an ETag")
            .to_str()
            .expect("text")
            .to_owned();
        let again = app
            .client
            .get(classic(&app, path))
            .header("If-None-Match", &tag)
            .send()
            .await
            .expect("sent");
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
    }
}

/// A classic search page is kept while nothing it shows changes: each change to its bots (a
/// stats post, a vote) or to their owners' profiles (a platform id linked, changed, unlinked) shows
/// at once, under a new ETag.
#[actix_web::test]
async fn a_kept_classic_search_page_shows_every_change_to_its_bots_and_their_owners() {
    let app = spawn_app().await;
    let (bot, linked, unlinked) = full_bot(&app).await;
    let path = "/bots?fields=id,owners,server_count,points";
    let read = |expected: Value| {
        let app = &app;
        async move {
            let response = get(app, path, None).await;
            assert_eq!(response.status(), StatusCode::OK);
            let tag = response.headers().get("etag").expect("an ETag").clone();
            let body: Value = response.json().await.expect("json");
            assert_eq!(body["results"][0], expected, "{body}");
            tag
        }
    };
    // A bot with no count posted has no `server_count` field.
    let shown = |owners: Value, servers: Value, points: u64| {
        let mut bot = json!({ "id": "700000000000000001", "owners": owners, "points": points });
        if !servers.is_null() {
            bot["server_count"] = servers;
        }
        bot
    };
    let first = read(shown(json!(["300000000000000001"]), Value::Null, 2)).await;
    assert_eq!(
        read(shown(json!(["300000000000000001"]), Value::Null, 2)).await,
        first
    );

    relink(&app, &unlinked, json!("300000000000000002")).await;
    let both = read(shown(
        json!(["300000000000000002", "300000000000000001"]),
        Value::Null,
        2,
    ))
    .await;
    assert_ne!(both, first);
    relink(&app, &linked, json!("300000000000000003")).await;
    read(shown(
        json!(["300000000000000002", "300000000000000003"]),
        Value::Null,
        2,
    ))
    .await;
    relink(&app, &unlinked, Value::Null).await;
    read(shown(json!(["300000000000000003"]), Value::Null, 2)).await;

    app.post_stats(&bot, 77).await;
    read(shown(json!(["300000000000000003"]), json!(77), 2)).await;
    app.vote_ok(&bot.id, 13).await;
    read(shown(json!(["300000000000000003"]), json!(77), 3)).await;
}

#[actix_web::test]
async fn a_method_a_classic_path_lacks_is_405_with_allow() {
    let app = spawn_app().await;
    app.create_bot(42, json!({})).await;
    let response = app
        .client
        .delete(classic(&app, "/bots/42"))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        response
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok()),
        Some("GET, HEAD")
    );
}

/// Conformance: `{base}` answers as SPEC.md says with the classic surface beside it.
#[actix_web::test]
async fn the_base_keeps_its_shapes_beside_the_classic_surface() {
    let app = spawn_app().await;
    let (bot, linked, _) = full_bot(&app).await;
    let response = app.get(&format!("/bots/{}", bot.platform_id)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("json");
    assert_eq!(keys(&body), key_set(&BOT_FIELDS));
    assert_eq!(body["id"], bot.id.as_str(), "the listing UUID on {{base}}");
    assert_eq!(body, {
        let mut expected = bot.body.clone();
        expected["vote_count"] = json!(2);
        expected["monthly_vote_count"] = json!(2);
        expected
    });
    let search: Value = app.get("/bots").await.json().await.expect("json");
    assert_eq!(search["limit"], 24, "the base's default page");
    assert_eq!(keys(&search["results"][0]), key_set(&BOT_FIELDS));
    // The classic parameters mean nothing on {base}: ignored, as unknown parameters are.
    let search: Value = app
        .get("/bots?fields=id&search=nope")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(search["total"], 1);
    assert_eq!(keys(&search["results"][0]), key_set(&BOT_FIELDS));
    let profile: Value = app
        .get(&format!("/users/{}", linked["id"].as_str().expect("id")))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(profile, linked, "SPEC's profile");
    // A snowflake does not name a profile on {base}; a path under it that no route has is
    // {base}'s 404, never the classic surface's.
    assert_error(
        app.get("/users/300000000000000001").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let message = assert_error(
        app.get("/nothing").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    assert!(message.contains("/api/v1/nothing"), "{message}");
    let stats: Value = app
        .get(&format!("/bots/{}/stats", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats, json!({ "server_count": 0 }));
}

#[actix_web::test]
async fn the_classic_surface_moves_or_goes_with_its_flag() {
    let mut settings = test_settings();
    settings.classic_base_path = String::new();
    let app = spawn_app_with(settings).await;
    app.create_bot(42, json!({})).await;
    assert_error(
        get(&app, "/bots/42", None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;

    let mut settings = test_settings();
    settings.classic_base_path = "/classic".into();
    let app = spawn_app_with(settings).await;
    app.create_bot(42, json!({})).await;
    let response = app
        .client
        .get(format!("{}/classic/bots/42", app.root))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.json::<Value>().await.expect("json")["id"], "42");

    // Below the base path: matched before it.
    let mut settings = test_settings();
    settings.classic_base_path = "/api/v1/classic".into();
    let app = spawn_app_with(settings).await;
    app.create_bot(42, json!({})).await;
    let body: Value = app
        .get("/classic/bots/42")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(body["id"], "42");
    let body: Value = app.get("/bots/42").await.json().await.expect("json");
    assert_eq!(keys(&body), key_set(&BOT_FIELDS));

    let mut settings = test_settings();
    settings.classic_base_path = settings.base_path.clone();
    let clock = std::sync::Arc::new(botlist::domain::time::ManualClock::new(
        crate::helpers::start_time(),
    ));
    match botlist::startup::Application::build(settings, clock).await {
        Err(botlist::startup::StartError::Unsafe(why)) => {
            assert!(why.contains("--classic-base-path"), "{why}")
        }
        Err(other) => panic!("refused for another reason: {other:?}"),
        Ok(_) => panic!("the classic surface on the base path started"),
    }
}

/// The document describes the classic surface: each route of it under `/api`, tagged
/// `classic`, with an id of its own, and what its route is (token, limit, `ETag`, body).
#[actix_web::test]
async fn the_openapi_document_describes_the_classic_surface() {
    let app = spawn_app().await;
    let doc: Value = app.get("/openapi.json").await.json().await.expect("json");
    let mut classic_ops = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            let id = operation["operationId"].as_str().expect("an id").to_owned();
            assert!(ids.insert(id.clone()), "{id} is unique");
            if operation["tags"] != json!(["classic"]) {
                assert!(
                    !path.starts_with("/api/") || path.starts_with("/api/v1/"),
                    "{path}"
                );
                continue;
            }
            assert!(
                path.starts_with("/api/") && !path.starts_with("/api/v1/"),
                "{path}"
            );
            assert!(id.starts_with("classic_"), "{id}");
            classic_ops.push((method.to_uppercase(), path.clone(), operation.clone()));
        }
    }
    let mut listed: Vec<String> = classic_ops
        .iter()
        .map(|(method, path, _)| format!("{method} {path}"))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            "GET /api/bots",
            "GET /api/bots/check",
            "GET /api/bots/votes",
            "GET /api/bots/{id}",
            "GET /api/bots/{id}/check",
            "GET /api/bots/{id}/stats",
            "GET /api/bots/{id}/votes",
            "GET /api/users/{user_id}",
            "GET /api/weekend",
            "POST /api/bots/stats",
            "POST /api/bots/{id}/stats",
        ]
    );
    for (method, path, operation) in &classic_ops {
        let responses = &operation["responses"];
        let limited = path != "/api/weekend";
        assert_eq!(responses.get("429").is_some(), limited, "{method} {path}");
        let tagged = method == "GET"
            && [
                "/api/bots",
                "/api/bots/{id}",
                "/api/bots/{id}/stats",
                "/api/users/{user_id}",
            ]
            .contains(&path.as_str());
        assert_eq!(responses.get("304").is_some(), tagged, "{method} {path}");
        if method == "POST" {
            for status in ["413", "415", "401"] {
                assert!(responses.get(status).is_some(), "{method} {path} {status}");
            }
        }
    }
    let bot = &doc["paths"]["/api/bots/{id}"]["get"]["responses"]["200"]["content"]
        ["application/json"]["schema"]["$ref"];
    assert_eq!(bot, "#/components/schemas/ClassicBot");
    let schema = &doc["components"]["schemas"]["ClassicBot"]["properties"];
    let mut documented: Vec<&str> = schema
        .as_object()
        .expect("properties")
        .keys()
        .map(String::as_str)
        .collect();
    documented.sort_unstable();
    let mut served: Vec<&str> = botlist::api::classic::bot_fields().collect();
    served.sort_unstable();
    assert_eq!(documented, served, "the schema is the rendering's fields");

    // The body routes answer 415 and 413 on this surface too.
    let bot = app.create_bot(42, json!({})).await;
    for path in ["/bots/stats", "/bots/42/stats"] {
        let response = app
            .client
            .post(classic(&app, path))
            .header("Authorization", &bot.token)
            .header("Content-Type", "text/plain")
            .body("{}")
            .send()
            .await
            .expect("sent");
        assert_error(
            response,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        )
        .await;
        let response = app
            .client
            .post(classic(&app, path))
            .header("Authorization", &bot.token)
            .header("Content-Type", "application/json")
            .body(vec![b' '; 65 * 1024])
            .send()
            .await
            .expect("sent");
        assert_error(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
    }
}

/// `/metrics` labels each request with its surface: `classic` under `/api`, `base` under
/// `/api/v1` (which is under `/api` too), `none` outside both.
#[actix_web::test]
async fn metrics_label_requests_by_surface() {
    let app = spawn_app().await;
    app.create_bot(42, json!({})).await;
    get(&app, "/bots/42", None).await;
    app.get("/bots/42").await;
    // The project API, without its Bearer token: a 401 problem, labelled as its own surface.
    app.client
        .get(format!("{}/projects/@me", app.base))
        .send()
        .await
        .expect("sent");
    app.client
        .get(format!("{}/healthz", app.root))
        .send()
        .await
        .expect("sent");
    let text = app.metrics_text().await;
    for line in [
        r#"botlist_http_requests_total{route="/api/bots/{id}",method="GET",status="200",surface="classic"} 1"#,
        r#"botlist_http_requests_total{route="/api/v1/bots/{id}",method="GET",status="200",surface="base"} 1"#,
        r#"botlist_http_requests_total{route="/healthz",method="GET",status="200",surface="none"} 1"#,
        r#"botlist_http_requests_total{route="/api/v1/projects/@me",method="GET",status="401",surface="project"} 1"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in {text}");
    }
}

/// A classic bot is kept while nothing it shows changes, by snowflake and by UUID: each change
/// of what it shows (its owners' profiles, a stats post, a vote, its listing, the month turning
/// over its monthly count) shows at once under a new ETag, and a kept answer revalidates with
/// the tag it was served with. The tag is its body's hash, so a change of something it does
/// not show (another profile) leaves it, and a client's copy, valid.
#[actix_web::test]
async fn a_kept_classic_bot_shows_every_change_of_what_it_shows() {
    let app = spawn_app().await;
    let (bot, linked, unlinked) = full_bot(&app).await;
    // Reads both paths twice each, asserts they agree, and gives the body and its tag.
    let read = || {
        let app = &app;
        let uuid = format!("/bots/{}", bot.id);
        async move {
            let mut seen: Option<(Value, String)> = None;
            for path in ["/bots/700000000000000001", uuid.as_str()] {
                for _ in 0..2 {
                    let response = get(app, path, None).await;
                    assert_eq!(response.status(), StatusCode::OK);
                    assert_json_utf8(&response);
                    let tag = response.headers()["etag"]
                        .to_str()
                        .expect("text")
                        .to_owned();
                    let body: Value = response.json().await.expect("json");
                    let again = app
                        .client
                        .get(classic(app, path))
                        .header("If-None-Match", &tag)
                        .send()
                        .await
                        .expect("sent");
                    assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
                    if let Some(seen) = &seen {
                        assert_eq!(*seen, (body.clone(), tag.clone()), "{path}");
                    }
                    seen = Some((body, tag));
                }
            }
            seen.expect("read")
        }
    };
    let (body, first) = read().await;
    assert_eq!(body["owners"], json!(["300000000000000001"]));
    assert_eq!(
        (&body["points"], &body["monthlyPoints"]),
        (&json!(2), &json!(2))
    );
    assert!(body.get("server_count").is_none(), "{body}");

    // Another profile: nothing this bot shows, so the same body under the same tag.
    app.create_profile(json!({ "username": "other", "platform_id": "300000000000000009" }))
        .await;
    assert_eq!(read().await, (body, first.clone()));

    let mut tags = vec![first];
    let mut changed = |tag: String| {
        assert!(!tags.contains(&tag), "{tag} was served for another body");
        tags.push(tag);
    };
    relink(&app, &unlinked, json!("300000000000000002")).await;
    let (body, tag) = read().await;
    assert_eq!(
        body["owners"],
        json!(["300000000000000002", "300000000000000001"])
    );
    changed(tag);
    relink(&app, &linked, Value::Null).await;
    let (body, tag) = read().await;
    assert_eq!(body["owners"], json!(["300000000000000002"]));
    changed(tag);

    app.post_stats(&bot, 77).await;
    let (body, tag) = read().await;
    assert_eq!(body["server_count"], 77);
    changed(tag);
    app.vote_ok(&bot.id, 13).await;
    let (body, tag) = read().await;
    assert_eq!(
        (&body["points"], &body["monthlyPoints"]),
        (&json!(3), &json!(3))
    );
    changed(tag);

    let edited = app
        .patch_bot(&bot.id, json!({ "short_description": "Plays more music" }))
        .await;
    assert_eq!(edited.status(), StatusCode::OK);
    let (body, tag) = read().await;
    assert_eq!(body["shortdesc"], "Plays more music");
    changed(tag);

    // A new month: the monthly count reads 0 with no write.
    app.clock.advance(chrono::Duration::days(31));
    let (body, tag) = read().await;
    assert_eq!(
        (&body["points"], &body["monthlyPoints"]),
        (&json!(3), &json!(0))
    );
    changed(tag);
}

/// Links `profile` to another platform id (or none) through the admin API.
async fn relink(app: &TestApp, profile: &Value, platform_id: Value) {
    let id = profile["id"].as_str().expect("id");
    let response = app
        .patch_user(id, json!({ "platform_id": platform_id }))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
}
