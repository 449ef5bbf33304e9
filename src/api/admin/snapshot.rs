//! `POST /admin/snapshot`: a snapshot on request.

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::error::{ApiError, Code};
use crate::api::extract::Admin;
use crate::api::routes::Route;
use crate::api::{reply, AppState};

pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_snapshot, snapshot).refuses(
        Code::Unavailable,
        "the server keeps no data directory, or the snapshot could not be written",
    )]
}

#[derive(Serialize, ToSchema)]
pub struct SnapshotWritten {
    /// The snapshot file, in the data directory
    pub file: String,
    /// Its size in bytes
    pub bytes: u64,
}

/// Write a snapshot now.
#[utoipa::path(
    post, path = "/admin/snapshot", tag = "admin",
    responses(
        (status = 200, description = "A snapshot is durably written", body = SnapshotWritten),
    )
)]
pub async fn snapshot(_: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let persistence = state
        .persistence
        .as_ref()
        .ok_or_else(|| Code::Unavailable.with("this server keeps no state on disk".into()))?;
    let written = persistence.snapshot().await.map_err(|error| {
        tracing::error!(%error, "snapshot on request failed");
        Code::Unavailable.with("the snapshot could not be written; see the server log".into())
    })?;
    Ok(reply::ok(&SnapshotWritten {
        file: written.path.display().to_string(),
        bytes: written.bytes,
    }))
}
