//! The cluster's middleware: reads that wait for a sequence, `X-Botlist-Seq` on every
//! response under the base path, and writes forwarded to the writer while this node follows.

use std::cell::RefCell;
use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::{HeaderValue, RETRY_AFTER};
use actix_web::http::Method;
use actix_web::{web, FromRequest, HttpResponse, ResponseError};
use futures_util::future::LocalBoxFuture;
use pin_project_lite::pin_project;

use super::forward::NotForwarded;
use super::{
    forwarded_by_a_node, with_seq, ClusterHttp, ALLOW_STALE_HEADER, LAG, MIN_SEQ, SEQ, SEQ_HEADER,
};
use crate::api::error::{ApiError, Code};
use crate::api::http::around::polled_again;
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
/// Every read on a follower asks this, and almost none sends either: the query string is
/// decoded only when it could hold `min_seq` (the name itself, or a `%` that could encode it).
fn min_seq(request: &ServiceRequest) -> Result<Option<u64>, ApiError> {
    let raw = match request.headers().get(&MIN_SEQ) {
        Some(value) => Some(value.to_str().unwrap_or("x").to_owned()),
        None => min_seq_parameter(request.query_string()),
    };
    match raw {
        None => Ok(None),
        Some(raw) => raw.trim().parse::<u64>().map(Some).map_err(|_| {
            Code::BadRequest.with(format!(
                "X-Botlist-Min-Seq (or min_seq) must be a whole number, not {raw:?}"
            ))
        }),
    }
}

/// The first `min_seq` parameter of a query string, decoded.
fn min_seq_parameter(query: &str) -> Option<String> {
    if !query.contains("min_seq") && !query.contains('%') {
        return None;
    }
    form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == "min_seq")
        .map(|(_, value)| value.into_owned())
}

/// Before a request under the base path reaches the routes: `Ok(None)` to route it now,
/// `Ok(Some(seq))` to route it once `seq` is applied, `Err` to answer it with that.
/// (The refusal is boxed: the rare path should not make every request's result larger.)
fn before(
    cluster: &ClusterHttp,
    request: &ServiceRequest,
) -> Result<Option<u64>, Box<HttpResponse>> {
    let wanted = match min_seq(request) {
        Ok(wanted) => wanted,
        Err(error) => {
            return Err(Box::new(with_seq(
                refusal(request.path(), &error),
                &cluster.view,
            )))
        }
    };
    let reads = matches!(*request.method(), Method::GET | Method::HEAD);
    if reads {
        let lag = cluster.view.lag_ms();
        if lag > cluster.max_lag.as_millis() as u64 && !allows_stale(request) {
            let error = Code::ReplicaBehind.with(format!(
                "this node has not heard from the stream for {lag} ms (over {} ms): its answer \
                 may be stale; retry, ask another node, or send {ALLOW_STALE_HEADER}: true",
                cluster.max_lag.as_millis()
            ));
            let mut response = refusal(request.path(), &error);
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            response.headers_mut().insert(LAG, HeaderValue::from(lag));
            return Err(Box::new(with_seq(response, &cluster.view)));
        }
    }
    Ok(wanted.filter(|&wanted| cluster.view.applied_seq() < wanted))
}

/// Routes `request` once the node has applied `wanted`, or answers 503 `replica_behind` after
/// `--min-seq-wait-ms` (the rare path: its future is boxed).
async fn after_waiting<S, B>(
    service: Rc<S>,
    stamp: Rc<Stamp>,
    request: ServiceRequest,
    wanted: u64,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody + 'static,
{
    let cluster = &stamp.cluster;
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
    let response = service.call(request).await?.map_into_boxed_body();
    Ok(stamp.stamp(response))
}

/// Middleware: waits reads until the node has applied what they ask for, and tells every
/// response under the base path how far the node is. Off (no cluster), it only passes
/// requests on. A read that asks for nothing (nearly all) costs a few atomic loads, two
/// header lookups and two headers; its future is not boxed, and nothing shared between the
/// workers is written (no `Data` clone, whose count every worker would write).
pub struct Consistency(Option<web::Data<ClusterHttp>>);

impl Consistency {
    pub fn new(cluster: Option<web::Data<ClusterHttp>>) -> Self {
        Self(cluster)
    }
}

impl<S, B> Transform<S, ServiceRequest> for Consistency
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Transform = ConsistencyService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(ConsistencyService {
            service: Rc::new(service),
            stamp: self.0.clone().map(|cluster| Rc::new(Stamp::new(cluster))),
        }))
    }
}

