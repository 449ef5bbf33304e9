//! `GET /healthz` and `GET /metrics`, outside the base path.

use actix_web::http::header::{HeaderValue, CONTENT_TYPE};
use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::http::routes::Route;
use crate::api::{http::reply, AppState};
use crate::telemetry;

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_healthz, healthz).operational(),
        Route::new(__path_metrics, metrics)
            .operational()
            .on_metrics_listener(),
    ]
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

#[utoipa::path(
    get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The service is up", body = Health))
)]
pub async fn healthz() -> HttpResponse {
    reply::ok(&Health { status: "ok" })
}

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
        .body(telemetry::render(
            state.directory.len(),
            state.limiter.as_ref().map(|l| l.keys()),
            &state.access_log,
        ))
}
