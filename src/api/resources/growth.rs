//! `GET /bots/:id/stats/history`: a bot's server count and votes per UTC hour or day.

use std::sync::{Arc, Weak};

use actix_web::{web, HttpRequest, HttpResponse};
use arc_swap::ArcSwap;
use chrono::{DateTime, Duration};
use serde::Serialize;
use utoipa::ToSchema;

use super::bots::find_bot;
use crate::actors::bot::GrowthPoints;
use crate::api::http::error::{ApiError, Code};
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::{http::reply, AppState};
use crate::domain::bot::BotView;
use crate::domain::growth::{Interval, HOURLY_DAYS, MAX_POINTS};
use crate::domain::query::pairs;
use crate::domain::time::Timestamp;

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_get_growth, get_growth).refuses(Code::BadRequest, "`interval`, `from` or `to` is invalid or sent twice, `to` is before `from`, more than 1000 points, or hourly points older than 90 days")
        .limited(Limit::PerBot)
        .about(Subject::Bot)
        .etag()]
}

#[derive(Serialize, ToSchema)]
pub struct GrowthHistory {
    /// `hour` or `day`
    #[schema(value_type = String)]
    pub interval: &'static str,
    /// One point per interval, oldest first
    pub points: Vec<GrowthPoint>,
}

#[derive(Serialize, ToSchema)]
pub struct GrowthPoint {
    /// The interval's start (UTC, aligned to the hour or the day)
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// The last count posted in the interval, else the last posted before it; null before the
    /// first post
    #[schema(required = true, maximum = 9_007_199_254_740_991_u64)]
    pub server_count: Option<u64>,
    /// Votes received in the interval, each counted with its weight (the weekend multiplier)
    pub votes: u64,
}

/// What the query asks for, checked: aligned `from`, `to` after it, at most 1000 points.
struct Asked {
    interval: Interval,
    from: Timestamp,
    to: Timestamp,
}

fn parse_time(name: &str, value: &str) -> Result<Timestamp, String> {
    DateTime::parse_from_rfc3339(value)
        .map(|at| Timestamp::from_datetime(at.to_utc()))
        .map_err(|_| {
            format!(
                "`{name}` must be an RFC 3339 time like 2026-11-20T00:00:00Z, got `{}`",
                value.chars().take(40).collect::<String>()
            )
        })
}

impl Asked {
    fn parse(query_string: &str, now: Timestamp) -> Result<Self, String> {
        let (mut interval, mut from, mut to) = (None, None, None);
        for (name, value) in pairs(query_string).map_err(|e| e.0)? {
            let twice = match &*name {
                "interval" => interval
                    .replace(match &*value {
                        "hour" => Interval::Hour,
                        "day" => Interval::Day,
                        other => {
                            return Err(format!(
                                "`interval` must be `hour` or `day`, got `{}`",
                                other.chars().take(40).collect::<String>()
                            ))
                        }
                    })
                    .is_some(),
                "from" => from.replace(parse_time("from", &value)?).is_some(),
                "to" => to.replace(parse_time("to", &value)?).is_some(),
                _ => false,
            };
            if twice {
                return Err(format!("`{name}` was sent more than once"));
            }
        }
        let interval = interval.unwrap_or(Interval::Day);
        // Defaults: the last 30 days (48 hours), the current one included.
        let default_points = match interval {
            Interval::Day => 30,
            Interval::Hour => 48,
        };
        let span = interval.span_ms();
        let (from, to) = match (from, to) {
            (Some(from), Some(to)) => (interval.floor(from), to),
            (Some(from), None) => (
                interval.floor(from),
                interval.floor(now).plus(Duration::milliseconds(span)),
            ),
            (None, Some(to)) => {
                let last = interval.floor(Timestamp::from_millis(to.millis() - 1));
                (
                    last.minus(Duration::milliseconds(span * (default_points - 1))),
                    to,
                )
            }
            (None, None) => {
                let end = interval.floor(now).plus(Duration::milliseconds(span));
                (
                    end.minus(Duration::milliseconds(span * default_points)),
                    end,
                )
            }
        };
        if to == from {
            // An empty range: no point, not an error.
            return Ok(Self { interval, from, to });
        }
        if to < from {
            return Err(format!(
                "`to` must be after `from` (the start of its {}: {from})",
                interval.name()
            ));
        }
        let points = (to.millis() - from.millis() + span - 1) / span;
        if points > MAX_POINTS as i64 {
            return Err(format!(
                "`from` and `to` span {points} {}s: at most {MAX_POINTS} points per answer",
                interval.name()
            ));
        }
        if interval == Interval::Hour {
            let kept = Interval::Day.floor(now.minus(Duration::days(i64::from(HOURLY_DAYS))));
            if from < kept {
                return Err(format!(
                    "`from` is before {kept}: hourly points are kept for the last {HOURLY_DAYS} days; ask `interval=day` for older ones"
                ));
            }
        }
        Ok(Self { interval, from, to })
    }
}

