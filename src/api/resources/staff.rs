//! The moderators' routes under `{base}/staff` (CONTRACT section 14): the queue of pending
//! listings, a listing's claim and decisions, certification, featuring (admins only) and vote
//! bans. Every route takes the staff guard ([`Staff`] or [`AdminStaff`]) first, so each
//! refuses in the order 401, 403, then 404 for the bot or profile, then 400 for the body and
//! 409 for a move the listing's status does not allow (the state machine in
//! `domain/listing.rs`, the actions' table in `domain/staff.rs`).

use std::sync::Arc;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::actors::registry::{SetVoteBan, StaffActOnBot};
use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::{Json, ManagedBot, PathProfile};
use crate::api::http::limits::Limit;
use crate::api::http::routes::{Route, Subject};
use crate::api::http::staff::{AdminStaff, Staff};
use crate::api::{http::reply, AppState};
use crate::domain::bot::{BotView, Claim, ListingStatus, PublicBot};
use crate::domain::ids::{BotId, ProfileId, Snowflake};
use crate::domain::staff::{DecisionBody, NewVoteBan, StaffAction, VoteBan};
use crate::domain::text::DecisionReason;
use crate::domain::time::Timestamp;

/// The 409 of a decision.
const WRONG_STATUS: &str = "the listing's status does not allow this decision (the message names the status and what it can become)";
/// The 403 of every staff route.
const NOT_STAFF: &str =
    "the token lacks the `staff` scope, or its profile is not `mod` or `admin` (now)";
const NOT_ADMIN: &str = "the token lacks the `staff` scope, or its profile is not `admin` (now)";
const BAD_REASON: &str = "the body is not `{\"reason\"}` with a reason of 1 to 500 characters";

/// Every staff route's rate limit (the audit log's too): a staff member's requests draw from
/// their profile's one bucket, the one all of a profile's tokens share on every limited route
/// (`limits::PROFILE_KIND`); a request without a live profile token, from its address's.
/// (A bot token, refused on every staff route, is counted apart from its `/bots` bucket: each
/// limit's kinds are its own.)
pub const STAFF_LIMIT: Limit = Limit::PerToken {
    token: "staff_bot",
    address: "staff_ip",
};

pub fn routes() -> Vec<Route> {
    let on_bot = |route: Route| {
        route
            .refuses(Code::Forbidden, NOT_STAFF)
            .about(Subject::Bot)
    };
    vec![
        Route::new(__path_queue, queue)
            .refuses(Code::BadRequest, "`cursor` or `limit` is not valid, or another parameter is given")
            .refuses(Code::Forbidden, NOT_STAFF),
        Route::new(__path_listings, listings)
            .refuses(Code::BadRequest, "`status` is missing or not `pending`, `approved`, `denied` or `delisted`, `cursor` or `limit` is not valid, or another parameter is given")
            .refuses(Code::Forbidden, NOT_STAFF),
        on_bot(Route::new(__path_listing, listing)),
        on_bot(Route::new(__path_claim, claim))
            .refuses(Code::Conflict, "the listing is not pending (the message names its status)"),
        on_bot(Route::new(__path_approve, approve)).refuses(Code::Conflict, WRONG_STATUS),
        on_bot(Route::new(__path_deny, deny))
            .refuses(Code::BadRequest, BAD_REASON)
            .refuses(Code::Conflict, WRONG_STATUS),
        on_bot(Route::new(__path_delist, delist))
            .refuses(Code::BadRequest, BAD_REASON)
            .refuses(Code::Conflict, WRONG_STATUS),
        on_bot(Route::new(__path_certify, certify)),
        on_bot(Route::new(__path_uncertify, uncertify)),
        Route::new(__path_feature, feature)
            .refuses(Code::Forbidden, NOT_ADMIN)
            .about(Subject::Bot),
        Route::new(__path_unfeature, unfeature)
            .refuses(Code::Forbidden, NOT_ADMIN)
            .about(Subject::Bot),
        Route::new(__path_vote_ban, vote_ban)
            .refuses(Code::BadRequest, "the body is not `{\"reason\", \"until\"}` with a reason of 1 to 500 characters and, when given, an RFC 3339 `until` in the future")
            .refuses(Code::Forbidden, NOT_STAFF)
            .about(Subject::Profile),
        Route::new(__path_lift_vote_ban, lift_vote_ban)
            .refuses(Code::Forbidden, NOT_STAFF)
            .refuses(Code::Conflict, "the profile is not banned from voting")
            .about(Subject::Profile),
    ]
    .into_iter()
    .map(|route| route.limited(STAFF_LIMIT))
    .collect()
}

