//! `POST /admin/bots/{id}/votes`: the only way votes enter.

use actix_web::HttpResponse;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::actors::bot::RecordVote;
use crate::actors::Answer;
use crate::api::error::{ApiError, Code};
use crate::api::extract::{Admin, Json, PathBot};
use crate::api::reply;
use crate::api::routes::{Route, Subject};
use crate::domain::ids::Snowflake;
use crate::domain::text::{HttpUrl, VoterName};
use crate::domain::votes::{VoteCounts, Voter};

pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_record_vote, record_vote).refuses(Code::AlreadyVoted, "this user voted for this bot in the last 12 hours; the message gives the time of the next possible vote").about(Subject::Bot)]
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

/// Record a vote: the only way votes enter.
#[utoipa::path(
    post, path = "/admin/bots/{id}/votes", tag = "admin",
    request_body = VotePost,
    responses(
        (status = 201, description = "Counted", body = VoteCounts),
    )
)]
pub async fn record_vote(
    _: Admin,
    PathBot(bot): PathBot,
    Json(vote): Json<VotePost>,
) -> Result<HttpResponse, ApiError> {
    let voter = Voter {
        id: vote.user_id,
        username: vote.username,
        avatar: vote.avatar,
    };
    let (answer, answered) = Answer::pair();
    bot.tell(RecordVote(voter, answer))?;
    let counts = answered.wait().await;
    let counts = crate::telemetry::count_vote(counts)?;
    Ok(reply::created(&counts))
}
