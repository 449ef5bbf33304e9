//! `GET /bots` (search) and `GET /bots/:id`.

use std::sync::Arc;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use super::{reply, AppState};
use crate::actors::directory::BotHandle;
use crate::domain::bot::PublicBot;
use crate::domain::ids::BotId;
use crate::domain::search::Search;

/// SPEC.md 2.6 with Bot results.
#[derive(Serialize, ToSchema)]
pub struct BotList<'a> {
    #[schema(value_type = Vec<PublicBot>)]
    pub results: Vec<PublicBot<'a>>,
    /// The limit used, after clamping
    pub limit: u64,
    /// The offset used, computed from `page` when only it was sent
    pub offset: u64,
    /// Results in this response (at most limit)
    pub count: u64,
    /// Matching bots across all pages
    pub total: u64,
}

/// The bot named by `:id`, a listing UUID or a platform snowflake.
pub fn find_bot(state: &AppState, id: &str) -> Result<Arc<BotHandle>, ApiError> {
    state
        .directory
        .resolve(id)
        .ok_or_else(|| ApiError::NotFound(format!("no bot with id `{id}`")))
}

/// The bot that owns the token, for the classic routes that name no bot.
pub fn token_bot(state: &AppState, token_bot: BotId) -> Result<Arc<BotHandle>, ApiError> {
    // Only a delisting racing this request can get here; its token is unknown from then on.
    state
        .directory
        .get(token_bot)
        .ok_or_else(|| ApiError::Unauthorized("unknown API token".into()))
}

/// The bot named by `:id`, which the token must belong to (CONTRACT section 2: 404 before 403).
pub fn own_bot(state: &AppState, token_bot: BotId, id: &str) -> Result<Arc<BotHandle>, ApiError> {
    let bot = find_bot(state, id)?;
    if bot.id != token_bot {
        return Err(ApiError::Forbidden(
            "this API token belongs to another bot".into(),
        ));
    }
    Ok(bot)
}

/// Search the directory.
#[utoipa::path(
    get, path = "/bots", tag = "bots",
    params(
        ("q" = Option<String>, Query, description = "Case-insensitive substring of name or short description, at most 256 characters (alias `query`)"),
        ("category" = Option<String>, Query, description = "Comma-separated tag slugs; any overlap matches (alias `tags`)"),
        ("language" = Option<String>, Query, description = "Comma-separated ISO 639-1 codes (alias `langs`)"),
        ("invites" = Option<String>, Query, description = "lt100, 100-1000, 1000-10000 or gt10000"),
        ("votes" = Option<u64>, Query, description = "Minimum vote_count"),
        ("sort" = Option<String>, Query, description = "votes (default), newest, monthly_votes, recently_updated, invites"),
        ("limit" = Option<u64>, Query, description = "Default 24, clamped to 100"),
        ("offset" = Option<u64>, Query, description = "Default 0; wins over page"),
        ("page" = Option<u64>, Query, description = "1 or more; offset = (page - 1) * limit"),
    ),
    responses(
        (status = 200, description = "A page of bots", body = BotList),
        (status = 400, description = "A parameter is invalid or given twice", body = ErrorBody),
    )
)]
pub async fn search(
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let search = Search::parse(request.query_string()).map_err(|e| ApiError::BadRequest(e.0))?;
    let now = state.clock.now();
    let page = state.directory.search(&search, now);
    let results: Vec<PublicBot<'_>> = page.bots.iter().map(|bot| bot.public(now)).collect();
    Ok(reply::ok(&BotList {
        count: results.len() as u64,
        results,
        limit: search.limit,
        offset: search.offset,
        total: page.total,
    }))
}

/// One bot's public record.
#[utoipa::path(
    get, path = "/bots/{id}", tag = "bots",
    params(("id" = String, Path, description = "Listing UUID or platform snowflake")),
    responses(
        (status = 200, description = "The bot", body = PublicBot),
        (status = 404, description = "No such bot", body = ErrorBody),
    )
)]
pub async fn get_bot(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let view = find_bot(&state, &id)?.view();
    Ok(reply::ok(&view.public(state.clock.now())))
}
