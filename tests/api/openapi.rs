//! The OpenAPI document says what the server does: each test reads a rule from the document
//! served at `{base}/openapi.json` and checks the server against it over HTTP.

use botlist::api::error::ERRORS;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, TestApp, TestBot, ADMIN};

async fn document(app: &TestApp) -> Value {
    app.get("/openapi.json").await.json().await.expect("json")
}

/// Every operation of `{base}` and the operational routes as (method, path without the base,
/// operation). The classic surface's (tagged `classic`, under `/api`) are checked in
/// `classic.rs`.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            if operation["tags"] == serde_json::json!(["classic"]) {
                continue;
            }
            let path = path.strip_prefix("/api/v1").unwrap_or(path).to_owned();
            all.push((method.to_uppercase(), path, operation.clone()));
        }
    }
    all
}

/// Follows a `$ref` into the document.
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value["$ref"].as_str() {
        Some(reference) => {
            let pointer = reference.trim_start_matches('#');
            resolve(doc, doc.pointer(pointer).expect("the reference resolves"))
        }
        None => value,
    }
}

fn response<'a>(doc: &'a Value, operation: &'a Value, status: &str) -> Option<&'a Value> {
    operation["responses"]
        .get(status)
        .map(|response| resolve(doc, response))
}

fn body_schema(response: &Value) -> &str {
    response["content"]["application/json"]["schema"]["$ref"]
        .as_str()
        .or_else(|| response["content"]["application/problem+json"]["schema"]["$ref"].as_str())
        .unwrap_or_default()
}

/// A route of the project API (`Authorization: Bearer`, errors as problem details).
fn is_project(path: &str) -> bool {
    path.starts_with("/projects")
}

/// Asserts an RFC 9457 problem of `status` with the error table's `code`.
async fn assert_problem(response: reqwest::Response, status: StatusCode, code: &str) {
    assert_eq!(response.status(), status);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/problem+json")
    );
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status.as_u16(), "{body}");
}

#[actix_web::test]
async fn every_error_status_is_documented_with_the_envelope_and_its_codes() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let codes = &doc["components"]["schemas"]["ErrorCode"]["enum"];
    let table: Vec<&str> = ERRORS.iter().map(|row| row.code).collect();
    assert_eq!(codes, &json!(table), "the document lists the table's codes");
    for (method, path, operation) in operations(&doc) {
        for (status, response) in operation["responses"].as_object().expect("responses") {
            let response = resolve(&doc, response);
            let schema = body_schema(response);
            match status.as_str() {
                // The rate limits' 429 is not the envelope; the admin API's lockout after
                // failed authentications is (issue 27).
                "429" if path.starts_with("/admin") => {
                    assert_eq!(schema, "#/components/schemas/ErrorBody", "{method} {path}")
                }
                // The project API answers every error as problem details (RFC 9457).
                s if is_project(&path) && (s.starts_with('4') || s.starts_with('5')) => {
                    assert_eq!(
                        schema, "#/components/schemas/ProblemDetails",
                        "{method} {path} {status}"
                    )
                }
                "429" => assert_eq!(schema, "#/components/schemas/RetryAfter"),
                s if s.starts_with('4') || s.starts_with('5') => assert_eq!(
                    schema, "#/components/schemas/ErrorBody",
                    "{method} {path} {status}"
                ),
                _ => {}
            }
        }
        for status in ["400", "431", "500"] {
            let operational = path == "/healthz" || path == "/readyz" || path == "/metrics";
            if status != "400" || !operational {
                assert!(
                    response(&doc, &operation, status).is_some(),
                    "{method} {path} documents {status}"
                );
            }
        }
        if operation.get("security").is_some() {
            assert!(
                response(&doc, &operation, "401").is_some(),
                "{method} {path} documents 401"
            );
        }
    }
}

/// A path with its parameters filled in with a real bot or profile, and the token it needs.
fn fill(
    path: &str,
    operation: &Value,
    bot: &TestBot,
    profile: &str,
    profile_token: &str,
) -> (String, Option<String>) {
    let id = if path.starts_with("/admin/users/") || path.starts_with("/staff/users/") {
        profile
    } else {
        bot.id.as_str()
    };
    let filled = path
        .replace("{id}", id)
        .replace("{delivery_id}", "00000000-0000-4000-8000-000000000000")
        .replace("{token_id}", "00000000-0000-4000-8000-000000000000");
    let security = operation["security"].to_string();
    let token = if security.contains("bearer") {
        Some(format!("Bearer {}", bot.token))
    } else if security.contains("admin_token") {
        Some(ADMIN.to_owned())
    } else if security.contains("profile_token") {
        Some(profile_token.to_owned())
    } else if security.contains("token") {
        Some(bot.token.clone())
    } else {
        None
    };
    (filled, token)
}

#[actix_web::test]
async fn every_body_route_documents_and_answers_415_and_413() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let profile = app.create_user("bodies").await;
    let profile = profile["id"].as_str().expect("id");
    // Staff too (`mod` and `admin`), so the staff routes' guard passes.
    let staff = app
        .admin(
            Method::PATCH,
            &format!("/admin/users/{profile}"),
            Some(&json!({ "mod": true, "admin": true })),
        )
        .await;
    assert_eq!(staff.status(), StatusCode::OK);
    // The bot's owner, with every scope: each route's checks pass before its body is read.
    let bot = app.create_bot(42, json!({ "owner_ids": [profile] })).await;
    let issued: Value = app
        .admin(
            Method::POST,
            &format!("/admin/users/{profile}/tokens"),
            Some(&json!({ "scopes": ["vote", "bots", "reviews", "staff"], "label": "all" })),
        )
        .await
        .json()
        .await
        .expect("json");
    let profile_token = issued["token"].as_str().expect("a token");
    let mut body_routes = 0;
    for (method, path, operation) in operations(&doc) {
        if operation.get("requestBody").is_none() {
            continue;
        }
        body_routes += 1;
        for status in ["408", "413", "415"] {
            assert!(
                response(&doc, &operation, status).is_some(),
                "{method} {path} documents {status}"
            );
        }
        let (filled, token) = fill(&path, &operation, &bot, profile, profile_token);
        let method = Method::from_bytes(method.as_bytes()).expect("a method");
        let response = app
            .request(method.clone(), &filled, token.as_deref())
            .header("Content-Type", "text/plain")
            .body("{}")
            .send()
            .await
            .expect("sent");
        if is_project(&path) {
            assert_problem(
                response,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
            )
            .await;
        } else {
            assert_error(
                response,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
            )
            .await;
        }
        let response = app
            .request(method, &filled, token.as_deref())
            .header("Content-Type", "application/json")
            .body(vec![b' '; 65 * 1024])
            .send()
            .await
            .expect("sent");
        if is_project(&path) {
            assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
        } else {
            assert_error(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
        }
    }
    // 17, the staff routes `deny`, `delist` and `vote-ban`, and the reviews' 4.
    assert_eq!(body_routes, 24, "every route that takes a body");
}

