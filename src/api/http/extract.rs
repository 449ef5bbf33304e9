//! Reading requests: JSON bodies, tokens and query parameters, each failure as an [`ApiError`].

use std::borrow::Cow;
use std::future::{ready, Ready};
use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderMap, AUTHORIZATION, CONTENT_LENGTH};
use actix_web::web::{self, BytesMut};
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use futures_util::future::LocalBoxFuture;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::connection::ReadLimit;
use super::error::{ApiError, Code};
use super::limits::client_ip;
use crate::actors::directory::BotHandle;
use crate::api::AppState;
use crate::domain::ids::{BotId, ProfileId, Snowflake, Token, TokenHash};
use crate::domain::people::{Grant, Scope};

/// Bodies over 64 KiB are refused.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Reads a JSON body after the route's own checks (auth, bot, owner) have passed, so that the
/// order of errors is 401, 404, 403, then the body's.
pub async fn json_body<T: DeserializeOwned>(
    request: &HttpRequest,
    payload: web::Payload,
) -> Result<T, ApiError> {
    require_json_content_type(request)?;
    parse_json(&body(request, payload).await?)
}

/// Any JSON document as the body (an array too, which [`Json`] refuses): the project API's
/// bodies, which the 2026 clients send as arrays or objects.
pub struct AnyJson(pub serde_json::Value);

impl FromRequest for AnyJson {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let request = request.clone();
        let payload = web::Payload::from_request(&request, payload).into_inner();
        Box::pin(async move {
            let payload = payload.map_err(|_| ApiError::internal())?;
            require_json_content_type(&request)?;
            let bytes = body(&request, payload).await?;
            serde_json::from_slice(&bytes)
                .map(AnyJson)
                .map_err(|e| json_error(e, "."))
        })
    }
}

/// Reads a body of at most [`MAX_BODY_BYTES`], within the request timeout.
pub async fn body(request: &HttpRequest, mut payload: web::Payload) -> Result<BytesMut, ApiError> {
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return Err(refuse_as_too_large(request));
    }
    let deadline = app_state(request)?.request_timeout;
    let read = async {
        let mut body = BytesMut::with_capacity(declared.map_or(1024, |l| l as usize));
        while let Some(chunk) = payload.next().await {
            let chunk = chunk
                .map_err(|e| Code::BadRequest.with(format!("the body could not be read: {e}")))?;
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(refuse_as_too_large(request));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    // A body sent a byte at a time would otherwise hold the request open as long as it likes.
    actix_web::rt::time::timeout(deadline, read)
        .await
        .map_err(|_| {
            Code::RequestTimeout.with(format!(
                "the body did not arrive within {} s",
                deadline.as_secs()
            ))
        })?
}

/// A 413, and the connection stops reading the rest of the body: it is closed after at most a
/// few hundred KiB more (the response says `Connection: close`).
fn refuse_as_too_large(request: &HttpRequest) -> ApiError {
    ReadLimit::stop_reading_request(request);
    Code::PayloadTooLarge.error()
}

/// Parses a JSON document that must be an object, naming the field at fault when there is one.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let Some(first) = body.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Err(Code::BadRequest.with("the request body is empty; send a JSON object".into()));
    };
    // serde reads a struct from an array as happily as from an object: `[1]` must not pass.
    if *first != b'{' {
        let got = match first {
            b'[' => "an array",
            b'"' => "a string",
            b'n' => "null",
            b't' | b'f' => "a boolean",
            b'-' | b'0'..=b'9' => "a number",
            _ => "something that is not JSON",
        };
        return Err(Code::BadRequest.with(format!("body must be a JSON object, got {got}")));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        json_error(error.into_inner(), &path)
    })?;
    deserializer.end().map_err(|e| json_error(e, "."))?;
    Ok(value)
}

/// Turns serde's message into the API's words: the field, what it must be, what it got. No
/// Rust type name reaches a client (docs/API.md, "Error messages").
fn json_error(error: serde_json::Error, path: &str) -> ApiError {
    use serde_json::error::Category;
    let text = error.to_string();
    // serde_json appends the position; the field name says more to a client.
    let text = match text.rfind(" at line ") {
        Some(at) => &text[..at],
        None => &text,
    };
    let field = if path == "." {
        "body".to_owned()
    } else {
        path.to_owned()
    };
    Code::BadRequest.with(match error.classify() {
        Category::Syntax if text.starts_with("number out of range") => {
            format!("{field} must be a number JSON can hold, got one out of range")
        }
        Category::Syntax | Category::Eof => format!("malformed JSON: {error}"),
        _ => describe(&field, text),
    })
}

