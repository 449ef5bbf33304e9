//! `GET /healthz` and `GET /metrics`, outside the base path.

use actix_web::http::header::{HeaderValue, CONTENT_TYPE};
use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::cluster::ClusterHttp;
use crate::api::error::{ApiError, Code, ErrorBody};
use crate::api::http::routes::Route;
use crate::api::{http::reply, AppState};
use crate::cluster::view::NodeRole;
use crate::telemetry;

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_healthz, healthz).operational(),
        Route::new(__path_readyz, readyz).operational(),
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

/// What readiness asks of the journal, which the API does not reach itself: `None` while it
/// takes writes, else the failure's kind (`enospc`, `read_only`, `io`, `fenced`, ...) and why.
pub trait JournalHealth: Send + Sync {
    fn failure(&self) -> Option<(&'static str, String)>;

    /// Bytes left for the journal on the data directory's file system (none in memory).
    fn available_bytes(&self) -> Option<u64>;
}

/// A node that follows this many stream messages behind is catching up: not ready.
pub const CATCHING_UP_MESSAGES: u64 = 10_000;

/// Why the service cannot take writes now, or `Ok` when it can: the journal failed (disk full,
/// read-only, I/O errors) or, in cluster mode, the node was fenced or is catching up.
pub fn readiness(state: &AppState, cluster: Option<&ClusterHttp>) -> Result<(), String> {
    if let Some(cluster) = cluster {
        let status = cluster.view.status();
        if status.role == NodeRole::Fenced {
            return Err("this node was fenced: it lost the writer's role and takes no writes; it exits to be restarted as a follower".into());
        }
        // The follower could not follow the stream for a while (what `/cluster` says too).
        if let Some(why) = status.not_ready {
            return Err(format!(
                "this node is not following the cluster's stream: {why}"
            ));
        }
        if status.lag_messages >= CATCHING_UP_MESSAGES {
            return Err(format!(
                "this node is catching up with the cluster's stream ({} messages behind)",
                status.lag_messages
            ));
        }
    }
    match state.journal_health.failure() {
        None => Ok(()),
        Some((kind, why)) => Err(format!(
            "the journal cannot take writes ({kind}): {why}; writes are refused until the cause is fixed and the service restarted"
        )),
    }
}

/// Whether the service takes writes: 200 `{"status": "ready"}`, or 503 `not_ready` with the
/// reason. `/healthz` says only that the process answers (liveness).
#[utoipa::path(
    get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "The service takes writes", body = Health),
        (status = 503, description = "`not_ready`: the journal cannot take writes (disk full, read-only, I/O errors) or, in cluster mode, the node was fenced or is catching up; the message says which", body = ErrorBody),
    )
)]
pub async fn readyz(
    state: web::Data<AppState>,
    cluster: Option<web::Data<ClusterHttp>>,
) -> Result<HttpResponse, ApiError> {
    let ready = readiness(&state, cluster.as_ref().map(|c| c.get_ref()));
    telemetry::set_ready(ready.is_ok());
    ready.map_err(|why| Code::NotReady.with(why))?;
    Ok(reply::ok(&Health { status: "ready" }))
}

#[utoipa::path(
    get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain; version=0.0.4"))
)]
pub async fn metrics(
    state: web::Data<AppState>,
    cluster: Option<web::Data<ClusterHttp>>,
) -> HttpResponse {
    telemetry::set_ready(readiness(&state, cluster.as_ref().map(|c| c.get_ref())).is_ok());
    if let Some(bytes) = state.journal_health.available_bytes() {
        telemetry::data_dir_available(bytes);
    }
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
