//! The project API (CONTRACT section 12): what the 2026 client libraries (@top-gg/sdk 4.0.0,
//! topggpy 2.0.0) call, under the base path: `/projects/@me` and below, about the bot whose
//! token comes as `Authorization: Bearer <token>`, answering errors as RFC 9457 problem
//! details (`api/http/problem.rs`); and the public list of a bot's announcements,
//! `GET /bots/{id}/announcements`.
//!
//! A project is a listed bot: its `id` is the bot's platform snowflake, and every id here is
//! numeric text (topggpy converts each with `int()`). Every rule is the one the rest of the API
//! keeps: a metrics post is a stats post, a vote's answer reads the same published checks as
//! `GET /bots/{id}/check`, an edit goes through the registry like the admin API's.

use std::sync::Arc;

use actix_web::http::header::AUTHORIZATION;
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::actors::bot::{
    PostAnnouncement, PostMetricsBatch, PostStats, ReadProject, SetCommands, VotesFrom,
    VotesInOrder,
};
use crate::actors::directory::BotHandle;
use crate::actors::registry::BotUpdatesItself;
use crate::actors::Answer;
use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::{AnyJson, PathBot};
use crate::api::http::limits::RateKey;
use crate::api::http::problem::{Problem, ProblemDetails};
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::{reply, AppState};
use crate::domain::bot::BotPatch;
use crate::domain::ids::Snowflake;
use crate::domain::project::{self, Announcement, AnnouncementCategory, Commands};
use crate::domain::stats::StatsUpdate;
use crate::domain::text::{LongDescription, ShortDescription};
use crate::domain::time::Timestamp;
use crate::domain::votes::vote_window;

/// Votes per page of `GET /projects/@me/votes`.
pub const VOTES_PER_PAGE: usize = 100;

/// The project API's own rate limit: per token's bot (a `Bearer` token counts as its bot),
/// else per client address.
const PROJECT_LIMIT: Limit = Limit::PerToken {
    token: "project",
    address: "projects_ip",
};

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    let project = [
        Route::new(__path_get_self, get_self),
        Route::new(__path_edit_self, edit_self),
        Route::new(__path_list_votes, list_votes),
        Route::new(__path_get_vote, get_vote),
        Route::new(__path_post_metrics, post_metrics),
        Route::new(__path_post_metrics_batch, post_metrics_batch),
        Route::new(__path_put_commands, put_commands),
        Route::new(__path_post_commands, post_commands),
        Route::new(__path_get_commands, get_commands),
        Route::new(__path_post_announcement, post_announcement),
        Route::new(__path_own_announcements, own_announcements),
    ]
    .into_iter()
    .map(|route| route.project().limited(PROJECT_LIMIT));
    let public = Route::new(__path_bot_announcements, bot_announcements)
        .about(Subject::Bot)
        .limited(Limit::PerBot);
    project.chain([public]).collect()
}

/// The bot whose API token the request carries as `Authorization: Bearer <token>`.
pub struct ProjectBot(pub Arc<BotHandle>);

fn project_bot(state: &AppState, request: &HttpRequest) -> Result<ProjectBot, Problem> {
    let unauthorized = |why: &str| Problem(Code::Unauthorized.with(why.into()));
    let value = request
        .headers()
        .get(AUTHORIZATION)
        .ok_or_else(|| {
            unauthorized("missing Authorization header; send `Bearer <the bot's API token>`")
        })?
        .as_bytes();
    let token = value
        .get(..7)
        .filter(|prefix| prefix.eq_ignore_ascii_case(b"bearer "))
        .map(|_| &value[7..])
        .ok_or_else(|| {
            unauthorized("the project API takes `Authorization: Bearer <the bot's API token>`")
        })?;
    // The rate limit counted this request by its token's bot, if the token is one: it hashed
    // and looked up the value after an exact `Bearer ` (see `Limited::key`), which is this very
    // token when the prefix is written so, a few microseconds ago; its answer is taken rather
    // than a second hash and lookup. Another spelling of the prefix is looked up here.
    let counted = match request.extensions().get::<RateKey>() {
        Some(RateKey::Bot(_, id)) if value.starts_with(b"Bearer ") => Some(*id),
        _ => None,
    };
    let bot = counted
        .or_else(|| state.directory.authenticate(token))
        .and_then(|id| state.directory.get(id))
        .ok_or_else(|| unauthorized("unknown API token"))?;
    Ok(ProjectBot(bot))
}

