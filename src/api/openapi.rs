//! The OpenAPI 3.1 document, generated from the handlers' annotations.
//!
//! Handlers list only what is particular to them: their success, and the errors only they give
//! (403, 409, a 400 or a 404 that says more). [`CommonResponses`] adds the rest to every
//! operation from what the operation is: a token answers 401, a bot or profile id 404, a body
//! 408, 413 and 415, a rate limited route 429 and the `X-RateLimit-*` headers on every status,
//! an admin route 404 when the server has no admin token; every route 400, 431 and 500, every
//! write 503.

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, Schema, Type,
};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{Modify, OpenApi};

use super::{admin, bots, error, health, history, limits, stats, users, votes};

const DESCRIPTION: &str = "\
A directory of chat-platform bots: search, votes, server-count stats and public profiles.

**Authentication.** Routes marked with a lock take the bot's API token (`token`) or the admin \
token (`admin_token`) as the raw value of the `Authorization` header, without a `Bearer` prefix. \
On public routes a token is never required; a valid one only changes the rate-limit key.

**Errors.** Every non-2xx answer except 429 is `{\"error\": {\"code\", \"message\"}}`; `code` is \
stable and safe to branch on, `message` names the parameter or field at fault. A method a path \
does not have answers 405 `method_not_allowed` with an `Allow` header listing the methods it has.

**Rate limits.** Every route under `/bots` shares one bucket per key (the token's bot, else the \
client address), and `/users/{user_id}` has a bucket per client address: a burst of 60 (the \
operator's `--rate-limit`), one request back every 60/N seconds. Their responses carry \
`X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`; a refused request gets 429 \
with `Retry-After` and `{\"retry_after\": N}`, not the error envelope. The admin API is not \
limited.

**Bodies** are JSON objects sent with `Content-Type: application/json`, at most 64 KiB.";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "botlist",
        description = DESCRIPTION,
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        bots::search,
        bots::get_bot,
        votes::voters,
        votes::own_voters,
        votes::check,
        votes::own_check,
        history::history,
        history::own_history,
        history::stream,
        history::own_stream,
        stats::get_stats,
        stats::post_stats,
        stats::post_own_stats,
        users::get_user,
        admin::create_user,
        admin::update_user,
        admin::delete_user,
        admin::create_bot,
        admin::update_bot,
        admin::delist_bot,
        admin::rotate_token,
        admin::record_vote,
        admin::snapshot,
        admin::send_test,
        admin::deliveries,
        admin::redeliver,
        health::healthz,
        health::metrics,
    ),
    components(schemas(error::ErrorBody, error::ErrorDetail, error::ErrorCode, limits::RetryAfter)),
    modifiers(&Security, &CommonResponses, &StatsPostNeedsACount),
    tags(
        (name = "bots", description = "Search and read bots"),
        (name = "votes", description = "Voters and vote checks; a bot's API token"),
        (name = "stats", description = "Server counts"),
        (name = "users", description = "Public profiles"),
        (name = "admin", description = "Filling the directory; the admin token"),
        (name = "operations", description = "Health and metrics, outside the base path"),
    )
)]
struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let raw_header = |description: &str| {
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Authorization",
                description,
            )))
        };
        components.add_security_scheme(
            "token",
            raw_header("The bot's API token, raw, without a Bearer prefix"),
        );
        components.add_security_scheme(
            "admin_token",
            raw_header("The admin token the operator configured, raw, without a Bearer prefix"),
        );
    }
}

/// The responses many operations share, each written once under `components/responses`.
#[derive(Clone, Copy)]
enum Common {
    BadRequest,
    Unauthorized,
    NoSuchBot,
    NoSuchProfile,
    NoAdminApi,
    RequestTimeout,
    PayloadTooLarge,
    UnsupportedMediaType,
    TooManyRequests,
    HeadersTooLarge,
    Internal,
    Unavailable,
}