#[actix_web::test]
async fn rate_limited_routes_document_429_and_the_rate_limit_headers() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let rate_headers = [
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
    ];
    for (method, path, operation) in operations(&doc) {
        let limited = path.starts_with("/bots")
            || path.starts_with("/users")
            || path.starts_with("/staff")
            || is_project(&path);
        let too_many = response(&doc, &operation, "429");
        // Admin routes answer 429 too, to an address locked out after failed
        // authentications (issue 27), without the rate-limit headers.
        let locks_out = path.starts_with("/admin");
        assert_eq!(
            too_many.is_some(),
            limited || locks_out,
            "{method} {path}: 429"
        );
        for (status, response) in operation["responses"].as_object().expect("responses") {
            let headers = &resolve(&doc, response)["headers"];
            for header in rate_headers {
                assert_eq!(
                    headers.get(header).is_some(),
                    limited,
                    "{method} {path} {status}: {header}"
                );
            }
        }
        if let Some(too_many) = too_many {
            assert!(too_many["headers"].get("Retry-After").is_some());
        }
    }

    // And the server: a limited route's answers carry the headers, errors included.
    for path in ["/bots", "/bots/nope", "/users/nope"] {
        let response = app.get(path).await;
        for header in rate_headers {
            assert!(response.headers().contains_key(header), "{path}: {header}");
        }
    }
    let snapshot = app.admin(Method::POST, "/admin/snapshot", None).await;
    assert!(!snapshot.headers().contains_key("X-RateLimit-Limit"));
}

#[actix_web::test]
async fn search_parameters_have_the_bounds_the_server_applies() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let search = &doc["paths"]["/api/v1/bots"]["get"]["parameters"];
    let parameter = |name: &str| {
        search
            .as_array()
            .expect("parameters")
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("`{name}` is documented"))["schema"]
            .clone()
    };
    let number = |name: &str| parameter(name)["oneOf"][0].clone();
    assert_eq!(number("page")["minimum"], 1);
    for name in ["limit", "offset", "votes"] {
        assert_eq!(number(name)["minimum"], 0, "{name}");
    }
    assert_eq!(number("offset")["maximum"], json!(u64::MAX));
    for name in ["page", "limit", "offset", "votes"] {
        assert_eq!(
            parameter(name)["oneOf"][1]["maxLength"],
            0,
            "{name} may be empty"
        );
    }
    assert_eq!(parameter("q")["maxLength"], 256);
    assert_eq!(
        parameter("sort")["enum"],
        json!([
            "votes",
            "newest",
            "monthly_votes",
            "recently_updated",
            "invites",
            "relevance",
            ""
        ])
    );
    assert_eq!(
        parameter("match")["enum"],
        json!(["substring", "words", ""])
    );

    assert_error(
        app.get("/bots?page=0").await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert_eq!(app.get("/bots?page=1").await.status(), StatusCode::OK);
    assert_eq!(app.get("/bots?page=").await.status(), StatusCode::OK);
    assert_eq!(app.get("/bots?sort=").await.status(), StatusCode::OK);
    let too_big = format!("/bots?offset={}0", u64::MAX);
    assert_error(
        app.get(&too_big).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    let q = format!("/bots?q={}", "x".repeat(257));
    assert_error(app.get(&q).await, StatusCode::BAD_REQUEST, "bad_request").await;
}

#[actix_web::test]
async fn user_id_of_the_check_routes_is_a_required_snowflake() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let snowflake = &doc["components"]["schemas"]["Snowflake"];
    assert_eq!(snowflake["minLength"], 1);
    assert!(snowflake["pattern"]
        .as_str()
        .is_some_and(|p| p.contains("18446744073709551615")));
    let bot = app.create_bot(77, json!({})).await;
    for path in ["/bots/check", "/bots/{id}/check"] {
        let operation = &doc["paths"][format!("/api/v1{path}")]["get"];
        let user_id = operation["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .find(|p| p["name"] == "userId")
            .expect("userId is documented");
        assert_eq!(user_id["required"], true);
        assert_eq!(user_id["schema"]["$ref"], "#/components/schemas/Snowflake");
        let path = path.replace("{id}", &bot.id);
        for bad in ["", "18446744073709551616", "01", "-1"] {
            let response = app
                .get_with(&format!("{path}?userId={bad}"), &bot.token)
                .await;
            assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        }
        let response = app
            .get_with(&format!("{path}?userId=18446744073709551615"), &bot.token)
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }
}

fn is_nullable(doc: &Value, property: &Value) -> bool {
    let null = json!("null");
    let types = match &property["type"] {
        Value::Array(types) => types.contains(&null),
        single => *single == null,
    };
    let one_of = property["oneOf"]
        .as_array()
        .is_some_and(|options| options.iter().any(|o| o["type"] == null));
    types || one_of || {
        let resolved = resolve(doc, property);
        resolved != property && is_nullable(doc, resolved)
    }
}

/// Sends `{field: null}` to a PATCH route for every field of its body: the nullable ones are
/// cleared (200), the others refused (400), as the document says.
async fn nulls_follow_the_schema(app: &TestApp, doc: &Value, schema: &str, path: &str) -> usize {
    let properties = doc["components"]["schemas"][schema]["properties"]
        .as_object()
        .expect("properties");
    for (field, property) in properties {
        let response = app
            .admin(Method::PATCH, path, Some(&json!({ field: null })))
            .await;
        if is_nullable(doc, property) {
            assert_eq!(response.status(), StatusCode::OK, "{schema}.{field}");
        } else {
            assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
        }
    }
    properties.len()
}

#[actix_web::test]
async fn patch_fields_are_nullable_exactly_where_null_is_accepted() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let bot = app.create_bot(55, json!({})).await;
    let fields =
        nulls_follow_the_schema(&app, &doc, "BotPatch", &format!("/admin/bots/{}", bot.id)).await;
    assert_eq!(fields, 22, "BotPatch's fields, webhook_events included");
    let profile = app.create_user("nullable").await;
    let path = format!("/admin/users/{}", profile["id"].as_str().expect("id"));
    let fields = nulls_follow_the_schema(&app, &doc, "ProfilePatch", &path).await;
    assert_eq!(fields, 10);
    for (schema, not_null) in [
        (
            "BotPatch",
            vec!["name", "tags", "owner_ids", "certified", "webhook_format"],
        ),
        ("ProfilePatch", vec!["username", "socials", "admin", "mod"]),
    ] {
        for field in not_null {
            let property = &doc["components"]["schemas"][schema]["properties"][field];
            assert!(!is_nullable(&doc, property), "{schema}.{field}");
        }
    }
}