pub struct ConsistencyService<S> {
    service: Rc<S>,
    /// One per worker: the cluster and the header values last made.
    stamp: Option<Rc<Stamp>>,
}

impl<S, B> Service<ServiceRequest> for ConsistencyService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Future = Consistent<S::Future>;

    actix_service::forward_ready!(service);

    fn call(&self, request: ServiceRequest) -> Self::Future {
        let Some(stamp) = &self.stamp else {
            return Consistent::Passed {
                answer: self.service.call(request),
            };
        };
        if !stamp.cluster.serves(request.path()) {
            return Consistent::Passed {
                answer: self.service.call(request),
            };
        }
        match before(&stamp.cluster, &request) {
            Ok(None) => Consistent::Stamped {
                answer: self.service.call(request),
                stamp: Some(Rc::clone(stamp)),
            },
            Ok(Some(wanted)) => Consistent::Waiting {
                answer: Box::pin(after_waiting(
                    Rc::clone(&self.service),
                    Rc::clone(stamp),
                    request,
                    wanted,
                )),
            },
            Err(response) => Consistent::Answered {
                response: Some(Box::new(request.into_response(*response))),
            },
        }
    }
}

pin_project! {
    #[project = ConsistentProj]
    pub enum Consistent<F> {
        Passed { #[pin] answer: F },
        Stamped { #[pin] answer: F, stamp: Option<Rc<Stamp>> },
        Waiting { answer: LocalBoxFuture<'static, Result<ServiceResponse<BoxBody>, actix_web::Error>> },
        Answered { response: Option<Box<ServiceResponse<BoxBody>>> },
    }
}

impl<F, B> Future for Consistent<F>
where
    F: Future<Output = Result<ServiceResponse<B>, actix_web::Error>>,
    B: MessageBody + 'static,
{
    type Output = Result<ServiceResponse<BoxBody>, actix_web::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            ConsistentProj::Passed { answer } => {
                Poll::Ready(Ok(ready!(answer.poll(cx))?.map_into_boxed_body()))
            }
            ConsistentProj::Stamped { answer, stamp } => {
                let response = ready!(answer.poll(cx))?.map_into_boxed_body();
                Poll::Ready(match stamp.take() {
                    Some(stamp) => Ok(stamp.stamp(response)),
                    None => Err(polled_again()),
                })
            }
            ConsistentProj::Waiting { answer } => answer.as_mut().poll(cx),
            ConsistentProj::Answered { response } => {
                Poll::Ready(response.take().map(|r| *r).ok_or_else(polled_again))
            }
        }
    }
}

/// What a worker puts on each response under the base path: `X-Botlist-Seq` and
/// `X-Botlist-Lag-Ms`, read as the response leaves (for a 2xx write, its record is durable by
/// then). The values last made are kept: most responses repeat them, and a kept value is
/// handed on without formatting or allocating.
pub struct Stamp {
    cluster: web::Data<ClusterHttp>,
    seq: RefCell<Option<(u64, HeaderValue)>>,
    /// `X-Botlist-Lag-Ms` values below [`KEPT_LAGS`] (a follower's usual lags), made once.
    lags: RefCell<Vec<Option<HeaderValue>>>,
}

/// How many small lag values a worker keeps made.
const KEPT_LAGS: usize = 128;

impl Stamp {
    fn new(cluster: web::Data<ClusterHttp>) -> Self {
        Self {
            cluster,
            seq: RefCell::new(None),
            lags: RefCell::new(vec![None; KEPT_LAGS]),
        }
    }

    fn stamp(&self, mut response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
        let seq = self.seq_value(self.cluster.view.applied_seq());
        let lag = self.lag_value(self.cluster.view.lag_ms());
        let headers = response.headers_mut();
        headers.insert(SEQ, seq);
        headers.insert(LAG, lag);
        response
    }

    fn seq_value(&self, seq: u64) -> HeaderValue {
        let mut kept = self.seq.borrow_mut();
        match kept.as_ref() {
            Some((was, value)) if *was == seq => value.clone(),
            _ => kept.insert((seq, HeaderValue::from(seq))).1.clone(),
        }
    }

    fn lag_value(&self, lag: u64) -> HeaderValue {
        let mut kept = self.lags.borrow_mut();
        match usize::try_from(lag).ok().and_then(|i| kept.get_mut(i)) {
            Some(Some(value)) => value.clone(),
            Some(slot) => slot.insert(HeaderValue::from(lag)).clone(),
            None => HeaderValue::from(lag),
        }
    }
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
/// sent on (two nodes with stale views must not bounce it): 503 `no_writer`. A read costs it
/// one comparison of its method: its future is the routes' own, unboxed.
pub struct ForwardWrites(Option<web::Data<ClusterHttp>>);

impl ForwardWrites {
    pub fn new(cluster: Option<web::Data<ClusterHttp>>) -> Self {
        Self(cluster)
    }
}

impl<S, B> Transform<S, ServiceRequest> for ForwardWrites
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Transform = ForwardWritesService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(ForwardWritesService {
            service,
            cluster: self.0.clone(),
        }))
    }
}

