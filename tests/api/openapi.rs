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
        let limited = path.starts_with("/bots") || path.starts_with("/users") || is_project(&path);
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
