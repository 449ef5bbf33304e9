//! HTTP semantics around the handlers: the methods each route allows, `ETag` and 304, the
//! encoding a client gets, and CORS (the layer every request passes, `layer`, uses them).

use std::collections::HashMap;

use actix_cors::Cors;
use actix_web::body::{self, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{
    HeaderName, HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE, ETAG, IF_NONE_MATCH, RETRY_AFTER,
};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, ResponseError};
use sha2::{Digest, Sha256};

use super::around::Around;
use super::error::Code;
use crate::telemetry::route_pattern;

/// Bodies smaller than this go out as they are: compressing them saves a few bytes at best.
pub const MIN_COMPRESSED_BYTES: usize = 1024;

/// The methods each route pattern answers, for the `Allow` header of a 405.
pub struct AllowedMethods(HashMap<String, HeaderValue>);

impl AllowedMethods {
    /// From the OpenAPI document, whose paths are the route patterns (a test holds them equal).
    /// HEAD is allowed wherever GET is.
    pub fn from_openapi(document: &serde_json::Value) -> Self {
        let mut table = HashMap::new();
        if let Some(paths) = document["paths"].as_object() {
            for (path, item) in paths {
                let mut methods: Vec<String> = item
                    .as_object()
                    .map(|ops| ops.keys().map(|m| m.to_uppercase()).collect())
                    .unwrap_or_default();
                if methods.iter().any(|m| m == "GET") && !methods.iter().any(|m| m == "HEAD") {
                    methods.push("HEAD".into());
                }
                if let Ok(value) = HeaderValue::from_str(&methods.join(", ")) {
                    table.insert(path.clone(), value);
                }
            }
        }
        Self(table)
    }

    fn get(&self, pattern: &str) -> Option<&HeaderValue> {
        self.0.get(pattern)
    }
}

/// The middleware ([`super::around`]) of each route declared
/// [`etag`](super::routes::Route::etag): tags the JSON of its 200 with an `ETag` and answers a
/// matching `If-None-Match` with 304. Inside the rate limit, so a 304 carries its headers and
/// counts against it.
pub struct Tagged;

impl Around for Tagged {
    type Carry = ();

    fn before(&self, _: &mut ServiceRequest) -> Result<(), Box<HttpResponse>> {
        Ok(())
    }

    fn after(&self, (): (), response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
        let cacheable =
            response.status() == StatusCode::OK && response.request().method() == Method::GET;
        if cacheable {
            tag(response)
        } else {
            response
        }
    }
}

pub(super) fn with_allow(
    mut response: ServiceResponse<BoxBody>,
    allowed: Option<&AllowedMethods>,
) -> ServiceResponse<BoxBody> {
    let pattern = route_pattern(response.request());
    if let Some(value) = pattern.and_then(|p| allowed.and_then(|a| a.get(&p)).cloned()) {
        response.headers_mut().insert(ALLOW, value);
    }
    response
}

/// A strong validator: the first 128 bits of the body's SHA-256, which changes whenever the
/// JSON does. Also taken by handlers that keep an answer (`kept.rs`) whose tag was always the
/// hash of its body, so a kept answer carries the very tag the layer would have made.
pub fn etag_of(bytes: &[u8]) -> HeaderValue {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut tag = Vec::with_capacity(34);
    tag.push(b'"');
    for byte in &digest[..16] {
        tag.push(HEX[usize::from(byte >> 4)]);
        tag.push(HEX[usize::from(byte & 0xf)]);
    }
    tag.push(b'"');
    HeaderValue::from_bytes(&tag).unwrap_or(HeaderValue::from_static("\"\""))
}

/// `If-None-Match` by the weak comparison RFC 9110 asks for: `*`, or any listed tag equal to
/// ours once a `W/` is set aside.
fn none_match(if_none_match: &[u8], etag: &HeaderValue) -> bool {
    let ours = etag.as_bytes();
    if_none_match.split(|b| *b == b',').any(|candidate| {
        let candidate = candidate.trim_ascii();
        candidate == b"*" || candidate.strip_prefix(b"W/").unwrap_or(candidate) == ours
    })
}

fn tag(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let (request, response) = response.into_parts();
    let (mut head, body) = response.into_parts();
    let bytes = match body.try_into_bytes() {
        Ok(bytes) => bytes,
        // A streamed body is not hashed: it goes out untagged.
        Err(body) => return ServiceResponse::new(request, head.set_body(body)),
    };
    // A handler that knows what its answer was made of has tagged it already; only the others'
    // bodies are hashed.
    let etag = match head.headers().get(ETAG) {
        Some(etag) => etag.clone(),
        None => {
            let etag = etag_of(&bytes);
            head.headers_mut().insert(ETAG, etag.clone());
            etag
        }
    };
    let matches = request
        .headers()
        .get_all(IF_NONE_MATCH)
        .any(|value| none_match(value.as_bytes(), &etag));
    if !matches {
        return ServiceResponse::new(request, head.set_body(BoxBody::new(bytes)));
    }
    // The 304 keeps every header of the 200 (the rate limit's among them) but what described
    // the body.
    let mut not_modified = HttpResponse::NotModified().finish();
    for (name, value) in head.headers() {
        if name != CONTENT_TYPE && name != CONTENT_LENGTH {
            not_modified
                .headers_mut()
                .append(name.clone(), value.clone());
        }
    }
    let not_modified = not_modified.set_body(BoxBody::new(body::None::new()));
    ServiceResponse::new(request, not_modified)
}

