//! The last line: a handler that panics answers 500 `internal_error` and the server goes on.

use std::panic::AssertUnwindSafe;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use futures_util::FutureExt;

use super::error::{envelope, ApiError, Code};

/// Middleware, innermost: catches a panic in the request's future and answers 500 with the
/// envelope (no panic is reachable from a request by design; this is for the one nobody found
/// yet), and puts every other error answer in the envelope ([`envelope`]). One layer for both:
/// each layer costs every request a boxed future (docs/PERFORMANCE.md, session 10).
pub async fn catch_panics(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    // The request cannot be kept (routing needs it unshared), so the answer goes out as an
    // error, which actix renders through ApiError's own envelope.
    // The URI shares the request's bytes: no copy of the path for a panic that never comes.
    let uri = request.uri().clone();
    match AssertUnwindSafe(next.call(request)).catch_unwind().await {
        Ok(response) => Ok(envelope(response?.map_into_boxed_body())),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let path = uri.path();
            tracing::error!(%path, panic = %what, "a request handler panicked");
            Err(ApiError::internal().into())
        }
    }
}

/// Request headers, all together, at most this many bytes: what no client of this API needs.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Refuses requests whose headers are over [`MAX_HEADER_BYTES`] with 431 (run by
/// `http::semantics`). The HTTP layer already bounds what it buffers; this keeps what reaches
/// the handlers small.
pub fn headers_within_limit(request: &ServiceRequest) -> Result<(), ApiError> {
    let bytes: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if bytes > MAX_HEADER_BYTES {
        let error = Code::HeadersTooLarge.with(format!(
            "request headers are {bytes} bytes, over {} KiB",
            MAX_HEADER_BYTES / 1024
        ));
        return Err(error);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::middleware::from_fn;
    use actix_web::{web, App, HttpResponse, HttpServer};

    async fn boom() -> HttpResponse {
        panic!("a bug");
    }

    #[actix_web::test]
    async fn a_panicking_handler_answers_500_and_the_server_keeps_serving() {
        let server = HttpServer::new(|| {
            App::new()
                .wrap(from_fn(catch_panics))
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
}
