//! The one middleware every request passes through, in one future with nothing boxed: the
//! request's id, log line and metrics; HEAD routed as GET; the header limit; `Allow` on a 405;
//! the error envelope; a handler's panic answered 500; compression. Each `from_fn` layer cost
//! every request a boxed future and a body mapping, and the chain of them cost as much as the
//! telemetry itself (docs/PERFORMANCE.md, session 11), so what every request needs is here.
//!
//! What runs only in some deployments (CORS, the cluster's forwarding and consistency) wraps
//! the routes inside this layer, each [`Optional`](super::around::Optional): a deployment
//! without it pays a branch.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use actix_web::body::{self, BodySize, BoxBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::{
    ContentEncoding, HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, ETAG, VARY,
};
use actix_web::http::{Method, StatusCode};
use actix_web::{Error, HttpMessage, HttpResponse, ResponseError};
use futures_util::future::{CatchUnwind, FutureExt};
use pin_project_lite::pin_project;

use super::around::polled_again;
use super::compress::{compress, negotiate};
use super::error::{envelope, ApiError, Code};
use super::guard::headers_within_limit;
use super::semantics::{gzip_on_ties, with_allow, AllowedMethods, MIN_COMPRESSED_BYTES};
use crate::telemetry::{AccessLog, Observation};

/// The layer, made once per worker: what it needs is handed to it, not looked up per request.
#[derive(Clone)]
pub struct Layer {
    access_log: Arc<AccessLog>,
    allowed: Arc<AllowedMethods>,
}

impl Layer {
    pub fn new(access_log: Arc<AccessLog>, allowed: Arc<AllowedMethods>) -> Self {
        Self {
            access_log,
            allowed,
        }
    }
}

impl<S, B> Transform<S, ServiceRequest> for Layer
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Transform = LayerService<S>;
    type InitError = ();
    type Future = std::future::Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        std::future::ready(Ok(LayerService {
            service,
            layer: Rc::new(self.clone()),
        }))
    }
}

pub struct LayerService<S> {
    service: S,
    layer: Rc<Layer>,
}

impl<S, B> Service<ServiceRequest> for LayerService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Future = Answer<S::Future>;

    actix_service::forward_ready!(service);

    fn call(&self, mut request: ServiceRequest) -> Self::Future {
        let in_flight = InFlight::enter(Rc::clone(&self.layer));
        let observation = Observation::begin(&request);
        let head = request.method() == Method::HEAD;
        let (step, encoding) = match arrive(&mut request) {
            Ok(encoding) => (
                Step::Routed {
                    answer: AssertUnwindSafe(self.service.call(request)).catch_unwind(),
                },
                encoding,
            ),
            Err(refusal) => (
                Step::Refused {
                    response: Some(request.into_response(refused(&refusal))),
                },
                None,
            ),
        };
        Answer {
            step,
            encoding,
            head,
            observation: Some(observation),
            in_flight,
        }
    }
}

/// Marks a HEAD answered as a GET, for the one handler that must know (a vote stream's HEAD
/// answers its headers without opening a stream).
#[derive(Clone, Copy)]
pub struct Head;

impl Head {
    pub fn asked(request: &actix_web::HttpRequest) -> bool {
        request.extensions().contains::<Head>()
    }
}