/// What a clone of the repository does not have: the specification files it was built from.
/// Written in pieces, so this file does not itself cite what it looks for.
const OUTSIDE: [&str; 4] = [
    concat!("..", "/shared"),
    concat!("SPEC", ".md"),
    concat!("CONTR", "ACT"),
    concat!("shared", "/spec"),
];

#[actix_web::test]
async fn the_document_points_nowhere_outside_the_repository() {
    let app = spawn_app().await;
    let text = app.get("/openapi.json").await.text().await.expect("text");
    for outside in OUTSIDE {
        assert!(
            !text.contains(outside),
            "the OpenAPI document cites `{outside}`"
        );
    }
}

#[test]
fn the_readme_and_docs_point_nowhere_outside_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        files.push(entry.expect("an entry").path());
    }
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        for outside in OUTSIDE {
            assert!(
                !text.contains(outside),
                "{} cites `{outside}`",
                file.display()
            );
        }
    }
}

/// Asserts that a response object has every property its schema requires and no other.
fn assert_shape(doc: &Value, schema: &str, value: &Value) {
    let schema_value = &doc["components"]["schemas"][schema];
    let properties = schema_value["properties"].as_object().expect("properties");
    let object = value.as_object().expect("an object");
    for required in schema_value["required"].as_array().expect("required") {
        let required = required.as_str().expect("a name");
        assert!(
            object.contains_key(required),
            "{schema}.{required} in {value}"
        );
    }
    for (key, field) in object {
        let property = properties
            .get(key)
            .unwrap_or_else(|| panic!("{schema}.{key} is documented"));
        if field.is_null() {
            assert!(is_nullable(doc, property), "{schema}.{key} may be null");
        }
    }
}

#[actix_web::test]
async fn responses_have_exactly_the_documented_fields() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let bot = app
        .create_bot(
            61,
            json!({ "webhook_url": "http://botlist-test.invalid/hook" }),
        )
        .await;
    let read = |path: String| {
        let app = &app;
        async move {
            let response = app.get(&path).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            response.json::<Value>().await.expect("json")
        }
    };
    let unposted = read(format!("/bots/{}", bot.id)).await;
    assert!(unposted.get("server_count").is_none());
    assert_shape(&doc, "Bot", &unposted);
    app.post_stats(&bot, 12).await;
    assert_shape(&doc, "Bot", &read(format!("/bots/{}", bot.id)).await);
    let page = read("/bots".into()).await;
    assert_shape(&doc, "BotList", &page);

    let profile = app.create_user("shaped").await;
    assert!(profile.get("avatar").is_none());
    assert_shape(&doc, "UserProfile", &profile);

    app.vote_ok(&bot.id, 5).await;
    let voters = app
        .get_with(&format!("/bots/{}/votes", bot.id), &bot.token)
        .await;
    let voters: Value = voters.json().await.expect("json");
    assert_shape(&doc, "VoterEntry", &voters[0]);
    let check = app
        .get_with(&format!("/bots/{}/check?userId=5", bot.id), &bot.token)
        .await;
    let check: Value = check.json().await.expect("json");
    assert_shape(&doc, "VoteCheck", &check);
    assert_eq!(
        doc["components"]["schemas"]["VoteCheck"]["properties"]["voted"]["maximum"],
        1
    );

    let deliveries = app
        .admin(
            Method::GET,
            &format!("/admin/bots/{}/webhook/deliveries", bot.id),
            None,
        )
        .await;
    let deliveries: Value = deliveries.json().await.expect("json");
    assert_shape(&doc, "DeliveryView", &deliveries[0]);
}

/// The headers the server always handles are in the document: `X-Request-Id` in and out of
/// every operation, and `If-None-Match`, `ETag` and 304 on exactly the routes that tag.
#[actix_web::test]
async fn request_ids_etags_and_304_are_documented_where_the_server_sends_them() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let description = doc["info"]["description"].as_str().expect("description");
    assert!(description.contains("**HEAD**"), "HEAD mirrors GET");
    let tagged = [
        "/bots",
        "/bots/{id}",
        "/bots/{id}/stats",
        "/users/{user_id}",
        "/bots/{id}/badge/{kind}.svg",
        "/bots/{id}/stats/history",
    ];
    let mut tagged_seen = 0;
    for (method, path, operation) in operations(&doc) {
        let headers: Vec<&str> = operation["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .filter(|p| p["in"] == "header")
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert!(headers.contains(&"X-Request-Id"), "{method} {path}");
        for (status, response) in operation["responses"].as_object().expect("responses") {
            let response = resolve(&doc, response);
            assert!(
                response["headers"]["X-Request-Id"].is_object(),
                "{method} {path} {status}"
            );
        }
        let etag = method == "GET" && tagged.contains(&path.as_str());
        tagged_seen += usize::from(etag);
        assert_eq!(headers.contains(&"If-None-Match"), etag, "{method} {path}");
        assert_eq!(
            response(&doc, &operation, "304").is_some(),
            etag,
            "{method} {path}"
        );
        if etag {
            let ok = response(&doc, &operation, "200").expect("200");
            assert!(ok["headers"]["ETag"].is_object(), "{method} {path}");
        }
    }
    assert_eq!(tagged_seen, tagged.len());
}

/// Every tag an operation carries is declared at the top of the document with a description, so
/// that the rendered documentation groups and explains each route.
#[actix_web::test]
async fn every_tag_an_operation_uses_is_declared_with_a_description() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let declared: std::collections::HashMap<&str, &str> = doc["tags"]
        .as_array()
        .expect("tags")
        .iter()
        .map(|tag| {
            let name = tag["name"].as_str().expect("a tag's name");
            (name, tag["description"].as_str().unwrap_or_default())
        })
        .collect();
    for item in doc["paths"].as_object().expect("paths").values() {
        for (method, operation) in item.as_object().expect("a path item") {
            for tag in operation["tags"].as_array().into_iter().flatten() {
                let tag = tag.as_str().expect("a tag");
                let description = declared.get(tag).copied().unwrap_or_default();
                assert!(
                    !description.is_empty(),
                    "{method} {} uses tag `{tag}`, which has no description",
                    operation["operationId"]
                );
            }
        }
    }
}

