//! `GET /bots` (search) and `GET /bots/:id`.

use std::sync::Arc;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use std::borrow::Cow;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

use crate::actors::directory::BotHandle;
use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::PathBot;
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::{http::reply, AppState};
use crate::domain::bot::PublicBot;
use crate::domain::search::{Search, Sort, MAX_FILTERED_END, RELEVANCE};

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_search, search)
            .refuses(
                Code::BadRequest,
                "a parameter is invalid or given twice (the message names it), or a filtered page ends past offset + limit = 10000",
            )
            .limited(Limit::PerBot)
            .etag(),
        Route::new(__path_get_bot, get_bot)
            .limited(Limit::PerBot)
            .about(Subject::Bot)
            .etag(),
    ]
}

/// A page of search results.
#[derive(Serialize, ToSchema)]
pub struct BotList<'a> {
    #[schema(value_type = Vec<PublicBot>)]
    pub results: Vec<PublicBot<'a>>,
    /// The limit used, after clamping
    pub limit: u64,
    /// The offset used, computed from `page` when only it was sent
    pub offset: u64,
    /// Results in this response (at most limit)
    pub count: u64,
    /// Matching bots across all pages
    pub total: u64,
}

/// The `sort` parameter's values, for the OpenAPI document.
pub struct SortKey;

impl utoipa::PartialSchema for SortKey {
    fn schema() -> RefOr<Schema> {
        string_enum(Sort::ALL.map(Sort::name).into_iter().chain([RELEVANCE]))
    }
}

impl ToSchema for SortKey {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("SortKey")
    }
}

/// The `match` parameter's values, for the OpenAPI document.
pub struct MatchMode;

impl utoipa::PartialSchema for MatchMode {
    fn schema() -> RefOr<Schema> {
        string_enum(["substring", "words"])
    }
}

impl ToSchema for MatchMode {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("MatchMode")
    }
}

/// The `invites` parameter's values, for the OpenAPI document.
pub struct InvitesBucket;

impl utoipa::PartialSchema for InvitesBucket {
    fn schema() -> RefOr<Schema> {
        string_enum(["lt100", "100-1000", "1000-10000", "gt10000"])
    }
}

impl ToSchema for InvitesBucket {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("InvitesBucket")
    }
}

/// `votes` and `offset`: ASCII digits, at most what a u64 holds.
pub struct Count;

impl utoipa::PartialSchema for Count {
    fn schema() -> RefOr<Schema> {
        whole_number(0, Some(u64::MAX))
    }
}

impl ToSchema for Count {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Count")
    }
}

/// `limit`: ASCII digits, any number of them, since it is clamped.
pub struct AnyCount;

impl utoipa::PartialSchema for AnyCount {
    fn schema() -> RefOr<Schema> {
        whole_number(0, None)
    }
}

impl ToSchema for AnyCount {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("AnyCount")
    }
}

/// `page`: 1 or more, at most what a u64 holds.
pub struct PageNumber;

impl utoipa::PartialSchema for PageNumber {
    fn schema() -> RefOr<Schema> {
        whole_number(1, Some(u64::MAX))
    }
}

impl ToSchema for PageNumber {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("PageNumber")
    }
}

/// An integer parameter, or the empty value that stands for leaving it out.
fn whole_number(minimum: u64, maximum: Option<u64>) -> RefOr<Schema> {
    let number = ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(minimum))
        .maximum(maximum);
    let empty = ObjectBuilder::new()
        .schema_type(Type::String)
        .max_length(Some(0));
    OneOfBuilder::new().item(number).item(empty).into()
}

/// One of `values`, or the empty value that stands for leaving the parameter out.
fn string_enum(values: impl IntoIterator<Item = &'static str>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.into_iter().chain([""])))
        .into()
}

/// The `offset` parameter's description on both surfaces: `about`, then the bound on a
/// filtered page's end ([`MAX_FILTERED_END`]) that `Search::parse` applies, 400 past it.
pub fn offset_description(about: &str, filter: &str) -> String {
    format!(
        "{about}. With {filter}, offset + limit (after limit's clamping; limit 0 excepted) is at \
         most {MAX_FILTERED_END}: a page ending past it is 400"
    )
}

/// The `sort` parameter's description: each order of the table with what it ranks by, then
/// `relevance`.
fn sort_description() -> String {
    let mut text = String::new();
    for sort in Sort::ALL {
        let about = match (sort == Sort::DEFAULT, sort.about()) {
            (true, "") => "the default".to_owned(),
            (true, about) => format!("the default: {about}"),
            (false, about) => about.to_owned(),
        };
        text.push_str(sort.name());
        if !about.is_empty() {
            text.push_str(&format!(" ({about})"));
        }
        text.push_str(", ");
    }
    text.push_str(&format!("{RELEVANCE} (with `q`: name equal to q, name starting with it, a word of the name starting with it, anywhere in the name, only in the description; then vote_count; without `q` it is {})", Sort::DEFAULT.name()));
    text
}

