//! A page of a bot's vote history, newest first.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::VoteEntry;
use crate::actors::bot::ReadHistoryPage;
use crate::actors::directory::BotHandle;
use crate::api::error::{ApiError, Code};
use crate::api::extract::OwnBot;
use crate::api::{reply, AppState};
use crate::domain::time::Timestamp;
use crate::domain::votes::history::PageQuery;

/// A page of the vote history.
#[derive(Serialize, ToSchema)]
pub struct VoteHistoryPage<'a> {
    /// Newest first
    pub results: Vec<VoteEntry<'a>>,
    /// Pass as `cursor` for the next (older) page; null on the last page
    #[schema(required = true)]
    pub next: Option<String>,
}

/// Every vote the bot accepted, newest first (its own token).
#[utoipa::path(
    get, path = "/bots/{id}/votes/history", tag = "votes",
    params(
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Votes per page, 1 to 1000; default 100"),
        ("cursor" = Option<String>, Query, description = "The `next` of the previous page; opaque"),
        ("since" = Option<String>, Query, format = DateTime, description = "RFC 3339: only votes at or after this instant"),
        ("until" = Option<String>, Query, format = DateTime, description = "RFC 3339: only votes before this instant"),
    ),
    responses(
        (status = 200, description = "A page of votes, newest first", body = VoteHistoryPage),
    )
)]
pub async fn history(
    bot: OwnBot,
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    history_page(&bot.0, &state, request.query_string()).await
}

const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

async fn history_page(
    bot: &BotHandle,
    state: &AppState,
    query_string: &str,
) -> Result<HttpResponse, ApiError> {
    let history = &state.history;
    let mut limit = None;
    let mut cursor = None;
    let mut since = None;
    let mut until = None;
    let pairs =
        crate::domain::query::pairs(query_string).map_err(|e| Code::BadRequest.with(e.0))?;
    for (name, value) in pairs {
        let slot = match &*name {
            "limit" => &mut limit,
            "cursor" => &mut cursor,
            "since" => &mut since,
            "until" => &mut until,
            _ => continue,
        };
        if slot.is_some() {
            return Err(Code::BadRequest.with(format!("`{name}` is given more than once")));
        }
        // An empty cursor is the first page; an empty limit or time is not a value.
        *slot = Some(value).filter(|v| !(v.is_empty() && name == "cursor"));
    }
    let limit = match limit {
        None => DEFAULT_LIMIT,
        Some(raw) => raw
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                Code::BadRequest.with(format!(
                    "`limit` must be a whole number from 1 to {MAX_LIMIT}, got `{raw}`"
                ))
            })?,
    };
    let before = cursor
        .map(|c| history.cursors.read_cursor(bot.id, &c))
        .transpose()?;
    let since = since.map(|s| instant("since", &s)).transpose()?;
    let until = until.map(|s| instant("until", &s)).transpose()?;
    let page = bot
        .ask(ReadHistoryPage(PageQuery {
            before,
            since,
            until,
            limit,
        }))
        .await??;
    let next = page
        .more
        .then(|| page.entries.last())
        .flatten()
        .map(|last| history.cursors.cursor(bot.id, last.position));
    Ok(reply::ok(&VoteHistoryPage {
        results: page.entries.iter().map(VoteEntry::from).collect(),
        next,
    }))
}

fn instant(name: &str, raw: &str) -> Result<Timestamp, ApiError> {
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|at| Timestamp::from_datetime(at.with_timezone(&chrono::Utc)))
        .map_err(|_| {
            Code::BadRequest.with(format!(
                "`{name}` must be an RFC 3339 date and time like 2026-11-23T04:00:00Z, got `{raw}`"
            ))
        })
}