/// Before routing: HEAD becomes GET (the HTTP layer sends a HEAD no body, but the headers and
/// length a GET would have), the headers' size is checked, and the encoding chosen.
fn arrive(request: &mut ServiceRequest) -> Result<Option<ContentEncoding>, ApiError> {
    if request.method() == Method::HEAD {
        request.head_mut().method = Method::GET;
        request.extensions_mut().insert(Head);
    }
    headers_within_limit(request)?;
    if !request.headers().contains_key(ACCEPT_ENCODING) {
        return Ok(None);
    }
    let preferred = request
        .headers()
        .get(ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .and_then(gzip_on_ties);
    if let Some(preferred) = preferred {
        request.headers_mut().insert(ACCEPT_ENCODING, preferred);
    }
    negotiate(request).map_err(|_| Code::NotAcceptable.error())
}

/// The answer to a request refused before routing. A 406 depends on `Accept-Encoding`, and
/// says so to caches.
fn refused(refusal: &ApiError) -> HttpResponse {
    let mut response = refusal.error_response();
    if refusal.kind == Code::NotAcceptable {
        response
            .headers_mut()
            .insert(VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

pin_project! {
    /// A request's answer on its way out.
    pub struct Answer<F> {
        #[pin]
        step: Step<F>,
        encoding: Option<ContentEncoding>,
        // A HEAD, answered as a GET: its body is never sent, so never compressed.
        head: bool,
        observation: Option<Observation>,
        in_flight: InFlight,
    }
}

pin_project! {
    #[project = StepProj]
    enum Step<F> {
        Routed { #[pin] answer: CatchUnwind<AssertUnwindSafe<F>> },
        Refused { response: Option<ServiceResponse<BoxBody>> },
    }
}

impl<F, B> Future for Answer<F>
where
    F: Future<Output = Result<ServiceResponse<B>, Error>>,
    B: MessageBody + 'static,
{
    type Output = Result<ServiceResponse<BoxBody>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answered = match this.step.project() {
            StepProj::Routed { answer } => match ready!(answer.poll(cx)) {
                Ok(Ok(response)) => Ok(envelope(response.map_into_boxed_body())),
                Ok(Err(error)) => Err(error),
                Err(panic) => Err(panicked(panic, this.observation.as_ref())),
            },
            StepProj::Refused { response } => response.take().ok_or_else(polled_again),
        };
        // The in-flight guard holds the layer this answer goes through.
        let layer = &this.in_flight.0;
        let answered =
            answered.map(|response| depart(response, *this.encoding, *this.head, &layer.allowed));
        let Some(observation) = this.observation.take() else {
            return Poll::Ready(Err(polled_again()));
        };
        Poll::Ready(observation.end(&layer.access_log, answered))
    }
}

/// A panic in the request's future: no panic is reachable from a request by design; this is
/// for the one nobody found yet. The server goes on, and the client gets 500 in the envelope.
fn panicked(panic: Box<dyn std::any::Any + Send>, observation: Option<&Observation>) -> Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    let request_id = observation.map(Observation::id).unwrap_or_default();
    tracing::error!(%request_id, panic = %what, "a request handler panicked");
    ApiError::internal().into()
}

/// After the handler: `Allow` on a 405, and the body compressed when it is worth it. A
/// compressed body's bytes are not those its `ETag` was made from, so the tag is weakened (a
/// client's `If-None-Match` still matches: the comparison is weak). A handler marks a body
/// that must never be compressed (a live stream) `Content-Encoding: identity`; the mark is
/// taken off here.
fn depart(
    response: ServiceResponse<BoxBody>,
    encoding: Option<ContentEncoding>,
    head: bool,
    allowed: &AllowedMethods,
) -> ServiceResponse<BoxBody> {
    let mut response = if response.status() == StatusCode::METHOD_NOT_ALLOWED {
        with_allow(response, Some(allowed))
    } else {
        response
    };
    if let Some(encoding) = encoding.filter(|_| worth_compressing(response.response())) {
        response = compressed(response, encoding, head);
    }
    let headers = response.headers_mut();
    match headers.get(CONTENT_ENCODING).map(HeaderValue::as_bytes) {
        Some(b"identity") => {
            headers.remove(CONTENT_ENCODING);
        }
        Some(_) => {
            let weak = headers
                .get(ETAG)
                .filter(|tag| !tag.as_bytes().starts_with(b"W/"))
                .and_then(|tag| {
                    let mut weak = b"W/".to_vec();
                    weak.extend_from_slice(tag.as_bytes());
                    HeaderValue::from_bytes(&weak).ok()
                });
            if let Some(weak) = weak {
                headers.insert(ETAG, weak);
            }
        }
        None => {}
    }
    response
}

/// The response with its body in `encoding`, whole, so that it goes out with its length in
/// one write (a body of unknown length, which only a stream has, goes out as it is). A HEAD's
/// body is dropped instead: it gets the headers a GET would, without the length, which only
/// compressing would tell (as HTTP allows).
fn compressed(
    response: ServiceResponse<BoxBody>,
    encoding: ContentEncoding,
    head: bool,
) -> ServiceResponse<BoxBody> {
    let (request, response) = response.into_parts();
    let (response, body) = response.into_parts();
    let (mut response, body) = if head {
        (response, BoxBody::new(body::None::new()))
    } else {
        let bytes = match body.try_into_bytes() {
            Ok(bytes) => bytes,
            Err(body) => return ServiceResponse::new(request, response.set_body(body)),
        };
        match compress(encoding, &bytes) {
            Some(Ok(packed)) => (response, BoxBody::new(packed)),
            Some(Err(error)) => {
                tracing::error!(%error, "an answer could not be compressed; sent as it is");
                return ServiceResponse::new(request, response.set_body(BoxBody::new(bytes)));
            }
            None => return ServiceResponse::new(request, response.set_body(BoxBody::new(bytes))),
        }
    };
    let headers = response.headers_mut();
    headers.insert(CONTENT_ENCODING, encoding.to_header_value());
    headers.append(VARY, HeaderValue::from_static("accept-encoding"));
    ServiceResponse::new(request, response.set_body(body))
}

/// Not a body under [`MIN_COMPRESSED_BYTES`] (compressing it saves a few bytes at best), not one
/// that names its encoding already, and not a picture or video that is compressed already.
fn worth_compressing(response: &HttpResponse<BoxBody>) -> bool {
    if let BodySize::Sized(size) = response.body().size() {
        if size < MIN_COMPRESSED_BYTES as u64 {
            return false;
        }
    }
    if response.headers().contains_key(CONTENT_ENCODING) {
        return false;
    }
    let Some(content_type) = response.headers().get(CONTENT_TYPE) else {
        return true;
    };
    let content_type = content_type.as_bytes();
    let starts = |prefix: &[u8]| {
        content_type.len() >= prefix.len()
            && content_type[..prefix.len()].eq_ignore_ascii_case(prefix)
    };
    if starts(b"video/") {
        return false;
    }
    !starts(b"image/") || starts(b"image/svg+xml")
}

/// Counts the request in the access log's in-flight gauge until its answer is made or it is
/// dropped (a client that went away).
struct InFlight(Rc<Layer>);

impl InFlight {
    fn enter(layer: Rc<Layer>) -> Self {
        layer.access_log.arrived();
        Self(layer)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.access_log.left();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::{web, App, HttpServer};

    async fn boom() -> HttpResponse {
        panic!("a bug");
    }

    #[actix_web::test]
    async fn a_panicking_handler_answers_500_and_the_server_keeps_serving() {
        let layer = Layer::new(
            Arc::new(AccessLog::default()),
            Arc::new(AllowedMethods::from_openapi(&serde_json::Value::Null)),
        );
        let server = HttpServer::new(move || {
            App::new()
                .wrap(layer.clone())
                .route("/boom", web::get().to(boom))
                .route(
                    "/ok",
                    web::get().to(|| async { HttpResponse::Ok().body("fine") }),
                )
        })
        .workers(1)
        .bind("127.0.0.1:0")
        .expect("binds");
        let port = server.addrs()[0].port();
        actix_web::rt::spawn(server.run());
        let client = reqwest::Client::new();
        for _ in 0..3 {
            let response = client
                .get(format!("http://127.0.0.1:{port}/boom"))
                .send()
                .await
                .expect("answered");
            assert_eq!(response.status(), 500);
            assert!(response.headers().contains_key("x-request-id"));
            let body: serde_json::Value = response.json().await.expect("json");
            assert_eq!(body["error"]["code"], "internal_error");
            assert!(!body.to_string().contains("a bug"), "no internals leak");
            let ok = client
                .get(format!("http://127.0.0.1:{port}/ok"))
                .send()
                .await
                .expect("answered");
            assert_eq!(ok.text().await.expect("text"), "fine");
        }
    }

    #[test]
    fn pictures_and_videos_are_not_compressed_again_but_svg_is() {
        let sized = |content_type: &str| {
            let response = HttpResponse::Ok()
                .insert_header((CONTENT_TYPE, content_type))
                .body(vec![b'x'; MIN_COMPRESSED_BYTES]);
            worth_compressing(&response)
        };
        assert!(sized("application/json"));
        assert!(sized("image/svg+xml;charset=utf-8"));
        assert!(!sized("image/png"));
        assert!(!sized("video/mp4"));
        let small = HttpResponse::Ok().body(vec![b'x'; MIN_COMPRESSED_BYTES - 1]);
        assert!(!worth_compressing(&small));
    }
}
