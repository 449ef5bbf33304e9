//! The API's one error type and the one place that turns errors into the envelope.

use std::borrow::Cow;
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

/// One error code: what clients branch on, its HTTP status and the message it has when the
/// place that raises it has nothing more to say.
#[derive(Debug, Clone, Copy)]
pub struct ErrorRow {
    pub kind: Code,
    /// `error.code`: stable, machine-readable
    pub code: &'static str,
    pub status: StatusCode,
    pub message: &'static str,
}

/// Declares the table of errors: each row is a [`Code`] variant, its HTTP status, its
/// `error.code` and its default message. The enum, [`ERRORS`] and [`Code::row`] (a `match`
/// the compiler holds to every variant) are all made from the rows, so a new error is one row.
macro_rules! errors {
    ($(
        $(#[$doc:meta])*
        $kind:ident = $status:ident, $code:literal, $message:literal;
    )*) => {
        /// Every error the API answers: one row each in [`ERRORS`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Code {
            $($(#[$doc])* $kind,)*
        }

        /// The table of errors, in the order they are declared.
        pub const ERRORS: [ErrorRow; [$(Code::$kind),*].len()] = [$(*Code::$kind.row()),*];

        impl Code {
            /// This error's row of the table.
            pub const fn row(self) -> &'static ErrorRow {
                match self {
                    $(Self::$kind => &ErrorRow {
                        kind: Self::$kind,
                        code: $code,
                        status: StatusCode::$status,
                        message: $message,
                    },)*
                }
            }
        }
    };
}

errors! {
    BadRequest = BAD_REQUEST, "bad_request", "the request could not be read";
    Unauthorized = UNAUTHORIZED, "unauthorized", "a valid token is required";
    Forbidden = FORBIDDEN, "forbidden", "this token may not do that";
    NotFound = NOT_FOUND, "not_found", "not found";
    MethodNotAllowed = METHOD_NOT_ALLOWED, "method_not_allowed", "this method is not allowed here";
    Conflict = CONFLICT, "conflict", "this conflicts with what is stored";
    AlreadyVoted = CONFLICT, "already_voted",
        "this user already voted for this bot in the last 12 hours";
    PayloadTooLarge = PAYLOAD_TOO_LARGE, "payload_too_large", "request body is over 64 KiB";
    RequestTimeout = REQUEST_TIMEOUT, "request_timeout", "the request did not arrive in time";
    HeadersTooLarge = REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large",
        "the request headers are too large";
    UnsupportedMediaType = UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
        "send the body with Content-Type: application/json";
    /// `Accept-Encoding` refuses every encoding the API offers, identity among them.
    NotAcceptable = NOT_ACCEPTABLE, "not_acceptable",
        "Accept-Encoding refuses every encoding offered: identity, br, gzip, deflate";
    /// A bug. What went wrong is logged, never sent.
    Internal = INTERNAL_SERVER_ERROR, "internal_error", "internal error; it has been logged";
    Unavailable = SERVICE_UNAVAILABLE, "unavailable", "the service is shutting down";
    /// Too many failed admin authentications from one address; carries `Retry-After`. (The
    /// rate limits' own 429 is not the envelope: CONTRACT section 3.)
    TooManyRequests = TOO_MANY_REQUESTS, "too_many_requests",
        "too many failed admin authentications from this address; try again later";
    /// Cluster mode: this node has not applied the sequence a read asked for.
    ReplicaBehind = SERVICE_UNAVAILABLE, "replica_behind",
        "this node has not yet applied the sequence the request asks for; retry";
    /// Cluster mode: no node holds the writer's role.
    NoWriter = SERVICE_UNAVAILABLE, "no_writer",
        "no node of the cluster takes writes right now; retry";
    /// The write failed after it reached the disk (or the stream): it may be kept, and shown
    /// after a restart. Retry it: a vote already kept answers 409 `already_voted`.
    MaybeStored = SERVICE_UNAVAILABLE, "maybe_stored",
        "the change may have been stored; retry it once the service is ready";
    /// `GET /readyz`: the service cannot take writes now; the message says why.
    NotReady = SERVICE_UNAVAILABLE, "not_ready", "the service cannot take writes now";
    /// Cluster mode: the write was sent to the writer, which stopped answering before it said
    /// what became of it. It may have been stored: a client retries it (a vote stored already
    /// answers 409 `already_voted`).
    OutcomeUnknown = SERVICE_UNAVAILABLE, "outcome_unknown",
        "the writer stopped answering after it was sent this write: it may have been stored; retry it";
    /// The voter's profile is banned from voting by staff (CONTRACT section 14); the message
    /// says until when.
    VoteBanned = FORBIDDEN, "vote_banned", "this profile is banned from voting";
}

impl Code {
    /// With the row's own message.
    pub fn error(self) -> ApiError {
        ApiError {
            kind: self,
            message: Cow::Borrowed(self.row().message),
            retry_after: None,
        }
    }

    /// With a message that names what is at fault.
    pub fn with(self, message: String) -> ApiError {
        ApiError {
            kind: self,
            message: Cow::Owned(message),
            retry_after: None,
        }
    }
}

/// The API's one error: a row of [`ERRORS`] and the message sent with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub kind: Code,
    message: Cow<'static, str>,
    /// Seconds for a `Retry-After` header.
    retry_after: Option<u64>,
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

/// The schema of `error.code`: one of the codes of [`ERRORS`].
pub struct ErrorCode;

impl utoipa::PartialSchema for ErrorCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some("Stable, machine-readable; safe to branch on"))
            .enum_values(Some(ERRORS.iter().map(|row| row.code)))
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
        self.kind.row().code
    }

    pub fn message(&self) -> &str {
        match self.kind {
            // Whatever was set, a bug's details are for the log only.
            Code::Internal => self.kind.row().message,
            _ => &self.message,
        }
    }

    pub fn internal() -> Self {
        Code::Internal.error()
    }

    /// Seconds of its `Retry-After`, if it has one (read by the project API's problem details).
    pub fn retry_after_seconds(&self) -> Option<u64> {
        self.retry_after
    }

    /// Sends `Retry-After: seconds` with the error.
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// The error for a status the framework produced on its own, with no message of ours.
    fn for_status(status: StatusCode, method: &str, path: &str) -> Self {
        /// The errors the framework raises itself; any other client error reads as 400.
        const FRAMEWORK: [Code; 6] = [
            Code::NotFound,
            Code::MethodNotAllowed,
            Code::PayloadTooLarge,
            Code::UnsupportedMediaType,
            Code::RequestTimeout,
            Code::Unavailable,
        ];
        match FRAMEWORK
            .into_iter()
            .find(|code| code.row().status == status)
        {
            Some(Code::NotFound) => Code::NotFound.with(format!("no route for {method} {path}")),
            Some(Code::MethodNotAllowed) => {
                Code::MethodNotAllowed.with(format!("{method} is not allowed on {path}"))
            }
            Some(code) => code.error(),
            None if status.is_client_error() => Code::BadRequest.with(format!(
                "the request could not be read ({})",
                status.canonical_reason().unwrap_or("client error")
            )),
            _ => Self::internal(),
        }
    }
}