/// The request's bot, or its problem.
fn authorised(state: &AppState, request: &HttpRequest) -> Result<Arc<BotHandle>, Problem> {
    project_bot(state, request).map(|ProjectBot(bot)| bot)
}

/// A JSON body, or its problem (read after the token is checked, so 401 comes first).
fn body(body: Result<AnyJson, ApiError>) -> Result<Value, Problem> {
    Ok(body?.0)
}

fn no_content() -> HttpResponse {
    HttpResponse::NoContent().finish()
}

/// A project: the bot as the 2026 clients read it.
#[derive(Serialize, ToSchema)]
pub struct Project<'a> {
    /// The bot's platform snowflake
    #[schema(value_type = Snowflake)]
    pub id: Snowflake,
    #[schema(value_type = String)]
    pub name: &'a str,
    /// Always `bot`
    #[serde(rename = "type")]
    #[schema(example = "bot")]
    pub kind: &'static str,
    /// Always `discord`
    #[schema(example = "discord")]
    pub platform: &'static str,
    /// The bot's short description
    #[schema(value_type = String)]
    pub headline: &'a str,
    #[schema(value_type = Vec<String>)]
    pub tags: &'a crate::domain::text::Tags,
    /// Votes this UTC month (what ranks the bot)
    pub votes: u64,
    /// Votes ever
    pub votes_total: u64,
    /// The average rating of the bot's reviews, out of 5 (what topggpy 2.0.0 documents), as
    /// `GET /bots/{id}/reviews` gives it; 0 without reviews (the clients read a number)
    pub review_score: f64,
    /// How many reviews the bot has
    pub review_count: u64,
}

/// The token's bot as a project.
#[utoipa::path(
    get, path = "/projects/@me", tag = "projects",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The token's bot", body = Project),
        (status = 401, description = "No `Bearer` token, or an unknown one", body = ProblemDetails, content_type = "application/problem+json"),
    )
)]
pub async fn get_self(
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    // The review figures are the view's: published, like the rest of it, once durable.
    let view = bot.view();
    let reviews = view.reviews;
    let listing = &view.listing;
    Ok(reply::ok(&Project {
        id: listing.platform_id,
        name: listing.name.as_str(),
        kind: "bot",
        platform: "discord",
        headline: listing.short_description.as_str(),
        tags: &listing.tags,
        votes: view.monthly.at(state.clock.now()),
        votes_total: view.vote_count,
        review_score: reviews.average().unwrap_or(0.0),
        review_count: reviews.count,
    }))
}

/// Locale-keyed texts, as the 2026 clients send them (`{"en": "..."}`).
type Localised = std::collections::BTreeMap<String, String>;

/// The body of `PATCH /projects/@me`: `headline` (the short description) and `page_content`
/// (Node) or `content` (Python), the long description, each keyed by locale. The document
/// says it with [`ProjectPatchDoc`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectPatch {
    #[serde(default)]
    pub headline: Option<Localised>,
    #[serde(default)]
    pub page_content: Option<Localised>,
    /// topggpy 2.0.0's name for `page_content`
    #[serde(default)]
    pub content: Option<Localised>,
}

/// What the document says of [`ProjectPatch`], every rule [`edit_self`] and [`one_locale`]
/// apply, so that data made from the document gets through (schemathesis' data was mostly
/// refused while the fields were bare objects): at least one field not `null`; each a map of
/// locale to text with at least one locale, whose kept text (`en`, else the only one) is a
/// short or long description; `content` only when `page_content` is absent or `null` (it is
/// ignored otherwise, so then any map of texts).
pub struct ProjectPatchDoc;

