//! A bot's owners manage their own listing with a profile token of the `bots` scope (CONTRACT
//! section 13): `POST /bots` (submit), `GET /bots/{id}/manage`, `PATCH` and `DELETE
//! /bots/{id}`, `POST /bots/{id}/token`, `PUT /bots/{id}/owners`. Each checks, in order: the
//! token (401), the bot (404; a listing that is not public is 404 to anyone but its owners),
//! the scope, then that the profile owns the bot (403).

use std::sync::Arc;

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::actors::bot::ReadWebhook;
use crate::actors::directory::BotHandle;
use crate::actors::registry::{OwnerDelistBot, OwnerRotateToken, OwnerUpdateBot, SubmitBot};
use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::{AsProfile, Json, ManagedBot};
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::resources::admin::bots::NewToken;
use crate::api::{http::reply, AppState};
use crate::domain::audit::AuditAction;
use crate::domain::bot::{
    BotPatch, BotView, ListingStatus, NewBot, OwnerPatch, OwnersPut, PublicBot, Submission,
};
use crate::domain::ids::ProfileId;
use crate::domain::people::Scope;
use crate::domain::text::{DecisionReason, HttpUrl};
use crate::domain::webhook::WebhookFormat;

/// The 400 of an owner's body.
const BAD_OWNER_BODY: &str = "the body is not a JSON object, a field is missing, invalid or unknown (text with invisible formatting characters included), an owner does not exist, or the webhook URL points at a private network";

/// The 403 of every owner's route.
const NOT_ALLOWED: &str =
    "the token lacks the `bots` scope (the message names it), or its profile is not an owner";

pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_submit, submit)
            .refuses(Code::BadRequest, BAD_OWNER_BODY)
            .refuses(Code::Forbidden, "the token lacks the `bots` scope")
            .refuses(Code::Conflict, "a bot with this platform id is listed"),
        Route::new(__path_manage, manage)
            .refuses(Code::Forbidden, NOT_ALLOWED)
            .about(Subject::Bot),
        Route::new(__path_edit, edit)
            .refuses(Code::BadRequest, BAD_OWNER_BODY)
            .refuses(Code::Forbidden, NOT_ALLOWED)
            .about(Subject::Bot),
        Route::new(__path_rotate, rotate)
            .refuses(Code::Forbidden, NOT_ALLOWED)
            .refuses(Code::Conflict, "the listing is not approved yet (the message names its status)")
            .about(Subject::Bot),
        Route::new(__path_set_owners, set_owners)
            .refuses(Code::BadRequest, "owner_ids empty, too long, or naming a profile that does not exist")
            .refuses(
                Code::Forbidden,
                "the token lacks the `bots` scope, its profile is not an owner, or it is not the first owner and the first owner would change",
            )
            .about(Subject::Bot),
        Route::new(__path_remove, remove)
            .refuses(Code::Forbidden, NOT_ALLOWED)
            .refuses(Code::Conflict, "the listing is not approved: pending, denied or delisted (the message names its status)")
            .about(Subject::Bot),
    ]
    .into_iter()
    .map(|route| route.limited(Limit::PerBot))
    .collect()
}

/// A bot's webhook settings as its owners see them: never the secret.
#[derive(Serialize, ToSchema)]
pub struct ManagedWebhook {
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub url: Option<HttpUrl>,
    /// Whether a secret is set (it is never shown)
    pub secret_set: bool,
    #[schema(value_type = String)]
    pub format: WebhookFormat,
    /// The kinds of event it is sent
    pub events: crate::domain::webhook::EventSet,
}

/// The owners' view of a listing.
#[derive(Serialize, ToSchema)]
pub struct ManagedListing<'a> {
    #[schema(value_type = PublicBot)]
    pub bot: PublicBot<'a>,
    pub status: ListingStatus,
    /// Why the last denial or delisting was made; null when none
    #[schema(value_type = Option<DecisionReason>, required = true)]
    pub reason: Option<&'a DecisionReason>,
    pub webhook: ManagedWebhook,
    /// The owners, first owner first
    #[schema(value_type = Vec<String>)]
    pub owner_ids: &'a [ProfileId],
}

#[derive(Serialize, ToSchema)]
pub struct SubmittedBot<'a> {
    #[schema(value_type = PublicBot)]
    pub bot: PublicBot<'a>,
    pub status: ListingStatus,
    /// The bot's API token, shown this once; it works once the listing is approved
    pub token: &'a str,
}

#[derive(Serialize, ToSchema)]
pub struct Owners<'a> {
    #[schema(value_type = Vec<String>)]
    pub owner_ids: &'a [ProfileId],
}

/// The token's profile, which must have the `bots` scope and own the bot. A listing that is
/// not public is 404 to a profile that does not own it (it is not there for anyone else), and
/// that before the scope is looked at, as a public route would answer; a public one is 403.
pub(crate) fn owner_of(
    who: &AsProfile,
    handle: &BotHandle,
) -> Result<(ProfileId, Arc<BotView>), ApiError> {
    let profile = who.0.profile;
    let view = handle.view();
    let owns = view.listing.owner_ids.contains(&profile);
    if !owns && !view.listing.status.is_public() {
        return Err(Code::NotFound.with(format!("no bot with id `{}`", handle.id)));
    }
    who.require(Scope::Bots)?;
    if !owns {
        return Err(Code::Forbidden.with("this profile is not an owner of this bot".into()));
    }
    Ok((profile, view))
}

