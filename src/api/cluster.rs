//! Cluster mode over HTTP: `X-Botlist-Seq` on every response under the base path, waiting
//! reads (`X-Botlist-Min-Seq` / `min_seq`), `GET /cluster`, `GET /cluster/writer`,
//! `GET {base}/admin/cluster/digest` and `POST {base}/admin/cluster/step-down`, on every node;
//! and, on a node that follows, writes forwarded to the writer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue, RETRY_AFTER};
use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpResponse, ResponseError};

use super::error::{ApiError, Code};
use super::extract::Admin;
use super::reply;
use crate::cluster::forward::Forwarder;
use crate::cluster::view::{ClusterView, NodeRole};
use crate::domain::ids::TokenHash;

pub const SEQ_HEADER: &str = "x-botlist-seq";
pub const MIN_SEQ_HEADER: &str = "x-botlist-min-seq";

/// What the writer's HTTP layer needs of the cluster.
pub struct ClusterHttp {
    pub view: Arc<ClusterView>,
    pub base_path: String,
    /// Pulled by `step-down`: the node hands the lease back and exits.
    pub step_down: tokio::sync::mpsc::UnboundedSender<()>,
    /// The hash of `--cluster-token`, which nodes put on the requests they forward.
    pub token: TokenHash,
    /// Sends writes to the writer while this node follows.
    pub forwarder: Arc<Forwarder>,
    /// How long a read with `X-Botlist-Min-Seq` waits (`--min-seq-wait-ms`).
    pub min_seq_wait: Duration,
}

/// Whether another node of the cluster forwarded this request (it carries the cluster token).
pub fn forwarded_by_a_node(request: &ServiceRequest) -> bool {
    let Some(cluster) = request.app_data::<web::Data<ClusterHttp>>() else {
        return false;
    };
    request
        .headers()
        .get(crate::cluster::TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|presented| cluster.token.matches(&TokenHash::of(presented)))
}

/// The sequence a read asks to have been applied: the header, else the `min_seq` parameter.
fn min_seq(request: &ServiceRequest) -> Result<Option<u64>, ApiError> {
    let raw = request
        .headers()
        .get(MIN_SEQ_HEADER)
        .map(|v| v.to_str().unwrap_or("x").to_owned())
        .or_else(|| {
            form_urlencoded::parse(request.query_string().as_bytes())
                .find(|(key, _)| key == "min_seq")
                .map(|(_, value)| value.into_owned())
        });
    match raw {
        None => Ok(None),
        Some(raw) => raw.trim().parse::<u64>().map(Some).map_err(|_| {
            Code::BadRequest.with(format!(
                "X-Botlist-Min-Seq (or min_seq) must be a whole number, not {raw:?}"
            ))
        }),
    }
}

