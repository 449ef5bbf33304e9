//! `GET /bots/suggest?q=&limit=`: type-ahead over bot names, from the search index.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::http::error::{ApiError, Code};
use crate::api::http::routes::{Limit, Route};
use crate::api::{http::reply, AppState};
use crate::domain::ids::BotId;
use crate::domain::query::pairs;
use crate::domain::search::MAX_QUERY_CHARS;
use crate::domain::text::{fold_case, BotName, HttpUrl, PlatformUsername};

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_suggest, suggest).refuses(Code::BadRequest, "`q` is missing, blank or over 256 characters, `limit` is not 1 to 20, or a parameter is given twice").limited(Limit::PerBot)]
}

pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 20;

#[derive(Serialize, ToSchema)]
pub struct Suggestions<'a> {
    /// Best first: most votes, then listing id
    pub results: Vec<Suggestion<'a>>,
}

#[derive(Serialize, ToSchema)]
pub struct Suggestion<'a> {
    #[schema(value_type = BotId)]
    pub id: BotId,
    #[schema(value_type = BotName)]
    pub name: &'a BotName,
    #[schema(value_type = PlatformUsername)]
    pub username: &'a PlatformUsername,
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub avatar: Option<&'a HttpUrl>,
}

struct Asked {
    q: String,
    limit: usize,
}

impl Asked {
    fn parse(query_string: &str) -> Result<Self, String> {
        let (mut q, mut limit) = (None, None);
        for (name, value) in pairs(query_string).map_err(|e| e.0)? {
            let twice = match &*name {
                "q" => q.replace(value).is_some(),
                "limit" => limit.replace(value).is_some(),
                _ => false,
            };
            if twice {
                return Err(format!("`{name}` is given more than once"));
            }
        }
        let q = q.unwrap_or_default();
        if q.trim().is_empty() {
            return Err("`q` is required: the start of a word of the names sought".into());
        }
        if q.chars().count() > MAX_QUERY_CHARS {
            return Err(format!("`q` must be at most {MAX_QUERY_CHARS} characters"));
        }
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(text) => text
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n) && text.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| {
                    format!(
                        "`limit` must be a whole number from 1 to {MAX_LIMIT}, got `{}`",
                        text.chars().take(40).collect::<String>()
                    )
                })?,
        };
        Ok(Self {
            q: fold_case(&q),
            limit,
        })
    }
}

/// Type-ahead: bots with a word of their name starting with `q` (case-insensitive, folded as
/// `q` of `GET /bots`), most votes first.
#[utoipa::path(
    get, path = "/bots/suggest", tag = "bots",
    params(
        ("q" = String, Query, min_length = 1, max_length = 256, description = "The start of a word of the name (a word starts the name or follows a character that is not a letter or digit); case-insensitive. Required, not blank"),
        ("limit" = Option<u64>, Query, minimum = 1, maximum = 20, description = "At most this many results, 1 to 20 (default 10)"),
    ),
    responses(
        (status = 200, description = "The matching bots, by vote_count descending, then id", body = Suggestions),
    )
)]
pub async fn suggest(
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let asked = Asked::parse(request.query_string()).map_err(|why| Code::BadRequest.with(why))?;
    let bots = state.directory.suggest(&asked.q, asked.limit);
    Ok(reply::ok(&Suggestions {
        results: bots
            .iter()
            .map(|bot| Suggestion {
                id: bot.listing.id,
                name: &bot.listing.name,
                username: &bot.listing.username,
                avatar: bot.listing.avatar.as_ref(),
            })
            .collect(),
    }))
}
