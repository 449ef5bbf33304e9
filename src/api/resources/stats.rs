//! `GET /bots/:id/stats` and `POST /bots/:id/stats` (and `POST /bots/stats`).

use actix_web::HttpResponse;
use serde::Serialize;
use utoipa::ToSchema;

use crate::actors::bot::PostStats;
use crate::actors::Answer;
use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::{Json, OwnBot, PathBot};
use crate::api::http::reply;
use crate::api::http::routes::{Classic, Limit, Route, Subject};
pub use crate::domain::stats::StatsPost;

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    let get = Route::new(__path_get_stats, get_stats)
        .about(Subject::Bot)
        .etag();
    let post = Route::own_bot(
        __path_post_stats,
        post_stats,
        Classic {
            operation_id: "post_own_stats",
            summary: "The classic client libraries' route: the bot is the token's.",
        },
    )
    .map(|route| route.refuses(Code::BadRequest, "the body is not a JSON object, or server_count, shards, shard_id or shard_count is missing or out of range"));
    [get]
        .into_iter()
        .chain(post)
        .map(|route| route.limited(Limit::PerBot))
        .collect()
}

#[derive(Serialize, ToSchema)]
pub struct Stats {
    /// 0 when the bot has never posted stats
    pub server_count: u64,
}

/// The answer to a stats post once it is stored: `{"ok": true}`.
#[derive(Serialize, ToSchema)]
pub struct Stored {
    pub ok: bool,
}

/// A bot's server count.
#[utoipa::path(
    get, path = "/bots/{id}/stats", tag = "stats",
    responses(
        (status = 200, description = "The current server count", body = Stats),
    )
)]
pub async fn get_stats(PathBot(bot): PathBot) -> Result<HttpResponse, ApiError> {
    let servers = bot.view().servers();
    let body = serde_json::to_vec(&Stats {
        server_count: servers,
    })
    .map_err(|_| Code::Internal.with("a response did not serialize".into()))?;
    // The body is the count and nothing else: the count is its validator.
    let mut tag = String::with_capacity(26);
    tag.push_str("\"servers-");
    crate::domain::render::push_hex(&mut tag, servers.into(), 16);
    tag.push('"');
    Ok(reply::tagged_json(body, &tag))
}

/// Post the bot's server count (its own token).
#[utoipa::path(
    post, path = "/bots/{id}/stats", tag = "stats",
    request_body = StatsPost,
    responses(
        (status = 200, description = "Stored", body = Stored),
    )
)]
pub async fn post_stats(
    bot: OwnBot,
    Json(post): Json<StatsPost>,
) -> Result<HttpResponse, ApiError> {
    let update = post.update().map_err(|why| Code::BadRequest.with(why))?;
    let (answer, answered) = Answer::pair();
    bot.0.tell(PostStats(update, answer))?;
    answered.wait().await?;
    crate::telemetry::stats_posted();
    Ok(reply::ok(&Stored { ok: true }))
}