/// A bot's server count and the votes it received, per UTC hour or day (public).
#[utoipa::path(
    get, path = "/bots/{id}/stats/history", tag = "stats",
    params(
        ("interval" = Option<String>, Query, description = "`day` (the default) or `hour`", pattern = "^(hour|day)$"),
        ("from" = Option<String>, Query, format = DateTime, description = "RFC 3339; inclusive, moved back to the start of its hour or day. Default: 30 days (48 hours) before the end. Hourly points reach back 90 days"),
        ("to" = Option<String>, Query, format = DateTime, description = "RFC 3339; exclusive. Default: the end of the current day (hour). At most 1000 points from `from`"),
    ),
    responses(
        (status = 200, description = "One point per interval, oldest first", body = GrowthHistory),
    )
)]
pub async fn get_growth(
    state: web::Data<AppState>,
    id: web::Path<String>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let asked = Asked::parse(request.query_string(), state.clock.now())
        .map_err(|why| Code::BadRequest.with(why))?;
    let bot = find_bot(&state, &id)?;
    // The URL names the bot and the range; the clock moves the range a default leaves open,
    // and the bot's published view says how far its history has changed, durably.
    let url = request
        .uri()
        .path_and_query()
        .map_or("", |url| url.as_str());
    let read_at = |changes| Mark {
        bot: Arc::downgrade(&bot.view),
        changes,
        from: asked.from.millis(),
        to: asked.to.millis(),
    };
    if let Some(kept) = state
        .growth_pages
        .get(url, &read_at(bot.view().growth_changes))
    {
        return Ok(reply::kept_json(&kept));
    }
    let answer = bot
        .ask(GrowthPoints {
            interval: asked.interval,
            from: asked.from,
            to: asked.to,
        })
        .await??;
    let history = GrowthHistory {
        interval: asked.interval.name(),
        points: answer
            .points
            .into_iter()
            .map(|p| GrowthPoint {
                at: p.at,
                server_count: p.server_count,
                votes: p.votes,
            })
            .collect(),
    };
    let Some(seq) = answer.seq else {
        // The journal has failed: the answer leaves refused changes out, and no number names
        // it; the `ETag` layer tags it from its bytes, as it does the answers of routes that
        // make no validator of their own. Nothing is kept.
        return Ok(reply::ok(&history));
    };
    // What the answer is made of: the bot's state at its last record, and the range asked.
    let etag = format!(
        "\"g{:016x}-{seq:x}-{}-{:x}-{:x}\"",
        state.directory.validator_seed(),
        asked.interval.name(),
        asked.from.millis(),
        asked.to.millis(),
    );
    let Ok(body) = serde_json::to_vec(&history) else {
        return Ok(reply::tagged(&history, &etag));
    };
    Ok(reply::keep_json(
        &state.growth_pages,
        url,
        read_at(answer.changes),
        body,
        &etag,
    ))
}

/// What a kept answer was read at: the bot (its actor's published view, so a bot listed again
/// under the same id is another), its history's count of changes, and the range the URL meant
/// then. An answer is kept only once the state it was read from is durable, and a view shows
/// a count only once the change that made it is durable: equal marks, equal bytes.
pub struct Mark {
    bot: Weak<ArcSwap<BotView>>,
    changes: u64,
    from: i64,
    to: i64,
}

impl PartialEq for Mark {
    fn eq(&self, other: &Self) -> bool {
        Weak::ptr_eq(&self.bot, &other.bot)
            && (self.changes, self.from, self.to) == (other.changes, other.from, other.to)
    }
}
