//! `GET /bots/:id/votes/history` and `GET /bots/:id/votes/stream` (and their forms without an
//! id): every vote with its time, a page at a time (`page`, its cursors signed in
//! `cursor`), and live as Server-Sent Events (`stream`, fed by `feed`).

mod cursor;
mod feed;
mod page;
mod stream;

use serde::Serialize;
use utoipa::ToSchema;

use crate::api::http::error::Code;
use crate::api::http::routes::{Classic, Limit, Route};
use crate::config::HistorySettings;
use crate::domain::ids::Snowflake;
use crate::domain::text::{HttpUrl, VoterName};
use crate::domain::time::Timestamp;
use crate::domain::votes::history::HistoryEntry;
use cursor::Cursors;
pub use feed::vote_event;

/// The settings, and what signs cursors.
pub struct History {
    pub settings: HistorySettings,
    cursors: Cursors,
}

impl History {
    /// `key` signs cursors: start-up reads it from the data directory (or makes one there), or
    /// in cluster mode takes the one every node shares, so that a cursor outlives a restart and
    /// is valid on every node.
    pub fn new(settings: HistorySettings, key: [u8; 32]) -> Self {
        Self {
            settings,
            cursors: Cursors::new(key),
        }
    }
}

/// One vote, as history and the stream show it.
#[derive(Serialize, ToSchema)]
pub struct VoteEntry<'a> {
    /// The voter's platform snowflake
    #[schema(value_type = Snowflake)]
    pub id: Snowflake,
    #[schema(value_type = crate::domain::text::PlatformUsername)]
    pub username: &'a VoterName,
    /// null when the user has no custom avatar
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub avatar: Option<&'a HttpUrl>,
    /// When the vote was taken
    #[schema(value_type = String, format = DateTime)]
    pub voted_at: Timestamp,
    /// voted_at + 12 hours: when the user may vote again and check stops counting the vote
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
}

impl<'a> From<&'a HistoryEntry> for VoteEntry<'a> {
    fn from(entry: &'a HistoryEntry) -> Self {
        Self {
            id: entry.voter.id,
            username: &entry.voter.username,
            avatar: entry.voter.avatar.as_ref(),
            voted_at: entry.voted_at,
            expires_at: entry.expires_at(),
        }
    }
}

/// The history and stream routes: for a bot by id, and for the token's own bot.
pub fn routes() -> Vec<Route> {
    let history = Route::own_bot(
        page::__path_history,
        page::history,
        Classic {
            operation_id: "own_history",
            summary: "The token's bot's vote history, newest first.",
        },
    )
    .map(|route| {
        route.refuses(
            Code::BadRequest,
            "a parameter out of range, given twice, or a cursor this service did not give for this bot",
        )
    });
    let stream = Route::own_bot(
        stream::__path_stream,
        stream::stream,
        Classic {
            operation_id: "own_stream",
            summary: "The token's bot's votes as Server-Sent Events.",
        },
    )
    .map(|route| {
        route
            .amend(stream::stream_events)
            .refuses(Code::BadRequest, "Last-Event-ID is not a vote id")
    });
    history
        .into_iter()
        .chain(stream)
        .map(|route| route.limited(Limit::PerBot))
        .collect()
}