pub struct ForwardWritesService<S> {
    service: S,
    cluster: Option<web::Data<ClusterHttp>>,
}

impl<S, B> Service<ServiceRequest> for ForwardWritesService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Future = Forwarded<S::Future>;

    actix_service::forward_ready!(service);

    fn call(&self, request: ServiceRequest) -> Self::Future {
        let writes = !matches!(
            *request.method(),
            Method::GET | Method::HEAD | Method::OPTIONS
        );
        let forward = match &self.cluster {
            Some(cluster) if writes => {
                let follows = matches!(
                    cluster.view.role(),
                    NodeRole::Follower | NodeRole::Candidate
                );
                follows.then(|| cluster.clone())
            }
            _ => None,
        };
        match forward {
            None => Forwarded::Passed {
                answer: self.service.call(request),
            },
            Some(cluster) => Forwarded::Forwarding {
                answer: Box::pin(forward_write(cluster, request)),
            },
        }
    }
}

pin_project! {
    #[project = ForwardedProj]
    pub enum Forwarded<F> {
        Passed { #[pin] answer: F },
        Forwarding { answer: LocalBoxFuture<'static, Result<ServiceResponse<BoxBody>, actix_web::Error>> },
    }
}

impl<F, B> Future for Forwarded<F>
where
    F: Future<Output = Result<ServiceResponse<B>, actix_web::Error>>,
    B: MessageBody + 'static,
{
    type Output = Result<ServiceResponse<BoxBody>, actix_web::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            ForwardedProj::Passed { answer } => {
                Poll::Ready(Ok(ready!(answer.poll(cx))?.map_into_boxed_body()))
            }
            ForwardedProj::Forwarding { answer } => answer.as_mut().poll(cx),
        }
    }
}

