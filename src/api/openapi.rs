//! The OpenAPI 3 document, generated from the handlers' annotations.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{admin, bots, error, health, stats, users, votes};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "botlist",
        description = "A directory of chat-platform bots: search, votes, server-count stats and public profiles.",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        bots::search,
        bots::get_bot,
        votes::voters,
        votes::own_voters,
        votes::check,
        votes::own_check,
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
    components(schemas(error::ErrorBody, error::ErrorDetail)),
    modifiers(&Security),
    tags(
        (name = "bots", description = "Search and read bots"),
        (name = "votes", description = "Voters and vote checks; the bot's own token"),
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
            raw_header("The admin token (--admin-token), raw"),
        );
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