/// One serde data error, said in the API's words.
fn describe(field: &str, text: &str) -> String {
    if let Some(rest) = text
        .strip_prefix("invalid type: ")
        .or_else(|| text.strip_prefix("invalid value: "))
    {
        if let Some((got, expected)) = rest.split_once(", expected ") {
            return format!(
                "{field} must be {}, got {}",
                expected_words(expected),
                got_words(got)
            );
        }
    }
    if let Some(rest) = text.strip_prefix("invalid length ") {
        if let Some((_, expected)) = rest.split_once(", expected ") {
            return format!("{field} must be {}", expected_words(expected));
        }
    }
    if let Some(name) = text.strip_prefix("missing field ") {
        let name = name.trim_matches('`');
        return if field == "body" {
            format!("{name} is required")
        } else {
            format!("{field}.{name} is required")
        };
    }
    if let Some(rest) = text.strip_prefix("unknown field ") {
        let (name, allowed) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let name = name.trim_matches('`');
        let allowed = allowed
            .trim_start_matches("one of ")
            .trim_start_matches("a field ");
        let parent = field
            .strip_suffix(name)
            .map_or(field, |parent| parent.trim_end_matches('.'));
        let place = if parent.is_empty() || parent == "body" {
            "the body".to_owned()
        } else {
            format!("`{parent}`")
        };
        let allowed = allowed.replace(" or ", ", ");
        return format!("{name} is not a field of {place}; the fields are {allowed}");
    }
    if let Some(rest) = text.strip_prefix("unknown variant ") {
        let (got, allowed) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return format!(
            "{field} must be {}, got {got}",
            allowed.trim_start_matches("one of ")
        );
    }
    if let Some(name) = text.strip_prefix("duplicate field ") {
        return format!("{} is given more than once", name.trim_matches('`'));
    }
    // Our own validators already speak the API's language.
    if text.starts_with("must ") {
        format!("{field} {text}")
    } else {
        format!("{field}: {text}")
    }
}

/// What serde expected, for a client: never a Rust type.
fn expected_words(expected: &str) -> String {
    let expected = expected.trim();
    if expected.starts_with("struct ") || expected == "a map" {
        return "a JSON object".into();
    }
    match expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number of 0 or more".into(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a boolean" | "bool" => "true or false".into(),
        "a string" | "a borrowed string" | "a str" | "a char" => "a string".into(),
        "a sequence" => "an array".into(),
        "unit" => "null".into(),
        _ if expected.starts_with("enum ") || expected.starts_with("variant ") => {
            "one of the values listed in the API reference".into()
        }
        _ if expected.starts_with("tuple") || expected.contains("tuple ") => "an array".into(),
        other => other.into(),
    }
}

/// What the client sent, as serde saw it.
fn got_words(got: &str) -> String {
    let got = got.trim();
    let value = |prefix: &str| {
        got.strip_prefix(prefix)
            .map(|rest| rest.trim_matches('`').to_owned())
    };
    if let Some(v) = value("integer ").or_else(|| value("floating point ")) {
        return v;
    }
    if let Some(v) = value("boolean ") {
        return v;
    }
    if let Some(v) = got.strip_prefix("string ") {
        return format!("the string {v}");
    }
    match got {
        "sequence" => "an array".into(),
        "map" => "an object".into(),
        "null" | "unit value" => "null".into(),
        other => other.into(),
    }
}

fn require_json_content_type(request: &HttpRequest) -> Result<(), ApiError> {
    let refuse = || {
        Code::UnsupportedMediaType.with("send the body with Content-Type: application/json".into())
    };
    // What nearly every client sends, recognised without parsing a media type.
    let plain = request
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"application/json"));
    if plain {
        return Ok(());
    }
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
pub(crate) fn presented_token(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(AUTHORIZATION)
        .ok_or_else(|| {
            Code::Unauthorized.with("missing Authorization header; send the API token".into())
        })?
        .to_str()
        .map_err(|_| {
            Code::Unauthorized.with("the Authorization header is not a valid token".into())
        })?;
    if value
        .get(..7)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case("bearer "))
    {
        return Err(Code::Unauthorized
            .with("send the raw API token in Authorization, without the `Bearer ` prefix".into()));
    }
    if value.is_empty() {
        return Err(
            Code::Unauthorized.with("the Authorization header is empty; send the API token".into())
        );
    }
    Ok(value)
}