/// A write on a node that follows: sent to the writer, whose answer is this node's.
async fn forward_write(
    cluster: web::Data<ClusterHttp>,
    request: ServiceRequest,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
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

#[cfg(test)]
mod tests {
    use super::super::{LAG_HEADER, MIN_SEQ_HEADER};
    use super::*;
    use crate::cluster::view::ClusterView;
    use crate::domain::ids::TokenHash;
    use actix_web::test::{call_service, init_service, TestRequest};
    use actix_web::{App, HttpResponse};
    use std::sync::Arc;

    #[test]
    fn min_seq_is_found_wherever_the_query_has_it_and_only_decoded_when_it_may() {
        for (query, found) in [
            ("", None),
            ("userId=7", None),
            ("min_seq=12", Some("12")),
            ("userId=7&min_seq=12&limit=3", Some("12")),
            ("userId=7&min%5Fseq=12", Some("12")),
            ("min_sequence=1", None),
            ("q=%20x", None),
            ("min_seq=a%20b", Some("a b")),
        ] {
            assert_eq!(min_seq_parameter(query).as_deref(), found, "{query}");
        }
    }

    #[test]
    fn the_stamp_hands_on_the_values_it_made_and_makes_new_ones_when_they_change() {
        let stamp = Stamp::new(super::super::tests::cluster());
        assert_eq!(stamp.seq_value(41), "41");
        assert_eq!(stamp.seq_value(41), "41");
        assert_eq!(stamp.seq_value(42), "42");
        assert_eq!(stamp.lag_value(0), "0");
        assert_eq!(stamp.lag_value(7), "7");
        assert_eq!(stamp.lag_value(7), "7");
        let beyond = KEPT_LAGS as u64 + 5;
        assert_eq!(stamp.lag_value(beyond), beyond.to_string().as_str());
        assert_eq!(stamp.lag_value(u64::MAX), u64::MAX.to_string().as_str());
    }

    #[actix_web::test]
    async fn reads_under_the_base_path_are_stamped_and_min_seq_is_read_in_both_forms() {
        let cluster = super::super::tests::cluster();
        // A follower that applied up to 5 and knows itself current.
        let view = ClusterView::new("b".into(), NodeRole::Follower);
        view.set_caught_up(5, 5, 1);
        view.heard_from_stream(true);
        let cluster = web::Data::new(ClusterHttp {
            view,
            base_path: cluster.base_path.clone(),
            classic_base_path: cluster.classic_base_path.clone(),
            step_down: cluster.step_down.clone(),
            token: TokenHash::of("secret"),
            forwarder: Arc::clone(&cluster.forwarder),
            min_seq_wait: Duration::from_millis(20),
            max_lag: cluster.max_lag,
        });
        let app = init_service(
            App::new()
                .wrap(Consistency::new(Some(cluster)))
                .default_service(web::to(HttpResponse::Ok)),
        )
        .await;
        let get = |uri: &str| TestRequest::get().uri(uri);
        for request in [
            get("/api/v1/bots/1/check?userId=7"),
            get("/api/v1/bots?limit=5&min_seq=5"),
            get("/api/v1/bots?limit=5&min%5Fseq=4"),
            get("/api/v1/bots").insert_header((MIN_SEQ_HEADER, "5")),
            // The classic surface too: the released SDKs read through it.
            get("/api/bots/1"),
            get("/api/bots?search=a&min_seq=5"),
        ] {
            let response = call_service(&app, request.to_request()).await;
            assert_eq!(response.status(), 200);
            assert_eq!(
                response.headers().get(SEQ_HEADER).map(|v| v.as_bytes()),
                Some(&b"5"[..])
            );
            assert!(response.headers().contains_key(LAG_HEADER));
        }
        // Outside the base path: nothing added.
        let response = call_service(&app, get("/healthz").to_request()).await;
        assert!(!response.headers().contains_key(SEQ_HEADER));
        // Not a number, in either form: 400, stamped.
        for request in [
            get("/api/v1/bots?limit=5&min_seq=soon"),
            get("/api/v1/bots").insert_header((MIN_SEQ_HEADER, "soon")),
        ] {
            let response = call_service(&app, request.to_request()).await;
            assert_eq!(response.status(), 400);
            assert_eq!(
                response.headers().get(SEQ_HEADER).map(|v| v.as_bytes()),
                Some(&b"5"[..])
            );
        }
        // Ahead of the node, in either form: 503 replica_behind once the wait is over.
        for request in [
            get("/api/v1/bots?userId=7&min_seq=6"),
            get("/api/v1/bots").insert_header((MIN_SEQ_HEADER, "6")),
        ] {
            let response = call_service(&app, request.to_request()).await;
            assert_eq!(response.status(), 503);
            assert_eq!(
                response.headers().get("retry-after").map(|v| v.as_bytes()),
                Some(&b"1"[..])
            );
            assert_eq!(
                response.headers().get(SEQ_HEADER).map(|v| v.as_bytes()),
                Some(&b"5"[..])
            );
        }
    }
}
