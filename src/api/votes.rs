//! `GET /bots/:id/votes` and `GET /bots/:id/check` (and their classic forms without an id).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::bots::{own_bot, token_bot, BOT_ID};
use super::error::{ApiError, ErrorBody};
use super::extract::{snowflake_param, BotToken};
use super::routes::Route;
use super::{reply, AppState};
use crate::actors::bot::RecentVoters;
use crate::actors::directory::BotHandle;
use crate::domain::ids::Snowflake;
use crate::domain::text::{HttpUrl, VoterName};

/// This module's routes; see [`super::routes`].
pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_voters, voters),
        Route::new(__path_own_voters, own_voters),
        Route::new(__path_check, check),
        Route::new(__path_own_check, own_check),
    ]
}

/// One voter, as the voters list shows it.
#[derive(Serialize, ToSchema)]
pub struct VoterEntry<'a> {
    #[schema(value_type = crate::domain::text::PlatformUsername)]
    pub username: &'a VoterName,
    #[schema(value_type = Snowflake)]
    pub id: Snowflake,
    /// null when the user has no custom avatar
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub avatar: Option<&'a HttpUrl>,
}

/// Whether a user voted recently.
#[derive(Serialize, ToSchema)]
pub struct VoteCheck {
    /// 1 if the user's latest vote is under 12 hours old, else 0
    #[schema(maximum = 1)]
    pub voted: u8,
}

/// The bot's last 1000 distinct voters (its own token).
#[utoipa::path(
    get, path = "/bots/{id}/votes", tag = "votes",
    params(("id" = String, Path, description = BOT_ID)),
    security(("token" = [])),
    responses(
        (status = 200, description = "The last 1000 distinct voters, most recent first", body = Vec<VoterEntry>),
        (status = 403, description = "`forbidden`: the token belongs to another bot", body = ErrorBody),
    )
)]
pub async fn voters(
    token: BotToken,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    recent_voters(&*own_bot(&state, token.0, &id)?).await
}

/// The classic route: the token's bot's last 1000 distinct voters.
#[utoipa::path(
    get, path = "/bots/votes", tag = "votes",
    security(("token" = [])),
    responses(
        (status = 200, description = "The token's bot's last 1000 distinct voters", body = Vec<VoterEntry>),
    )
)]
pub async fn own_voters(
    token: BotToken,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    recent_voters(&*token_bot(&state, token.0)?).await
}

async fn recent_voters(bot: &BotHandle) -> Result<HttpResponse, ApiError> {
    let voters = bot.ask(RecentVoters).await??;
    let entries: Vec<VoterEntry<'_>> = voters
        .iter()
        .map(|recent| VoterEntry {
            username: &recent.voter.username,
            id: recent.voter.id,
            avatar: recent.voter.avatar.as_ref(),
        })
        .collect();
    Ok(reply::ok(&entries))
}

/// Whether a user voted for the bot in the last 12 hours (the bot's own token).
#[utoipa::path(
    get, path = "/bots/{id}/check", tag = "votes",
    params(
        ("id" = String, Path, description = BOT_ID),
        ("userId" = Snowflake, Query, description = "The platform snowflake of the user to check"),
    ),
    security(("token" = [])),
    responses(
        (status = 200, description = "Whether the user voted in the last 12 hours", body = VoteCheck),
        (status = 400, description = "`bad_request`: userId missing, given twice or not a snowflake", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token belongs to another bot (a vote is told only to the bot voted for)", body = ErrorBody),
    )
)]
pub async fn check(
    token: BotToken,
    state: web::Data<AppState>,
    id: web::Path<String>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    check_vote(&*own_bot(&state, token.0, &id)?, &state, &request)
}

/// The classic route: whether a user voted for the token's bot in the last 12 hours.
#[utoipa::path(
    get, path = "/bots/check", tag = "votes",
    params(("userId" = Snowflake, Query, description = "The platform snowflake of the user to check")),
    security(("token" = [])),
    responses(
        (status = 200, description = "Whether the user voted for the token's bot in the last 12 hours", body = VoteCheck),
        (status = 400, description = "`bad_request`: userId missing, given twice or not a snowflake", body = ErrorBody),
    )
)]
pub async fn own_check(
    token: BotToken,
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    check_vote(&*token_bot(&state, token.0)?, &state, &request)
}

/// Read from what the bot's actor published, without queueing behind its votes: only durable
/// votes are there, so the answer never shows one that was not acknowledged.
fn check_vote(
    bot: &BotHandle,
    state: &AppState,
    request: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let user = snowflake_param(request.query_string(), "userId")?;
    let voted = bot.view.load().checks.is_active(user, state.clock.now());
    Ok(reply::ok(&VoteCheck {
        voted: voted.into(),
    }))
}