impl utoipa::PartialSchema for ProjectPatchDoc {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{
            AllOfBuilder, AnyOfBuilder, ObjectBuilder, OneOfBuilder, Schema, Type,
        };
        use utoipa::openapi::Ref;
        let text = || ObjectBuilder::new().schema_type(Type::String);
        let texts = || ObjectBuilder::new().additional_properties(Some(text()));
        // One locale's text is kept: `en` when given, else the only locale there is.
        let localised = |kept: &str| {
            let kept = || Ref::from_schema_name(kept);
            let english = ObjectBuilder::new().required("en").property("en", kept());
            let only = ObjectBuilder::new()
                .max_properties(Some(1))
                .additional_properties(Some(kept()));
            AllOfBuilder::new()
                .item(texts().min_properties(Some(1)))
                .item(AnyOfBuilder::new().item(english).item(only))
        };
        let or_null = |schema: Schema| {
            OneOfBuilder::new()
                .item(ObjectBuilder::new().schema_type(Type::Null))
                .item(schema)
        };
        let fields = ObjectBuilder::new()
            .description(Some(
                "At least one of `headline`, `page_content` and `content` not null; each keyed \
                 by locale (`{\"en\": \"...\"}`): botlist keeps one language per bot, `en` when \
                 given, else the only locale sent. `content` (topggpy 2.0.0's name for \
                 `page_content`) is ignored when `page_content` is given.",
            ))
            .property(
                "headline",
                or_null(localised("ShortDescription").build().into()),
            )
            .property(
                "page_content",
                or_null(localised("LongDescription").build().into()),
            )
            .property("content", or_null(texts().build().into()))
            .additional_properties(Some(
                utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
            ));
        let given = |field: &str| {
            ObjectBuilder::new()
                .required(field)
                .property(field, ObjectBuilder::new())
        };
        let one_given = AnyOfBuilder::new()
            .item(given("headline"))
            .item(given("page_content"))
            .item(given("content"));
        let content_read = ObjectBuilder::new().property(
            "content",
            or_null(localised("LongDescription").build().into()),
        );
        let content_when_read = AnyOfBuilder::new()
            .item(given("page_content"))
            .item(content_read);
        AllOfBuilder::new()
            .item(fields)
            .item(one_given)
            .item(content_when_read)
            .into()
    }
}

impl ToSchema for ProjectPatchDoc {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("ProjectPatch")
    }
}

/// The text to keep of a locale-keyed map: botlist keeps one language per bot, so English when
/// it is given, else the only locale given.
fn one_locale(field: &str, texts: &Localised) -> Result<String, String> {
    if let Some(english) = texts.get("en") {
        return Ok(english.clone());
    }
    match texts.len() {
        1 => Ok(texts.values().next().cloned().unwrap_or_default()),
        0 => Err(format!("{field} names no locale")),
        _ => Err(format!(
            "{field}: botlist keeps one language per bot; send `en`, or a single locale"
        )),
    }
}

/// Edit the token's bot's headline and page content.
#[utoipa::path(
    patch, path = "/projects/@me", tag = "projects",
    security(("bearer" = [])),
    request_body = ProjectPatchDoc,
    responses(
        (status = 204, description = "Stored"),
        (status = 400, description = "Neither field, a field in more than one locale, or a text out of bounds", body = ProblemDetails, content_type = "application/problem+json"),
    )
)]
pub async fn edit_self(
    state: web::Data<AppState>,
    request: HttpRequest,
    sent: Result<AnyJson, ApiError>,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    let bad = |why: String| Problem(Code::BadRequest.with(why));
    let patch: ProjectPatch =
        serde_json::from_value(body(sent)?).map_err(|e| bad(e.to_string()))?;
    let mut edit = BotPatch::default();
    if let Some(headline) = &patch.headline {
        let text = one_locale("headline", headline).map_err(bad)?;
        edit.short_description =
            Some(ShortDescription::parse(text).map_err(|why| bad(format!("headline {why}")))?);
    }
    if let Some(content) = patch.page_content.as_ref().or(patch.content.as_ref()) {
        let text = one_locale("page_content", content).map_err(bad)?;
        edit.long_description = crate::domain::patch::Patch::Set(
            LongDescription::parse(text).map_err(|why| bad(format!("page_content {why}")))?,
        );
    }
    if edit.short_description.is_none() && patch.page_content.is_none() && patch.content.is_none() {
        return Err(bad("send headline, page_content or both".into()));
    }
    state
        .registry
        .send(BotUpdatesItself(bot.id, edit))
        .await??;
    Ok(no_content())
}

