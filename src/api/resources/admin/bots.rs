//! `POST /admin/bots`, `PATCH` and `DELETE /admin/bots/{id}`, `POST /admin/bots/{id}/token`:
//! listings and their tokens.

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::{check_webhook_url, BAD_BOT_BODY};
use crate::actors::registry::{CreateBot, DelistBot, RotateToken, UpdateBot};
use crate::api::error::{ApiError, Code};
use crate::api::extract::{Admin, Json, ManagedBot};
use crate::api::routes::{Route, Subject};
use crate::api::{reply, AppState};
use crate::domain::bot::{BotPatch, NewBot, PublicBot};

pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_create_bot, create_bot)
            .refuses(Code::BadRequest, BAD_BOT_BODY)
            .refuses(Code::Conflict, "a bot with this platform id is listed"),
        Route::new(__path_update_bot, update_bot)
            .refuses(Code::BadRequest, BAD_BOT_BODY)
            .refuses(Code::Conflict, "another listed bot has this platform id, or the listing's status cannot move to the `status` asked (the message names it)")
            .about(Subject::Bot),
        Route::new(__path_delist_bot, delist_bot).about(Subject::Bot),
        Route::new(__path_rotate_token, rotate_token).about(Subject::Bot),
    ]
}

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

/// List a bot; its API token is shown this once.
#[utoipa::path(
    post, path = "/admin/bots", tag = "admin",
    request_body = NewBot,
    responses(
        (status = 201, description = "Listed; the token is shown once", body = CreatedBot),
    )
)]
pub async fn create_bot(
    _: Admin,
    state: web::Data<AppState>,
    Json(new): Json<NewBot>,
) -> Result<HttpResponse, ApiError> {
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
    request_body = BotPatch,
    responses(
        (status = 200, description = "Updated", body = PublicBot),
    )
)]
pub async fn update_bot(
    _: Admin,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
    Json(patch): Json<BotPatch>,
) -> Result<HttpResponse, ApiError> {
    check_webhook_url(&state, patch.webhook_url.as_set()).await?;
    let view = state.registry.send(UpdateBot(bot.id, patch)).await??;
    Ok(reply::ok(&view.public(state.clock.now())))
}

/// Delist a bot: it is 404 and its token unknown from then on.
#[utoipa::path(
    delete, path = "/admin/bots/{id}", tag = "admin",
    responses(
        (status = 204, description = "Delisted: 404 from now on, and its token stops working"),
    )
)]
pub async fn delist_bot(
    _: Admin,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    state.registry.send(DelistBot(bot.id)).await??;
    Ok(HttpResponse::NoContent().finish())
}

/// Rotate a bot's API token.
#[utoipa::path(
    post, path = "/admin/bots/{id}/token", tag = "admin",
    responses(
        (status = 200, description = "A new token; the old one stops working at once", body = NewToken),
    )
)]
pub async fn rotate_token(
    _: Admin,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    let token = state.registry.send(RotateToken(bot.id)).await??;
    Ok(reply::ok(&NewToken {
        token: token.as_str(),
    }))
}