impl Common {
    const ALL: [Common; 12] = [
        Self::BadRequest,
        Self::Unauthorized,
        Self::NoSuchBot,
        Self::NoSuchProfile,
        Self::NoAdminApi,
        Self::RequestTimeout,
        Self::PayloadTooLarge,
        Self::UnsupportedMediaType,
        Self::TooManyRequests,
        Self::HeadersTooLarge,
        Self::Internal,
        Self::Unavailable,
    ];

    fn status(self) -> &'static str {
        match self {
            Self::BadRequest => "400",
            Self::Unauthorized => "401",
            Self::NoSuchBot | Self::NoSuchProfile | Self::NoAdminApi => "404",
            Self::RequestTimeout => "408",
            Self::PayloadTooLarge => "413",
            Self::UnsupportedMediaType => "415",
            Self::TooManyRequests => "429",
            Self::HeadersTooLarge => "431",
            Self::Internal => "500",
            Self::Unavailable => "503",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::BadRequest => "BadRequest",
            Self::Unauthorized => "Unauthorized",
            Self::NoSuchBot => "NoSuchBot",
            Self::NoSuchProfile => "NoSuchProfile",
            Self::NoAdminApi => "NoAdminApi",
            Self::RequestTimeout => "RequestTimeout",
            Self::PayloadTooLarge => "PayloadTooLarge",
            Self::UnsupportedMediaType => "UnsupportedMediaType",
            Self::TooManyRequests => "TooManyRequests",
            Self::HeadersTooLarge => "HeadersTooLarge",
            Self::Internal => "InternalError",
            Self::Unavailable => "Unavailable",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Self::BadRequest => "`bad_request`: a parameter or a body field is invalid, or the request could not be read",
            Self::Unauthorized => "`unauthorized`: the token is missing, empty, unknown, or sent with a `Bearer` prefix",
            Self::NoSuchBot => "`not_found`: no listed bot has this id (or, on an admin route, the server has no admin token)",
            Self::NoSuchProfile => "`not_found`: no profile has this id (or, on an admin route, the server has no admin token)",
            Self::NoAdminApi => "`not_found`: the server has no admin token, so no admin API",
            Self::RequestTimeout => "`request_timeout`: the body did not arrive in time after the headers",
            Self::PayloadTooLarge => "`payload_too_large`: the body is over 64 KiB",
            Self::UnsupportedMediaType => "`unsupported_media_type`: the body was not sent as `application/json`",
            Self::TooManyRequests => "Rate limited: wait `retry_after` seconds (the same as `Retry-After`). Not the error envelope",
            Self::HeadersTooLarge => "`headers_too_large`: the request headers are over 16 KiB together",
            Self::Internal => "`internal_error`: a bug; the message tells nothing of internals",
            Self::Unavailable => "`unavailable`: the write could not be made durable, or the server is shutting down",
        }
    }

    fn response(self) -> Response {
        let body = match self {
            Self::TooManyRequests => "RetryAfter",
            _ => "ErrorBody",
        };
        let mut response = ResponseBuilder::new()
            .description(self.description())
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name(body)))
                    .build(),
            )
            .build();
        if let Self::TooManyRequests = self {
            response.headers.insert(
                "Retry-After".into(),
                integer_header("Whole seconds to wait, at least 1; the same as `retry_after`"),
            );
            add_rate_limit_headers(&mut response);
        }
        response
    }

    fn reference(self) -> RefOr<Response> {
        RefOr::Ref(Ref::new(format!("#/components/responses/{}", self.name())))
    }
}

fn integer_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0)),
        )
        .description(Some(description))
        .build()
}

