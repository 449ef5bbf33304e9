//! `POST /admin/snapshot`: a snapshot on request.

use std::path::PathBuf;

use actix_web::{web, HttpResponse};
use futures_util::future::BoxFuture;
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::error::{ApiError, Code};
use crate::api::extract::Admin;
use crate::api::routes::Route;
use crate::api::{reply, AppState};

/// Writes a snapshot of the running service: what start-up hands the API, so that the route
/// touches no file itself.
pub trait TakeSnapshot: Send + Sync + 'static {
    /// The snapshot's file and its size once it is durably written; why not, in words for the
    /// server's log.
    fn take(&self) -> BoxFuture<'_, Result<SnapshotTaken, String>>;
}

/// A snapshot durably written.
pub struct SnapshotTaken {
    pub path: PathBuf,
    pub bytes: u64,
}

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
    let snapshots = state
        .snapshots
        .as_ref()
        .ok_or_else(|| Code::Unavailable.with("this server keeps no state on disk".into()))?;
    let written = snapshots.take().await.map_err(|error| {
        tracing::error!(%error, "snapshot on request failed");
        Code::Unavailable.with("the snapshot could not be written; see the server log".into())
    })?;
    Ok(reply::ok(&SnapshotWritten {
        file: written.path.display().to_string(),
        bytes: written.bytes,
    }))
}
