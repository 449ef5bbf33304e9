//! `GET /bots/:id/stats` and `POST /bots/:id/stats` (and `POST /bots/stats`).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::bots::{find_bot, own_bot, token_bot, BOT_ID};
use super::error::{ApiError, Code, ErrorBody};
use super::extract::{json_body, BotToken};
use super::routes::Route;
use super::{reply, AppState};
use crate::actors::bot::PostStats;
use crate::actors::directory::BotHandle;
pub use crate::domain::stats::StatsPost;

/// This module's routes; see [`super::routes`].
pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_get_stats, get_stats),
        Route::new(__path_post_stats, post_stats),
        Route::new(__path_post_own_stats, post_own_stats),
    ]
}

#[derive(Serialize, ToSchema)]
pub struct Stats {
    /// 0 when the bot has never posted stats
    pub server_count: u64,
}

#[derive(Serialize, ToSchema)]
pub struct Ok {
    pub ok: bool,
}

/// A bot's server count.
#[utoipa::path(
    get, path = "/bots/{id}/stats", tag = "stats",
    params(("id" = String, Path, description = BOT_ID)),
    responses(
        (status = 200, description = "The current server count", body = Stats),
    )
)]
pub async fn get_stats(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let servers = find_bot(&state, &id)?.view().servers();
    let body = serde_json::to_vec(&Stats {
        server_count: servers,
    })
    .map_err(|_| Code::Internal.with("a response did not serialize".into()))?;
    // The body is the count and nothing else: the count is its validator.
    Ok(reply::tagged_json(
        body,
        &format!("\"servers-{servers:016x}\""),
    ))
}

/// Post the bot's server count (its own token).
#[utoipa::path(
    post, path = "/bots/{id}/stats", tag = "stats",
    params(("id" = String, Path, description = BOT_ID)),
    request_body = StatsPost,
    security(("token" = [])),
    responses(
        (status = 200, description = "Stored", body = Ok),
        (status = 400, description = "`bad_request`: the body is not a JSON object, or server_count, shards, shard_id or shard_count is missing or out of range", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token belongs to another bot", body = ErrorBody),
    )
)]
pub async fn post_stats(
    token: BotToken,
    state: web::Data<AppState>,
    id: web::Path<String>,
    request: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let bot = own_bot(&state, token.0, &id)?;
    store(&bot, &request, body).await
}

/// The classic client libraries' route: the bot is the token's.
#[utoipa::path(
    post, path = "/bots/stats", tag = "stats",
    request_body = StatsPost,
    security(("token" = [])),
    responses(
        (status = 200, description = "Stored", body = Ok),
        (status = 400, description = "`bad_request`: the body is not a JSON object, or server_count, shards, shard_id or shard_count is missing or out of range", body = ErrorBody),
    )
)]
pub async fn post_own_stats(
    token: BotToken,
    state: web::Data<AppState>,
    request: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let bot = token_bot(&state, token.0)?;
    store(&bot, &request, body).await
}

async fn store(
    bot: &BotHandle,
    request: &HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let post: StatsPost = json_body(request, body).await?;
    let update = post.update().map_err(|why| Code::BadRequest.with(why))?;
    bot.ask(PostStats(update)).await?.wait().await?;
    crate::telemetry::stats_posted();
    Ok(reply::ok(&Ok { ok: true }))
}