/// The headers every response of a rate-limited route carries while limits are on.
fn add_rate_limit_headers(response: &mut Response) {
    let headers = [
        (
            "X-RateLimit-Limit",
            "The burst: requests a full bucket allows (sent while limits are on)",
        ),
        (
            "X-RateLimit-Remaining",
            "Requests left in the bucket now (sent while limits are on)",
        ),
        (
            "X-RateLimit-Reset",
            "Whole seconds until the bucket is full again (sent while limits are on)",
        ),
    ];
    for (name, description) in headers {
        response
            .headers
            .insert(name.into(), integer_header(description));
    }
}

struct CommonResponses;

/// A stats post needs `server_count`, or else `shards` as an array: a rule across two fields,
/// which a field's own schema cannot say.
struct StatsPostNeedsACount;

impl Modify for StatsPostNeedsACount {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let Some(post) = components.schemas.remove("StatsPost") else {
            return;
        };
        let shards_as_array = ObjectBuilder::new()
            .required("shards")
            .property("shards", ArrayBuilder::new());
        let a_count = AnyOfBuilder::new()
            .item(ObjectBuilder::new().required("server_count"))
            .item(shards_as_array);
        let all = AllOfBuilder::new().item(post).item(a_count).build();
        components
            .schemas
            .insert("StatsPost".into(), RefOr::T(Schema::AllOf(all)));
    }
}

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for common in Common::ALL {
            components
                .responses
                .insert(common.name().into(), RefOr::T(common.response()));
        }
        for (path, item) in openapi.paths.paths.iter_mut() {
            for (method, operation) in operations(item) {
                add_common_responses(path, method, operation);
            }
        }
    }
}

fn operations(item: &mut PathItem) -> impl Iterator<Item = (&'static str, &mut Operation)> {
    [
        ("get", item.get.as_mut()),
        ("post", item.post.as_mut()),
        ("patch", item.patch.as_mut()),
        ("put", item.put.as_mut()),
        ("delete", item.delete.as_mut()),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.map(|operation| (method, operation)))
}

fn add_common_responses(path: &str, method: &str, operation: &mut Operation) {
    let operational = path == "/healthz" || path == "/metrics";
    let limited = path.starts_with("/bots") || path.starts_with("/users");
    let mut common = vec![Common::HeadersTooLarge, Common::Internal];
    if !operational {
        common.push(Common::BadRequest);
    }
    if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
        common.push(Common::Unauthorized);
    }
    if path.contains("/bots/{id}") {
        common.push(Common::NoSuchBot);
    } else if path.contains("/users/{") {
        common.push(Common::NoSuchProfile);
    } else if path.starts_with("/admin") {
        common.push(Common::NoAdminApi);
    }
    if operation.request_body.is_some() {
        common.extend([
            Common::RequestTimeout,
            Common::PayloadTooLarge,
            Common::UnsupportedMediaType,
        ]);
    }
    if method != "get" {
        common.push(Common::Unavailable);
    }
    if limited {
        common.push(Common::TooManyRequests);
    }
    let responses = &mut operation.responses.responses;
    for c in common {
        responses
            .entry(c.status().into())
            .or_insert_with(|| c.reference());
    }
    if limited {
        // A reference cannot take headers, so limited routes hold their own copies.
        for response in responses.values_mut() {
            let mut inline = match response {
                RefOr::T(response) => response.clone(),
                RefOr::Ref(reference) => Common::ALL
                    .into_iter()
                    .find(|c| reference.ref_location.ends_with(&format!("/{}", c.name())))
                    .map(Common::response)
                    .unwrap_or_else(|| Response::new("")),
            };
            add_rate_limit_headers(&mut inline);
            *response = RefOr::T(inline);
        }
    }
}

/// The document with every path under `base_path` but the operational ones.
pub fn document(base_path: &str) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    let paths = std::mem::take(&mut doc.paths.paths);
    doc.paths.paths = paths
        .into_iter()
        .map(|(path, item)| match path.as_str() {
            "/healthz" | "/metrics" => (path, item),
            _ => (format!("{base_path}{path}"), item),
        })
        .collect();
    doc
}