pub(super) fn app_state(request: &HttpRequest) -> Result<&web::Data<AppState>, ApiError> {
    request.app_data::<web::Data<AppState>>().ok_or_else(|| {
        tracing::error!("application state is missing");
        ApiError::internal()
    })
}

/// The bot whose API token the request carries; 401 otherwise.
pub struct BotToken(pub BotId);

impl FromRequest for BotToken {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(app_state(request).and_then(|state| token_bot_id(state, request).map(BotToken)))
    }
}

fn token_bot_id(state: &AppState, request: &HttpRequest) -> Result<BotId, ApiError> {
    // A token the directory knows is looked up by its bytes as sent (every token we issue is
    // visible ASCII with no prefix); only a header that names no bot is examined for what is
    // wrong with it, so each refusal says what it said before.
    let sent = request.headers().get(AUTHORIZATION);
    if let Some(bot) = sent.and_then(|token| state.directory.authenticate(token.as_bytes())) {
        return Ok(bot);
    }
    let presented = presented_token(request.headers())?;
    if presented.starts_with(Token::PROFILE_PREFIX) {
        return Err(Code::Unauthorized.with(
            "this is a profile's token (`usr_`); this route takes the bot's own API token".into(),
        ));
    }
    Err(Code::Unauthorized.with("unknown API token".into()))
}

/// A request made with a profile's token (CONTRACT section 13): who, and what it may do. 401
/// without a live one (unknown, revoked, expired, or a bot's token); the scope a route needs
/// is asked for by its handler with [`AsProfile::require`], after the bot in the path is
/// found, so that the order of errors stays 401, 404, 403.
pub struct AsProfile(pub Grant);

impl AsProfile {
    /// 403 naming the scope when the token was not issued with it.
    pub fn require(&self, scope: Scope) -> Result<ProfileId, ApiError> {
        if self.0.scopes.has(scope) {
            Ok(self.0.profile)
        } else {
            Err(Code::Forbidden.with(format!(
                "this token does not have the `{}` scope",
                scope.name()
            )))
        }
    }
}

impl FromRequest for AsProfile {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready((|| {
            let state = app_state(request)?;
            let presented = presented_token(request.headers())?;
            let grant = state
                .directory
                .authenticate_profile(presented.as_bytes())
                .filter(|grant| grant.live_at(state.clock.now()));
            match grant {
                Some(grant) => Ok(AsProfile(grant)),
                None if presented.starts_with(Token::BOT_PREFIX) => Err(Code::Unauthorized.with(
                    "this is a bot's API token; this route takes a profile's token (`usr_`)".into(),
                )),
                None => {
                    Err(Code::Unauthorized.with("unknown, revoked or expired profile token".into()))
                }
            }
        })())
    }
}

/// The bot `{id}` names whatever its status: the admin API's and the owners' routes, which
/// reach listings that are not public (by UUID; a public one also by platform id). 404 when
/// no listed bot has it.
pub struct ManagedBot(pub Arc<BotHandle>);

impl FromRequest for ManagedBot {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready((|| {
            let state = app_state(request)?;
            let id = path_id(request)?;
            state
                .directory
                .resolve_managed(&id)
                .map(ManagedBot)
                .ok_or_else(|| Code::NotFound.with(format!("no bot with id `{id}`")))
        })())
    }
}

/// The bot a route about the token's own bot is about: the one `{id}` names, which the token
/// must belong to, or, on the classic routes that name no bot, the token's own. 401 without a
/// valid token, then 404 for an id no bot has, then 403 for another bot's: a token tells
/// nothing of other bots. (Declared with [`super::routes::Route::own_bot`].)
pub struct OwnBot(pub Arc<BotHandle>);

