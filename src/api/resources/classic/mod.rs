//! The classic surface (`--classic-base-path`, default `/api`): the routes and shapes the
//! released client libraries call (topggpy 1.4, top.py 1.4, @top-gg/sdk 3, dblapi.js 2), over
//! the same directory, rules, tokens and rate limits as `{base}`. Only the parameters' syntax
//! and the rendering are the classic surface's own (`query.rs`, `render.rs`); the routes whose
//! shapes the two surfaces share (stats posts, check, voters, weekend) are `{base}`'s very
//! routes, mounted here too.

pub mod query;
pub mod render;

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};

use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::PathBot;
use crate::api::http::reply;
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::resources::{stats, users, votes, weekend};
use crate::api::AppState;
use crate::domain::ids::{ProfileId, Snowflake};
use render::{BotField, ClassicStats, ClassicUser, Context};

/// The routes of the classic surface, served under its own base path: its own four and the
/// base's routes whose shapes are already the classic ones.
pub fn routes() -> Vec<Route> {
    let own = vec![
        Route::new(__path_classic_search, classic_search)
            .refuses(
                Code::BadRequest,
                "a parameter is invalid or given twice, or `search` names a field botlist does not search by; the message names it",
            )
            .limited(Limit::PerBot)
            .etag(),
        Route::new(__path_classic_bot, classic_bot)
            .limited(Limit::PerBot)
            .about(Subject::Bot)
            .etag(),
        Route::new(__path_classic_stats, classic_stats)
            .limited(Limit::PerBot)
            .about(Subject::Bot)
            .etag(),
        Route::new(__path_classic_user, classic_user)
            .limited(Limit::PerAddress("users_ip"))
            .about(Subject::Profile)
            .etag(),
    ];
    let shared = stats::routes()
        .into_iter()
        .filter(|route| route.method == Method::POST)
        .chain(votes::routes())
        .chain(weekend::routes());
    let mut all: Vec<Route> = own.into_iter().chain(shared).collect();
    crate::api::routes::matching_order(&mut all);
    all
}

/// Search the directory, the classic way.
///
/// `search` is `field: value` pairs (`username`, `name` or `shortdesc`: a case-insensitive
/// substring of the name or the short description, as `{base}`'s `q`; `tags`: comma-separated
/// tag slugs; `language`: comma-separated language codes). `sort` is `points`,
/// `monthlyPoints`, `date` or `server_count` (or a `{base}` order's name), with or without a
/// leading `-`: every order ranks from the highest, featured bots first. `fields` picks the
/// fields of each bot. An empty value is the same as leaving the parameter out.
#[utoipa::path(
    get, path = "/bots", tag = "classic",
    params(
        ("search" = Option<String>, Query, description = "`field: value` pairs separated by spaces or commas; fields username, name, shortdesc (at most one of these three), tags, language"),
        ("sort" = Option<String>, Query, description = "points, monthlyPoints, date or server_count, or an order of `{base}`/bots; a leading `-` is allowed and changes nothing"),
        ("fields" = Option<String>, Query, description = "Comma-separated classic field names; the others are left out"),
        ("limit" = inline(Option<crate::api::resources::bots::AnyCount>), Query, description = "Bots per page, default 50; above 100 is 100"),
        ("offset" = inline(Option<crate::api::resources::bots::Count>), Query, description = "Bots to skip, default 0"),
    ),
    responses(
        (status = 200, description = "A page of bots in the classic shape", body = render::ClassicBotListSchema),
    )
)]
pub async fn classic_search(
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let parsed = query::parse(request.query_string()).map_err(|why| Code::BadRequest.with(why))?;
    let now = state.clock.now();
    let page = state.directory.search(&parsed.search, now);
    let mut body = Vec::with_capacity(128 + page.bots.len() * 1024);
    body.extend_from_slice(b"{\"results\":[");
    for (i, bot) in page.bots.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        let ctx = Context {
            bot,
            directory: &state.directory,
            now,
        };
        render::write_bot(&ctx, parsed.fields.as_deref(), &mut body);
    }
    let mut digits = itoa::Buffer::new();
    for (key, value) in [
        (&b"],\"limit\":"[..], parsed.search.limit),
        (b",\"offset\":", parsed.search.offset),
        (b",\"count\":", page.bots.len() as u64),
        (b",\"total\":", page.total),
    ] {
        body.extend_from_slice(key);
        body.extend_from_slice(digits.format(value).as_bytes());
    }
    body.push(b'}');
    Ok(reply::json_bytes(body))
}

/// One bot in the classic shape; `{id}` is its platform snowflake or its listing UUID.
#[utoipa::path(
    get, path = "/bots/{id}", tag = "classic",
    responses(
        (status = 200, description = "The bot in the classic shape", body = render::ClassicBotSchema),
    )
)]
pub async fn classic_bot(
    state: web::Data<AppState>,
    PathBot(bot): PathBot,
) -> Result<HttpResponse, ApiError> {
    let view = bot.view();
    let ctx = Context {
        bot: &view,
        directory: &state.directory,
        now: state.clock.now(),
    };
    let mut body = Vec::with_capacity(1024);
    render::write_bot(&ctx, None, &mut body);
    Ok(reply::json_bytes(body))
}

/// A bot's server count in the classic shape.
#[utoipa::path(
    get, path = "/bots/{id}/stats", tag = "classic",
    responses(
        (status = 200, description = "The current server count", body = ClassicStats),
    )
)]
pub async fn classic_stats(PathBot(bot): PathBot) -> HttpResponse {
    reply::ok(&ClassicStats {
        server_count: bot.view().servers(),
        shards: Vec::new(),
        shard_count: None,
    })
}

/// A profile in the classic shape; `{user_id}` is its linked platform snowflake or its UUID.
#[utoipa::path(
    get, path = "/users/{user_id}", tag = "classic",
    responses(
        (status = 200, description = "The profile in the classic shape", body = ClassicUser),
    )
)]
pub async fn classic_user(
    state: web::Data<AppState>,
    user_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let profile = match ProfileId::parse(&user_id) {
        Some(id) => state.directory.profile(id),
        None => Snowflake::parse(&user_id)
            .and_then(|platform_id| state.directory.profile_by_platform_id(platform_id)),
    }
    .ok_or_else(|| users::not_found(&user_id))?;
    Ok(reply::ok(&ClassicUser::of(&profile)))
}

/// Every field a classic bot can have, for tests and the reference.
pub fn bot_fields() -> impl Iterator<Item = &'static str> {
    BotField::ALL.into_iter().map(BotField::name)
}
