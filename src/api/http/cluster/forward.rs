//! Requests a node does not answer itself go to the writer named in the lease, with the
//! cluster token and the client's address, and the writer's answer comes back as it is
//! (status, headers such as `X-Botlist-Seq`, body). A request that cannot be forwarded is
//! [`NotForwarded`], which the client sees as 503 `no_writer`. A node forwards writes while it
//! follows the stream.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;

use super::TOKEN_HEADER;
use crate::api::error::{ApiError, Code, Enveloped};
use crate::cluster::view::{self, ClusterView};
use crate::config::Secret;

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

pub struct Forwarder {
    view: Arc<ClusterView>,
    client: reqwest::Client,
    token: Secret,
}

/// Why a request was not forwarded: there is no writer to send it to, or the writer could not
/// be reached. Each is a `no_writer` answer to the client; the client retries.
#[derive(Debug, thiserror::Error)]
pub enum NotForwarded {
    #[error("no node holds the writer's lease")]
    NoWriter,
    /// The lease names this node, which is not writing yet (it is promoting).
    #[error("this node holds the lease but is not writing yet")]
    Promoting,
    #[error("the method {0} cannot be sent on")]
    Method(String),
    /// Another node forwarded the request here, and this node does not write either: two nodes
    /// with stale views must not bounce it.
    #[error("the request was forwarded here by another node")]
    Bounced,
    #[error("the writer could not be reached: {0}")]
    Unreachable(String),
    #[error("the writer's answer was cut short")]
    CutShort,
}

impl From<NotForwarded> for ApiError {
    fn from(_: NotForwarded) -> Self {
        Code::NoWriter.error()
    }
}

impl NotForwarded {
    /// The answer the client gets.
    pub fn response(self) -> HttpResponse {
        actix_web::ResponseError::error_response(&ApiError::from(self))
    }
}

impl Forwarder {
    pub fn new(view: Arc<ClusterView>, token: Secret) -> std::io::Result<Self> {
        Ok(Self {
            view,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(std::io::Error::other)?,
            token,
        })
    }

    /// Sends `request` with `body` to the writer and answers what it answered.
    pub async fn forward(
        &self,
        request: &HttpRequest,
        body: Bytes,
    ) -> Result<HttpResponse, NotForwarded> {
        let writer = self.view.writer().ok_or(NotForwarded::NoWriter)?;
        if writer.node_id == self.view.node_id {
            return Err(NotForwarded::Promoting);
        }
        let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
        let url = format!("{}{path}", writer.url.trim_end_matches('/'));
        let method = reqwest::Method::from_bytes(request.method().as_str().as_bytes())
            .map_err(|_| NotForwarded::Method(request.method().to_string()))?;
        let mut outgoing = self.client.request(method, url);
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
        outgoing = outgoing.header(TOKEN_HEADER, self.token.expose());
        if let Some(peer) = request.peer_addr() {
            outgoing = outgoing.header("X-Forwarded-For", peer.ip().to_string());
        }
        view::count_forwarded();
        let answer = match outgoing.body(body).send().await {
            Ok(answer) => answer,
            Err(error) => {
                tracing::warn!(%error, writer = %writer.node_id, "forwarding to the writer failed");
                return Err(NotForwarded::Unreachable(error.to_string()));
            }
        };
        let status =
            StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
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
        // The writer's answer is final: its errors are in the envelope already, with the
        // writer's message, and this node's layer must not make them again.
        response.extensions_mut().insert(Enveloped);
        match answer.bytes().await {
            Ok(bytes) => Ok(response.body(bytes)),
            Err(_) => Err(NotForwarded::CutShort),
        }
    }
}
