//! `GET /weekend`: whether votes count more right now (the weekend multiplier).

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::http::routes::Route;
use crate::api::{http::reply, AppState};

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_get_weekend, get_weekend)]
}

#[derive(Serialize, ToSchema)]
pub struct WeekendStatus {
    /// True from Friday 00:00 to Sunday 23:59:59 UTC when the operator set a multiplier above 1;
    /// always false otherwise
    pub is_weekend: bool,
}

/// Whether votes count more than once right now (the weekend multiplier). Public; a token is
/// accepted and ignored, as the classic client libraries send one.
#[utoipa::path(
    get, path = "/weekend", tag = "votes",
    responses(
        (status = 200, description = "Whether a vote taken now counts more than once", body = WeekendStatus),
    )
)]
pub async fn get_weekend(state: web::Data<AppState>) -> HttpResponse {
    let now = state.clock.now();
    reply::ok(&WeekendStatus {
        is_weekend: state.directory.weekend.is_weekend(now),
    })
}
