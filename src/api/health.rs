//! `GET /healthz` and `GET /metrics`, outside the base path.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderValue, CONTENT_TYPE};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};
use dashmap::DashMap;
use serde::Serialize;
use utoipa::ToSchema;

use super::{reply, AppState};

#[derive(Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

/// Whether the service is up.
#[utoipa::path(
    get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The service is up", body = Health))
)]
pub async fn healthz() -> HttpResponse {
    reply::ok(&Health { status: "ok" })
}

/// Request counters by route pattern, method and status: bounded, because unmatched paths and
/// unknown methods are counted under one label each rather than as sent.
#[derive(Default)]
pub struct Metrics {
    requests: DashMap<(String, &'static str, u16), AtomicU64>,
}

impl Metrics {
    fn count(&self, route: &str, method: &Method, status: u16) {
        let method = known_method(method);
        if let Some(counter) = self.requests.get(&(route.to_owned(), method, status)) {
            counter.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.requests
            .entry((route.to_owned(), method, status))
            .or_default()
            .fetch_add(1, Ordering::Relaxed);
    }

    fn render(&self, bots_listed: usize) -> String {
        let mut rows: Vec<_> = self
            .requests
            .iter()
            .map(|entry| (entry.key().clone(), entry.value().load(Ordering::Relaxed)))
            .collect();
        rows.sort();
        let mut out = String::new();
        out.push_str("# HELP botlist_http_requests_total HTTP requests answered, by route pattern, method and status.\n");
        out.push_str("# TYPE botlist_http_requests_total counter\n");
        for ((route, method, status), count) in rows {
            let _ = writeln!(
                out,
                "botlist_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {count}",
                escape_label(&route)
            );
        }
        out.push_str("# HELP botlist_bots_listed Bots currently listed.\n");
        out.push_str("# TYPE botlist_bots_listed gauge\n");
        let _ = writeln!(out, "botlist_bots_listed {bots_listed}");
        out
    }
}

fn known_method(method: &Method) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE",
    ];
    KNOWN
        .into_iter()
        .find(|known| *known == method.as_str())
        .unwrap_or("other")
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Middleware: counts every answered request under its route pattern.
pub async fn count_requests(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let state = request.app_data::<web::Data<AppState>>().cloned();
    let response = next.call(request).await?;
    if let Some(state) = state {
        let route = response.request().match_pattern();
        state.metrics.count(
            route.as_deref().unwrap_or("unmatched"),
            response.request().method(),
            response.status().as_u16(),
        );
    }
    Ok(response)
}

/// Prometheus metrics.
#[utoipa::path(
    get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain; version=0.0.4"))
)]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        ))
        .body(state.metrics.render(state.directory.len()))
}
