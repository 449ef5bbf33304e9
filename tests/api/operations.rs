//! `/healthz`, `/metrics` and `{base}/openapi.json`.

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with, test_settings};

#[actix_web::test]
async fn healthz_says_ok() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(format!("{}/healthz", app.root))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        json!({ "status": "ok" })
    );
}

#[actix_web::test]
async fn metrics_count_requests_by_route_pattern_and_status() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.get(&format!("/bots/{}", bot.id)).await;
    app.get(&format!("/bots/{}", bot.platform_id)).await;
    app.get("/bots/404").await;
    app.get("/definitely/not/here").await;
    let response = app
        .client
        .get(format!("{}/metrics", app.root))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain")));
    let text = response.text().await.expect("text");
    assert!(
        text.contains("# TYPE botlist_http_requests_total counter"),
        "{text}"
    );
    assert!(
        text.contains(
            r#"botlist_http_requests_total{route="/api/v1/bots/{id}",method="GET",status="200"} 2"#
        ),
        "{text}"
    );
    assert!(
        text.contains(
            r#"botlist_http_requests_total{route="/api/v1/bots/{id}",method="GET",status="404"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"route="unmatched",method="GET",status="404"} 1"#),
        "{text}"
    );
    assert!(text.contains("botlist_bots_listed 1"), "{text}");
}

/// Every route the server answers, as `METHOD path`.
fn every_route(base: &str) -> BTreeSet<String> {
    let api = [
        "GET /bots",
        "GET /bots/{id}",
        "GET /bots/{id}/votes",
        "GET /bots/{id}/check",
        "GET /bots/{id}/stats",
        "POST /bots/{id}/stats",
        "POST /bots/stats",
        "GET /bots/check",
        "GET /bots/votes",
        "GET /users/{user_id}",
        "POST /admin/users",
        "PATCH /admin/users/{id}",
        "DELETE /admin/users/{id}",
        "POST /admin/bots",
        "PATCH /admin/bots/{id}",
        "DELETE /admin/bots/{id}",
        "POST /admin/bots/{id}/token",
        "POST /admin/bots/{id}/votes",
        "POST /admin/snapshot",
        "POST /admin/bots/{id}/webhook/test",
        "GET /admin/bots/{id}/webhook/deliveries",
        "POST /admin/bots/{id}/webhook/deliveries/{delivery_id}/redeliver",
    ];
    api.iter()
        .map(|route| route.replacen(' ', &format!(" {base}"), 1))
        .chain(["GET /healthz".to_string(), "GET /metrics".to_string()])
        .collect()
}

fn documented_routes(doc: &Value) -> BTreeSet<String> {
    let mut routes = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("a path item").keys() {
            routes.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    routes
}

#[actix_web::test]
async fn openapi_lists_every_route_under_the_base_path() {
    let app = spawn_app().await;
    let doc: Value = app.get("/openapi.json").await.json().await.expect("json");
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")));
    assert_eq!(documented_routes(&doc), every_route("/api/v1"));
    assert!(doc["components"]["schemas"]["Bot"].is_object());
    assert!(doc["components"]["securitySchemes"]["token"].is_object());

    let mut settings = test_settings();
    settings.base_path = "/v1".into();
    let app = spawn_app_with(settings).await;
    let doc: Value = app.get("/openapi.json").await.json().await.expect("json");
    assert_eq!(documented_routes(&doc), every_route("/v1"));
}
