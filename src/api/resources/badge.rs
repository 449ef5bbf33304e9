//! `GET /bots/:id/badge/{servers|votes|monthly_votes}.svg`: a README badge.

use actix_web::http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, ETAG};
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;

use super::bots::find_bot;
use crate::api::http::error::{ApiError, Code};
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::AppState;
use crate::domain::badge::{metric, parse_label, Badge, BadgeColor, BadgeKind, BadgeStyle};
use crate::domain::query::pairs;

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_get_badge, get_badge)
        .refuses(
            Code::BadRequest,
            "`label`, `color` or `style` is invalid or sent twice",
        )
        .refuses(
            Code::NotFound,
            "no listed bot has this id, or the kind is not one of servers, votes, monthly_votes",
        )
        .limited(Limit::PerBot)
        .about(Subject::Bot)
        .etag()]
}

/// What the query asks for; unknown parameters are ignored, a parameter sent twice is refused.
struct Options {
    label: Option<String>,
    color: BadgeColor,
    style: BadgeStyle,
}

impl Options {
    fn parse(query_string: &str) -> Result<Self, String> {
        let mut options = Self {
            label: None,
            color: BadgeColor::default(),
            style: BadgeStyle::default(),
        };
        let mut seen = [false; 3];
        for (name, value) in pairs(query_string).map_err(|e| e.0)? {
            let at = match &*name {
                "label" => 0,
                "color" => 1,
                "style" => 2,
                _ => continue,
            };
            if std::mem::replace(&mut seen[at], true) {
                return Err(format!("`{name}` was sent more than once"));
            }
            match at {
                0 => options.label = Some(parse_label(&value)?),
                1 => options.color = BadgeColor::parse(&value)?,
                _ => options.style = BadgeStyle::parse(&value)?,
            }
        }
        Ok(options)
    }
}

/// A bot's badge, for its README: `label | value` in the flat style of shields.io.
///
/// The value is the bot's published count, current as soon as a stats post or a vote is
/// acknowledged.
#[utoipa::path(
    get, path = "/bots/{id}/badge/{kind}.svg", tag = "bots",
    params(
        ("kind" = String, Path, description = "What the badge shows: `servers` (the server count; `n/a` before the first stats post), `votes` (vote_count) or `monthly_votes` (monthly_vote_count)", pattern = "^(servers|votes|monthly_votes)$"),
        ("label" = Option<String>, Query, max_length = 64, pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$", description = "The left text, at most 64 characters without control characters (default: `servers`, `votes` or `monthly votes`); empty shows the value alone"),
        ("color" = Option<String>, Query, description = "The right side's colour: 3 or 6 hex digits without `#`, or a name: brightgreen, green, yellowgreen, yellow, orange, red, blue (the default), lightgrey, lightgray, grey, gray, success, important, critical, informational, inactive", pattern = "^([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6}|brightgreen|green|yellowgreen|yellow|orange|red|blue|lightgrey|lightgray|grey|gray|success|important|critical|informational|inactive)$"),
        ("style" = Option<String>, Query, description = "`flat` (the default: rounded corners, a light gradient) or `flat-square`", pattern = "^(flat|flat-square)$"),
    ),
    responses(
        (status = 200, description = "The badge, `Cache-Control: public, max-age=60`", content_type = "image/svg+xml", body = String),
    )
)]
pub async fn get_badge(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, kind) = path.into_inner();
    let kind = BadgeKind::parse(&kind).ok_or_else(|| {
        Code::NotFound.with(format!(
            "no badge `{}.svg`: the badges are servers.svg, votes.svg and monthly_votes.svg",
            kind.chars().take(40).collect::<String>()
        ))
    })?;
    let options =
        Options::parse(request.query_string()).map_err(|why| Code::BadRequest.with(why))?;
    let view = find_bot(&state, &id)?.view();
    let count = match kind {
        BadgeKind::Servers => view.server_count.map(|count| count.get()),
        BadgeKind::Votes => Some(view.vote_count),
        BadgeKind::MonthlyVotes => Some(view.monthly.at(state.clock.now())),
    };
    // What the drawing is made of besides its URL: the listing (its name is the title), the
    // kind and its count. Read without formatting anything, so a kept badge is served without
    // an allocation of its own; the value text and the ETag are made only to draw it.
    let mark = Mark {
        listing: view.listing.rendered().digest(),
        kind,
        count,
    };
    // The URL names the bot, the kind and the options; the mark everything else the drawing
    // shows. A URL whose options were refused never reaches this point, so is never kept.
    let url = request
        .uri()
        .path_and_query()
        .map_or("", |url| url.as_str());
    let (svg, etag) = match state.badges.get(url, &mark) {
        Some(kept) => (kept.body.clone(), kept.etag.clone()),
        None => {
            let value = count.map_or_else(|| "n/a".to_owned(), metric);
            // Made of the value as shown, not the count: counts that show alike (1.2k) draw
            // the same badge, so a client's copy of it stays valid.
            let etag = format!(
                "\"b{:016x}-{:032x}-{}-{value}\"",
                state.directory.validator_seed(),
                mark.listing,
                kind.default_label().replace(' ', "_"),
            );
            let label = options
                .label
                .as_deref()
                .unwrap_or_else(|| kind.default_label());
            let svg = Bytes::from(
                Badge {
                    label,
                    value: &value,
                    color: &options.color,
                    style: options.style,
                    title: view.listing.name.as_str(),
                }
                .render(),
            );
            let Ok(header) = HeaderValue::from_str(&etag) else {
                return Err(Code::Internal.with("a badge's validator is not a header value".into()));
            };
            state.badges.keep(url, mark, svg.clone(), header.clone());
            (svg, header)
        }
    };
    Ok(HttpResponse::Ok()
        .insert_header((ETAG, etag))
        .insert_header((CONTENT_TYPE, HeaderValue::from_static("image/svg+xml")))
        .insert_header((
            CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=60"),
        ))
        .body(svg))
}

/// What a badge shows besides what its URL says (see [`get_badge`]): the listing's rendered
/// part (the name, the title), the kind, and the count (the server count, `None` before the
/// first post; the monthly count as read this month).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    listing: u128,
    kind: BadgeKind,
    count: Option<u64>,
}
