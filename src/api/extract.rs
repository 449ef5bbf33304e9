//! Reading requests: JSON bodies, tokens and query parameters, each failure as an [`ApiError`].

use std::future::{ready, Ready};

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderMap, AUTHORIZATION, CONTENT_LENGTH};
use actix_web::web::{self, BytesMut};
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::error::{body_too_large, ApiError};
use super::AppState;
use crate::domain::ids::{BotId, Snowflake, TokenHash};

/// Bodies over 64 KiB are refused.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Reads a JSON body after the route's own checks (auth, bot, owner) have passed, so that the
/// order of errors is 401, 404, 403, then the body's.
pub async fn json_body<T: DeserializeOwned>(
    request: &HttpRequest,
    mut payload: web::Payload,
) -> Result<T, ApiError> {
    require_json_content_type(request)?;
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return Err(ApiError::PayloadTooLarge(body_too_large()));
    }
    let deadline = app_state(request)?.request_timeout;
    let read = async {
        let mut body = BytesMut::with_capacity(declared.map_or(1024, |l| l as usize));
        while let Some(chunk) = payload.next().await {
            let chunk = chunk
                .map_err(|e| ApiError::BadRequest(format!("the body could not be read: {e}")))?;
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(ApiError::PayloadTooLarge(body_too_large()));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    // A body sent a byte at a time would otherwise hold the request open as long as it likes.
    let body = actix_web::rt::time::timeout(deadline, read)
        .await
        .map_err(|_| {
            ApiError::RequestTimeout(format!(
                "the body did not arrive within {} s",
                deadline.as_secs()
            ))
        })??;
    parse_json(&body)
}

/// Parses a JSON document, naming the field at fault when there is one.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::BadRequest(
            "the request body is empty; send a JSON object".into(),
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        json_error(error.into_inner(), &path)
    })?;
    deserializer.end().map_err(|e| json_error(e, "."))?;
    Ok(value)
}

fn json_error(error: serde_json::Error, path: &str) -> ApiError {
    use serde_json::error::Category;
    ApiError::BadRequest(match error.classify() {
        Category::Syntax | Category::Eof => format!("malformed JSON: {error}"),
        _ if path == "." => format!("body: {error}"),
        _ => format!("`{path}`: {error}"),
    })
}

fn require_json_content_type(request: &HttpRequest) -> Result<(), ApiError> {
    let refuse = || {
        ApiError::UnsupportedMediaType("send the body with Content-Type: application/json".into())
    };
    let mime = request
        .mime_type()
        .map_err(|_| refuse())?
        .ok_or_else(refuse)?;
    let is_json = mime.type_() == "application"
        && (mime.subtype() == "json" || mime.suffix().is_some_and(|s| s == "json"));
    if is_json {
        Ok(())
    } else {
        Err(refuse())
    }
}

/// The raw `Authorization` value, refusing the `Bearer` form with a message that says why.
fn presented_token(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(AUTHORIZATION)
        .ok_or_else(|| {
            ApiError::Unauthorized("missing Authorization header; send the API token".into())
        })?
        .to_str()
        .map_err(|_| {
            ApiError::Unauthorized("the Authorization header is not a valid token".into())
        })?;
    if value
        .get(..7)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case("bearer "))
    {
        return Err(ApiError::Unauthorized(
            "send the raw API token in Authorization, without the `Bearer ` prefix".into(),
        ));
    }
    if value.is_empty() {
        return Err(ApiError::Unauthorized(
            "the Authorization header is empty; send the API token".into(),
        ));
    }
    Ok(value)
}

fn app_state(request: &HttpRequest) -> Result<&web::Data<AppState>, ApiError> {
    request.app_data::<web::Data<AppState>>().ok_or_else(|| {
        tracing::error!("application state is missing");
        ApiError::Internal
    })
}

/// The bot whose API token the request carries; 401 otherwise.
pub struct BotToken(pub BotId);

impl FromRequest for BotToken {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready((|| {
            let state = app_state(request)?;
            let token = presented_token(request.headers())?;
            state
                .directory
                .authenticate(token)
                .map(BotToken)
                .ok_or_else(|| ApiError::Unauthorized("unknown API token".into()))
        })())
    }
}

/// An admin request. With no admin token configured the admin API does not exist: 404.
pub struct Admin;

impl FromRequest for Admin {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready((|| {
            let state = app_state(request)?;
            let expected = state.admin_token.as_ref().ok_or_else(|| {
                ApiError::NotFound(format!(
                    "no route for {} {}",
                    request.method(),
                    request.path()
                ))
            })?;
            let token = presented_token(request.headers())?;
            if expected.matches(&TokenHash::of(token)) {
                Ok(Admin)
            } else {
                Err(ApiError::Unauthorized("unknown admin token".into()))
            }
        })())
    }
}

/// One query parameter that must be a snowflake (`userId` of the check routes).
pub fn snowflake_param(query_string: &str, name: &str) -> Result<Snowflake, ApiError> {
    let mut found = None;
    for (key, value) in form_urlencoded::parse(query_string.as_bytes()) {
        if key == name {
            if found.is_some() {
                return Err(ApiError::BadRequest(format!(
                    "`{name}` is given more than once"
                )));
            }
            found = Some(value.into_owned());
        }
    }
    let value = found.ok_or_else(|| ApiError::BadRequest(format!("`{name}` is required")))?;
    Snowflake::parse(&value).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "`{name}` must be a snowflake (1 to 20 digits, no leading zero), got `{value}`"
        ))
    })
}
