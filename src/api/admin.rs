//! The admin API: how profiles, bots and votes enter the directory.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::bots::find_bot;
use super::error::{ApiError, Code, ErrorBody};
use super::extract::{json_body, Admin};
use super::users::not_found as profile_not_found;
use super::{reply, AppState};
use crate::actors::bot::{RecentDeliveries, RecordVote, Redeliver, SendTest};
use crate::actors::registry::{
    CreateBot, CreateProfile, DeleteProfile, DelistBot, RotateToken, UpdateBot, UpdateProfile,
};
use crate::domain::bot::{BotPatch, NewBot, PublicBot};
use crate::domain::ids::{ProfileId, Snowflake};
use crate::domain::profile::{NewProfile, ProfilePatch, PublicProfile};
use crate::domain::text::{HttpUrl, VoterName};
use crate::domain::time::Timestamp;
use crate::domain::votes::Voter;
use crate::domain::webhook::{Delivery, DeliveryState, Event};
use crate::webhooks::guard;
use actix_web::http::StatusCode;
use uuid::Uuid;

#[derive(Serialize, ToSchema)]
pub struct CreatedBot<'a> {
    #[schema(value_type = PublicBot)]
    pub bot: PublicBot<'a>,
    /// The bot's API token, shown this once
    pub token: &'a str,
}

#[derive(Serialize, ToSchema)]
pub struct NewToken<'a> {
    /// The new API token, shown this once; the old one no longer works
    pub token: &'a str,
}

/// The body of a vote ingest.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VotePost {
    pub user_id: Snowflake,
    #[schema(value_type = crate::domain::text::PlatformUsername)]
    pub username: VoterName,
    #[serde(default)]
    pub avatar: Option<HttpUrl>,
}

#[derive(Serialize, ToSchema)]
pub struct VoteCounts {
    pub vote_count: u64,
    pub monthly_vote_count: u64,
}

/// The SSRF guard on a webhook URL being set.
async fn check_webhook_url(state: &AppState, url: Option<&HttpUrl>) -> Result<(), ApiError> {
    match url {
        Some(url) => guard::check_url(url.as_str(), state.allow_private_webhooks)
            .await
            .map_err(|why| Code::BadRequest.with(format!("`webhook_url` {why}"))),
        None => Ok(()),
    }
}

fn profile_id(raw: &str) -> Result<ProfileId, ApiError> {
    ProfileId::parse(raw).ok_or_else(|| profile_not_found(raw))
}

/// List a profile.
#[utoipa::path(
    post, path = "/admin/users", tag = "admin",
    request_body = NewProfile,
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Created", body = PublicProfile),
        (status = 400, description = "`bad_request`: the body is not a JSON object, a field is missing or invalid, or a field is unknown", body = ErrorBody),
        (status = 409, description = "`conflict`: the username or the platform id belongs to another profile", body = ErrorBody),
    )
)]
pub async fn create_user(
    _: Admin,
    state: web::Data<AppState>,
    request: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let new: NewProfile = json_body(&request, body).await?;
    let profile = state.registry.send(CreateProfile(new)).await??;
    Ok(reply::created(&profile.public()))
}

/// Change a profile: fields left out are kept, `null` clears a field that may be null.
#[utoipa::path(
    patch, path = "/admin/users/{id}", tag = "admin",
    params(("id" = String, Path, description = "Profile UUID (any case)")),
    request_body = ProfilePatch,
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "Updated", body = PublicProfile),
        (status = 400, description = "`bad_request`: the body is not a JSON object, a field is missing or invalid, or a field is unknown", body = ErrorBody),
        (status = 409, description = "`conflict`: the username or the platform id belongs to another profile", body = ErrorBody),
    )
)]
pub async fn update_user(
    _: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
    request: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let id = profile_id(&id)?;
    let patch: ProfilePatch = json_body(&request, body).await?;
    let profile = state.registry.send(UpdateProfile(id, patch)).await??;
    Ok(reply::ok(&profile.public()))
}

/// Delete a profile that owns no listed bot.
#[utoipa::path(
    delete, path = "/admin/users/{id}", tag = "admin",
    params(("id" = String, Path, description = "Profile UUID (any case)")),
    security(("admin_token" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 409, description = "`conflict`: the profile still owns listed bots", body = ErrorBody),
    )
)]
pub async fn delete_user(
    _: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = profile_id(&id)?;
    state.registry.send(DeleteProfile(id)).await??;
    Ok(HttpResponse::NoContent().finish())
}