/// The project API's request bodies and parameters say what its handlers require, so that a
/// body the document allows is one the server takes (schemathesis sent `{}` for the metrics,
/// `[{}]` for the commands, an empty title and `source=` and got 400 for each).
#[actix_web::test]
async fn the_project_api_documents_what_its_handlers_require() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let body = |path: &str, method: &str| {
        let schema = &doc["paths"][format!("/api/v1{path}")][method]["requestBody"]["content"]
            ["application/json"]["schema"];
        resolve(&doc, schema).clone()
    };
    let metrics = body("/projects/@me/metrics", "patch");
    assert_eq!(metrics["required"], json!(["server_count"]), "{metrics}");
    for method in ["put", "post"] {
        let commands = body("/projects/@me/commands", method);
        let item = resolve(&doc, &commands["items"]);
        assert_eq!(item["required"], json!(["name"]), "{method}: {item}");
        assert_eq!(item["properties"]["name"]["minLength"], 1);
    }
    let announcement = body("/projects/@me/announcements", "post");
    assert_eq!(announcement["properties"]["title"]["minLength"], 3);
    assert_eq!(announcement["properties"]["content"]["minLength"], 10);
    let parameters = &doc["paths"]["/api/v1/projects/@me/votes/{user_id}"]["get"]["parameters"];
    let source = parameters
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "source")
        .expect("source");
    let schema = resolve(&doc, &source["schema"]);
    let values = schema["enum"].clone();
    let values = if values.is_null() {
        resolve(&doc, &schema["oneOf"][0])["enum"].clone()
    } else {
        values
    };
    assert_eq!(values, json!(["discord", "topgg"]), "{source}");
}

/// The `Event` schema names the kinds as bodies, headers and the admin API say them
/// (`vote.create`), not as the Rust variants (`VoteCreate`); schemathesis found the document
/// disagreeing with every delivery the server answered.
#[actix_web::test]
async fn the_event_schema_names_kinds_as_the_server_sends_them() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let event = &doc["components"]["schemas"]["Event"];
    assert_eq!(event["type"], "string", "{event}");
    let names: Vec<&str> = event["enum"]
        .as_array()
        .expect("an enum")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(names.contains(&"vote.create"), "{event}");
    assert!(names.contains(&"webhook.test"), "{event}");
    assert!(names.iter().all(|name| name.contains('.')), "{event}");
}

/// A minimal instance of `schema` as the document states it: its required properties only,
/// arrays of their fewest items, integers at their minimum, the first branch of a `oneOf`.
fn example(doc: &Value, schema: &Value) -> Value {
    let schema = resolve(doc, schema);
    if let Some(first) = schema["oneOf"].get(0) {
        return example(doc, first);
    }
    let kind = match &schema["type"] {
        Value::String(kind) => kind.as_str(),
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null")
            .unwrap_or("null"),
        _ => "null",
    };
    match kind {
        "object" => {
            let mut out = serde_json::Map::new();
            for name in schema["required"].as_array().into_iter().flatten() {
                let name = name.as_str().expect("a property name");
                out.insert(name.to_owned(), example(doc, &schema["properties"][name]));
            }
            Value::Object(out)
        }
        "array" => {
            let items = schema["minItems"].as_u64().unwrap_or(0) as usize;
            Value::Array(vec![example(doc, &schema["items"]); items])
        }
        "integer" => json!(schema["minimum"].as_u64().unwrap_or(0)),
        "boolean" => json!(false),
        "string" => json!("x"),
        _ => Value::Null,
    }
}

/// Whether scripts/schemathesis.sh tells schemathesis that `operation` (`METHOD /path`) may
/// answer 400 to schema-valid input: a rule the schema cannot state, which the operation's
/// description and its documented 400 say instead.
fn schemathesis_expects_400(operation: &str) -> bool {
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/schemathesis.sh"
    ))
    .expect("the script");
    script.split("[[operations]]").any(|entry| {
        let named = entry.lines().any(|line| {
            line.starts_with("include-name") && line.contains(&format!("\"{operation}\""))
        });
        let expects = entry.lines().any(|line| {
            line.starts_with("checks.positive_data_acceptance.expected-statuses")
                && line.contains(" 400,")
        });
        named && expects
    })
}

/// The metrics batch is documented in exactly the two shapes `parse_batch` reads (the bare
/// array topggpy 2 sends, `{"data": [...]}` from @top-gg/sdk 4), with the entry count's bounds
/// and each entry's closed `metrics`: a body built from each branch of the document is stored,
/// one just past a documented bound is refused. schemathesis found the document saying only
/// "an object".
#[actix_web::test]
async fn the_metrics_batch_is_documented_in_the_shapes_its_handler_reads() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let bot = app.create_bot(42, json!({})).await;
    let bearer = format!("Bearer {}", bot.token);
    let operation = &doc["paths"]["/api/v1/projects/@me/metrics/batch"]["post"];
    let schema = resolve(
        &doc,
        &operation["requestBody"]["content"]["application/json"]["schema"],
    );
    let branches = schema["oneOf"].as_array().expect("oneOf: {schema}");
    assert_eq!(branches.len(), 2, "{schema}");
    let mut kinds = Vec::new();
    for branch in branches {
        let branch = resolve(&doc, branch);
        let bare = branch["type"] == "array";
        kinds.push(branch["type"].clone());
        let list = if bare {
            branch
        } else {
            assert_eq!(branch["required"], json!(["data"]), "{branch}");
            resolve(&doc, &branch["properties"]["data"])
        };
        let wrap = |entries: Vec<Value>| {
            if bare {
                Value::Array(entries)
            } else {
                json!({ "data": entries })
            }
        };
        let entry = example(&doc, &list["items"]);
        let fewest = list["minItems"].as_u64().expect("minItems") as usize;
        let most = list["maxItems"].as_u64().expect("maxItems") as usize;
        for (count, status) in [
            (fewest, StatusCode::NO_CONTENT),
            (most, StatusCode::NO_CONTENT),
            (fewest - 1, StatusCode::BAD_REQUEST),
            (most + 1, StatusCode::BAD_REQUEST),
        ] {
            let body = wrap(vec![entry.clone(); count]);
            let answer = app
                .post_json("/projects/@me/metrics/batch", Some(&bearer), &body)
                .await;
            assert_eq!(answer.status(), status, "{count} entries, bare: {bare}");
        }
        // `metrics` is closed and its count bounded, as `parse_metrics` reads it.
        let item = resolve(&doc, &list["items"]);
        let metrics = resolve(&doc, &item["properties"]["metrics"]);
        assert_eq!(metrics["additionalProperties"], false, "{metrics}");
        let top = metrics["properties"]["server_count"]["maximum"]
            .as_u64()
            .expect("a maximum");
        for (metrics, status) in [
            (json!({ "server_count": top }), StatusCode::NO_CONTENT),
            (json!({ "server_count": top + 1 }), StatusCode::BAD_REQUEST),
            (
                json!({ "server_count": 1, "member_count": 1 }),
                StatusCode::BAD_REQUEST,
            ),
        ] {
            let body = wrap(vec![json!({ "metrics": metrics })]);
            let answer = app
                .post_json("/projects/@me/metrics/batch", Some(&bearer), &body)
                .await;
            assert_eq!(answer.status(), status, "{body}");
        }
    }
    assert_eq!(kinds, [json!("array"), json!("object")]);
    // Neither shape: an object without `data`.
    let answer = app
        .post_json(
            "/projects/@me/metrics/batch",
            Some(&bearer),
            &json!({ "entries": [{ "metrics": { "server_count": 1 } }] }),
        )
        .await;
    assert_problem(answer, StatusCode::BAD_REQUEST, "bad_request").await;
    // The timestamp rule a schema cannot state is written in the body's description.
    let about = operation["requestBody"]["description"]
        .as_str()
        .expect("a description");
    assert!(about.contains("60 seconds ahead"), "{about}");
    assert!(schemathesis_expects_400(
        "POST /api/v1/projects/@me/metrics/batch"
    ));
}