impl FromRequest for OwnBot {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready((|| {
            let state = app_state(request)?;
            let token_bot = token_bot_id(state, request)?;
            let bot = match request.match_info().get("id") {
                Some(_) => {
                    let bot = path_bot(state, request)?;
                    if bot.id != token_bot {
                        return Err(
                            Code::Forbidden.with("this API token belongs to another bot".into())
                        );
                    }
                    bot
                }
                // Only a delisting racing this request can miss; its token is unknown from
                // then on.
                None => state
                    .directory
                    .get(token_bot)
                    .ok_or_else(|| Code::Unauthorized.with("unknown API token".into()))?,
            };
            Ok(OwnBot(bot))
        })())
    }
}

/// The bot `{id}` names, a listing UUID or a platform snowflake; 404 when no listed bot has it.
pub struct PathBot(pub Arc<BotHandle>);

impl FromRequest for PathBot {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(app_state(request).and_then(|state| path_bot(state, request).map(PathBot)))
    }
}

/// `{id}` of the path, as `web::Path` reads it: percent-decoded.
#[derive(serde::Deserialize)]
struct IdParam {
    id: String,
}

fn path_id(request: &HttpRequest) -> Result<Cow<'_, str>, ApiError> {
    // An id as routed, when it has nothing to percent-decode (every id that can name anything
    // does): no copy. Otherwise decoded as `web::Path` decodes it.
    if let Some(raw) = request
        .match_info()
        .get("id")
        .filter(|raw| !raw.contains('%'))
    {
        return Ok(Cow::Borrowed(raw));
    }
    web::Path::<IdParam>::extract(request)
        .into_inner()
        .map(|path| Cow::Owned(path.into_inner().id))
        .map_err(|_| ApiError::internal())
}

fn path_bot(state: &AppState, request: &HttpRequest) -> Result<Arc<BotHandle>, ApiError> {
    crate::api::resources::bots::find_bot(state, &path_id(request)?)
}

/// The profile `{id}` names, a profile UUID; 404 when it is not one (whether a profile has it
/// is the registry's to say).
pub struct PathProfile(pub ProfileId);

impl FromRequest for PathProfile {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(path_id(request).and_then(|id| {
            ProfileId::parse(&id)
                .map(PathProfile)
                .ok_or_else(|| crate::api::resources::users::not_found(&id))
        }))
    }
}

/// A JSON body (see [`json_body`]). Read only once the extractors before it have passed, so that
/// the order of errors stays 401, 404, 403, then the body's.
pub struct Json<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let request = request.clone();
        let payload = web::Payload::from_request(&request, payload).into_inner();
        Box::pin(async move {
            let payload = payload.map_err(|_| ApiError::internal())?;
            json_body(&request, payload).await.map(Json)
        })
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
                Code::NotFound.with(format!(
                    "no route for {} {}",
                    request.method(),
                    request.path()
                ))
            })?;
            // An address that failed too often is refused before its token is looked at, so
            // a guess that happens to be right tells nothing during the lockout either.
            let client = client_ip(request, state.client_address);
            if let Some(seconds) = state.admin_failures.locked_for(client) {
                return Err(Code::TooManyRequests
                    .with(format!(
                        "too many failed admin authentications from this address; try again in {seconds} seconds"
                    ))
                    .retry_after(seconds));
            }
            let token = presented_token(request.headers())?;
            if expected.matches(&TokenHash::of(token)) {
                Ok(Admin)
            } else {
                // The address and the route, never the value tried.
                tracing::warn!(
                    client = %client,
                    method = %request.method(),
                    route = request.match_pattern().as_deref().unwrap_or("unmatched"),
                    "admin authentication failed"
                );
                state.admin_failures.failed(client);
                Err(Code::Unauthorized.with("unknown admin token".into()))
            }
        })())
    }
}