/// List a bot; its API token is shown this once.
#[utoipa::path(
    post, path = "/admin/bots", tag = "admin",
    request_body = NewBot,
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Listed; the token is shown once", body = CreatedBot),
        (status = 400, description = "`bad_request`: the body is not a JSON object, a field is missing, invalid or unknown, an owner does not exist, or the webhook URL points at a private network", body = ErrorBody),
        (status = 409, description = "`conflict`: a bot with this platform id is listed", body = ErrorBody),
    )
)]
pub async fn create_bot(
    _: Admin,
    state: web::Data<AppState>,
    request: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let new: NewBot = json_body(&request, body).await?;
    check_webhook_url(&state, new.webhook_url.as_ref()).await?;
    let (view, token) = state.registry.send(CreateBot(new)).await??;
    Ok(reply::created(&CreatedBot {
        bot: view.public(state.clock.now()),
        token: token.as_str(),
    }))
}

/// Change a bot: fields left out are kept, `null` clears a field that may be null.
#[utoipa::path(
    patch, path = "/admin/bots/{id}", tag = "admin",
    params(("id" = String, Path, description = "Listing UUID (any case) or platform snowflake")),
    request_body = BotPatch,
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "Updated", body = PublicBot),
        (status = 400, description = "`bad_request`: the body is not a JSON object, a field is missing, invalid or unknown, an owner does not exist, or the webhook URL points at a private network", body = ErrorBody),
        (status = 409, description = "`conflict`: another listed bot has this platform id", body = ErrorBody),
    )
)]
pub async fn update_bot(
    _: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
    request: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let bot = find_bot(&state, &id)?;
    let patch: BotPatch = json_body(&request, body).await?;
    check_webhook_url(&state, patch.webhook_url.as_set()).await?;
    let view = state.registry.send(UpdateBot(bot.id, patch)).await??;
    Ok(reply::ok(&view.public(state.clock.now())))
}

/// Delist a bot: it is 404 and its token unknown from then on.
#[utoipa::path(
    delete, path = "/admin/bots/{id}", tag = "admin",
    params(("id" = String, Path, description = "Listing UUID (any case) or platform snowflake")),
    security(("admin_token" = [])),
    responses(
        (status = 204, description = "Delisted: 404 from now on, and its token stops working"),
    )
)]
pub async fn delist_bot(
    _: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let bot = find_bot(&state, &id)?;
    state.registry.send(DelistBot(bot.id)).await??;
    Ok(HttpResponse::NoContent().finish())
}

/// Rotate a bot's API token.
#[utoipa::path(
    post, path = "/admin/bots/{id}/token", tag = "admin",
    params(("id" = String, Path, description = "Listing UUID (any case) or platform snowflake")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "A new token; the old one stops working at once", body = NewToken),
    )
)]
pub async fn rotate_token(
    _: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let bot = find_bot(&state, &id)?;
    let token = state.registry.send(RotateToken(bot.id)).await??;
    Ok(reply::ok(&NewToken {
        token: token.as_str(),
    }))
}

/// Record a vote: the only way votes enter.
#[utoipa::path(
    post, path = "/admin/bots/{id}/votes", tag = "admin",
    params(("id" = String, Path, description = "Listing UUID (any case) or platform snowflake")),
    request_body = VotePost,
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Counted", body = VoteCounts),
        (status = 400, description = "`bad_request`: the body is not a JSON object, a field is missing or invalid, or a field is unknown", body = ErrorBody),
        (status = 409, description = "`already_voted`: this user voted for this bot in the last 12 hours; the message gives the time of the next possible vote", body = ErrorBody),
    )
)]
pub async fn record_vote(
    _: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
    request: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let bot = find_bot(&state, &id)?;
    let vote: VotePost = json_body(&request, body).await?;
    let voter = Voter {
        id: vote.user_id,
        username: vote.username,
        avatar: vote.avatar,
    };
    let counts = crate::telemetry::count_vote(bot.ask(RecordVote(voter)).await?)?;
    Ok(reply::created(&VoteCounts {
        vote_count: counts.vote_count,
        monthly_vote_count: counts.monthly_vote_count,
    }))
}

#[derive(Serialize, ToSchema)]
pub struct SnapshotWritten {
    /// The snapshot file, in the data directory
    pub file: String,
    /// Its size in bytes
    pub bytes: u64,
}