/// `POST {base}/bots` (an owner's submission) answers 400 to a schema-valid body whose
/// `owner_ids` names a profile that does not exist: the document says so on the field and in
/// the operation's 400, and schemathesis is told (a schema cannot state existence).
#[actix_web::test]
async fn a_submission_naming_an_owner_that_does_not_exist_is_a_documented_400() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let operation = &doc["paths"]["/api/v1/bots"]["post"];
    let refusal = response(&doc, operation, "400").expect("a documented 400");
    let about = refusal["description"].as_str().unwrap_or_default();
    assert!(about.contains("an owner does not exist"), "{refusal}");
    let submission = resolve(
        &doc,
        &operation["requestBody"]["content"]["application/json"]["schema"],
    );
    let owners = &submission["properties"]["owner_ids"];
    let owners_about = owners["description"].as_str().unwrap_or_default();
    assert!(owners_about.contains("exist"), "{owners}");
    assert!(schemathesis_expects_400("POST /api/v1/bots"));

    let profile = app.create_user("submitter").await;
    let profile = profile["id"].as_str().expect("id");
    let issued: Value = app
        .admin(
            Method::POST,
            &format!("/admin/users/{profile}/tokens"),
            Some(&json!({ "scopes": ["bots"], "label": "submit" })),
        )
        .await
        .json()
        .await
        .expect("json");
    let token = issued["token"].as_str().expect("a token");
    let nobody = "00000000-0000-4000-8000-00000000beef";
    let body = |platform_id: &str, owners: Value| {
        json!({
            "platform_id": platform_id,
            "name": "Submitted",
            "username": "submitted",
            "short_description": "A submitted bot",
            "owner_ids": owners,
        })
    };
    let refused = app
        .post_json("/bots", Some(token), &body("4242", json!([nobody])))
        .await;
    let message = assert_error(refused, StatusCode::BAD_REQUEST, "bad_request").await;
    assert!(message.contains(nobody), "{message}");
    let stored = app
        .post_json("/bots", Some(token), &body("4242", json!([profile])))
        .await;
    assert_eq!(stored.status(), StatusCode::CREATED);
}

/// The classic search's `search`, `sort` and `fields` are documented as `query::parse` reads
/// them: for each sample, the server accepts it exactly when the documented pattern or enum
/// does; the rules a pattern cannot state (each field once, one text field) are in the
/// description and answered 400.
#[actix_web::test]
async fn the_classic_search_parameters_are_documented_as_the_server_reads_them() {
    let mut settings = crate::helpers::test_settings();
    settings.rate_limit = 0;
    let app = crate::helpers::spawn_app_with(settings).await;
    let doc = document(&app).await;
    let operation = &doc["paths"]["/api/bots"]["get"];
    let parameter = |name: &str| {
        let found = operation["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} is documented"));
        (
            resolve(&doc, &found["schema"]).clone(),
            found["description"].as_str().unwrap_or_default().to_owned(),
        )
    };
    let status = |name: &'static str, value: &str| {
        let request = app
            .client
            .get(format!("{}/api/bots", app.root))
            .query(&[(name, value)]);
        async move { request.send().await.expect("an answer").status() }
    };
    let pattern = |schema: &Value| {
        regex::Regex::new(schema["pattern"].as_str().expect("a pattern")).expect("a regex")
    };
    let (search, search_about) = parameter("search");
    let search = pattern(&search);
    for sample in [
        "",
        "   ",
        "username: shiro",
        "username:shiro",
        ", tags: music, fun",
        "name: a language: en",
        "shortdesc: two words",
        "tags:",
        "no pairs here",
        "lead username: x",
        ",,,",
        "certifiedBot: true",
        "bogus: x username: y",
    ] {
        let accepted = status("search", sample).await == StatusCode::OK;
        assert_eq!(accepted, search.is_match(sample), "search={sample:?}");
    }
    for sample in [
        "username: a name: b",
        "tags: a tags: b",
        "username: a bogus: b",
    ] {
        assert!(search.is_match(sample), "{sample}");
        assert_eq!(
            status("search", sample).await,
            StatusCode::BAD_REQUEST,
            "{sample}"
        );
    }
    assert!(search_about.contains("each at most once"), "{search_about}");
    assert!(search_about.contains("400"), "{search_about}");

    let (sort, _) = parameter("sort");
    let names = sort["enum"].as_array().expect("an enum");
    for name in names {
        let name = name.as_str().expect("a name");
        assert_eq!(status("sort", name).await, StatusCode::OK, "sort={name}");
    }
    for name in ["bogus", "-bogus", "relevance", "--points"] {
        assert!(!names.contains(&json!(name)), "{name}");
        assert_eq!(
            status("sort", name).await,
            StatusCode::BAD_REQUEST,
            "sort={name}"
        );
    }

    let (fields, _) = parameter("fields");
    let fields = pattern(&fields);
    for sample in [
        "",
        "id",
        "id,username",
        " id , points ,",
        "id,,shortdesc",
        "id username",
        "bogus",
        "id,bogus",
        "ID",
    ] {
        let accepted = status("fields", sample).await == StatusCode::OK;
        assert_eq!(accepted, fields.is_match(sample), "fields={sample:?}");
    }
    let refusal = response(&doc, operation, "400").expect("a documented 400");
    let about = refusal["description"].as_str().unwrap_or_default();
    assert!(
        about.contains("`search` is not `field: value` pairs"),
        "{refusal}"
    );
    assert!(schemathesis_expects_400("GET /api/bots"));
}

/// The number after `at most ` in `text`: the bound a description states.
fn stated_bound(text: &str) -> u64 {
    let (_, after) = text.split_once("at most ").expect("a bound in {text}");
    after
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("a number in {text}"))
}