/// Middleware: waits reads until the node has applied what they ask for, and tells every
/// response under the base path how far the node is.
pub async fn consistency(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(cluster) = request.app_data::<web::Data<ClusterHttp>>().cloned() else {
        return Ok(next.call(request).await?.map_into_boxed_body());
    };
    if !super::under(request.path(), &cluster.base_path) {
        return Ok(next.call(request).await?.map_into_boxed_body());
    }
    let wanted = match min_seq(&request) {
        Ok(wanted) => wanted,
        Err(error) => {
            let response = with_seq(error.error_response(), &cluster.view);
            return Ok(request.into_response(response));
        }
    };
    if let Some(wanted) = wanted {
        let give_up = Instant::now() + cluster.min_seq_wait;
        while cluster.view.applied_seq() < wanted {
            if Instant::now() >= give_up {
                let mut response = Code::ReplicaBehind
                    .with(format!(
                        "this node has applied up to {}, not yet {wanted}; retry",
                        cluster.view.applied_seq()
                    ))
                    .error_response();
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from_static("1"));
                let response = with_seq(response, &cluster.view);
                return Ok(request.into_response(response));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let mut response = next.call(request).await?.map_into_boxed_body();
    // Read as the response leaves: for a 2xx write, its record is durable by now.
    let seq = cluster.view.applied_seq();
    response
        .headers_mut()
        .insert(HeaderName::from_static(SEQ_HEADER), HeaderValue::from(seq));
    Ok(response)
}

fn with_seq(mut response: HttpResponse, view: &ClusterView) -> HttpResponse {
    response.headers_mut().insert(
        HeaderName::from_static(SEQ_HEADER),
        HeaderValue::from(view.applied_seq()),
    );
    response
}

/// Middleware, outside everything but the access log: while this node follows the stream, a
/// write goes to the writer (which applies its rate limit, keyed on the client's address this
/// node names) and its answer is this node's; reads are answered here, from the node's own
/// actors. A write that another node forwarded here while this node does not write is not
/// sent on (two nodes with stale views must not bounce it): 503 `no_writer`.
pub async fn forward_writes(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(cluster) = request.app_data::<web::Data<ClusterHttp>>().cloned() else {
        return Ok(next.call(request).await?.map_into_boxed_body());
    };
    let writes = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let follows = matches!(
        cluster.view.role(),
        NodeRole::Follower | NodeRole::Candidate
    );
    if !writes || !follows {
        return Ok(next.call(request).await?.map_into_boxed_body());
    }
    if forwarded_by_a_node(&request) {
        let response = with_seq(crate::cluster::forward::no_writer(), &cluster.view);
        return Ok(request.into_response(response));
    }
    let (http_request, payload) = request.into_parts();
    let mut payload = payload;
    let read = match web::Payload::from_request(&http_request, &mut payload).await {
        Ok(read) => super::extract::body(&http_request, read).await,
        Err(error) => Err(Code::BadRequest.with(format!("the body could not be read: {error}"))),
    };
    let mut response = match read {
        Ok(body) => {
            cluster
                .forwarder
                .forward(&http_request, body.freeze())
                .await
        }
        Err(error) => error.error_response(),
    };
    // The writer's answer says how far the writer is; an answer made here, how far this node is.
    if !response.headers().contains_key(SEQ_HEADER) {
        response = with_seq(response, &cluster.view);
    }
    Ok(ServiceResponse::new(http_request, response))
}

/// `GET /cluster`, `GET /cluster/writer` and the admin step-down, on the writer.
pub fn routes(base_path: &str) -> impl FnOnce(&mut web::ServiceConfig) + '_ {
    move |cfg| {
        cfg.service(web::resource("/cluster").get(status))
            .service(web::resource("/cluster/writer").get(writer))
            .service(web::resource(format!("{base_path}/admin/cluster/step-down")).post(step_down))
            .service(web::resource(format!("{base_path}/admin/cluster/digest")).get(digest));
    }
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
    state: web::Data<super::AppState>,
    cluster: web::Data<ClusterHttp>,
) -> Result<HttpResponse, ApiError> {
    let mut answer = None;
    for _ in 0..5 {
        let before = cluster.view.applied_seq();
        let digest = read_digest(&state).await?;
        let after = cluster.view.applied_seq();
        answer = Some(crate::cluster::digest::Digest {
            applied_seq: after,
            digest,
        });
        if before == after {
            break;
        }
    }
    Ok(reply::ok(&answer))
}

async fn read_digest(state: &super::AppState) -> Result<String, ApiError> {
    crate::cluster::digest::of_source(&state.registry)
        .await
        .map_err(|e| Code::Unavailable.with(format!("the state could not be read: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn cluster() -> web::Data<ClusterHttp> {
        web::Data::new(ClusterHttp {
            view: ClusterView::new("a".into(), NodeRole::Writer),
            base_path: "/api/v1".into(),
            step_down: tokio::sync::mpsc::unbounded_channel().0,
            token: TokenHash::of("secret"),
            min_seq_wait: Duration::from_secs(1),
            forwarder: Arc::new(
                Forwarder::new(
                    ClusterView::new("a".into(), NodeRole::Writer),
                    crate::config::Secret::from("secret"),
                )
                .expect("a client"),
            ),
        })
    }

    #[test]
    fn a_forwarded_request_is_limited_by_the_client_the_node_names() {
        use super::super::limits::{client_ip, ClientAddress};
        let forwarded = |token: Option<&str>| {
            let mut request = TestRequest::default()
                .app_data(cluster())
                .peer_addr("10.0.0.2:5000".parse().unwrap())
                .insert_header(("X-Forwarded-For", "203.0.113.7"));
            if let Some(token) = token {
                request = request.insert_header((crate::cluster::TOKEN_HEADER, token));
            }
            request.to_srv_request()
        };
        let with_token = forwarded(Some("secret"));
        assert!(forwarded_by_a_node(&with_token));
        assert_eq!(
            client_ip(
                with_token.request(),
                ClientAddress::of(ClientAddress::Peer, &with_token)
            ),
            "203.0.113.7".parse::<std::net::IpAddr>().unwrap()
        );
        // A wrong token or none: the peer, whatever the header says.
        for request in [forwarded(Some("guess")), forwarded(None)] {
            assert!(!forwarded_by_a_node(&request));
            assert_eq!(
                client_ip(
                    request.request(),
                    ClientAddress::of(ClientAddress::Peer, &request)
                ),
                "10.0.0.2".parse::<std::net::IpAddr>().unwrap()
            );
        }
    }
}
