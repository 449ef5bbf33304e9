//! The classic surface (`--classic-base-path`, default `/api`): the routes and shapes the
//! released client libraries call (topggpy 1.4, top.py 1.4, @top-gg/sdk 3, dblapi.js 2), over
//! the same directory, rules, tokens and rate limits as `{base}`. Only the parameters' syntax
//! and the rendering are the classic surface's own (`query.rs`, `render.rs`); the routes whose
//! shapes the two surfaces share (stats posts, check, voters, weekend) are `{base}`'s very
//! routes, mounted here too.

pub mod query;
pub mod render;

use std::borrow::Cow;

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

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
                "a parameter is invalid or given twice, `search` is not `field: value` pairs or names a field botlist does not search by (or one twice), or, with a `search`, a page ends past offset + limit = 10000; the message names it",
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
        ("search" = inline(Option<SearchPairs>), Query, description = "`field: value` pairs separated by spaces or commas, like `username: shiro tags: music`: fields username, name, shortdesc (at most one of these three: a substring of the name or the short description, at most 256 characters), tags (comma-separated tag slugs), language (comma-separated ISO 639-1 codes), each at most once. Anything else (text that does not start with one of these fields and a colon, a field botlist does not search by, a field given twice) is 400 naming the fault"),
        ("sort" = inline(Option<ClassicSort>), Query, description = "points, monthlyPoints, date or server_count, or an order of `{base}`/bots; a leading `-` is allowed and changes nothing; any other value is 400"),
        ("fields" = inline(Option<ClassicFields>), Query, description = "Comma-separated classic field names; the others are left out; a name that is not a classic field is 400"),
        ("limit" = inline(Option<crate::api::resources::bots::AnyCount>), Query, description = "Bots per page, default 50; above 100 is 100"),
        ("offset" = inline(Option<crate::api::resources::bots::Count>), Query, description = crate::api::resources::bots::offset_description("Bots to skip, default 0", "`search`")),
    ),
    responses(
        (status = 200, description = "A page of bots in the classic shape", body = render::ClassicBotListSchema),
    )
)]
pub async fn classic_search(
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = request.query_string();
    let now = state.clock.now();
    // Read before the page is written and again after (below): a page kept under this number
    // shows the profiles it names (see `Directory::profiles_version`). Only 200s are kept: the
    // same query parses the same way.
    let profiles = state.directory.profiles_version();
    if let Some(page) = (state.directory.version_at(now))
        .and_then(|version| state.classic_pages.get(query, &(version, profiles)))
    {
        return Ok(reply::kept_json(&page));
    }
    let parsed = query::parse(query).map_err(|why| Code::BadRequest.with(why))?;
    if let Some(refused) =
        crate::api::resources::needle_cost::read(&state, &request, &parsed.search).await?
    {
        return Ok(refused);
    }
    let answer = state.directory.search_versioned(&parsed.search, now);
    let body = page_body(&state, &parsed, &answer.page, now);
    // A profile published while the page was written may or may not show in it: such a page
    // is neither kept nor tagged from the numbers (the layer hashes its body instead).
    if state.directory.profiles_version() != profiles {
        return Ok(reply::json_bytes(body));
    }
    Ok(reply::keep_json(
        &state.classic_pages,
        query,
        (answer.version, profiles),
        body,
        &answer.etag_beside(query, Some(profiles)),
    ))
}

/// The classic page's bytes: each bot in the classic shape (the fields asked for), then the
/// page's counts.
fn page_body(
    state: &AppState,
    parsed: &query::ClassicSearch,
    page: &crate::domain::search::SearchPage,
    now: crate::domain::time::Timestamp,
) -> Vec<u8> {
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
    body
}

/// The classic `search` parameter, for the OpenAPI document: empty (or only whitespace: the
/// same as leaving it out), or starting with a field `query::searched` reads and a colon. What a
/// pattern cannot say (each field at most once, one text field) is in the description, and the
/// server answers 400 for it.
pub struct SearchPairs;

impl utoipa::PartialSchema for SearchPairs {
    fn schema() -> RefOr<Schema> {
        let fields: Vec<&str> = query::SEARCHED.iter().map(|(name, _)| *name).collect();
        let fields = fields.join("|");
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(format!(r"^(\s*$|[\s,]*({fields}):)")))
            .into()
    }
}

impl ToSchema for SearchPairs {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ClassicSearchPairs")
    }
}

/// The classic `sort` parameter's values, for the OpenAPI document: every name
/// `query::sort_name` reads, with and without the leading `-`, and the empty value that stands
/// for leaving it out.
pub struct ClassicSort;

impl utoipa::PartialSchema for ClassicSort {
    fn schema() -> RefOr<Schema> {
        let names = query::sort_names();
        let dashed = names.iter().map(|name| format!("-{name}"));
        let all: Vec<String> = names
            .iter()
            .map(|name| name.to_string())
            .chain(dashed)
            .chain([String::new()])
            .collect();
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(all))
            .into()
    }
}

impl ToSchema for ClassicSort {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ClassicSort")
    }
}

/// The classic `fields` parameter, for the OpenAPI document: classic field names separated by
/// commas, spaces around each allowed, empty items ignored.
pub struct ClassicFields;

impl utoipa::PartialSchema for ClassicFields {
    fn schema() -> RefOr<Schema> {
        let names = BotField::ALL.map(BotField::name).join("|");
        let item = format!(r"(({names})\s*)?");
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(format!(r"^\s*{item}(,\s*{item})*$")))
            .into()
    }
}

impl ToSchema for ClassicFields {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ClassicFields")
    }
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
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let view = bot.view();
    let now = state.clock.now();
    let mark = Mark::of(&view, now, state.directory.profiles_version());
    // The path names the bot (by UUID or by snowflake: two keys, each its own answer); the mark
    // everything the answer shows.
    let key = request.path();
    if let Some(kept) = state.classic_bots.get(key, &mark) {
        return Ok(reply::kept_json(&kept));
    }
    let ctx = Context {
        bot: &view,
        directory: &state.directory,
        now,
    };
    let mut body = Vec::with_capacity(1024);
    render::write_bot(&ctx, None, &mut body);
    // The tag the layer made of every classic bot before it was kept: the body's hash.
    let etag = crate::api::http::semantics::etag_of(&body);
    let body = bytes::Bytes::from(body);
    // An owner's profile published while the bot was written may or may not show in it: such
    // a body goes out (its tag is its own hash) but is not kept under the older number.
    if state.directory.profiles_version() == mark.profiles {
        state
            .classic_bots
            .keep(key, mark, body.clone(), etag.clone());
    }
    Ok(reply::tagged_shared_json(body, etag))
}

/// What a classic bot shows, read without rendering it: the listing's rendered part (its
/// digest covers every listing field the classic shape shows but the platform id, which is
/// here on its own), the three counts as read now (the monthly one at this month), and the
/// profiles' version, since `owners` shows the owners' profiles' platform ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    listing: u128,
    platform_id: Snowflake,
    votes: u64,
    monthly: u64,
    servers: Option<u64>,
    profiles: u64,
}

impl Mark {
    fn of(
        view: &crate::domain::bot::BotView,
        now: crate::domain::time::Timestamp,
        profiles: u64,
    ) -> Self {
        Self {
            listing: view.listing.rendered().digest(),
            platform_id: view.listing.platform_id,
            votes: view.vote_count,
            monthly: view.monthly.at(now),
            servers: view.server_count.map(|count| count.get()),
            profiles,
        }
    }
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