/// A filtered search page may not end past a bound: both surfaces state the bound on `offset`
/// and in their 400, and the server answers exactly there (a page ending at the bound is 200,
/// one past it 400, the same page without a filter 200, and `limit=0` at any depth 200).
#[actix_web::test]
async fn a_filtered_page_past_the_documented_bound_is_the_documented_400() {
    let mut settings = crate::helpers::test_settings();
    settings.rate_limit = 0;
    let app = crate::helpers::spawn_app_with(settings).await;
    let doc = document(&app).await;
    for (path, filter) in [
        ("/api/v1/bots", ("q", "bot")),
        ("/api/bots", ("search", "username: bot")),
    ] {
        let operation = &doc["paths"][path]["get"];
        let offset = operation["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .find(|p| p["name"] == "offset")
            .expect("offset");
        let bound = stated_bound(offset["description"].as_str().expect("a description"));
        let refusal = response(&doc, operation, "400").expect("a documented 400");
        let about = refusal["description"].as_str().unwrap_or_default();
        assert!(about.contains(&format!("= {bound}")), "{path}: {refusal}");
        let status = |filtered: bool, offset: u64, limit: u64| {
            let mut query = vec![("offset", offset.to_string()), ("limit", limit.to_string())];
            if filtered {
                query.push((filter.0, filter.1.to_owned()));
            }
            let request = app.client.get(format!("{}{path}", app.root)).query(&query);
            async move { request.send().await.expect("an answer").status() }
        };
        assert_eq!(status(true, bound - 10, 10).await, StatusCode::OK, "{path}");
        assert_eq!(
            status(true, bound - 9, 10).await,
            StatusCode::BAD_REQUEST,
            "{path}"
        );
        assert_eq!(status(false, bound - 9, 10).await, StatusCode::OK, "{path}");
        assert_eq!(status(true, bound * 2, 0).await, StatusCode::OK, "{path}");
        assert!(schemathesis_expects_400(&format!("GET {path}")), "{path}");
    }
}

/// JSON Schema's `integer` holds `2.0`: the metrics routes read the documented integers so
/// (schemathesis sent `{"server_count": 23043.0, "shard_count": 199.0}` and got 400), and a
/// fraction is still refused.
#[actix_web::test]
async fn documented_integers_of_the_metrics_accept_whole_floats() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let metrics = resolve(
        &doc,
        &doc["paths"]["/api/v1/projects/@me/metrics"]["patch"]["requestBody"]["content"]
            ["application/json"]["schema"],
    );
    assert_eq!(metrics["properties"]["server_count"]["type"], "integer");
    let bot = app.create_bot(42, json!({})).await;
    let bearer = format!("Bearer {}", bot.token);
    let patch = |body: Value| {
        app.request(Method::PATCH, "/projects/@me/metrics", Some(&bearer))
            .json(&body)
            .send()
    };
    let whole = patch(json!({ "server_count": 23043.0, "shard_count": 199.0 }))
        .await
        .expect("an answer");
    assert_eq!(whole.status(), StatusCode::NO_CONTENT);
    let stats: Value = app
        .get(&format!("/bots/{}/stats", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(stats["server_count"], 23043);
    for body in [
        json!({ "server_count": 1.5 }),
        json!({ "server_count": 1, "shard_count": 2.5 }),
    ] {
        let answer = patch(body.clone()).await.expect("an answer");
        assert_problem(answer, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    let batch = json!([{ "metrics": { "server_count": 7.0 } }]);
    let answer = app
        .post_json("/projects/@me/metrics/batch", Some(&bearer), &batch)
        .await;
    assert_eq!(answer.status(), StatusCode::NO_CONTENT);
}

/// A classic search page's bots hold only the fields `fields` names, so the document requires
/// none of them there (schemathesis found `fields=date` answered against a schema requiring
/// `id`); every field a bot holds is documented, with or without `fields`.
#[actix_web::test]
async fn classic_search_results_match_the_documented_item_with_and_without_fields() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    app.create_bot(42, json!({})).await;
    let list = resolve(
        &doc,
        &doc["paths"]["/api/bots"]["get"]["responses"]["200"]["content"]["application/json"]
            ["schema"],
    );
    let item = resolve(&doc, &list["properties"]["results"]["items"]);
    let documented = item["properties"].as_object().expect("properties");
    let required: Vec<&str> = item["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for fields in ["", "date", "id,points"] {
        let page: Value = app
            .client
            .get(format!("{}/api/bots", app.root))
            .query(&[("fields", fields)])
            .send()
            .await
            .expect("an answer")
            .json()
            .await
            .expect("json");
        let bot = page["results"][0].as_object().expect("a bot");
        for name in bot.keys() {
            assert!(documented.contains_key(name), "{name} is documented");
        }
        for name in &required {
            assert!(
                bot.contains_key(*name),
                "fields={fields}: {name} is required"
            );
        }
        if !fields.is_empty() {
            assert_eq!(bot.len(), fields.split(',').count(), "fields={fields}");
        }
    }
}

/// `tags` holds at most the document's `maxItems` as sent, a duplicate counted (schemathesis
/// found 21 tags with one twice accepted against `maxItems: 20`); duplicates are then dropped.
#[actix_web::test]
async fn tags_are_refused_past_the_documented_max_items_as_sent() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let tags = resolve(&doc, &doc["components"]["schemas"]["Tags"]);
    let most = tags["maxItems"].as_u64().expect("maxItems") as usize;
    let bot = app.create_bot(42, json!({})).await;
    let mut sent: Vec<String> = (0..most).map(|i| format!("tag-{i}")).collect();
    let path = format!("/admin/bots/{}", bot.id);
    let patch = |tags: Vec<String>| {
        let body = json!({ "tags": tags });
        let path = path.clone();
        let app = &app;
        async move { app.admin(Method::PATCH, &path, Some(&body)).await }
    };
    let kept = patch(sent.clone()).await;
    assert_eq!(kept.status(), StatusCode::OK);
    sent.push("tag-0".to_owned());
    assert_error(patch(sent).await, StatusCode::BAD_REQUEST, "bad_request").await;
    let twice = patch(vec!["a".into(), "a".into()]).await;
    let body: Value = twice.json().await.expect("json");
    assert_eq!(body["tags"], json!(["a"]), "{body}");
}

/// The audit log's query is documented as `parse_query` reads it: `target` a UUID, `actor` a
/// UUID or `admin`, `action` one of the actions, `cursor` a number, `limit` 1 to 100
/// (schemathesis found `limit=323&target=` refused though the document allowed any string and
/// any count); each documented bound is the server's.
#[actix_web::test]
async fn the_audit_query_is_documented_as_the_server_reads_it() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let operation = &doc["paths"]["/api/v1/staff/audit"]["get"];
    let parameter = |name: &str| {
        let found = operation["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name}"));
        resolve(&doc, &found["schema"]).clone()
    };
    let status = |query: String| {
        let request = app.request(Method::GET, &format!("/staff/audit?{query}"), Some(ADMIN));
        async move { request.send().await.expect("an answer").status() }
    };
    let limit = parameter("limit");
    let (low, high) = (
        limit["minimum"].as_u64().expect("minimum"),
        limit["maximum"].as_u64().expect("maximum"),
    );
    for (value, expected) in [
        (low, StatusCode::OK),
        (high, StatusCode::OK),
        (low - 1, StatusCode::BAD_REQUEST),
        (high + 1, StatusCode::BAD_REQUEST),
    ] {
        assert_eq!(
            status(format!("limit={value}")).await,
            expected,
            "limit={value}"
        );
    }
    assert_eq!(parameter("target")["format"], "uuid");
    let uuid = "00000000-0000-4000-8000-000000000001";
    assert_eq!(status(format!("target={uuid}")).await, StatusCode::OK);
    assert_eq!(status("target=".into()).await, StatusCode::BAD_REQUEST);
    let actor = parameter("actor");
    let branches = actor["oneOf"].as_array().expect("oneOf");
    assert!(branches.iter().any(|b| b["format"] == "uuid"), "{actor}");
    assert!(
        branches.iter().any(|b| b["enum"] == json!(["admin"])),
        "{actor}"
    );
    for value in ["admin", uuid] {
        assert_eq!(
            status(format!("actor={value}")).await,
            StatusCode::OK,
            "{value}"
        );
    }
    assert_eq!(status("actor=root".into()).await, StatusCode::BAD_REQUEST);
    let action = parameter("action");
    for name in action["enum"].as_array().expect("an enum") {
        let name = name.as_str().expect("a name");
        assert_eq!(
            status(format!("action={name}")).await,
            StatusCode::OK,
            "{name}"
        );
    }
    assert_eq!(status("action=bogus".into()).await, StatusCode::BAD_REQUEST);
    let cursor = parameter("cursor");
    assert_eq!(cursor["type"], "integer", "{cursor}");
    let top = cursor["maximum"].as_u64().expect("maximum");
    // An `int64` is at most 2^63 - 1 to JSON Schema's formats: schemathesis sent 2^63 as
    // invalid and got 200 while the maximum said 2^64 - 1.
    assert_eq!(cursor["format"], "int64", "{cursor}");
    assert_eq!(top, i64::MAX as u64, "{cursor}");
    assert_eq!(status(format!("cursor={top}")).await, StatusCode::OK);
    for over in [format!("{}", top + 1), format!("{top}0")] {
        assert_eq!(
            status(format!("cursor={over}")).await,
            StatusCode::BAD_REQUEST,
            "{over}"
        );
    }
}

