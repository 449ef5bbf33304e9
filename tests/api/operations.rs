//! `/healthz`, `/metrics` and `{base}/openapi.json`.

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with, test_settings, TestApp};

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

/// The value of the one sample `line_start` begins (a name with its labels), if present.
fn sample(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(line_start) && line[line_start.len()..].starts_with(' '))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

async fn scrape(app: &TestApp) -> String {
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
    response.text().await.expect("text")
}

/// The recorder is one per process and tests run side by side: counts are checked as at
/// least what this test did.
#[actix_web::test]
async fn metrics_count_requests_by_route_pattern_and_status() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    app.get(&format!("/bots/{}", bot.id)).await;
    app.get(&format!("/bots/{}", bot.platform_id)).await;
    app.get("/bots/404").await;
    app.get("/definitely/not/here").await;
    let text = scrape(&app).await;
    assert!(
        text.contains("# TYPE botlist_http_requests_total counter"),
        "{text}"
    );
    let at_least = |line: &str, n: f64| {
        let value = sample(&text, line).unwrap_or_else(|| panic!("{line} in {text}"));
        assert!(value >= n, "{line} {value}");
    };
    at_least(
        r#"botlist_http_requests_total{route="/api/v1/bots/{id}",method="GET",status="200",surface="base"}"#,
        2.0,
    );
    at_least(
        r#"botlist_http_requests_total{route="/api/v1/bots/{id}",method="GET",status="404",surface="base"}"#,
        1.0,
    );
    at_least(
        r#"botlist_http_requests_total{route="unmatched",method="GET",status="404",surface="none"}"#,
        1.0,
    );
    at_least(
        r#"botlist_http_request_duration_seconds_count{route="/api/v1/bots/{id}",method="GET",status="200",surface="base"}"#,
        2.0,
    );
    assert!(
        !text.contains("definitely"),
        "unmatched paths share one label"
    );
    assert!(sample(&text, "botlist_bots_listed").is_some(), "{text}");
}

/// The request families are each application's own: counted exactly, and never another's.
#[actix_web::test]
async fn each_application_counts_its_own_requests_exactly() {
    let (one, other) = (spawn_app().await, spawn_app().await);
    let bot = one.create_bot(42, json!({})).await;
    for _ in 0..3 {
        one.get(&format!("/bots/{}", bot.id)).await;
    }
    let route = r#"route="/api/v1/bots/{id}",method="GET",status="200",surface="base""#;
    let text = scrape(&one).await;
    assert_eq!(
        sample(&text, &format!("botlist_http_requests_total{{{route}}}")),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!("botlist_http_request_duration_seconds_count{{{route}}}")
        ),
        Some(3.0)
    );
    // Cumulative buckets end at +Inf with the count.
    assert_eq!(
        sample(
            &text,
            &format!("botlist_http_request_duration_seconds_bucket{{{route},le=\"+Inf\"}}")
        ),
        Some(3.0)
    );
    let other_text = scrape(&other).await;
    assert_eq!(
        sample(
            &other_text,
            &format!("botlist_http_requests_total{{{route}}}")
        ),
        None,
        "{other_text}"
    );
    assert!(other_text.contains("# TYPE botlist_http_requests_total counter"));
}

#[actix_web::test]
async fn metrics_cover_votes_stats_limits_webhooks_persistence_and_the_process() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = test_settings();
    settings.data_dir = Some(dir.path().to_owned());
    let app = spawn_app_with(settings).await;
    let bot = app.create_bot(42, json!({})).await;
    app.post_stats(&bot, 10).await;
    app.vote_ok(&bot.id, 7).await;
    assert_eq!(app.vote(&bot.id, 7).await.status(), StatusCode::CONFLICT);
    for _ in 0..61 {
        app.get("/bots?q=bot").await;
    }
    let snapshot = app
        .admin(reqwest::Method::POST, "/admin/snapshot", None)
        .await;
    assert_eq!(snapshot.status(), StatusCode::OK);

    let text = scrape(&app).await;
    let at_least = |line: &str, n: f64| {
        let value = sample(&text, line).unwrap_or_else(|| panic!("{line} in {text}"));
        assert!(value >= n, "{line} {value}");
    };
    at_least(r#"botlist_votes_total{outcome="accepted"}"#, 1.0);
    at_least(r#"botlist_votes_total{outcome="refused_cooldown"}"#, 1.0);
    at_least("botlist_stats_posts_total", 1.0);
    at_least(r#"botlist_rate_limit_refusals_total{kind="bots_ip"}"#, 1.0);
    at_least("botlist_rate_limit_keys", 0.0);
    at_least("botlist_journal_written_bytes_total", 1.0);
    at_least("botlist_journal_fsync_duration_seconds_count", 1.0);
    at_least("botlist_journal_fsync_failures_total", 0.0);
    at_least("botlist_snapshot_duration_seconds_count", 1.0);
    at_least("botlist_snapshot_size_bytes", 1.0);
    at_least("botlist_snapshot_last_success_timestamp_seconds", 1.0);
    at_least("botlist_search_duration_seconds_count", 1.0);
    at_least(
        r#"botlist_webhook_deliveries_total{outcome="delivered"}"#,
        0.0,
    );
    at_least(r#"botlist_webhook_deliveries_total{outcome="failed"}"#, 0.0);
    at_least("botlist_webhook_retries_total", 0.0);
    at_least("botlist_webhook_queue_depth", 0.0);
    at_least("botlist_http_requests_in_flight", 1.0);
    at_least("botlist_profiles_listed", 0.0);
    at_least("botlist_bots_listed", 1.0);
    at_least("process_cpu_seconds_total", 0.0);
    // Written by hand (with its fraction), once: not also by the recorder in whole seconds.
    assert_eq!(
        text.matches("# TYPE process_cpu_seconds_total counter\n")
            .count(),
        1,
        "{text}"
    );
    at_least("process_resident_memory_bytes", 1.0);
    at_least("process_open_fds", 1.0);
    at_least("process_start_time_seconds", 1.0);
    at_least(
        &format!(
            r#"botlist_build_info{{version="{}"}}"#,
            env!("CARGO_PKG_VERSION")
        ),
        1.0,
    );
    for family in [
        "botlist_http_request_duration_seconds",
        "botlist_journal_fsync_duration_seconds",
        "botlist_snapshot_duration_seconds",
        "botlist_search_duration_seconds",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} histogram")),
            "{family}"
        );
        assert!(text.contains(&format!("{family}_bucket{{")), "{family}");
    }
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        let name = line.split(' ').nth(2).expect("a name");
        assert!(
            text.contains(&format!("# HELP {name} ")),
            "{name} has help text"
        );
    }
}

