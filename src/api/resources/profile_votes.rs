//! `POST /bots/{id}/votes`: a profile votes as itself, with a `vote` token (CONTRACT section
//! 13). The vote takes the admin ingest's path (`admin::votes::cast_vote`): one code path, so
//! the 12-hour rule, the weekend weight, the voters list, history, stream, check, counts and
//! webhook are the same whoever sent it.

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::{AsProfile, PathBot};
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::resources::admin::votes::{cast_vote, VoteSource};
use crate::api::{http::reply, AppState};
use crate::domain::people::Scope;
use crate::domain::profile::Profile;
use crate::domain::text::VoterName;
use crate::domain::time::Timestamp;
use crate::domain::votes::{vote_window, Voter};

pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_vote, vote)
        .refuses(
            Code::Forbidden,
            "the token lacks the `vote` scope, or its profile has no linked platform id",
        )
        .refuses(
            Code::VoteBanned,
            "staff banned this profile from voting; the message says until when",
        )
        .refuses(
            Code::AlreadyVoted,
            "this profile voted for this bot in the last 12 hours; the message gives the time of the next possible vote",
        )
        .limited(Limit::PerBot)
        .about(Subject::Bot)]
}

/// A vote cast by its voter.
#[derive(Serialize, ToSchema)]
pub struct ProfileVote {
    pub vote_count: u64,
    pub monthly_vote_count: u64,
    /// When this vote's 12 hours end: the profile may vote for the bot again from then
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
}

/// Vote for a bot as the token's profile (no body).
///
/// The voter is the profile's linked platform id, with its display name (else its username)
/// and avatar. The vote counts exactly as one the admin API ingests.
#[utoipa::path(
    post, path = "/bots/{id}/votes", tag = "votes",
    security(("profile_token" = [])),
    responses(
        (status = 201, description = "Counted", body = ProfileVote),
    )
)]
pub async fn vote(
    who: AsProfile,
    state: web::Data<AppState>,
    PathBot(bot): PathBot,
) -> Result<HttpResponse, ApiError> {
    let profile_id = who.require(Scope::Vote)?;
    // Deleted since the token was looked up: its tokens went with it.
    let profile = state.directory.profile(profile_id).ok_or_else(|| {
        Code::Unauthorized.with("unknown, revoked or expired profile token".into())
    })?;
    let voter = voter_of(&profile)?;
    crate::api::resources::staff::refuse_banned_voter(&state, voter.id)?;
    let cast = cast_vote(&bot, voter, VoteSource::Profile).await?;
    Ok(reply::created(&ProfileVote {
        vote_count: cast.counts.vote_count,
        monthly_vote_count: cast.counts.monthly_vote_count,
        expires_at: cast.at.plus(vote_window()),
    }))
}

/// The voter a profile votes as: its platform id, which it must have.
fn voter_of(profile: &Profile) -> Result<Voter, ApiError> {
    let id = profile.platform_id.ok_or_else(|| {
        Code::Forbidden.with(
            "this profile has no linked platform id; link one (the operator sets `platform_id` with PATCH /admin/users/{id}) before voting"
                .into(),
        )
    })?;
    let name = profile
        .display_name
        .as_ref()
        .map(|name| name.as_str())
        .unwrap_or(profile.username.as_str());
    // Both are single-line text of at most 64 characters, as a voter's name is.
    let username = VoterName::parse(name.to_owned())
        .or_else(|_| VoterName::parse(profile.username.as_str().to_owned()))
        .map_err(|_| ApiError::internal())?;
    Ok(Voter {
        id,
        username,
        avatar: profile.avatar.clone(),
    })
}