async fn managed_json(
    state: &AppState,
    handle: &BotHandle,
    view: &BotView,
) -> Result<HttpResponse, ApiError> {
    let webhook = handle.ask(ReadWebhook).await?;
    Ok(reply::ok(&ManagedListing {
        bot: view.public(state.clock.now()),
        status: view.listing.status,
        reason: view.listing.reason.as_ref(),
        webhook: ManagedWebhook {
            url: webhook.url,
            secret_set: webhook.secret.is_some(),
            format: webhook.format,
            events: webhook.events,
        },
        owner_ids: &view.listing.owner_ids,
    }))
}

/// Submit a listing: `pending` until the operator (later, staff) approves it; the submitter
/// is its first owner. The bot's token is shown this once and works once it is approved.
#[utoipa::path(
    post, path = "/bots", tag = "owners",
    request_body = Submission,
    security(("profile_token" = [])),
    responses(
        (status = 201, description = "Submitted, `pending`", body = SubmittedBot),
    )
)]
pub async fn submit(
    who: AsProfile,
    state: web::Data<AppState>,
    Json(submission): Json<Submission>,
) -> Result<HttpResponse, ApiError> {
    let submitter = who.require(Scope::Bots)?;
    let new = NewBot::from(submission);
    crate::api::resources::admin::check_webhook_url(&state, new.webhook_url.as_ref()).await?;
    let (view, token) = state.registry.send(SubmitBot { new, submitter }).await??;
    Ok(reply::created(&SubmittedBot {
        bot: view.public(state.clock.now()),
        status: view.listing.status,
        token: token.as_str(),
    }))
}

/// The owners' view of a listing: its status, the reason of the last decision, its webhook
/// settings (never the secret) and its owners. A listing that is not approved is reached by
/// its UUID.
#[utoipa::path(
    get, path = "/bots/{id}/manage", tag = "owners",
    security(("profile_token" = [])),
    responses(
        (status = 200, description = "The listing as its owners see it", body = ManagedListing),
    )
)]
pub async fn manage(
    who: AsProfile,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    let (_, view) = owner_of(&who, &bot)?;
    managed_json(&state, &bot, &view).await
}

/// Edit a listing as its owner: fields left out are kept, `null` clears a field that may be
/// null. A denied listing edited goes back to `pending`.
#[utoipa::path(
    patch, path = "/bots/{id}", tag = "owners",
    request_body = OwnerPatch,
    security(("profile_token" = [])),
    responses(
        (status = 200, description = "Edited: the owners' view", body = ManagedListing),
    )
)]
pub async fn edit(
    who: AsProfile,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
    Json(patch): Json<OwnerPatch>,
) -> Result<HttpResponse, ApiError> {
    let (owner, _) = owner_of(&who, &bot)?;
    crate::api::resources::admin::check_webhook_url(&state, patch.webhook_url.as_set()).await?;
    let view = state
        .registry
        .send(OwnerUpdateBot {
            bot: bot.id,
            owner,
            patch: BotPatch::from(patch),
            action: AuditAction::BotUpdate,
        })
        .await??;
    managed_json(&state, &bot, &view).await
}

/// Rotate the bot's API token, once the listing is approved; the old one stops working.
#[utoipa::path(
    post, path = "/bots/{id}/token", tag = "owners",
    security(("profile_token" = [])),
    responses(
        (status = 200, description = "A new token, shown this once", body = NewToken),
    )
)]
pub async fn rotate(
    who: AsProfile,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    let (owner, _) = owner_of(&who, &bot)?;
    let token = state
        .registry
        .send(OwnerRotateToken { bot: bot.id, owner })
        .await??;
    Ok(reply::ok(&NewToken {
        token: token.as_str(),
    }))
}

/// Set the listing's owners, first owner first: only the first owner may change who the
/// first owner is.
#[utoipa::path(
    put, path = "/bots/{id}/owners", tag = "owners",
    request_body = OwnersPut,
    security(("profile_token" = [])),
    responses(
        (status = 200, description = "The owners now", body = Owners),
    )
)]
pub async fn set_owners(
    who: AsProfile,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
    Json(put): Json<OwnersPut>,
) -> Result<HttpResponse, ApiError> {
    let (owner, _) = owner_of(&who, &bot)?;
    let patch = BotPatch {
        owner_ids: Some(put.owner_ids),
        ..BotPatch::default()
    };
    let view = state
        .registry
        .send(OwnerUpdateBot {
            bot: bot.id,
            owner,
            patch,
            action: AuditAction::BotOwners,
        })
        .await??;
    Ok(reply::ok(&Owners {
        owner_ids: &view.listing.owner_ids,
    }))
}

/// Remove an approved listing (the lifecycle's `approved` -> removed): 404 from then on, its
/// token unknown.
#[utoipa::path(
    delete, path = "/bots/{id}", tag = "owners",
    security(("profile_token" = [])),
    responses(
        (status = 204, description = "Removed"),
    )
)]
pub async fn remove(
    who: AsProfile,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    let (owner, _) = owner_of(&who, &bot)?;
    state
        .registry
        .send(OwnerDelistBot { bot: bot.id, owner })
        .await??;
    Ok(HttpResponse::NoContent().finish())
}