/// A listing as staff see it.
#[derive(Serialize, ToSchema)]
pub struct StaffListing<'a> {
    #[schema(value_type = PublicBot)]
    pub bot: PublicBot<'a>,
    pub status: ListingStatus,
    /// Why the last denial or delisting was made; null when none
    #[schema(value_type = Option<DecisionReason>, required = true)]
    pub reason: Option<&'a DecisionReason>,
    /// Who on the staff is reviewing it, since when; null when nobody
    #[schema(required = true)]
    pub claim: Option<Claim>,
}

fn staff_listing<'a>(state: &AppState, view: &'a BotView) -> StaffListing<'a> {
    StaffListing {
        bot: view.public(state.clock.now()),
        status: view.listing.status,
        reason: view.listing.reason.as_ref(),
        claim: view.listing.claim,
    }
}

/// A page of the queue.
#[derive(Serialize, ToSchema)]
pub struct QueuePage<'a> {
    /// Oldest first (by `created_at`, then id)
    pub results: Vec<StaffListing<'a>>,
    /// The next page's `cursor`; null on the last page
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct QueueQuery {
    /// From a page's `next_cursor`: the milliseconds of a listing's creation, a dot, its UUID
    /// (`read_cursor`; schemathesis found the document allowing any string)
    #[serde(default)]
    #[param(
        pattern = r"^[+-]?[0-9]{1,18}\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    pub cursor: Option<String>,
    /// 1 to 100, default 25
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

/// Where a queue page starts: after the listing made at `created_at` with `id`.
fn read_cursor(cursor: &str) -> Result<(Timestamp, BotId), ApiError> {
    let refused = || Code::BadRequest.with("`cursor` is not a cursor of the queue".into());
    let (at, id) = cursor.split_once('.').ok_or_else(refused)?;
    let at = at.parse::<i64>().map_err(|_| refused())?;
    let id = BotId::parse(id).ok_or_else(refused)?;
    Ok((Timestamp::from_millis(at), id))
}

fn queue_key(view: &BotView) -> (Timestamp, BotId) {
    (view.listing.created_at, view.listing.id)
}

/// The moderation queue: the pending listings, oldest first, each with who claimed it.
#[utoipa::path(
    get, path = "/staff/queue", tag = "staff",
    params(QueueQuery),
    security(("profile_token" = [])),
    responses(
        (status = 200, description = "A page of pending listings", body = QueuePage),
    )
)]
pub async fn queue(
    _: Staff,
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = web::Query::<QueueQuery>::from_query(request.query_string())
        .map_err(|why| Code::BadRequest.with(format!("the query is not valid: {why}")))?
        .into_inner();
    let views = status_page(&state, ListingStatus::Pending, query.cursor, query.limit)?;
    Ok(reply::ok(&views.page(&state)))
}

/// One page of a status's ordered set: up to `limit` (1 to 100, default 25) listings after
/// `cursor`, and one more to know whether a next page exists.
struct StatusPage {
    views: Vec<Arc<BotView>>,
    limit: usize,
}

fn status_page(
    state: &AppState,
    status: ListingStatus,
    cursor: Option<String>,
    limit: Option<usize>,
) -> Result<StatusPage, ApiError> {
    let limit = limit.unwrap_or(25);
    if !(1..=100).contains(&limit) {
        return Err(Code::BadRequest.with(format!("`limit` must be 1 to 100, got {limit}")));
    }
    let after = cursor.as_deref().map(read_cursor).transpose()?;
    let views = state.directory.status_page(status, after, limit + 1);
    Ok(StatusPage { views, limit })
}

