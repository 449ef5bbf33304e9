//! One way to start the app for a test: bound to port 0, on a manual clock, driven over HTTP.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpResponse, HttpServer};
use botlist::config::Settings;
use botlist::domain::time::{ManualClock, Timestamp};
use botlist::persist::journal::FsyncMode;
use botlist::startup::Application;
use chrono::{TimeZone, Utc};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{json, Value};

pub const ADMIN: &str = "test-admin-token";

/// The Bot fields that are `null` when unset.
pub const NULLABLE_BOT_FIELDS: [&str; 8] = [
    "avatar",
    "long_description",
    "language_code",
    "prefix",
    "invite_url",
    "website_url",
    "support_server_url",
    "github_url",
];

/// The keys of a JSON object.
pub fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .expect("a JSON object")
        .keys()
        .cloned()
        .collect()
}

/// `fields` as the set [`keys`] returns.
pub fn key_set(fields: &[&str]) -> BTreeSet<String> {
    fields.iter().map(|field| field.to_string()).collect()
}

/// The Bot fields without `server_count`, which is left out until the bot posts stats.
pub const BOT_FIELDS: [&str; 19] = [
    "id",
    "name",
    "username",
    "avatar",
    "short_description",
    "long_description",
    "tags",
    "language_code",
    "prefix",
    "invite_url",
    "website_url",
    "support_server_url",
    "github_url",
    "owner_ids",
    "vote_count",
    "monthly_vote_count",
    "certified",
    "featured",
    "created_at",
];

pub struct TestApp {
    /// `http://127.0.0.1:PORT/api/v1`
    pub base: String,
    /// `http://127.0.0.1:PORT`
    pub root: String,
    pub port: u16,
    pub client: reqwest::Client,
    pub clock: Arc<ManualClock>,
}

/// 2026-11-15T12:00:00Z: the middle of a month, so tests choose when a month ends.
pub fn start_time() -> Timestamp {
    Timestamp::from_datetime(
        Utc.with_ymd_and_hms(2026, 11, 15, 12, 0, 0)
            .single()
            .expect("valid date"),
    )
}