/// One vote, as the 2026 clients read it.
#[derive(Serialize, ToSchema)]
pub struct ProjectVote {
    /// The voter's platform snowflake
    #[schema(value_type = Snowflake)]
    pub user_id: Snowflake,
    /// The voter's platform snowflake (the same)
    #[schema(value_type = Snowflake)]
    pub platform_id: Snowflake,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
    /// What the vote counted: the weekend multiplier when it was taken, else 1
    pub weight: u32,
}

/// A page of votes.
#[derive(Serialize, ToSchema)]
pub struct VotesPage {
    pub data: Vec<ProjectVote>,
    /// Pass as `cursor` for the next page; the empty string on the last page
    pub cursor: String,
}

/// The value of query parameter `name`, decoded; `None` when absent.
fn query_value(request: &HttpRequest, name: &str) -> Result<Option<String>, Problem> {
    let mut found = None;
    for pair in crate::domain::query::each_pair(request.query_string()) {
        let (key, value) = pair.map_err(|e| Problem(Code::BadRequest.with(e.0)))?;
        if key == name {
            if found.is_some() {
                return Err(Problem(
                    Code::BadRequest.with(format!("`{name}` is given more than once")),
                ));
            }
            found = Some(value.into_owned());
        }
    }
    Ok(found)
}

/// The token's bot's votes in the order they were taken, from `startDate` (an ISO 8601 time,
/// with or without an offset: UTC) or from a `cursor` a page gave, 100 a page.
#[utoipa::path(
    get, path = "/projects/@me/votes", tag = "projects",
    security(("bearer" = [])),
    params(
        ("startDate" = Option<String>, Query, description = "The first page: votes taken at or after this time"),
        ("cursor" = Option<String>, Query, description = "A later page: the `cursor` of the page before (the empty string: no more)"),
    ),
    responses(
        (status = 200, description = "A page of votes, oldest first", body = VotesPage),
        (status = 400, description = "Neither startDate nor cursor, or one that cannot be read", body = ProblemDetails, content_type = "application/problem+json"),
    )
)]
pub async fn list_votes(
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    let bad = |why: String| Problem(Code::BadRequest.with(why));
    let from = match (
        query_value(&request, "startDate")?,
        query_value(&request, "cursor")?,
    ) {
        (Some(start), None) => {
            // A `+` of an offset sent unencoded reads as a space.
            let start = start.replace(' ', "+");
            VotesFrom::Since(
                project::parse_time(&start).map_err(|why| bad(format!("startDate: {why}")))?,
            )
        }
        (None, Some(cursor)) if cursor.is_empty() => {
            // Past the last page: the clients stop at an empty cursor, or ask once more.
            return Ok(reply::ok(&VotesPage {
                data: Vec::new(),
                cursor: String::new(),
            }));
        }
        (None, Some(cursor)) => VotesFrom::Position(
            cursor
                .parse()
                .map_err(|_| bad(format!("cursor `{cursor}` is not one this API gave")))?,
        ),
        (Some(_), Some(_)) => return Err(bad("send startDate or cursor, not both".into())),
        (None, None) => return Err(bad("startDate or cursor is required".into())),
    };
    let (entries, next) = bot
        .ask(VotesInOrder {
            from,
            limit: VOTES_PER_PAGE,
        })
        .await??;
    let weekend = &state.directory.weekend;
    let data = entries
        .iter()
        .map(|entry| ProjectVote {
            user_id: entry.voter.id,
            platform_id: entry.voter.id,
            created_at: entry.voted_at,
            expires_at: entry.expires_at(),
            weight: weekend.weight_at(entry.voted_at),
        })
        .collect();
    Ok(reply::ok(&VotesPage {
        data,
        cursor: next.map(|n| n.to_string()).unwrap_or_default(),
    }))
}

/// A user's latest vote, as the 2026 clients read it.
#[derive(Serialize, ToSchema)]
pub struct PartialVote {
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
    pub weight: u32,
}