/// Every route the router serves, as `METHOD path`: walked from the declarations the router is
/// mounted from, the API's under `base`, the classic surface's under `/api`.
fn served_routes(base: &str) -> BTreeSet<String> {
    let api = botlist::api::api_routes()
        .into_iter()
        .map(|route| format!("{} {base}{}", route.method, route.path));
    // The classic surface, under its default `/api`.
    let classic = botlist::api::classic_routes()
        .into_iter()
        .map(|route| format!("{} /api{}", route.method, route.path));
    botlist::api::root_routes()
        .into_iter()
        .map(|route| format!("{} {}", route.method, route.path))
        .chain(api)
        .chain(classic)
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
    let served = served_routes("/api/v1");
    assert_eq!(documented_routes(&doc), served);
    // Each is really answered by a handler: not the 404 of no route, not a 405.
    let bot = app.create_bot(42, json!({})).await;
    for route in &served {
        let (method, path) = route.split_once(' ').expect("METHOD path");
        let url = format!(
            "{}{}",
            app.root,
            path.replace("{id}", &bot.id)
                .replace("{user_id}", "1")
                .replace("{delivery_id}", "00000000-0000-4000-8000-000000000000")
        );
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
        let response = app.client.request(method, &url).send().await.expect("sent");
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{route}: {text}");
        assert!(!text.contains("no route for"), "{route}: {status} {text}");
    }
    assert!(doc["components"]["schemas"]["Bot"].is_object());
    assert!(doc["components"]["securitySchemes"]["token"].is_object());

    let mut settings = test_settings();
    settings.base_path = "/v1".into();
    let app = spawn_app_with(settings).await;
    let doc: Value = app.get("/openapi.json").await.json().await.expect("json");
    assert_eq!(documented_routes(&doc), served_routes("/v1"));
}

/// Every metric name in an expression of the dashboard: the `botlist_*` and `process_*` words,
/// a histogram's series named by its family.
fn dashboard_metric_names() -> BTreeSet<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/grafana/botlist.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the dashboard")).expect("json");
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            exprs.push(target["expr"].as_str().expect("an expression").to_owned());
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("variables")
    {
        if let Some(query) = variable["query"].as_str() {
            exprs.push(query.to_owned());
        }
    }
    let mut names = BTreeSet::new();
    for expr in exprs {
        for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("botlist_") || word.starts_with("process_") {
                let family = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|suffix| word.strip_suffix(suffix))
                    .unwrap_or(word);
                names.insert(family.to_owned());
            }
        }
    }
    names
}

/// The cluster's gauges exist only on a cluster node (tests/cluster scrapes them): for those the
/// dashboard's name must be one the cluster module records.
#[actix_web::test]
async fn the_dashboard_names_only_metrics_that_exist() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut settings = test_settings();
    settings.data_dir = Some(dir.path().to_owned());
    let app = spawn_app_with(settings).await;
    app.get("/healthz").await;
    let text = scrape(&app).await;
    let exposed: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|line| line.split(' ').next())
        .collect();
    let cluster_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/cluster");
    let cluster_source: String = std::fs::read_dir(cluster_dir)
        .expect("src/cluster")
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path()).ok())
        .collect();
    let names = dashboard_metric_names();
    assert!(names.len() >= 10, "{names:?}");
    for name in &names {
        if name.starts_with("botlist_cluster_") {
            assert!(
                cluster_source.contains(&format!("\"{name}\"")),
                "the dashboard names {name}, which the cluster does not record"
            );
        } else {
            assert!(
                exposed.contains(name.as_str()),
                "the dashboard names {name}, which /metrics does not expose:\n{text}"
            );
        }
    }
}
