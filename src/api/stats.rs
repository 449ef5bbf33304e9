//! `GET /bots/:id/stats` and `POST /bots/:id/stats` (and `POST /bots/stats`).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::bots::{find_bot, own_bot, token_bot};
use super::error::{ApiError, ErrorBody};
use super::extract::{json_body, BotToken};
use super::{reply, AppState};
use crate::actors::bot::PostStats;
use crate::actors::directory::BotHandle;
use crate::domain::bot::ServerCount;

#[derive(Serialize, ToSchema)]
pub struct Stats {
    /// 0 when the bot has never posted stats
    pub server_count: u64,
}

/// The body of a stats post; other fields (shards, shard_count, ...) are ignored.
#[derive(Deserialize, ToSchema)]
pub struct StatsPost {
    /// An integer from 0 to 2^53 - 1
    pub server_count: ServerCount,
}

#[derive(Serialize, ToSchema)]
pub struct Ok {
    pub ok: bool,
}

#[utoipa::path(
    get, path = "/bots/{id}/stats", tag = "stats",
    params(("id" = String, Path, description = "Listing UUID or platform snowflake")),
    responses(
        (status = 200, description = "The current server count", body = Stats),
        (status = 404, description = "No such bot", body = ErrorBody),
    )
)]
pub async fn get_stats(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let view = find_bot(&state, &id)?.view();
    Ok(reply::ok(&Stats {
        server_count: view.servers(),
    }))
}

#[utoipa::path(
    post, path = "/bots/{id}/stats", tag = "stats",
    params(("id" = String, Path, description = "Listing UUID or platform snowflake")),
    request_body = StatsPost,
    security(("token" = [])),
    responses(
        (status = 200, description = "Stored", body = Ok),
        (status = 400, description = "server_count missing or not an integer in range", body = ErrorBody),
        (status = 401, description = "Token missing or unknown", body = ErrorBody),
        (status = 403, description = "Token of another bot", body = ErrorBody),
        (status = 404, description = "No such bot", body = ErrorBody),
        (status = 413, description = "Body over 64 KiB", body = ErrorBody),
        (status = 415, description = "Body not sent as application/json", body = ErrorBody),
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
        (status = 400, description = "server_count missing or not an integer in range", body = ErrorBody),
        (status = 401, description = "Token missing or unknown", body = ErrorBody),
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
    bot.ask(PostStats(post.server_count)).await??;
    crate::telemetry::stats_posted();
    Ok(reply::ok(&Ok { ok: true }))
}