/// `Accept-Encoding` with `br` ranked just under `gzip` when the client ranks them the same, as
/// browsers do: br saves a fifth of the bytes of gzip for two to three times its CPU, which on
/// a busy server costs more than it saves. A client that prefers br says so with its q-values.
/// `None` when there is no tie to break.
pub(super) fn gzip_on_ties(accept_encoding: &str) -> Option<HeaderValue> {
    let items: Vec<(String, f32)> = accept_encoding
        .split(',')
        .map(|item| {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            (name, q)
        })
        .filter(|(name, _)| !name.is_empty())
        .collect();
    let q_of = |wanted: &str| items.iter().find(|(name, _)| name == wanted).map(|i| i.1);
    let (Some(gzip), Some(br)) = (q_of("gzip"), q_of("br")) else {
        return None;
    };
    if gzip != br || gzip < 0.002 {
        return None;
    }
    let ranked: Vec<String> = items
        .iter()
        .map(|(name, q)| match name.as_str() {
            "br" => format!("br;q={:.3}", q - 0.001),
            _ => format!("{name};q={q:.3}"),
        })
        .collect();
    HeaderValue::from_str(&ranked.join(", ")).ok()
}

/// CORS from `--cors-origin`: `None` when no origin is allowed (no CORS headers at all).
/// Every route follows the same rule: the API's credentials are tokens in `Authorization`,
/// never cookies, so a page on an allowed origin can do no more than a script anywhere with the
/// same token could.
pub fn cors(origins: &[String]) -> Option<Cors> {
    if origins.is_empty() {
        return None;
    }
    let mut cors = Cors::default()
        .allowed_methods(["GET", "HEAD", "POST", "PATCH", "DELETE"])
        .allowed_headers([
            actix_web::http::header::AUTHORIZATION,
            CONTENT_TYPE,
            IF_NONE_MATCH,
            HeaderName::from_static("x-request-id"),
            HeaderName::from_static("x-botlist-min-seq"),
            HeaderName::from_static("x-botlist-allow-stale"),
        ])
        .expose_headers([
            HeaderName::from_static("x-ratelimit-limit"),
            HeaderName::from_static("x-ratelimit-remaining"),
            HeaderName::from_static("x-ratelimit-reset"),
            RETRY_AFTER,
            ETAG,
            HeaderName::from_static("x-request-id"),
            HeaderName::from_static("x-botlist-seq"),
            HeaderName::from_static("x-botlist-lag-ms"),
        ])
        .max_age(3600);
    if origins.iter().any(|o| o == "*") {
        cors = cors.allow_any_origin().send_wildcard();
    } else {
        for origin in origins {
            cors = cors.allowed_origin(origin);
        }
    }
    Some(cors)
}

/// Middleware, just outside CORS: a refused preflight answers with the error envelope, like
/// every other error, rather than the CORS layer's plain text.
pub async fn cors_refusals(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key("access-control-request-method");
    let response = next.call(request).await?.map_into_boxed_body();
    if !preflight || response.status() != StatusCode::BAD_REQUEST {
        return Ok(response);
    }
    let (request, refused) = response.into_parts();
    let error = Code::Forbidden
        .with("cross-origin request refused: this origin, method or header is not allowed".into());
    let mut answer = error.error_response();
    for (name, value) in refused.headers() {
        if name.as_str().starts_with("access-control-") || name == "vary" {
            answer.headers_mut().append(name.clone(), value.clone());
        }
    }
    Ok(ServiceResponse::new(request, answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_compares_weakly_and_takes_lists_and_star() {
        let etag = etag_of(b"{}");
        let ours = etag.to_str().expect("ascii").to_owned();
        assert!(none_match(ours.as_bytes(), &etag));
        assert!(none_match(format!("W/{ours}").as_bytes(), &etag));
        assert!(none_match(format!("\"x\", {ours}").as_bytes(), &etag));
        assert!(none_match(b"*", &etag));
        assert!(!none_match(b"\"x\"", &etag));
        assert!(!none_match(b"", &etag));
        assert_ne!(etag, etag_of(b"{ }"));
    }

    #[test]
    fn gzip_wins_a_tie_with_br_and_nothing_else_changes() {
        let ranked = gzip_on_ties("gzip, deflate, br, zstd").expect("a tie");
        assert_eq!(
            ranked.to_str().expect("ascii"),
            "gzip;q=1.000, deflate;q=1.000, br;q=0.999, zstd;q=1.000"
        );
        let ranked = gzip_on_ties("br;q=0.8, gzip;q=0.8").expect("a tie");
        assert_eq!(ranked.to_str().expect("ascii"), "br;q=0.799, gzip;q=0.800");
        assert_eq!(gzip_on_ties("br, gzip;q=0.5"), None);
        assert_eq!(gzip_on_ties("gzip"), None);
        assert_eq!(gzip_on_ties("br"), None);
        assert_eq!(gzip_on_ties(""), None);
    }
}