impl StatusPage {
    fn page<'a>(&'a self, state: &AppState) -> QueuePage<'a> {
        let shown = &self.views[..self.views.len().min(self.limit)];
        let next_cursor = (self.views.len() > self.limit).then(|| {
            let (at, id) = queue_key(&self.views[self.limit - 1]);
            format!("{}.{id}", at.millis())
        });
        QueuePage {
            results: shown
                .iter()
                .map(|view| staff_listing(state, view))
                .collect(),
            next_cursor,
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListingsQuery {
    /// Only listings in this status (required: each status is its own ordered list)
    pub status: ListingStatus,
    /// From a page's `next_cursor`: the milliseconds of a listing's creation, a dot, its UUID
    #[serde(default)]
    #[param(
        pattern = r"^[+-]?[0-9]{1,18}\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    pub cursor: Option<String>,
    /// 1 to 100, default 25
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

/// Every listing in one status, whatever it is (a denied or delisted one included, which no
/// public route shows): oldest first (by `created_at`, then id), cursor-paged like the queue.
/// A page reads that status's ordered set, so it costs the page, not the directory.
#[utoipa::path(
    get, path = "/staff/bots", tag = "staff",
    params(ListingsQuery),
    security(("profile_token" = [])),
    responses(
        (status = 200, description = "A page of listings in the status", body = QueuePage),
    )
)]
pub async fn listings(
    _: Staff,
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = web::Query::<ListingsQuery>::from_query(request.query_string())
        .map_err(|why| Code::BadRequest.with(format!("the query is not valid: {why}")))?
        .into_inner();
    let views = status_page(&state, query.status, query.cursor, query.limit)?;
    Ok(reply::ok(&views.page(&state)))
}

/// One listing as staff see it, whatever its status: its status, the reason of the last
/// decision and who claimed it.
#[utoipa::path(
    get, path = "/staff/bots/{id}", tag = "staff",
    security(("profile_token" = [])),
    responses((status = 200, description = "The listing", body = StaffListing))
)]
pub async fn listing(
    _: Staff,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    let view = bot.view();
    Ok(reply::ok(&staff_listing(&state, &view)))
}

/// Applies a staff member's action and answers with the listing as staff see it.
async fn act(
    state: &AppState,
    staff: &Staff,
    bot: &crate::actors::directory::BotHandle,
    action: StaffAction,
    reason: Option<DecisionReason>,
) -> Result<HttpResponse, ApiError> {
    let view = state
        .registry
        .send(StaffActOnBot {
            bot: bot.id,
            staff: staff.id(),
            action,
            reason,
        })
        .await??;
    Ok(reply::ok(&staff_listing(state, &view)))
}

/// Claim a pending listing for review (shown in the queue; a decision ends it; another staff
/// member may take it over).
#[utoipa::path(
    post, path = "/staff/bots/{id}/claim", tag = "staff",
    security(("profile_token" = [])),
    responses((status = 200, description = "Claimed", body = StaffListing))
)]
pub async fn claim(
    staff: Staff,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    act(&state, &staff, &bot, StaffAction::Claim, None).await
}

/// Approve a pending listing (or put a delisted one back): public from then on.
#[utoipa::path(
    post, path = "/staff/bots/{id}/approve", tag = "staff",
    security(("profile_token" = [])),
    responses((status = 200, description = "Approved", body = StaffListing))
)]
pub async fn approve(
    staff: Staff,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    act(&state, &staff, &bot, StaffAction::Approve, None).await
}

/// Deny a pending listing, saying why (shown to its owners, whose next edit sends it back).
#[utoipa::path(
    post, path = "/staff/bots/{id}/deny", tag = "staff",
    request_body = DecisionBody,
    security(("profile_token" = [])),
    responses((status = 200, description = "Denied", body = StaffListing))
)]
pub async fn deny(
    staff: Staff,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
    Json(body): Json<DecisionBody>,
) -> Result<HttpResponse, ApiError> {
    act(&state, &staff, &bot, StaffAction::Deny, Some(body.reason)).await
}

/// Delist an approved listing, saying why: off the directory, kept for its owners.
#[utoipa::path(
    post, path = "/staff/bots/{id}/delist", tag = "staff",
    request_body = DecisionBody,
    security(("profile_token" = [])),
    responses((status = 200, description = "Delisted", body = StaffListing))
)]
pub async fn delist(
    staff: Staff,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
    Json(body): Json<DecisionBody>,
) -> Result<HttpResponse, ApiError> {
    act(&state, &staff, &bot, StaffAction::Delist, Some(body.reason)).await
}

/// Mark the bot certified.
#[utoipa::path(
    post, path = "/staff/bots/{id}/certify", tag = "staff",
    security(("profile_token" = [])),
    responses((status = 200, description = "Certified", body = StaffListing))
)]
pub async fn certify(
    staff: Staff,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    act(&state, &staff, &bot, StaffAction::Certify, None).await
}

