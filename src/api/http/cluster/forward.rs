//! Requests a node does not answer itself go to the writer named in the lease, with the
//! cluster token and the client's address, and the writer's answer comes back as it is
//! (status, headers such as `X-Botlist-Seq`, body). A request that cannot be forwarded is
//! [`NotForwarded`]: 503 `no_writer` when it never reached a writer (none known, or the
//! connection was refused), 503 `outcome_unknown` when it was sent and no whole answer came
//! back (the writer may have stored it: a client must not read that as "not stored"). A node
//! forwards writes while it follows the stream.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;

use super::TOKEN_HEADER;
use crate::api::error::{ApiError, Code, Enveloped};
use crate::cluster::lease::Holder;
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

/// Why a request was not forwarded, or its answer did not come back. The client retries
/// either way; only [`NotForwarded::Unanswered`] and [`NotForwarded::CutShort`] may have been
/// stored, and they say so (`outcome_unknown`), never `no_writer`.
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
    /// The connection to the writer was refused or could not be made: nothing was sent.
    #[error("the writer could not be reached: {0}")]
    Unreachable(String),
    /// The request was (or may have been) sent, and no answer came: the writer died, stopped or
    /// cut the connection while it had the request.
    #[error("the writer did not answer: {0}")]
    Unanswered(String),
    /// The writer's status and headers came, its body did not.
    #[error("the writer's answer was cut short")]
    CutShort,
}

impl NotForwarded {
    /// Whether the writer may have stored the request.
    pub fn may_be_stored(&self) -> bool {
        matches!(self, Self::Unanswered(_) | Self::CutShort)
    }
}

impl From<NotForwarded> for ApiError {
    fn from(why: NotForwarded) -> Self {
        if why.may_be_stored() {
            Code::OutcomeUnknown.error().retry_after(1)
        } else {
            Code::NoWriter.error()
        }
    }
}

/// How long a write waits for this node to learn of a writer (or of another than one that
/// refused the connection) before it is `no_writer`: two of the node's lease look-ups.
const WRITER_WAIT: Duration = Duration::from_millis(1_200);

impl Forwarder {
    /// `answer_within`: how long the writer may take to answer a forwarded request (its own
    /// publish deadline and some), after which the outcome is unknown.
    pub fn new(
        view: Arc<ClusterView>,
        token: Secret,
        answer_within: Duration,
    ) -> std::io::Result<Self> {
        Ok(Self {
            view,
            client: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(2))
                .timeout(answer_within)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(std::io::Error::other)?,
            token,
        })
    }

    /// The writer this node knows (other than `refused`, a writer that refused the
    /// connection), or the one it learns before `deadline`: a node learns a new writer from
    /// its epoch message or its next look at the lease, so just after an election (or its own
    /// start) a write waits that long rather than being told there is no writer while one is
    /// there.
    async fn writer_soon(
        &self,
        refused: Option<&Holder>,
        deadline: tokio::time::Instant,
    ) -> Option<Holder> {
        loop {
            if let Some(writer) = self.view.writer().filter(|w| Some(w) != refused) {
                return Some(writer);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends `request` with `body` to the writer and answers what it answered. A writer that
    /// refuses the connection (nothing was sent: it died, and this node has not yet learned
    /// the next) is replaced by the next one this node learns within `WRITER_WAIT`.
    pub async fn forward(
        &self,
        request: &HttpRequest,
        body: Bytes,
    ) -> Result<HttpResponse, NotForwarded> {
        let deadline = tokio::time::Instant::now() + WRITER_WAIT;
        let mut refused: Option<Holder> = None;
        loop {
            let writer = match self.writer_soon(refused.as_ref(), deadline).await {
                Some(writer) => writer,
                None if refused.is_some() => {
                    let writer = refused.map(|w| w.node_id).unwrap_or_default();
                    return Err(NotForwarded::Unreachable(format!("{writer} refused")));
                }
                None => return Err(NotForwarded::NoWriter),
            };
            match self.send(request, body.clone(), &writer).await {
                Err(NotForwarded::Unreachable(why)) => {
                    tracing::debug!(%why, writer = %writer.node_id, "the writer refused the connection; waiting for the next");
                    refused = Some(writer);
                }
                answered => return answered,
            }
        }
    }

    /// One attempt to send `request` to `writer`.
    async fn send(
        &self,
        request: &HttpRequest,
        body: Bytes,
        writer: &Holder,
    ) -> Result<HttpResponse, NotForwarded> {
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
                view::count_forward_failed(!error.is_connect());
                // Only a connection that was never made proves nothing was sent; a reset, a
                // timeout or a closed connection after that may follow a stored write.
                return Err(if error.is_connect() {
                    NotForwarded::Unreachable(error.to_string())
                } else {
                    NotForwarded::Unanswered(error.to_string())
                });
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
            Err(_) => {
                view::count_forward_failed(true);
                Err(NotForwarded::CutShort)
            }
        }
    }
}