/// Write a snapshot now.
#[utoipa::path(
    post, path = "/admin/snapshot", tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "A snapshot is durably written", body = SnapshotWritten),
        (status = 503, description = "`unavailable`: the server keeps no data directory, or the snapshot could not be written", body = ErrorBody),
    )
)]
pub async fn snapshot(_: Admin, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let persistence = state
        .persistence
        .as_ref()
        .ok_or_else(|| Code::Unavailable.with("this server keeps no state on disk".into()))?;
    let written = persistence.snapshot().await.map_err(|error| {
        tracing::error!(%error, "snapshot on request failed");
        Code::Unavailable.with("the snapshot could not be written; see the server log".into())
    })?;
    Ok(reply::ok(&SnapshotWritten {
        file: written.path.display().to_string(),
        bytes: written.bytes,
    }))
}

/// A webhook delivery as the admin API shows it; bodies and secrets are not shown.
#[derive(Serialize, ToSchema)]
pub struct DeliveryView<'a> {
    #[schema(value_type = String, format = Uuid)]
    pub id: Uuid,
    pub event: Event,
    pub state: DeliveryState,
    pub attempts: u32,
    /// The receiver's last status code, if it answered
    #[schema(required = true)]
    pub last_status: Option<u16>,
    /// Why the last attempt failed
    #[schema(required = true)]
    pub last_error: Option<&'a str>,
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub next_attempt_at: Option<Timestamp>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub delivered_at: Option<Timestamp>,
}

impl<'a> From<&'a Delivery> for DeliveryView<'a> {
    fn from(d: &'a Delivery) -> Self {
        Self {
            id: d.id,
            event: d.event,
            state: d.state,
            attempts: d.attempts,
            last_status: d.last_status,
            last_error: d.last_error.as_deref(),
            next_attempt_at: d.next_attempt_at,
            created_at: d.created_at,
            delivered_at: d.delivered_at,
        }
    }
}

/// Send a test event to the bot's webhook.
#[utoipa::path(
    post, path = "/admin/bots/{id}/webhook/test", tag = "admin",
    params(("id" = String, Path, description = "Listing UUID (any case) or platform snowflake")),
    security(("admin_token" = [])),
    responses(
        (status = 202, description = "A test event is queued for the bot's receiver", body = DeliveryView),
        (status = 400, description = "`bad_request`: the bot has no webhook_url", body = ErrorBody),
    )
)]
pub async fn send_test(
    _: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let bot = find_bot(&state, &id)?;
    let delivery = bot.ask(SendTest).await??;
    Ok(reply::json(
        StatusCode::ACCEPTED,
        &DeliveryView::from(&delivery),
    ))
}

/// How many open deliveries were given up because the bot's outbox was full.
const GIVEN_UP_HEADER: &str = "botlist-deliveries-given-up";

/// The bot's latest webhook deliveries.
#[utoipa::path(
    get, path = "/admin/bots/{id}/webhook/deliveries", tag = "admin",
    params(("id" = String, Path, description = "Listing UUID (any case) or platform snowflake")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The last 100 deliveries, newest first", body = Vec<DeliveryView>,
            headers(("Botlist-Deliveries-Given-Up" = u64, description = "Open deliveries given up because the outbox held 10,000"))),
    )
)]
pub async fn deliveries(
    _: Admin,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let bot = find_bot(&state, &id)?;
    let log = bot.ask(RecentDeliveries).await??;
    let views: Vec<DeliveryView<'_>> = log.recent.iter().map(DeliveryView::from).collect();
    let mut response = reply::ok(&views);
    response.headers_mut().insert(
        actix_web::http::header::HeaderName::from_static(GIVEN_UP_HEADER),
        log.given_up_full.into(),
    );
    Ok(response)
}

/// Deliver a webhook event again.
#[utoipa::path(
    post, path = "/admin/bots/{id}/webhook/deliveries/{delivery_id}/redeliver", tag = "admin",
    params(
        ("id" = String, Path, description = "Listing UUID (any case) or platform snowflake"),
        ("delivery_id" = String, Path, description = "The delivery's id"),
    ),
    security(("admin_token" = [])),
    responses(
        (status = 202, description = "Queued again from its first try, with the same id and body", body = DeliveryView),
        (status = 400, description = "`bad_request`: the bot has no webhook_url", body = ErrorBody),
        (status = 404, description = "`not_found`: no listed bot has this id, the bot has no delivery with this id, or the server has no admin token", body = ErrorBody),
    )
)]
pub async fn redeliver(
    _: Admin,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, delivery_id) = path.into_inner();
    let bot = find_bot(&state, &id)?;
    let delivery_id = Uuid::parse_str(&delivery_id)
        .map_err(|_| Code::NotFound.with(format!("no delivery with id `{delivery_id}`")))?;
    let delivery = bot.ask(Redeliver(delivery_id)).await??;
    Ok(reply::json(
        StatusCode::ACCEPTED,
        &DeliveryView::from(&delivery),
    ))
}