pub fn body_too_large() -> Cow<'static, str> {
    Cow::Borrowed(Code::PayloadTooLarge.row().message)
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

/// Marks a response whose body is already the envelope.
pub struct Enveloped;

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.kind.row().status
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
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(actix_web::http::header::RETRY_AFTER, seconds.into());
        }
        if self.kind == Code::PayloadTooLarge {
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
            Rejection::NotFound(m) => Code::NotFound.with(m),
            Rejection::Conflict(m) => Code::Conflict.with(m),
            Rejection::Forbidden(m) => Code::Forbidden.with(m),
            Rejection::Invalid(m) => Code::BadRequest.with(m),
            // The journal logs its failure once and refused writes at a bounded rate.
            Rejection::NotStored(why) => {
                tracing::debug!(%why, "a write was not stored");
                Code::Unavailable.with("the change was not stored; writes are refused until the operator restarts the service (GET /readyz says why)".into())
            }
            Rejection::MaybeStored(why) => {
                tracing::warn!(%why, "a write failed after it reached the disk; it may be kept");
                Code::MaybeStored.with("the change may have been stored (it failed after it reached the disk); retry it once GET /readyz answers 200: a vote already kept is then answered 409".into())
            }
            Rejection::TooSoon {
                retry_after,
                message,
            } => Code::TooManyRequests.with(message).retry_after(retry_after),
            Rejection::OutcomeUnknown(why) => {
                tracing::warn!(%why, "a write's outcome is unknown");
                Code::OutcomeUnknown.with(Code::OutcomeUnknown.row().message.into()).retry_after(1)
            }
            Rejection::AlreadyVoted { retry_at } => Code::AlreadyVoted.with(format!(
                "this user already voted for this bot in the last 12 hours; next vote possible at {retry_at}"
            )),
        }
    }
}

impl From<actix::MailboxError> for ApiError {
    fn from(error: actix::MailboxError) -> Self {
        tracing::error!(%error, "an actor did not answer");
        Self::internal()
    }
}

/// Middleware: gives every error the framework answers on its own (no route, wrong method,
/// unreadable request) the envelope, so clients can always branch on `error.code`.
pub async fn envelope_errors(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    Ok(envelope(next.call(request).await?.map_into_boxed_body()))
}

/// An error answer that is not in the envelope yet (actix's own 404 and 405, an extractor's
/// refusal) put in it; any other answer as it is.
pub fn envelope(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let status = response.status();
    let needs_envelope = (status.is_client_error() || status.is_server_error())
        && status != StatusCode::TOO_MANY_REQUESTS
        && response
            .response()
            .extensions()
            .get::<Enveloped>()
            .is_none();
    if !needs_envelope {
        return response;
    }
    let (request, _) = response.into_parts();
    let error = ApiError::for_status(status, request.method().as_str(), request.path());
    // The project API answers every error as problem details, the framework's own too.
    if super::problem::is_project_path(request.path()) {
        return ServiceResponse::new(request, super::problem::render(&error));
    }
    ServiceResponse::new(request, error.error_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_one_row_per_code_in_order_and_distinct_codes() {
        for (index, row) in ERRORS.iter().enumerate() {
            assert_eq!(row.kind as usize, index, "{}", row.code);
            assert_eq!(row.kind.row().code, row.code);
            assert!(row.status.is_client_error() || row.status.is_server_error());
        }
        let mut codes: Vec<&str> = ERRORS.iter().map(|row| row.code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), ERRORS.len());
    }

    #[test]
    fn the_body_limit_message_names_the_limit() {
        let kib = super::super::extract::MAX_BODY_BYTES / 1024;
        assert_eq!(body_too_large(), format!("request body is over {kib} KiB"));
    }

    #[test]
    fn a_bug_never_sends_its_details() {
        let error = Code::Internal.with("the journal file handle was closed".into());
        assert_eq!(error.message(), "internal error; it has been logged");
        assert_eq!(error.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