/// The moderation queue's `cursor` is documented as `read_cursor` reads it (schemathesis found
/// `cursor=` refused though the document allowed any string): a value the pattern matches is
/// read, one it does not is 400.
#[actix_web::test]
async fn the_queue_cursor_is_documented_as_the_server_reads_it() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let cursor = doc["paths"]["/api/v1/staff/queue"]["get"]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "cursor")
        .expect("cursor")
        .clone();
    let pattern = resolve(&doc, &cursor["schema"])["pattern"]
        .as_str()
        .expect("a pattern")
        .to_owned();
    let pattern = regex::Regex::new(&pattern).expect("a regex");
    let moderator = app.create_user("moderator").await;
    let moderator = moderator["id"].as_str().expect("id");
    let flagged = app.patch_user(moderator, json!({ "mod": true })).await;
    assert_eq!(flagged.status(), StatusCode::OK);
    let issued: Value = app
        .admin(
            Method::POST,
            &format!("/admin/users/{moderator}/tokens"),
            Some(&json!({ "scopes": ["staff"], "label": "queue" })),
        )
        .await
        .json()
        .await
        .expect("json");
    let token = issued["token"].as_str().expect("a token");
    for sample in [
        "1764300000000.00000000-0000-4000-8000-000000000001",
        "-5.00000000-0000-4000-8000-000000000001",
        "",
        "1764300000000",
        "x.00000000-0000-4000-8000-000000000001",
        "1764300000000.nope",
    ] {
        let status = app
            .request(Method::GET, "/staff/queue", Some(token))
            .query(&[("cursor", sample)])
            .send()
            .await
            .expect("an answer")
            .status();
        assert_eq!(
            status == StatusCode::OK,
            pattern.is_match(sample),
            "cursor={sample:?}: {status}"
        );
    }
}

/// A vote ban's `until` must be in the future on the server's clock: a schema-valid body with a
/// past `until` is 400 (tests/api/staff.rs holds the server to it). schemathesis found it; the
/// document says so on the field and in the operation's 400, and the script expects the 400.
#[actix_web::test]
async fn a_vote_ban_ending_in_the_past_is_a_documented_400() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let operation = &doc["paths"]["/api/v1/staff/users/{id}/vote-ban"]["post"];
    let refusal = response(&doc, operation, "400").expect("a documented 400");
    let about = refusal["description"].as_str().unwrap_or_default();
    assert!(about.contains("in the future"), "{refusal}");
    let body = resolve(
        &doc,
        &operation["requestBody"]["content"]["application/json"]["schema"],
    );
    let until = &body["properties"]["until"];
    let until_about = until["description"].as_str().unwrap_or_default();
    assert!(until_about.contains("in the future"), "{until}");
    assert!(schemathesis_expects_400(
        "POST /api/v1/staff/users/{id}/vote-ban"
    ));
}

/// The script leaves the never-ending vote streams out of schemathesis' run and checks each of
/// them (every stream path of the document) with scripts/check_streams.py; featuring, admin-only,
/// runs with the token of an `admin` profile the script makes.
#[test]
fn the_script_checks_the_streams_apart_and_features_as_an_admin() {
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/schemathesis.sh"
    ))
    .expect("the script");
    assert!(script.contains("--exclude-path-regex 'votes/stream$'"));
    assert!(script.contains("scripts/check_streams.py"));
    let check = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/check_streams.py"
    ))
    .expect("the stream check");
    assert!(check.contains("endswith(\"votes/stream\")"));
    let feature = script
        .split("[[operations]]")
        .find(|entry| entry.contains("\"POST /api/v1/staff/bots/{id}/feature\""))
        .expect("an entry for feature");
    assert!(feature.contains("$ADMIN_STAFF_TOKEN"), "{feature}");
    assert!(script.contains("\"admin\": true"));
}

