//! `POST /admin/bots/{id}/votes`: the only way votes enter.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::BOT_ID;
use crate::actors::bot::RecordVote;
use crate::api::bots::find_bot;
use crate::api::error::{ApiError, ErrorBody};
use crate::api::extract::{json_body, Admin};
use crate::api::routes::Route;
use crate::api::{reply, AppState};
use crate::domain::ids::Snowflake;
use crate::domain::text::{HttpUrl, VoterName};
use crate::domain::votes::Voter;

pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_record_vote, record_vote)]
}

/// The body of a vote ingest.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VotePost {
    pub user_id: Snowflake,
    #[schema(value_type = crate::domain::text::PlatformUsername)]
    pub username: VoterName,
    #[serde(default)]
    pub avatar: Option<HttpUrl>,
}

#[derive(Serialize, ToSchema)]
pub struct VoteCounts {
    pub vote_count: u64,
    pub monthly_vote_count: u64,
}

/// Record a vote: the only way votes enter.
#[utoipa::path(
    post, path = "/admin/bots/{id}/votes", tag = "admin",
    params(("id" = String, Path, description = BOT_ID)),
    request_body = VotePost,
    responses(
        (status = 201, description = "Counted", body = VoteCounts),
        (status = 409, description = "`already_voted`: this user voted for this bot in the last 12 hours; the message gives the time of the next possible vote", body = ErrorBody),
    )
)]
pub async fn record_vote(
    _: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
    request: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let bot = find_bot(&state, &id)?;
    let vote: VotePost = json_body(&request, body).await?;
    let voter = Voter {
        id: vote.user_id,
        username: vote.username,
        avatar: vote.avatar,
    };
    let counts = match bot.ask(RecordVote(voter)).await? {
        Ok(taken) => taken.wait().await,
        Err(refused) => Err(refused),
    };
    let counts = crate::telemetry::count_vote(counts)?;
    Ok(reply::created(&VoteCounts {
        vote_count: counts.vote_count,
        monthly_vote_count: counts.monthly_vote_count,
    }))
}