pub fn test_settings() -> Settings {
    Settings {
        bind: "127.0.0.1:0".parse().expect("valid address"),
        base_path: "/api/v1".into(),
        classic_base_path: "/api".into(),
        admin_token: Some(ADMIN.into()),
        demo: false,
        workers: 1,
        actor_threads: 0,
        data_dir: None,
        fsync: FsyncMode::Always,
        journal_fault: Default::default(),
        admin_lockout: true,
        snapshot_interval: None,
        recover: false,
        rate_limit: 60,
        trust_forwarded_for: false,
        trusted_proxies: 1,
        metrics_bind: None,
        max_connections: 1_000,
        request_timeout: std::time::Duration::from_secs(10),
        keep_alive: std::time::Duration::from_secs(15),
        allow_private_webhooks: false,
        webhook_timeout: std::time::Duration::from_secs(5),
        cors_origins: Vec::new(),
        vote_history: Default::default(),
        weekend_multiplier: 1,
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(test_settings()).await
}

pub async fn spawn_app_with(settings: Settings) -> TestApp {
    let clock = Arc::new(ManualClock::new(start_time()));
    let app = Application::build(settings, clock.clone())
        .await
        .expect("the app builds");
    serve(app, clock)
}

/// Serves an application built on `clock` until the test ends.
pub fn serve(app: Application, clock: Arc<ManualClock>) -> TestApp {
    let port = app.port();
    let base = app.base_url();
    actix_web::rt::spawn(app.run_until(std::future::pending()));
    TestApp {
        root: format!("http://127.0.0.1:{port}"),
        base,
        port,
        client: reqwest::Client::new(),
        clock,
    }
}

/// A bot as the admin API created it.
pub struct TestBot {
    pub id: String,
    pub platform_id: String,
    pub token: String,
    pub body: Value,
}

impl TestApp {
    pub fn request(&self, method: Method, path: &str, token: Option<&str>) -> RequestBuilder {
        let request = self.client.request(method, format!("{}{path}", self.base));
        match token {
            Some(token) => request.header("Authorization", token),
            None => request,
        }
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path, None)
            .send()
            .await
            .expect("request sent")
    }

    /// What `/metrics` (at the root, not under the base path) answers. The recorder is one per
    /// process and tests run side by side: other tests' counts are in it too.
    pub async fn metrics_text(&self) -> String {
        let response = self.client.get(format!("{}/metrics", self.root)).send();
        response.await.expect("sent").text().await.expect("text")
    }

    /// A GET that sends `If-None-Match: if_none_match`, as a cache revalidating does.
    pub async fn revalidate(&self, path: &str, if_none_match: &str) -> Response {
        self.request(Method::GET, path, None)
            .header("If-None-Match", if_none_match)
            .send()
            .await
            .expect("request sent")
    }

    pub async fn get_with(&self, path: &str, token: &str) -> Response {
        self.request(Method::GET, path, Some(token))
            .send()
            .await
            .expect("request sent")
    }

    pub async fn post_json(&self, path: &str, token: Option<&str>, body: &Value) -> Response {
        self.request(Method::POST, path, token)
            .json(body)
            .send()
            .await
            .expect("request sent")
    }

    pub async fn admin(&self, method: Method, path: &str, body: Option<&Value>) -> Response {
        let request = self.request(method, path, Some(ADMIN));
        let request = match body {
            Some(body) => request.json(body),
            None => request,
        };
        request.send().await.expect("request sent")
    }

    /// `PATCH /admin/users/:id` with `body`.
    pub async fn patch_user(&self, id: &str, body: Value) -> Response {
        self.admin(Method::PATCH, &format!("/admin/users/{id}"), Some(&body))
            .await
    }

    /// `PATCH /admin/bots/:id` with `body`.
    pub async fn patch_bot(&self, id: &str, body: Value) -> Response {
        self.admin(Method::PATCH, &format!("/admin/bots/{id}"), Some(&body))
            .await
    }

    /// `POST /admin/bots/:id/token`: a new token for the bot.
    pub async fn rotate_token(&self, id: &str) -> Response {
        self.admin(Method::POST, &format!("/admin/bots/{id}/token"), None)
            .await
    }

    pub async fn create_user(&self, username: &str) -> Value {
        self.create_profile(json!({ "username": username })).await
    }

    /// Creates a profile from a whole `POST /admin/users` body.
    pub async fn create_profile(&self, body: Value) -> Value {
        let response = self.admin(Method::POST, "/admin/users", Some(&body)).await;
        assert_eq!(
            response.status(),
            StatusCode::CREATED,
            "{}",
            response.text().await.unwrap_or_default()
        );
        response.json().await.expect("json")
    }

    /// Creates a profile from `body` and issues it a token of `scopes`: (its id, the token).
    pub async fn profile_with_token(&self, body: Value, scopes: &[&str]) -> (String, String) {
        let id = self.create_profile(body).await["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let issued: Value = self
            .admin(
                Method::POST,
                &format!("/admin/users/{id}/tokens"),
                Some(&json!({ "scopes": scopes, "label": "prop" })),
            )
            .await
            .json()
            .await
            .expect("json");
        (id, issued["token"].as_str().expect("token").to_owned())
    }

    /// Lists a bot from the given fields over a minimal valid record.
    pub async fn create_bot(&self, platform_id: u64, fields: Value) -> TestBot {
        let mut body = json!({
            "platform_id": platform_id.to_string(),
            "name": format!("Bot {platform_id}"),
            "username": format!("bot{platform_id}"),
            "short_description": "A test bot",
        });
        if let (Some(body), Some(fields)) = (body.as_object_mut(), fields.as_object()) {
            for (key, value) in fields {
                body.insert(key.clone(), value.clone());
            }
        }
        let response = self.admin(Method::POST, "/admin/bots", Some(&body)).await;
        assert_eq!(
            response.status(),
            StatusCode::CREATED,
            "{}",
            response.text().await.unwrap_or_default()
        );
        let created: Value = response.json().await.expect("json");
        TestBot {
            id: created["bot"]["id"].as_str().expect("id").to_owned(),
            platform_id: platform_id.to_string(),
            token: created["token"].as_str().expect("token").to_owned(),
            body: created["bot"].clone(),
        }
    }

    pub async fn vote(&self, bot: &str, user: u64) -> Response {
        self.vote_as(bot, user, &format!("user{user}")).await
    }

    /// A vote through the admin API by `user` under this name.
    pub async fn vote_as(&self, bot: &str, user: u64, username: &str) -> Response {
        let body = json!({ "user_id": user.to_string(), "username": username, "avatar": null });
        self.admin(
            Method::POST,
            &format!("/admin/bots/{bot}/votes"),
            Some(&body),
        )
        .await
    }

    pub async fn vote_ok(&self, bot: &str, user: u64) {
        let response = self.vote(bot, user).await;
        assert_eq!(
            response.status(),
            StatusCode::CREATED,
            "{}",
            response.text().await.unwrap_or_default()
        );
    }

    pub async fn post_stats(&self, bot: &TestBot, servers: u64) {
        let response = self
            .post_json(
                &format!("/bots/{}/stats", bot.id),
                Some(&bot.token),
                &json!({ "server_count": servers }),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    }
}

/// Asserts `Content-Type: application/json; charset=utf-8`.
pub fn assert_json_utf8(response: &Response) {
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json; charset=utf-8")
    );
}

/// Asserts the envelope and returns the message.
pub async fn assert_error(response: Response, status: StatusCode, code: &str) -> String {
    assert_eq!(response.status(), status);
    assert_json_utf8(&response);
    let body: Value = response.json().await.expect("an error body is JSON");
    assert_eq!(body["error"]["code"], code, "{body}");
    let message = body["error"]["message"]
        .as_str()
        .expect("a message")
        .to_owned();
    assert!(!message.is_empty());
    assert_eq!(
        body.as_object().map(|o| o.len()),
        Some(1),
        "only `error`: {body}"
    );
    message
}

/// A webhook receiver on this machine: its URL, and every JSON body it is sent, in order.
pub async fn json_receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let received = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&received);
    let server = HttpServer::new(move || {
        let kept = Arc::clone(&kept);
        App::new().default_service(web::to(move |body: web::Bytes| {
            let kept = Arc::clone(&kept);
            async move {
                if let Ok(value) = serde_json::from_slice::<Value>(&body) {
                    kept.lock().expect("lock").push(value);
                }
                HttpResponse::Ok().finish()
            }
        }))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .expect("binds");
    let port = server.addrs()[0].port();
    actix_web::rt::spawn(server.run());
    (format!("http://127.0.0.1:{port}/hook"), received)
}