/// The bot named by `:id`, a listing UUID or a platform snowflake.
pub fn find_bot(state: &AppState, id: &str) -> Result<Arc<BotHandle>, ApiError> {
    state
        .directory
        .resolve(id)
        .ok_or_else(|| Code::NotFound.with(format!("no bot with id `{id}`")))
}

/// Search the directory.
///
/// Every parameter is optional; an empty value is the same as leaving it out, a parameter given
/// twice is 400, and unknown parameters are ignored. The aliases `query`, `tags` and `langs` of
/// the classic API are read only when their canonical name is not sent, so they are described
/// with it rather than listed. Featured bots come first, then the sort
/// order, descending, with ties by listing id ascending.
#[utoipa::path(
    get, path = "/bots", tag = "bots",
    params(
        ("q" = Option<String>, Query, max_length = 256, description = "Case-insensitive substring of the name or of the short description, at most 256 characters. Alias `query`, used when `q` is not sent"),
        ("category" = Option<String>, Query, description = "Comma-separated tag slugs, trimmed and lowercased; a bot matches when one of its tags is listed. Alias `tags`, used when `category` is not sent"),
        ("language" = Option<String>, Query, description = "Comma-separated ISO 639-1 codes, trimmed and lowercased; a bot matches when its language is listed (a bot without one never does). Alias `langs`, used when `language` is not sent"),
        ("invites" = inline(Option<InvitesBucket>), Query, description = "Server-count bucket: lt100 [0, 100), 100-1000 [100, 1000), 1000-10000 [1000, 10000), gt10000 [10000, ...); a count never posted is 0"),
        ("votes" = inline(Option<Count>), Query, description = "Keeps bots with vote_count at least this"),
        ("sort" = inline(Option<SortKey>), Query, description = sort_description()),
        ("match" = inline(Option<MatchMode>), Query, description = "substring (the default: `q` occurs as typed) or words (every whitespace-separated word of `q` occurs, in any order, in the name or the short description)"),
        ("limit" = inline(Option<AnyCount>), Query, description = "Bots per page, default 24; above 100 is 100; 0 gives no results but the true total"),
        ("offset" = inline(Option<Count>), Query, description = offset_description("Bots to skip, default 0; wins over page", "a filter (q, category, language, invites, votes)")),
        ("page" = inline(Option<PageNumber>), Query, description = "1 or more: offset = (page - 1) * limit"),
    ),
    responses(
        (status = 200, description = "A page of bots", body = BotList),
    )
)]
pub async fn search(
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = request.query_string();
    let now = state.clock.now();
    // Only answers that were 200 are kept, so a kept one needs no parsing: the same query
    // parses the same way, and the needle it names was read when it was answered.
    if let Some(page) = (state.directory.version_at(now))
        .and_then(|version| state.search_pages.get(query, &version))
    {
        return Ok(reply::kept_json(&page));
    }
    let search = Search::parse(query).map_err(|e| Code::BadRequest.with(e.0))?;
    if let Some(refused) = super::needle_cost::read(&state, &request, &search).await? {
        return Ok(refused);
    }
    let answer = state.directory.search_versioned(&search, now);
    let page = &answer.page;
    // The bytes `BotList`'s serializer writes, assembled from each bot's rendering.
    let mut body = Vec::with_capacity(
        96 + page
            .bots
            .iter()
            .map(|bot| bot.listing.rendered().len())
            .sum::<usize>(),
    );
    body.extend_from_slice(b"{\"results\":[");
    for (i, bot) in page.bots.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        bot.write_public(now, &mut body);
    }
    let mut digits = itoa::Buffer::new();
    for (key, value) in [
        (&b"],\"limit\":"[..], search.limit),
        (b",\"offset\":", search.offset),
        (b",\"count\":", page.bots.len() as u64),
        (b",\"total\":", page.total),
    ] {
        body.extend_from_slice(key);
        body.extend_from_slice(digits.format(value).as_bytes());
    }
    body.push(b'}');
    Ok(reply::keep_json(
        &state.search_pages,
        query,
        answer.version,
        body,
        &answer.etag(query),
    ))
}

/// One bot's public record.
#[utoipa::path(
    get, path = "/bots/{id}", tag = "bots",
    responses(
        (status = 200, description = "The bot", body = PublicBot),
    )
)]
pub async fn get_bot(
    state: web::Data<AppState>,
    PathBot(bot): PathBot,
) -> Result<HttpResponse, ApiError> {
    let view = bot.view();
    let now = state.clock.now();
    Ok(reply::tagged_json(
        view.public_json(now),
        &view.public_etag(now),
    ))
}
