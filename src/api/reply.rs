//! JSON responses, always with `Content-Type: application/json; charset=utf-8`.

use actix_web::http::header::{HeaderValue, CONTENT_TYPE};
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

pub fn ok<T: Serialize + ?Sized>(body: &T) -> HttpResponse {
    json(StatusCode::OK, body)
}

pub fn created<T: Serialize + ?Sized>(body: &T) -> HttpResponse {
    json(StatusCode::CREATED, body)
}