/// What schemathesis' first whole run found in the reviews and the profile tokens, each held:
/// a rating written `1.0` is the integer 1 (JSON Schema's reading, the document's), a review's
/// `content` is optional and never null, the list's `sort` is the enum the handler reads, and a
/// token's `scopes` count as sent against `maxItems` (a repeat counts).
#[actix_web::test]
async fn reviews_and_token_scopes_are_documented_as_their_handlers_read_them() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let bot = app.create_bot(4_410_000_000_000_001, json!({})).await;
    let profile = app.create_profile(json!({ "username": "whole" })).await;
    let profile = profile["id"].as_str().expect("id").to_owned();
    let issued = app
        .admin(
            Method::POST,
            &format!("/admin/users/{profile}/tokens"),
            Some(&json!({ "scopes": ["reviews"], "label": "test" })),
        )
        .await;
    assert_eq!(issued.status(), StatusCode::CREATED);
    let token: Value = issued.json().await.expect("JSON");
    let token = token["token"].as_str().expect("a token").to_owned();

    let review = app
        .post_json(
            &format!("/bots/{}/reviews", bot.id),
            Some(&token),
            &json!({ "rating": 1.0 }),
        )
        .await;
    assert_eq!(review.status(), StatusCode::CREATED);
    let fraction = app
        .post_json(
            &format!("/bots/{}/reviews", bot.id),
            Some(&token),
            &json!({ "rating": 1.5 }),
        )
        .await;
    assert_error(fraction, StatusCode::BAD_REQUEST, "bad_request").await;

    let operation = &doc["paths"]["/api/v1/bots/{id}/reviews"]["post"];
    let body = resolve(
        &doc,
        &operation["requestBody"]["content"]["application/json"]["schema"],
    );
    let content = &body["properties"]["content"];
    assert!(!is_nullable(&doc, content), "{content}");
    let required = body["required"].as_array().cloned().unwrap_or_default();
    assert!(!required.contains(&json!("content")), "{body}");

    let list = &doc["paths"]["/api/v1/bots/{id}/reviews"]["get"];
    let sort = list["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "sort")
        .expect("sort");
    let names = resolve(&doc, &sort["schema"]);
    let names = names["enum"]
        .as_array()
        .or_else(|| names["oneOf"][0]["enum"].as_array())
        .cloned()
        .unwrap_or_default();
    assert_eq!(names, vec![json!("newest"), json!("rating")], "{sort}");
    let empty = app.get(&format!("/bots/{}/reviews?sort=", bot.id)).await;
    assert_error(empty, StatusCode::BAD_REQUEST, "bad_request").await;

    let five = app
        .admin(
            Method::POST,
            &format!("/admin/users/{profile}/tokens"),
            Some(&json!({ "scopes": ["vote", "vote", "bots", "reviews", "staff"], "label": "t" })),
        )
        .await;
    assert_error(five, StatusCode::BAD_REQUEST, "bad_request").await;
}

/// The script turns the admin lockout off (a hidden flag): its own cases without a token would
/// otherwise lock its one address out, and schemathesis reads the 429s as valid input refused.
#[test]
fn the_script_runs_without_the_admin_lockout() {
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/schemathesis.sh"
    ))
    .expect("the script");
    assert!(script.contains("serve --demo --rate-limit 0 --no-admin-lockout"));
}

/// `PATCH /projects/@me` states the rules its handler applies (schemathesis' bodies were mostly
/// refused while its fields were bare objects): at least one field given and not null; each a
/// map of locale to text with at least one locale, whose kept text (`en`, else the only one)
/// is a short or long description; `content` read only without `page_content`.
/// `projects::edit_self_sets_headline_and_page_content_from_either_client` holds the handler
/// to the same rules.
#[actix_web::test]
async fn the_project_patch_is_documented_with_the_rules_its_handler_applies() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let schema = &doc["paths"]["/api/v1/projects/@me"]["patch"]["requestBody"]["content"]
        ["application/json"]["schema"];
    let all = resolve(&doc, schema)["allOf"]
        .as_array()
        .expect("allOf")
        .clone();
    let fields = &all[0];
    assert_eq!(fields["additionalProperties"], json!(false), "{fields}");
    let given: Vec<&Value> = all[1]["anyOf"]
        .as_array()
        .expect("anyOf")
        .iter()
        .map(|branch| &branch["required"])
        .collect();
    assert_eq!(
        given,
        [
            &json!(["headline"]),
            &json!(["page_content"]),
            &json!(["content"])
        ]
    );
    for (field, kept) in [
        ("headline", "ShortDescription"),
        ("page_content", "LongDescription"),
    ] {
        let branches = fields["properties"][field]["oneOf"]
            .as_array()
            .expect(field);
        assert_eq!(branches[0]["type"], "null", "{field}");
        let localised = branches[1]["allOf"].as_array().expect("allOf");
        assert_eq!(localised[0]["minProperties"], 1, "{field}");
        let reference = json!({ "$ref": format!("#/components/schemas/{kept}") });
        let [english, only] = localised[1]["anyOf"].as_array().expect("anyOf").as_slice() else {
            panic!("{field}: two branches");
        };
        assert_eq!(english["properties"]["en"], reference, "{field}");
        assert_eq!(only["maxProperties"], 1, "{field}");
        assert_eq!(only["additionalProperties"], reference, "{field}");
    }
    // `content` is held to the long description's rule only where it is read.
    let read = &all[2]["anyOf"];
    assert_eq!(read[0]["required"], json!(["page_content"]), "{read}");
    assert!(
        read[1]["properties"]["content"]["oneOf"][1]["allOf"].is_array(),
        "{read}"
    );
}

/// `webhook_events` is refused past as many entries as there are kinds, counted as sent (a
/// repeat counts, and means nothing more): the document says so with `maxItems`, as of the
/// tags (schemathesis found 20 entries of one kind refused where the document set no bound).
#[actix_web::test]
async fn webhook_events_are_refused_past_the_documented_max_items_as_sent() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let events = resolve(&doc, &doc["components"]["schemas"]["WebhookEvents"]);
    let kinds = resolve(&doc, &events["items"])["enum"]
        .as_array()
        .expect("an enum")
        .len();
    let most = events["maxItems"].as_u64().expect("maxItems") as usize;
    assert_eq!(most, kinds, "{events}");
    let bot = app.create_bot(42, json!({})).await;
    let path = format!("/admin/bots/{}", bot.id);
    let body = |count: usize| json!({ "webhook_events": vec!["vote.create"; count] });
    let kept = app.admin(Method::PATCH, &path, Some(&body(most))).await;
    assert_eq!(kept.status(), StatusCode::OK);
    let over = app.admin(Method::PATCH, &path, Some(&body(most + 1))).await;
    assert_error(over, StatusCode::BAD_REQUEST, "bad_request").await;
}