/// A user's vote for the token's bot in the last 12 hours; 404 when there is none.
#[utoipa::path(
    get, path = "/projects/@me/votes/{user_id}", tag = "projects",
    security(("bearer" = [])),
    params(
        ("user_id" = Snowflake, Path, description = "The user's platform snowflake (for either source: a profile is known by its linked platform id)"),
        ("source" = inline(Option<VoteSourceParam>), Query, description = "`discord` (default) or `topgg`"),
    ),
    responses(
        (status = 200, description = "The vote", body = PartialVote),
        (status = 400, description = "user_id not a snowflake, or source not `discord` or `topgg`", body = ProblemDetails, content_type = "application/problem+json"),
        (status = 404, description = "No vote of this user in the last 12 hours", body = ProblemDetails, content_type = "application/problem+json"),
    )
)]
pub async fn get_vote(
    state: web::Data<AppState>,
    request: HttpRequest,
    user: web::Path<String>,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    let bad = |why: String| Problem(Code::BadRequest.with(why));
    match query_value(&request, "source")?.as_deref() {
        None | Some("discord" | "topgg") => {}
        Some(other) => {
            return Err(bad(format!(
                "source must be `discord` or `topgg`, got `{other}`"
            )))
        }
    }
    let user = Snowflake::parse(&user).ok_or_else(|| {
        bad(format!(
            "user_id must be a snowflake (1 to 20 digits, no leading zero), got `{user}`"
        ))
    })?;
    // The published checks hold durable votes only, as `GET /bots/{id}/check` reads them.
    let voted_at = bot
        .view
        .load()
        .checks
        .active_since(user, state.clock.now())
        .ok_or_else(|| {
            Problem(
                Code::NotFound
                    .with("this user has not voted for this bot in the last 12 hours".into()),
            )
        })?;
    Ok(reply::ok(&PartialVote {
        created_at: voted_at,
        expires_at: voted_at.plus(vote_window()),
        weight: state.directory.weekend.weight_at(voted_at),
    }))
}

/// Post the token's bot's metrics: its server count (a stats post).
#[utoipa::path(
    patch, path = "/projects/@me/metrics", tag = "projects",
    security(("bearer" = [])),
    request_body(content = inline(MetricsDoc), description = "`{\"server_count\": N, \"shard_count\": M}`; server_count required, shard_count 1 to 10000 and not kept"),
    responses(
        (status = 204, description = "Stored"),
        (status = 400, description = "No server_count, a count out of range, or metrics of another kind of project", body = ProblemDetails, content_type = "application/problem+json"),
    )
)]
pub async fn post_metrics(
    state: web::Data<AppState>,
    request: HttpRequest,
    sent: Result<AnyJson, ApiError>,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    let count =
        project::parse_metrics(&body(sent)?).map_err(|why| Problem(Code::BadRequest.with(why)))?;
    let (answer, answered) = Answer::pair();
    bot.tell(PostStats(StatsUpdate::Whole(count), answer))?;
    answered.wait().await?;
    crate::telemetry::stats_posted();
    Ok(no_content())
}

/// Post up to 100 timestamped metrics at once: applied in time order into the growth history
/// (`GET /bots/{id}/stats/history`); an entry no older than the bot's last count becomes its
/// count.
#[utoipa::path(
    post, path = "/projects/@me/metrics/batch", tag = "projects",
    security(("bearer" = [])),
    request_body(content = inline(MetricsBatchDoc), description = "The entries as a bare array (topggpy 2) or as `{\"data\": [...]}` (@top-gg/sdk 4); 1 to 100 entries, each `{\"timestamp\", \"metrics\"}`. A timestamp without an offset is UTC, none (or null) is now, and none may be more than 60 seconds ahead of the server's clock (a rule a schema cannot state)"),
    responses(
        (status = 204, description = "Stored, all or none"),
        (status = 400, description = "No entries or more than 100, a time that cannot be read or is in the future, or an entry's metrics", body = ProblemDetails, content_type = "application/problem+json"),
    )
)]
pub async fn post_metrics_batch(
    state: web::Data<AppState>,
    request: HttpRequest,
    sent: Result<AnyJson, ApiError>,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    let entries = project::parse_batch(&body(sent)?, state.clock.now())
        .map_err(|why| Problem(Code::BadRequest.with(why)))?;
    let (answer, answered) = Answer::pair();
    bot.tell(PostMetricsBatch(entries, answer))?;
    answered.wait().await?;
    crate::telemetry::stats_posted();
    Ok(no_content())
}

