//! `/admin/bots/{id}/webhook/...`: test events, the delivery log and redelivery.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::actors::bot::{RecentDeliveries, Redeliver, SendTest};
use crate::api::error::{ApiError, Code};
use crate::api::extract::{Admin, ManagedBot, PathBot};
use crate::api::routes::{Route, Subject};
use crate::api::{reply, AppState};
use crate::domain::time::Timestamp;
use crate::domain::webhook::{Delivery, DeliveryState, Event, TestOwner};

pub fn routes() -> Vec<Route> {
    [
        Route::new(__path_send_test, send_test).refuses(Code::BadRequest, "the bot has no webhook_url"),
        Route::new(__path_deliveries, deliveries),
        Route::new(__path_redeliver, redeliver).refuses(Code::BadRequest, "the bot has no webhook_url").refuses(Code::NotFound, "no listed bot has this id, the bot has no delivery with this id, or the server has no admin token"),
    ]
    .into_iter()
    .map(|route| route.about(Subject::Bot))
    .collect()
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
            event: d.event(),
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
    responses(
        (status = 202, description = "A test event is queued for the bot's receiver", body = DeliveryView),
    )
)]
pub async fn send_test(
    _: Admin,
    state: web::Data<AppState>,
    PathBot(bot): PathBot,
) -> Result<HttpResponse, ApiError> {
    // The user a `v1` test event names: the bot's first owner with a platform id.
    let owner = bot.view().listing.owner_ids.iter().find_map(|id| {
        let profile = state.directory.profile(*id)?;
        Some(TestOwner {
            platform_id: profile.platform_id?,
            name: profile.username.as_str().to_owned(),
            avatar: profile.avatar.clone(),
        })
    });
    let delivery = bot.ask(SendTest(owner)).await??;
    Ok(reply::json(
        StatusCode::ACCEPTED,
        &DeliveryView::from(&delivery),
    ))
}

/// How many open deliveries were given up because the bot's outbox was full.
const GIVEN_UP_HEADER: &str = "botlist-deliveries-given-up";

/// The bot's latest webhook deliveries, whatever its status: the operator sees every listing,
/// and a delisted bot's log is where its last delivery (`listing.delisted`) and the ones it
/// stopped show. (A test event and a redelivery still need a listed bot: a bot that is not
/// public is sent its decisions only.)
#[utoipa::path(
    get, path = "/admin/bots/{id}/webhook/deliveries", tag = "admin",
    responses(
        (status = 200, description = "The last 100 deliveries, newest first", body = Vec<DeliveryView>,
            headers(("Botlist-Deliveries-Given-Up" = u64, description = "Open deliveries given up because the outbox held 10,000"))),
    )
)]
pub async fn deliveries(_: Admin, ManagedBot(bot): ManagedBot) -> Result<HttpResponse, ApiError> {
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
        ("delivery_id" = String, Path, description = "The delivery's id"),
    ),
    responses(
        (status = 202, description = "Queued again from its first try, with the same id and body", body = DeliveryView),
    )
)]
pub async fn redeliver(
    _: Admin,
    PathBot(bot): PathBot,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (_, delivery_id) = path.into_inner();
    let delivery_id = Uuid::parse_str(&delivery_id)
        .map_err(|_| Code::NotFound.with(format!("no delivery with id `{delivery_id}`")))?;
    let delivery = bot.ask(Redeliver(delivery_id)).await??;
    Ok(reply::json(
        StatusCode::ACCEPTED,
        &DeliveryView::from(&delivery),
    ))
}
