//! The API's one error type and the one place that turns errors into the envelope.

use std::fmt;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

use super::reply;
use crate::domain::Rejection;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    BadRequest(String),
    Unauthorized(String),
    Forbidden(String),
    NotFound(String),
    MethodNotAllowed(String),
    Conflict(String),
    AlreadyVoted(String),
    PayloadTooLarge(String),
    RequestTimeout(String),
    HeadersTooLarge(String),
    UnsupportedMediaType(String),
    /// A bug. What went wrong is logged, never sent.
    Internal,
    Unavailable(String),
}

/// `{"error": {"code", "message"}}`: every non-2xx answer but 429.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable; safe to branch on
    #[schema(value_type = ErrorCode)]
    pub code: &'static str,
    /// Human-readable; names the parameter or field at fault; may change between releases
    pub message: String,
}

/// Every `error.code` the API answers.
pub const ERROR_CODES: [&str; 13] = [
    "bad_request",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "conflict",
    "already_voted",
    "payload_too_large",
    "request_timeout",
    "headers_too_large",
    "unsupported_media_type",
    "internal_error",
    "unavailable",
];

/// The schema of `error.code`: one of [`ERROR_CODES`].
pub struct ErrorCode;

impl utoipa::PartialSchema for ErrorCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some("Stable, machine-readable; safe to branch on"))
            .enum_values(Some(ERROR_CODES))
            .into()
    }
}

impl ToSchema for ErrorCode {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("ErrorCode")
    }
}

impl ApiError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad_request",
            Self::Unauthorized(_) => "unauthorized",
            Self::Forbidden(_) => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::Conflict(_) => "conflict",
            Self::AlreadyVoted(_) => "already_voted",
            Self::PayloadTooLarge(_) => "payload_too_large",
            Self::RequestTimeout(_) => "request_timeout",
            Self::HeadersTooLarge(_) => "headers_too_large",
            Self::UnsupportedMediaType(_) => "unsupported_media_type",
            Self::Internal => "internal_error",
            Self::Unavailable(_) => "unavailable",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Self::BadRequest(m)
            | Self::Unauthorized(m)
            | Self::Forbidden(m)
            | Self::NotFound(m)
            | Self::MethodNotAllowed(m)
            | Self::Conflict(m)
            | Self::AlreadyVoted(m)
            | Self::PayloadTooLarge(m)
            | Self::RequestTimeout(m)
            | Self::HeadersTooLarge(m)
            | Self::UnsupportedMediaType(m)
            | Self::Unavailable(m) => m,
            Self::Internal => "internal error; it has been logged",
        }
    }

    /// The error for a status the framework produced on its own, with no message of ours.
    fn for_status(status: StatusCode, method: &str, path: &str) -> Self {
        match status {
            StatusCode::NOT_FOUND => Self::NotFound(format!("no route for {method} {path}")),
            StatusCode::METHOD_NOT_ALLOWED => {
                Self::MethodNotAllowed(format!("{method} is not allowed on {path}"))
            }
            StatusCode::PAYLOAD_TOO_LARGE => Self::PayloadTooLarge(body_too_large()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UnsupportedMediaType(
                "send the body with Content-Type: application/json".into(),
            ),
            StatusCode::REQUEST_TIMEOUT => {
                Self::RequestTimeout("the request did not arrive in time".into())
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                Self::Unavailable("the service is shutting down".into())
            }
            s if s.is_client_error() => Self::BadRequest(format!(
                "the request could not be read ({})",
                s.canonical_reason().unwrap_or("client error")
            )),
            _ => Self::Internal,
        }
    }
}

pub fn body_too_large() -> String {
    format!(
        "request body is over {} KiB",
        super::extract::MAX_BODY_BYTES / 1024
    )
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

/// Marks a response whose body is already the envelope.
struct Enveloped;

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_) | Self::AlreadyVoted(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse<BoxBody> {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code(),
                message: self.message().to_owned(),
            },
        };
        let mut response = reply::json(self.status_code(), &body);
        response.extensions_mut().insert(Enveloped);
        if let Self::PayloadTooLarge(_) = self {
            // The rest of the body is not read: the connection cannot carry another request.
            response
                .head_mut()
                .set_connection_type(actix_web::http::ConnectionType::Close);
        }
        response
    }
}

impl From<Rejection> for ApiError {
    fn from(rejection: Rejection) -> Self {
        match rejection {
            Rejection::NotFound(m) => Self::NotFound(m),
            Rejection::Conflict(m) => Self::Conflict(m),
            Rejection::Invalid(m) => Self::BadRequest(m),
            Rejection::NotStored(why) => {
                tracing::error!(%why, "a write was not stored");
                Self::Unavailable("the change could not be stored; writes are refused until the operator restarts the service".into())
            }
            Rejection::AlreadyVoted { retry_at } => Self::AlreadyVoted(format!(
                "this user already voted for this bot in the last 12 hours; next vote possible at {retry_at}"
            )),
        }
    }
}

impl From<actix::MailboxError> for ApiError {
    fn from(error: actix::MailboxError) -> Self {
        tracing::error!(%error, "an actor did not answer");
        Self::Internal
    }
}

/// Middleware: gives every error the framework answers on its own (no route, wrong method,
/// unreadable request) the envelope, so clients can always branch on `error.code`.
pub async fn envelope_errors(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let response = next.call(request).await?.map_into_boxed_body();
    let status = response.status();
    let needs_envelope = (status.is_client_error() || status.is_server_error())
        && status != StatusCode::TOO_MANY_REQUESTS
        && response
            .response()
            .extensions()
            .get::<Enveloped>()
            .is_none();
    if !needs_envelope {
        return Ok(response);
    }
    let (request, _) = response.into_parts();
    let error = ApiError::for_status(status, request.method().as_str(), request.path());
    Ok(ServiceResponse::new(request, error.error_response()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_in_the_documented_list() {
        let m = String::new;
        let all = [
            ApiError::BadRequest(m()),
            ApiError::Unauthorized(m()),
            ApiError::Forbidden(m()),
            ApiError::NotFound(m()),
            ApiError::MethodNotAllowed(m()),
            ApiError::Conflict(m()),
            ApiError::AlreadyVoted(m()),
            ApiError::PayloadTooLarge(m()),
            ApiError::RequestTimeout(m()),
            ApiError::HeadersTooLarge(m()),
            ApiError::UnsupportedMediaType(m()),
            ApiError::Internal,
            ApiError::Unavailable(m()),
        ];
        let codes: Vec<&str> = all.iter().map(ApiError::code).collect();
        assert_eq!(codes, ERROR_CODES);
    }
}