async fn set_commands(
    state: web::Data<AppState>,
    request: HttpRequest,
    sent: Result<AnyJson, ApiError>,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    let commands =
        Commands::parse(&body(sent)?).map_err(|why| Problem(Code::BadRequest.with(why)))?;
    let (answer, answered) = Answer::pair();
    bot.tell(SetCommands(commands, answer))?;
    answered.wait().await?;
    Ok(no_content())
}

/// Replace the token's bot's application commands (@top-gg/sdk 4.0.0 sends PUT).
#[utoipa::path(
    put, path = "/projects/@me/commands", tag = "projects",
    security(("bearer" = [])),
    request_body(content = inline(Vec<CommandDoc>), description = "Discord's application commands, raw: an array of objects, each with a `name` of 1 to 32 characters; at most 300"),
    responses(
        (status = 204, description = "Stored"),
        (status = 400, description = "Not an array of named objects", body = ProblemDetails, content_type = "application/problem+json"),
    )
)]
pub async fn put_commands(
    state: web::Data<AppState>,
    request: HttpRequest,
    sent: Result<AnyJson, ApiError>,
) -> Result<HttpResponse, Problem> {
    set_commands(state, request, sent).await
}

/// The same as `PUT` (topggpy 2.0.0 sends POST).
#[utoipa::path(
    post, path = "/projects/@me/commands", tag = "projects",
    security(("bearer" = [])),
    request_body(content = inline(Vec<CommandDoc>), description = "As for PUT"),
    responses(
        (status = 204, description = "Stored"),
        (status = 400, description = "Not an array of named objects", body = ProblemDetails, content_type = "application/problem+json"),
    )
)]
pub async fn post_commands(
    state: web::Data<AppState>,
    request: HttpRequest,
    sent: Result<AnyJson, ApiError>,
) -> Result<HttpResponse, Problem> {
    set_commands(state, request, sent).await
}

/// The token's bot's commands as last stored (`[]` before any).
#[utoipa::path(
    get, path = "/projects/@me/commands", tag = "projects",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The commands as sent", body = Vec<Object>),
    )
)]
pub async fn get_commands(
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    let project = bot.ask(ReadProject).await??;
    let json = project
        .commands
        .as_ref()
        .map_or("[]".to_owned(), |c| c.json().to_owned());
    Ok(HttpResponse::Ok()
        .content_type("application/json; charset=utf-8")
        .body(json))
}

/// An announcement, as every route shows it.
#[derive(Serialize, ToSchema)]
pub struct AnnouncementBody<'a> {
    #[schema(value_type = String)]
    pub title: &'a str,
    #[schema(value_type = String)]
    pub content: &'a str,
    pub category: AnnouncementCategory,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

impl<'a> From<&'a Announcement> for AnnouncementBody<'a> {
    fn from(a: &'a Announcement) -> Self {
        Self {
            title: &a.title,
            content: &a.content,
            category: a.category,
            created_at: a.created_at,
        }
    }
}

/// What the document says of `source` (the handler reads the raw text and answers 400 with the
/// values it takes).
#[derive(ToSchema)]
#[allow(dead_code)] // a schema only
#[schema(rename_all = "lowercase")]
pub enum VoteSourceParam {
    Discord,
    Topgg,
}

/// What the document says of a metrics body: the handler reads it as raw JSON, so that a
/// missing field is a problem naming it. Any other field is refused (`project::parse_metrics`:
/// members or players are another kind of project's), hence `deny_unknown_fields`, which the
/// document shows as `additionalProperties: false`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // a schema only
pub struct MetricsDoc {
    #[schema(minimum = 0, maximum = 9007199254740991_u64)]
    server_count: u64,
    #[schema(minimum = 1, maximum = 10000)]
    shard_count: Option<u32>,
}

/// What the document says of one entry of a metrics batch (`project::parse_batch`): other
/// fields of an entry are ignored.
#[derive(ToSchema)]
#[allow(dead_code)] // a schema only
pub struct MetricsEntryDoc {
    /// When the count was taken: RFC 3339, or without an offset (read as UTC); left out or
    /// null is now; at most 60 seconds ahead of the server's clock
    #[schema(value_type = Option<String>, format = DateTime)]
    timestamp: Option<String>,
    #[schema(inline)]
    metrics: MetricsDoc,
}

