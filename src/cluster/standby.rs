//! The HTTP face of a node that does not write. It keeps no actors: every request under the
//! base path is forwarded to the writer named in the lease, with the cluster token, and the
//! writer's answer is sent back as it is (status, headers such as `X-Botlist-Seq`, body). With
//! no writer the answer is 503 `no_writer`. `GET /cluster`, `GET /cluster/writer` and
//! `GET /healthz` are answered here.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};

use std::sync::Mutex;

use super::catchup::CatchUp;
use super::view::{self, ClusterView};
use super::TOKEN_HEADER;
use crate::api::error::Code;
use crate::api::reply;
use crate::config::Secret;
use crate::domain::ids::TokenHash;

struct Standby {
    view: Arc<ClusterView>,
    client: reqwest::Client,
    token: Secret,
    admin_token: Option<TokenHash>,
    caught_up: Arc<Mutex<Option<CatchUp>>>,
    digest_path: String,
}

/// Headers that describe one hop, never forwarded.
const HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
    "content-length",
];

/// What a standby answers with, beside the writer it forwards to.
pub struct StandbyOptions {
    pub token: Secret,
    pub admin_token: Option<Secret>,
    pub base_path: String,
    pub workers: usize,
}

pub fn serve(
    listener: TcpListener,
    view: Arc<ClusterView>,
    caught_up: Arc<Mutex<Option<CatchUp>>>,
    options: StandbyOptions,
) -> std::io::Result<Server> {
    let digest_path = format!("{}/admin/cluster/digest", options.base_path);
    let workers = options.workers;
    let state = web::Data::new(Standby {
        view,
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(std::io::Error::other)?,
        token: options.token,
        admin_token: options.admin_token.map(|t| TokenHash::of(t.expose())),
        caught_up,
        digest_path: digest_path.clone(),
    });
    Ok(HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .app_data(web::PayloadConfig::new(1 << 20))
            .route("/healthz", web::get().to(healthz))
            .route("/cluster", web::get().to(status))
            .route("/cluster/writer", web::get().to(not_writer))
            .route(&digest_path, web::get().to(digest))
            .default_service(web::to(forward))
    })
    .workers(workers.max(1))
    .disable_signals()
    .shutdown_timeout(5)
    .listen(listener)?
    .run())
}

async fn healthz() -> HttpResponse {
    reply::ok(&serde_json::json!({"status": "ok"}))
}

async fn status(state: web::Data<Standby>) -> HttpResponse {
    reply::ok(&state.view.status())
}

async fn not_writer(state: web::Data<Standby>) -> HttpResponse {
    let status = state.view.status();
    reply::json(StatusCode::SERVICE_UNAVAILABLE, &status)
}

fn no_writer() -> HttpResponse {
    let error = Code::NoWriter.error();
    actix_web::ResponseError::error_response(&error)
}

async fn forward(
    request: HttpRequest,
    body: web::Bytes,
    state: web::Data<Standby>,
) -> HttpResponse {
    let Some(writer) = state.view.writer() else {
        return no_writer();
    };
    if writer.node_id == state.view.node_id {
        // The lease still names this node (it is starting to write): not ready yet.
        return no_writer();
    }
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{path}", writer.url.trim_end_matches('/'));
    let Ok(method) = reqwest::Method::from_bytes(request.method().as_str().as_bytes()) else {
        return no_writer();
    };
    let mut outgoing = state.client.request(method, url);
    for (name, value) in request.headers() {
        // The client's own X-Forwarded-For is not passed on: the writer trusts the one this
        // node sets (the client's address), because the cluster token comes with it.
        if HOP.contains(&name.as_str())
            || name.as_str().eq_ignore_ascii_case(TOKEN_HEADER)
            || name.as_str().eq_ignore_ascii_case("x-forwarded-for")
        {
            continue;
        }
        outgoing = outgoing.header(name.as_str(), value.as_bytes());
    }
    outgoing = outgoing.header(TOKEN_HEADER, state.token.expose());
    if let Some(peer) = request.peer_addr() {
        outgoing = outgoing.header("X-Forwarded-For", peer.ip().to_string());
    }
    view::count_forwarded();
    let answer = match outgoing.body(body).send().await {
        Ok(answer) => answer,
        Err(error) => {
            tracing::warn!(%error, writer = %writer.node_id, "forwarding to the writer failed");
            return no_writer();
        }
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = HttpResponse::build(status);
    for (name, value) in answer.headers() {
        if HOP.contains(&name.as_str()) {
            continue;
        }
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_str().as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            response.append_header((name, value));
        }
    }
    match answer.bytes().await {
        Ok(bytes) => response.body(bytes),
        Err(_) => no_writer(),
    }
}

/// The digest of the state this node caught up from the stream.
async fn digest(request: HttpRequest, state: web::Data<Standby>) -> HttpResponse {
    let Some(expected) = &state.admin_token else {
        let error = Code::NotFound.with(format!("no route for GET {}", state.digest_path));
        return actix_web::ResponseError::error_response(&error);
    };
    let presented = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !expected.matches(&TokenHash::of(presented)) {
        let error = Code::Unauthorized.with("unknown admin token".into());
        return actix_web::ResponseError::error_response(&error);
    }
    // The catch-up loop holds the state while it reads; it puts it back within moments.
    for _ in 0..500 {
        let answer = {
            let mut slot = state.caught_up.lock().unwrap_or_else(|p| p.into_inner());
            slot.as_mut().map(|caught| {
                let applied_seq = caught.applied_seq();
                let (profiles, bots) = caught.replayer.parts();
                super::digest::Digest {
                    applied_seq,
                    digest: super::digest::digest(profiles, bots),
                }
            })
        };
        if let Some(answer) = answer {
            return reply::ok(&answer);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let error = Code::Unavailable.with("the state is being caught up; retry".into());
    actix_web::ResponseError::error_response(&error)
}