/// One query parameter that must be a snowflake (`userId` of the check routes).
pub fn snowflake_param(query_string: &str, name: &str) -> Result<Snowflake, ApiError> {
    let (mut found, mut again) = (None, false);
    // Every pair is decoded before anything else is said: a malformed one is the answer, as
    // when the whole query is refused.
    for pair in crate::domain::query::each_pair(query_string) {
        let (key, value) = pair.map_err(|e| Code::BadRequest.with(e.0))?;
        if key == name {
            again |= found.is_some();
            found = Some(value);
        }
    }
    if again {
        return Err(Code::BadRequest.with(format!("`{name}` is given more than once")));
    }
    let value = found.ok_or_else(|| Code::BadRequest.with(format!("`{name}` is required")))?;
    Snowflake::parse(&value).ok_or_else(|| {
        Code::BadRequest.with(format!(
            "`{name}` must be a snowflake (1 to 20 digits, no leading zero), got `{value}`"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::admin::VotePost;
    use crate::api::stats::StatsPost;
    use crate::domain::bot::{BotPatch, NewBot};
    use crate::domain::profile::{NewProfile, ProfilePatch};

    fn message<T: DeserializeOwned>(body: &str) -> String {
        refusal::<T>(body).unwrap_or_else(|| panic!("{body} was accepted"))
    }

    fn refusal<T: DeserializeOwned>(body: &str) -> Option<String> {
        match parse_json::<T>(body.as_bytes()) {
            Err(error) if error.kind == Code::BadRequest => Some(error.message().to_owned()),
            Err(other) => panic!("{body}: {other}"),
            Ok(_) => None,
        }
    }

    /// Words of Rust, not of the API: none may reach a client.
    const RUST_WORDS: [&str; 16] = [
        "struct", "u8", "u16", "u32", "u64", "i64", "usize", "f64", "enum", "variant", "sequence",
        "a map", "Option", "at line", "unit", "Post",
    ];

    fn assert_api_words(body: &str, message: &str, field: &str) {
        assert!(message.contains(field), "{body}: {message}");
        for word in RUST_WORDS {
            assert!(!message.contains(word), "{body}: {message}");
        }
    }

    #[test]
    fn every_body_field_of_the_wrong_type_is_named_in_the_api_s_words() {
        let wrong = [
            "5", "-1", "1.5", "true", "\"x\"", "[1]", "{}", "null", "[]", "1e400",
        ];
        type Parser = fn(&str) -> Option<String>;
        let fields: &[(&str, Parser)] = &[
            ("server_count", refusal::<StatsPost>),
            ("shards", refusal::<StatsPost>),
            ("shard_id", refusal::<StatsPost>),
            ("shard_count", refusal::<StatsPost>),
            ("platform_id", refusal::<NewBot>),
            ("name", refusal::<NewBot>),
            ("tags", refusal::<NewBot>),
            ("owner_ids", refusal::<NewBot>),
            ("certified", refusal::<NewBot>),
            ("webhook_format", refusal::<NewBot>),
            ("webhook_url", refusal::<NewBot>),
            ("avatar", refusal::<BotPatch>),
            ("featured", refusal::<BotPatch>),
            ("tags", refusal::<BotPatch>),
            ("username", refusal::<NewProfile>),
            ("socials", refusal::<NewProfile>),
            ("mod", refusal::<NewProfile>),
            ("admin", refusal::<ProfilePatch>),
            ("platform_id", refusal::<ProfilePatch>),
            ("user_id", refusal::<VotePost>),
            ("avatar", refusal::<VotePost>),
        ];
        for (field, parse) in fields {
            for value in wrong {
                let body = format!("{{\"{field}\": {value}}}");
                if let Some(message) = parse(&body) {
                    // Bodies with a required field missing are refused for that field.
                    if !message.ends_with("is required") {
                        assert_api_words(&body, &message, field);
                    }
                }
            }
        }
        for (body, field) in [
            (r#"{"socials":[5]}"#, "socials[0]"),
            (r#"{"socials":[{"type":"x"}]}"#, "socials[0].url"),
            (r#"{"nope":1}"#, "nope"),
            (r#"{"username":"ab","username":"cd"}"#, "username"),
        ] {
            assert_api_words(body, &message::<NewProfile>(body), field);
        }
        assert_eq!(
            message::<StatsPost>(r#"{"server_count": 90.5}"#),
            "server_count must be a whole number from 0 to 9007199254740991, got 90.5"
        );
    }

    #[test]
    fn every_body_type_refuses_what_is_not_an_object() {
        let parsers: [fn(&str) -> String; 6] = [
            message::<StatsPost>,
            message::<NewBot>,
            message::<BotPatch>,
            message::<NewProfile>,
            message::<ProfilePatch>,
            message::<VotePost>,
        ];
        for parse in parsers {
            for body in ["[1]", "[]", "5", "-1", "\"s\"", "null", "true", " [ {} ] "] {
                let message = parse(body);
                assert!(
                    message.starts_with("body must be a JSON object"),
                    "{body}: {message}"
                );
            }
        }
    }
}