/// Take the bot's certification away.
#[utoipa::path(
    post, path = "/staff/bots/{id}/uncertify", tag = "staff",
    security(("profile_token" = [])),
    responses((status = 200, description = "No longer certified", body = StaffListing))
)]
pub async fn uncertify(
    staff: Staff,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    act(&state, &staff, &bot, StaffAction::Uncertify, None).await
}

/// Feature the bot (staff with `admin` only).
#[utoipa::path(
    post, path = "/staff/bots/{id}/feature", tag = "staff",
    security(("profile_token" = [])),
    responses((status = 200, description = "Featured", body = StaffListing))
)]
pub async fn feature(
    AdminStaff(staff): AdminStaff,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    act(&state, &staff, &bot, StaffAction::Feature, None).await
}

/// Stop featuring the bot (staff with `admin` only).
#[utoipa::path(
    post, path = "/staff/bots/{id}/unfeature", tag = "staff",
    security(("profile_token" = [])),
    responses((status = 200, description = "No longer featured", body = StaffListing))
)]
pub async fn unfeature(
    AdminStaff(staff): AdminStaff,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    act(&state, &staff, &bot, StaffAction::Unfeature, None).await
}

/// A profile's vote ban as staff see it.
#[derive(Serialize, ToSchema)]
pub struct VoteBanView<'a> {
    #[schema(value_type = String)]
    pub profile_id: ProfileId,
    #[schema(value_type = DecisionReason)]
    pub reason: &'a DecisionReason,
    /// When it ends; null: until lifted
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub until: Option<Timestamp>,
    /// The staff member who set it
    #[schema(value_type = String)]
    pub by: ProfileId,
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
}

/// Ban a profile from voting, until `until` (on the server's clock) or until lifted; a ban
/// already set is replaced. The profile's votes are refused with 403 `vote_banned`, through
/// its own token and through the admin API's ingest alike.
#[utoipa::path(
    post, path = "/staff/users/{id}/vote-ban", tag = "staff",
    request_body = NewVoteBan,
    security(("profile_token" = [])),
    responses((status = 200, description = "Banned from voting", body = VoteBanView))
)]
pub async fn vote_ban(
    staff: Staff,
    state: web::Data<AppState>,
    PathProfile(profile): PathProfile,
    Json(body): Json<NewVoteBan>,
) -> Result<HttpResponse, ApiError> {
    let now = state.clock.now();
    if body.until.is_some_and(|until| until <= now) {
        return Err(Code::BadRequest.with("`until` must be in the future".into()));
    }
    let ban = VoteBan {
        reason: body.reason,
        until: body.until,
        by: staff.id(),
        at: now,
    };
    state
        .registry
        .send(SetVoteBan {
            profile,
            staff: staff.id(),
            ban: Some(ban.clone()),
        })
        .await??;
    Ok(reply::ok(&VoteBanView {
        profile_id: profile,
        reason: &ban.reason,
        until: ban.until,
        by: ban.by,
        at: ban.at,
    }))
}

/// Lift a profile's vote ban: it may vote again at once.
#[utoipa::path(
    delete, path = "/staff/users/{id}/vote-ban", tag = "staff",
    security(("profile_token" = [])),
    responses((status = 204, description = "Lifted"))
)]
pub async fn lift_vote_ban(
    staff: Staff,
    state: web::Data<AppState>,
    PathProfile(profile): PathProfile,
) -> Result<HttpResponse, ApiError> {
    state
        .registry
        .send(SetVoteBan {
            profile,
            staff: staff.id(),
            ban: None,
        })
        .await??;
    Ok(HttpResponse::NoContent().finish())
}

/// 403 `vote_banned` when the voter with `platform_id` is a profile banned from voting now:
/// checked by both ways a vote comes in (the profile's own token and the admin API's ingest),
/// so a ban cannot be gone round through the operator's site.
pub fn refuse_banned_voter(state: &AppState, platform_id: Snowflake) -> Result<(), ApiError> {
    let Some(profile) = state.directory.profile_by_platform_id(platform_id) else {
        return Ok(());
    };
    let now = state.clock.now();
    match &profile.vote_ban {
        Some(ban) if ban.holds_at(now) => Err(Code::VoteBanned.with(match ban.until {
            Some(until) => format!("this profile is banned from voting until {until}"),
            None => "this profile is banned from voting until staff lift the ban".into(),
        })),
        _ => Ok(()),
    }
}
