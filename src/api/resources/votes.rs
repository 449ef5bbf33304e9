//! `GET /bots/:id/votes` and `GET /bots/:id/check` (and their classic forms without an id).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::actors::bot::RecentVoters;
use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::{snowflake_param, OwnBot};
use crate::api::http::routes::{Classic, Limit, Route};
use crate::api::{http::reply, AppState};
use crate::domain::ids::Snowflake;
use crate::domain::text::{HttpUrl, VoterName};

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    let voters = Route::own_bot(
        __path_voters,
        voters,
        Classic {
            operation_id: "own_voters",
            summary: "The classic route: the token's bot's last 1000 distinct voters.",
        },
    );
    let check = Route::own_bot(
        __path_check,
        check,
        Classic {
            operation_id: "own_check",
            summary:
                "The classic route: whether a user voted for the token's bot in the last 12 hours.",
        },
    )
    .map(|route| {
        route.early().refuses(
            Code::BadRequest,
            "userId missing, given twice or not a snowflake",
        )
    });
    voters
        .into_iter()
        .chain(check)
        .map(|route| route.limited(Limit::PerBot))
        .collect()
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

impl VoteCheck {
    /// The answer's bytes: one of two, so bots that check all day are answered without
    /// serializing (a test holds them to what serde writes).
    fn json(voted: bool) -> &'static [u8] {
        if voted {
            br#"{"voted":1}"#
        } else {
            br#"{"voted":0}"#
        }
    }
}

/// The bot's last 1000 distinct voters (its own token).
#[utoipa::path(
    get, path = "/bots/{id}/votes", tag = "votes",
    responses(
        (status = 200, description = "The last 1000 distinct voters, most recent first", body = Vec<VoterEntry>),
    )
)]
pub async fn voters(bot: OwnBot) -> Result<HttpResponse, ApiError> {
    let voters = bot.0.ask(RecentVoters).await??;
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
        ("userId" = Snowflake, Query, description = "The platform snowflake of the user to check"),
    ),
    responses(
        (status = 200, description = "Whether the user voted in the last 12 hours", body = VoteCheck),
    )
)]
pub async fn check(
    bot: OwnBot,
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let user = snowflake_param(request.query_string(), "userId")?;
    // Read from what the bot's actor published, without queueing behind its votes: only
    // durable votes are there, so the answer never shows one that was not acknowledged.
    let voted = bot.0.view.load().checks.is_active(user, state.clock.now());
    Ok(reply::ok_static(VoteCheck::json(voted)))
}

#[cfg(test)]
mod tests {
    use super::VoteCheck;

    #[test]
    fn a_checks_bytes_are_what_serde_writes() {
        for voted in [false, true] {
            let serialized = serde_json::to_vec(&VoteCheck {
                voted: voted.into(),
            })
            .expect("serializes");
            assert_eq!(VoteCheck::json(voted), serialized.as_slice());
        }
    }
}
