//! RFC 9457 problem details: how the project API (CONTRACT section 12) answers its errors, as
//! the 2026 clients read them (`detail` is what topggpy 2.0.0 raises with). The same rows of
//! `errors!` as everywhere else, rendered as `application/problem+json` instead of the envelope:
//! one code path per rule, two renderings.

use actix_web::body::BoxBody;
use actix_web::http::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, Enveloped};
use crate::domain::Rejection;

/// The media type of every error of the project API.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// An error of the project API: an [`ApiError`] in the problem-details rendering.
#[derive(Debug)]
pub struct Problem(pub ApiError);

impl From<ApiError> for Problem {
    fn from(error: ApiError) -> Self {
        Self(error)
    }
}

impl From<Rejection> for Problem {
    fn from(rejection: Rejection) -> Self {
        Self(rejection.into())
    }
}

impl From<actix::MailboxError> for Problem {
    fn from(error: actix::MailboxError) -> Self {
        Self(error.into())
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// `{"type", "title", "status", "detail"}` (RFC 9457), with the error's `code` as an extension
/// member, so a client can branch on it as on the envelope's.
#[derive(Serialize, ToSchema)]
pub struct ProblemDetails {
    /// `urn:botlist:error:<code>`: the error row's code, as a URI
    #[serde(rename = "type")]
    pub kind: String,
    /// The status's reason phrase
    pub title: &'static str,
    pub status: u16,
    /// What is at fault, in words; names the parameter or field
    pub detail: String,
    /// The same code as the error envelope's `error.code`
    #[schema(value_type = crate::api::http::error::ErrorCode)]
    pub code: &'static str,
}

impl ProblemDetails {
    pub fn of(error: &ApiError) -> Self {
        let status = error.kind.row().status;
        Self {
            kind: format!("urn:botlist:error:{}", error.code()),
            title: status.canonical_reason().unwrap_or("Error"),
            status: status.as_u16(),
            detail: error.message().to_owned(),
            code: error.code(),
        }
    }
}

impl ResponseError for Problem {
    fn status_code(&self) -> StatusCode {
        self.0.kind.row().status
    }

    fn error_response(&self) -> HttpResponse<BoxBody> {
        render(&self.0)
    }
}

/// The response for `error` as problem details.
pub fn render(error: &ApiError) -> HttpResponse<BoxBody> {
    let body = serde_json::to_vec(&ProblemDetails::of(error)).unwrap_or_default();
    let mut response = HttpResponse::build(error.kind.row().status)
        .insert_header((CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON)))
        .body(body);
    if let Some(seconds) = error.retry_after_seconds() {
        response.headers_mut().insert(RETRY_AFTER, seconds.into());
    }
    response.extensions_mut().insert(Enveloped);
    if error.kind == super::error::Code::PayloadTooLarge {
        // The rest of the body is not read: the connection cannot carry another request.
        response
            .head_mut()
            .set_connection_type(actix_web::http::ConnectionType::Close);
    }
    response
}

/// Whether a path is the project API's (`{base}/projects/...`): the errors the framework
/// answers on its own there (no route, wrong method) are problem details too.
pub fn is_project_path(path: &str) -> bool {
    path.contains("/projects/@me") || path.ends_with("/projects") || path.contains("/projects/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::http::error::Code;

    #[test]
    fn a_problem_has_the_rfc_9457_members_and_the_rows_status() {
        let error = Code::TooManyRequests.with("wait".into()).retry_after(7);
        let response = render(&error);
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers().get(CONTENT_TYPE).unwrap(), PROBLEM_JSON);
        assert_eq!(response.headers().get(RETRY_AFTER).unwrap(), "7");
        let details = serde_json::to_value(ProblemDetails::of(&error)).expect("serializes");
        assert_eq!(details["type"], "urn:botlist:error:too_many_requests");
        assert_eq!(details["title"], "Too Many Requests");
        assert_eq!(details["status"], 429);
        assert_eq!(details["detail"], "wait");
    }
}
