//! `GET /users/:user_id`.

use actix_web::{web, HttpResponse};

use crate::api::http::error::{ApiError, Code};
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::{http::reply, AppState};
use crate::domain::ids::ProfileId;
use crate::domain::profile::PublicProfile;

/// This module's routes; see [`crate::api::http::routes`].
pub fn routes() -> Vec<Route> {
    vec![Route::new(__path_get_user, get_user)
        .limited(Limit::PerAddress("users_ip"))
        .about(Subject::Profile)
        .etag()]
}

pub fn not_found(id: &str) -> ApiError {
    Code::NotFound.with(format!("no profile with id `{id}`"))
}

/// A public profile.
#[utoipa::path(
    get, path = "/users/{user_id}", tag = "users",
    responses(
        (status = 200, description = "The profile", body = PublicProfile),
    )
)]
pub async fn get_user(
    state: web::Data<AppState>,
    user_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = ProfileId::parse(&user_id).ok_or_else(|| not_found(&user_id))?;
    let profile = state
        .directory
        .profile(id)
        .ok_or_else(|| not_found(&user_id))?;
    let rendered = profile.rendered();
    Ok(reply::tagged_json(rendered.json.clone(), &rendered.etag))
}