/// What the document says of a metrics batch: the two shapes `project::parse_batch` reads,
/// a bare array of 1 to [`project::MAX_BATCH`] entries (topggpy 2) or an object whose `data`
/// is one (@top-gg/sdk 4; its other fields are ignored).
pub struct MetricsBatchDoc;

impl utoipa::PartialSchema for MetricsBatchDoc {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Type};
        let entries = || {
            ArrayBuilder::new()
                .items(<MetricsEntryDoc as utoipa::PartialSchema>::schema())
                .min_items(Some(1))
                .max_items(Some(project::MAX_BATCH))
        };
        let wrapped = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("data", entries())
            .required("data");
        OneOfBuilder::new().item(entries()).item(wrapped).into()
    }
}

impl ToSchema for MetricsBatchDoc {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("MetricsBatch")
    }
}

/// What the document says of one application command: a `name` of 1 to 32 characters; every
/// other field is kept as sent.
#[derive(ToSchema)]
#[allow(dead_code)] // a schema only
pub struct CommandDoc {
    #[schema(min_length = 1, max_length = 32)]
    name: String,
}

/// The body of `POST /projects/@me/announcements`.
#[derive(Deserialize, ToSchema)]
pub struct NewAnnouncement {
    /// 3 to 100 characters
    #[schema(min_length = 3, max_length = 100)]
    pub title: String,
    /// 10 to 2000 characters
    #[schema(min_length = 10, max_length = 2000)]
    pub content: String,
    /// `announcement` when left out
    #[serde(default)]
    pub category: Option<AnnouncementCategory>,
}

/// Post an announcement for the token's bot: one per 4 hours.
#[utoipa::path(
    post, path = "/projects/@me/announcements", tag = "projects",
    security(("bearer" = [])),
    request_body = NewAnnouncement,
    responses(
        (status = 201, description = "Posted", body = AnnouncementBody),
        (status = 400, description = "A title or content out of bounds, or an unknown category", body = ProblemDetails, content_type = "application/problem+json"),
        (status = 429, description = "The bot's last announcement is less than 4 hours old; `Retry-After` says when the next is possible", body = ProblemDetails, content_type = "application/problem+json"),
    )
)]
pub async fn post_announcement(
    state: web::Data<AppState>,
    request: HttpRequest,
    sent: Result<AnyJson, ApiError>,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    let new: NewAnnouncement = serde_json::from_value(body(sent)?)
        .map_err(|e| Problem(Code::BadRequest.with(e.to_string())))?;
    let (answer, answered) = Answer::pair();
    bot.tell(PostAnnouncement {
        title: new.title,
        content: new.content,
        category: new.category.unwrap_or_default(),
        answer,
    })?;
    let announcement = answered.wait().await?;
    Ok(reply::created(&AnnouncementBody::from(&announcement)))
}

/// A list of announcements, newest first.
#[derive(Serialize, ToSchema)]
pub struct Announcements<'a> {
    pub data: Vec<AnnouncementBody<'a>>,
}

fn announcements(project: &project::ProjectState) -> HttpResponse {
    reply::ok(&Announcements {
        data: project
            .newest_announcements()
            .map(AnnouncementBody::from)
            .collect(),
    })
}

/// The token's bot's announcements, newest first (the last 100).
#[utoipa::path(
    get, path = "/projects/@me/announcements", tag = "projects",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Newest first", body = Announcements),
    )
)]
pub async fn own_announcements(
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, Problem> {
    let bot = authorised(&state, &request)?;
    let project = bot.ask(ReadProject).await??;
    Ok(announcements(&project))
}

/// A bot's announcements, newest first (the last 100): public.
#[utoipa::path(
    get, path = "/bots/{id}/announcements", tag = "bots",
    responses(
        (status = 200, description = "Newest first", body = Announcements),
    )
)]
pub async fn bot_announcements(PathBot(bot): PathBot) -> Result<HttpResponse, ApiError> {
    let project = bot.ask(ReadProject).await??;
    Ok(announcements(&project))
}
