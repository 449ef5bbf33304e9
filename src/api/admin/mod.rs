//! The admin API: how profiles, bots and votes enter the directory. One module per resource;
//! what their OpenAPI entries share is declared here once.

pub mod bots;
pub mod snapshot;
pub mod users;
pub mod votes;
pub mod webhooks;

use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::Modify;

use super::bots::BOT_ID;
use super::error::{ApiError, Code};
use super::routes::Route;
use super::users::not_found as profile_not_found;
use super::AppState;
use crate::domain::ids::ProfileId;
use crate::domain::text::HttpUrl;
use crate::webhooks::guard;

pub use votes::VotePost;

/// The 400 of an admin body, unless the route says more.
const BAD_BODY: &str = "`bad_request`: the body is not a JSON object, a field is missing or invalid, or a field is unknown";

/// The 400 of a bot's body, which names owners and a webhook URL.
const BAD_BOT_BODY: &str = "`bad_request`: the body is not a JSON object, a field is missing, invalid or unknown, an owner does not exist, or the webhook URL points at a private network";

/// What `{id}` of a profile may be.
const PROFILE_ID: &str = "Profile UUID (any case)";

/// What every admin route's OpenAPI entry shares, declared once: the admin token, and a 400
/// for a body the route cannot read (a route that says more keeps its own). The `Admin`
/// extractor of every admin handler is what enforces the token.
pub struct AdminDoc;

impl Modify for AdminDoc {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/admin") {
                continue;
            }
            for operation in [
                &mut item.get,
                &mut item.post,
                &mut item.patch,
                &mut item.put,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                operation.security = Some(vec![SecurityRequirement::new(
                    "admin_token",
                    Vec::<String>::new(),
                )]);
                operation
                    .responses
                    .responses
                    .entry("429".into())
                    .or_insert_with(|| RefOr::T(locked_out()));
                if operation.request_body.is_some() {
                    operation
                        .responses
                        .responses
                        .entry("400".into())
                        .or_insert_with(|| RefOr::T(bad_body()));
                }
            }
        }
    }
}

/// The answer to an address locked out after failed admin authentications (docs/API.md,
/// "Authentication"): the envelope, unlike the rate limits' 429.
fn locked_out() -> Response {
    let header = |description: &str, kind: utoipa::openapi::schema::Type| {
        utoipa::openapi::header::HeaderBuilder::new()
            .schema(utoipa::openapi::schema::ObjectBuilder::new().schema_type(kind))
            .description(Some(description))
            .build()
    };
    let mut response = ResponseBuilder::new()
        .description("`too_many_requests`: 10 failed admin authentications from this address within a minute; every admin request from it is refused until `Retry-After` seconds have passed")
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build();
    response.headers.insert(
        "Retry-After".into(),
        header(
            "Whole seconds until the address may try again, at least 1",
            utoipa::openapi::schema::Type::Integer,
        ),
    );
    response.headers.insert(
        "X-Request-Id".into(),
        header(
            "The request's id: the client's own if it sent a sane one, else a new one",
            utoipa::openapi::schema::Type::String,
        ),
    );
    response
}

fn bad_body() -> Response {
    ResponseBuilder::new()
        .description(BAD_BODY)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
}

/// Every admin route.
pub fn routes() -> Vec<Route> {
    [
        users::routes(),
        bots::routes(),
        votes::routes(),
        webhooks::routes(),
        snapshot::routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The SSRF guard on a webhook URL being set.
async fn check_webhook_url(state: &AppState, url: Option<&HttpUrl>) -> Result<(), ApiError> {
    match url {
        Some(url) => guard::check_url(url.as_str(), state.allow_private_webhooks)
            .await
            .map_err(|why| Code::BadRequest.with(format!("`webhook_url` {why}"))),
        None => Ok(()),
    }
}

fn profile_id(raw: &str) -> Result<ProfileId, ApiError> {
    ProfileId::parse(raw).ok_or_else(|| profile_not_found(raw))
}
