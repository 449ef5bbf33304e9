//! The cluster's middleware: reads that wait for a sequence, `X-Botlist-Seq` on every
//! response under the base path, and writes forwarded to the writer while this node follows.

use std::time::{Duration, Instant};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue, RETRY_AFTER};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpResponse, ResponseError};

use super::forward::NotForwarded;
use super::{
    forwarded_by_a_node, with_seq, ClusterHttp, ALLOW_STALE_HEADER, LAG_HEADER, MIN_SEQ_HEADER,
    SEQ_HEADER,
};
use crate::api::error::{ApiError, Code};
use crate::api::http::problem;
use crate::cluster::view::NodeRole;

/// A refusal this layer makes, in the form of the route it refuses: problem details under the
/// project API (which promises them for every error, these too), the envelope elsewhere.
fn refusal(path: &str, error: &ApiError) -> HttpResponse {
    if problem::is_project_path(path) {
        problem::render(error)
    } else {
        error.error_response()
    }
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
    if !crate::api::under(request.path(), &cluster.base_path) {
        return Ok(next.call(request).await?.map_into_boxed_body());
    }
    let wanted = match min_seq(&request) {
        Ok(wanted) => wanted,
        Err(error) => {
            let response = with_seq(refusal(request.path(), &error), &cluster.view);
            return Ok(request.into_response(response));
        }
    };
    let reads = matches!(*request.method(), Method::GET | Method::HEAD);
    let lag = cluster.view.lag_ms();
    if reads && lag > cluster.max_lag.as_millis() as u64 && !allows_stale(&request) {
        let error = Code::ReplicaBehind.with(format!(
            "this node has not heard from the stream for {lag} ms (over {} ms): its answer \
             may be stale; retry, ask another node, or send {ALLOW_STALE_HEADER}: true",
            cluster.max_lag.as_millis()
        ));
        let mut response = refusal(request.path(), &error);
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        response
            .headers_mut()
            .insert(HeaderName::from_static(LAG_HEADER), HeaderValue::from(lag));
        let response = with_seq(response, &cluster.view);
        return Ok(request.into_response(response));
    }
    if let Some(wanted) = wanted {
        let give_up = Instant::now() + cluster.min_seq_wait;
        while cluster.view.applied_seq() < wanted {
            if Instant::now() >= give_up {
                let error = Code::ReplicaBehind.with(format!(
                    "this node has applied up to {}, not yet {wanted}; retry",
                    cluster.view.applied_seq()
                ));
                let mut response = refusal(request.path(), &error);
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
    response.headers_mut().insert(
        HeaderName::from_static(LAG_HEADER),
        HeaderValue::from(cluster.view.lag_ms()),
    );
    Ok(response)
}

/// Whether the client asked to be answered however stale the node is.
fn allows_stale(request: &ServiceRequest) -> bool {
    request
        .headers()
        .get(ALLOW_STALE_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true") || v.trim() == "1")
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
        let error = ApiError::from(NotForwarded::Bounced);
        let response = with_seq(refusal(request.path(), &error), &cluster.view);
        return Ok(request.into_response(response));
    }
    let (http_request, payload) = request.into_parts();
    let mut payload = payload;
    let read = match web::Payload::from_request(&http_request, &mut payload).await {
        Ok(read) => crate::api::extract::body(&http_request, read).await,
        Err(error) => Err(Code::BadRequest.with(format!("the body could not be read: {error}"))),
    };
    let mut response = match read {
        Ok(body) => cluster
            .forwarder
            .forward(&http_request, body.freeze())
            .await
            .unwrap_or_else(|why| refusal(http_request.path(), &ApiError::from(why))),
        Err(error) => refusal(http_request.path(), &error),
    };
    // The writer's answer says how far the writer is; an answer made here, how far this node is.
    if !response.headers().contains_key(SEQ_HEADER) {
        response = with_seq(response, &cluster.view);
    }
    Ok(ServiceResponse::new(http_request, response))
}
