//! The admin API: how profiles, bots and votes enter the directory. One module per resource;
//! what their routes share is declared here once.

pub mod bots;
pub mod snapshot;
pub mod tokens;
pub mod users;
pub mod votes;
pub mod webhooks;

use crate::api::http::error::{ApiError, Code};
use crate::api::http::routes::Route;
use crate::api::AppState;
use crate::domain::text::HttpUrl;
use crate::webhooks::guard;

pub use votes::VotePost;

/// The 400 of a bot's body, which names owners and a webhook URL.
const BAD_BOT_BODY: &str = "the body is not a JSON object, a field is missing, invalid or unknown, an owner does not exist, or the webhook URL points at a private network";

/// Every admin route: each takes the admin token (the `Admin` extractor of its handler is what
/// enforces it).
pub fn routes() -> Vec<Route> {
    [
        users::routes(),
        bots::routes(),
        votes::routes(),
        webhooks::routes(),
        snapshot::routes(),
        tokens::routes(),
    ]
    .into_iter()
    .flatten()
    .map(Route::admin)
    .collect()
}

/// The SSRF guard on a webhook URL being set.
pub(crate) async fn check_webhook_url(
    state: &AppState,
    url: Option<&HttpUrl>,
) -> Result<(), ApiError> {
    match url {
        Some(url) => guard::check_url(url.as_str(), state.allow_private_webhooks)
            .await
            .map_err(|why| Code::BadRequest.with(format!("`webhook_url` {why}"))),
        None => Ok(()),
    }
}
