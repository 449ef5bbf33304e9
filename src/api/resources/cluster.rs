//! `GET /cluster`, `GET /cluster/writer`, `GET {base}/admin/cluster/digest` and
//! `POST {base}/admin/cluster/step-down`, on every node.

use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpResponse};

use crate::api::http::cluster::ClusterHttp;
use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::Admin;
use crate::api::http::reply;
use crate::api::http::routes::Route;
use crate::api::AppState;
use crate::cluster::digest::{of_source, Digest};
use crate::cluster::view::NodeRole;

/// This module's routes; see [`crate::api::http::routes`]. A cluster node serves them beside
/// the others, none of them documented: `/cluster` and `/cluster/writer` outside the base path,
/// the admin ones under it.
pub fn routes() -> Vec<Route> {
    vec![
        Route::undocumented(Method::GET, "/cluster", status).operational(),
        Route::undocumented(Method::GET, "/cluster/writer", writer).operational(),
        Route::undocumented(Method::POST, "/admin/cluster/step-down", step_down).admin(),
        Route::undocumented(Method::GET, "/admin/cluster/digest", digest).admin(),
    ]
    .into_iter()
    .map(Route::cluster)
    .collect()
}

async fn status(cluster: web::Data<ClusterHttp>) -> HttpResponse {
    reply::ok(&cluster.view.status())
}

async fn writer(cluster: web::Data<ClusterHttp>) -> HttpResponse {
    let status = cluster.view.status();
    let code = if status.role == NodeRole::Writer {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    reply::json(code, &status)
}

async fn step_down(_: Admin, cluster: web::Data<ClusterHttp>) -> HttpResponse {
    let _ = cluster.step_down.send(());
    reply::json(
        StatusCode::ACCEPTED,
        &serde_json::json!({"stepping_down": cluster.view.node_id}),
    )
}

/// The digest of every actor's state, read as a snapshot reads it (one bot at a time). A state
/// that changed while it was read is read again, a few times: once writes stop, every node
/// answers the digest of exactly the state at its `applied_seq`.
async fn digest(
    _: Admin,
    state: web::Data<AppState>,
    cluster: web::Data<ClusterHttp>,
) -> Result<HttpResponse, ApiError> {
    let mut answer = None;
    for _ in 0..5 {
        let before = cluster.view.applied_seq();
        let digest = read_digest(&state).await?;
        let after = cluster.view.applied_seq();
        answer = Some(Digest {
            applied_seq: after,
            digest,
        });
        if before == after {
            break;
        }
    }
    Ok(reply::ok(&answer))
}

async fn read_digest(state: &AppState) -> Result<String, ApiError> {
    of_source(&state.registry, &state.directory.audit)
        .await
        .map_err(|e| Code::Unavailable.with(format!("the state could not be read: {e}")))
}
