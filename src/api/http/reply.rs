//! JSON responses, always with `Content-Type: application/json; charset=utf-8`.

use actix_web::http::header::{HeaderValue, CONTENT_TYPE, ETAG};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use serde::Serialize;

pub const JSON_UTF8: &str = "application/json; charset=utf-8";

pub fn json<T: Serialize + ?Sized>(status: StatusCode, body: &T) -> HttpResponse {
    match serde_json::to_vec(body) {
        Ok(bytes) => HttpResponse::build(status)
            .insert_header((CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8)))
            .body(bytes),
        Err(error) => {
            // Our own types always serialize; this is a bug, told without internals.
            tracing::error!(%error, "a response did not serialize");
            HttpResponse::InternalServerError()
                .insert_header((CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8)))
                .body(r#"{"error":{"code":"internal_error","message":"internal error; it has been logged"}}"#)
        }
    }
}

/// A 200 whose JSON is known when the program is built: nothing serialized or allocated.
pub fn ok_static(body: &'static [u8]) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8)))
        .body(body)
}

/// A 200 with JSON already rendered.
pub fn json_bytes(body: Vec<u8>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8)))
        .body(body)
}

pub fn ok<T: Serialize + ?Sized>(body: &T) -> HttpResponse {
    json(StatusCode::OK, body)
}

pub fn created<T: Serialize + ?Sized>(body: &T) -> HttpResponse {
    json(StatusCode::CREATED, body)
}

/// A 200 with JSON already rendered and its strong validator, made from what the body was made
/// of: the `ETag` middleware (`http::Tagged`) uses it instead of hashing the body.
pub fn tagged_json(body: Vec<u8>, etag: &str) -> HttpResponse {
    let mut response = HttpResponse::Ok();
    response.insert_header((CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8)));
    if let Ok(tag) = HeaderValue::from_str(etag) {
        response.insert_header((ETAG, tag));
    }
    response.body(body)
}

/// [`tagged_json`] for a body that is shared (a kept answer) rather than made for this request.
pub fn tagged_shared_json(body: bytes::Bytes, etag: HeaderValue) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8)))
        .insert_header((ETAG, etag))
        .body(body)
}

/// A kept JSON answer (`kept.rs`), served again with its validator.
pub fn kept_json<V>(page: &super::kept::Page<V>) -> HttpResponse {
    tagged_shared_json(page.body.clone(), page.etag.clone())
}

/// Keeps a JSON body rendered at `validator` in `table` under `key`, and answers it with its
/// strong validator `etag`; a tag that is no header value is neither kept nor sent.
pub fn keep_json<V: PartialEq>(
    table: &super::kept::Kept<V>,
    key: &str,
    validator: V,
    body: Vec<u8>,
    etag: &str,
) -> HttpResponse {
    let Ok(etag) = HeaderValue::from_str(etag) else {
        return json_bytes(body);
    };
    let body = bytes::Bytes::from(body);
    table.keep(key, validator, body.clone(), etag.clone());
    tagged_shared_json(body, etag)
}

/// A 200 with `body` as JSON and its strong validator (see [`tagged_json`]).
pub fn tagged<T: Serialize + ?Sized>(body: &T, etag: &str) -> HttpResponse {
    let mut response = ok(body);
    if response.status() == StatusCode::OK {
        if let Ok(tag) = HeaderValue::from_str(etag) {
            response.headers_mut().insert(ETAG, tag);
        }
    }
    response
}
