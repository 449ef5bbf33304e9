//! `POST /admin/bots/{id}/votes`: the only way votes enter.

use actix_web::HttpResponse;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::actors::bot::{Cast, RecordVote};
use crate::actors::directory::BotHandle;
use crate::actors::Answer;
use crate::api::error::{ApiError, Code};
use crate::api::extract::{Admin, Json, PathBot};
use crate::api::reply;
use crate::api::routes::{Route, Subject};
use crate::domain::ids::Snowflake;
use crate::domain::text::{HttpUrl, VoterName};
use crate::domain::votes::{VoteCounts, Voter};

pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_record_vote, record_vote)
        .refuses(Code::AlreadyVoted, "this user voted for this bot in the last 12 hours; the message gives the time of the next possible vote")
        .refuses(Code::VoteBanned, "the voter is the linked platform id of a profile staff banned from voting; the message says until when")
        .about(Subject::Bot)]
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
    state: actix_web::web::Data<crate::api::AppState>,
    PathBot(bot): PathBot,
    Json(vote): Json<VotePost>,
) -> Result<HttpResponse, ApiError> {
    crate::api::resources::staff::refuse_banned_voter(&state, vote.user_id)?;
    let voter = Voter {
        id: vote.user_id,
        username: vote.username,
        avatar: vote.avatar,
    };
    let cast = cast_vote(&bot, voter, VoteSource::Admin).await?;
    Ok(reply::created(&cast.counts))
}

/// Where a vote comes from: the one difference between the two ways in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteSource {
    /// The operator's site, with the admin token (`POST /admin/bots/{id}/votes`).
    Admin,
    /// The voter, with a profile's `vote` token (`POST /bots/{id}/votes`).
    Profile,
}

impl VoteSource {
    pub fn name(self) -> &'static str {
        match self {
            VoteSource::Admin => "admin",
            VoteSource::Profile => "profile",
        }
    }
}

/// Casts a vote, whoever sends it: the one path every vote takes to the bot's actor (the
/// 12-hour rule, the weekend weight, the ring, history, stream, check, counts and webhook are
/// all its), answered once durable.
pub async fn cast_vote(
    bot: &BotHandle,
    voter: Voter,
    source: VoteSource,
) -> Result<Cast, ApiError> {
    let (answer, answered) = Answer::pair();
    bot.tell(RecordVote(voter, answer))?;
    let cast = crate::telemetry::count_vote(answered.wait().await)?;
    crate::telemetry::vote_source(source.name());
    Ok(cast)
}
