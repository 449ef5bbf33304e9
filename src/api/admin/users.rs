//! `POST /admin/users`, `PATCH` and `DELETE /admin/users/{id}`: profiles.

use actix_web::{web, HttpRequest, HttpResponse};

use super::profile_id;
use crate::actors::registry::{CreateProfile, DeleteProfile, UpdateProfile};
use crate::api::error::{ApiError, ErrorBody};
use crate::api::extract::{json_body, Admin};
use crate::api::routes::{Route, Subject};
use crate::api::{reply, AppState};
use crate::domain::profile::{NewProfile, ProfilePatch, PublicProfile};

pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_create_user, create_user),
        Route::new(__path_update_user, update_user).about(Subject::Profile),
        Route::new(__path_delete_user, delete_user).about(Subject::Profile),
    ]
}

/// List a profile.
#[utoipa::path(
    post, path = "/admin/users", tag = "admin",
    request_body = NewProfile,
    responses(
        (status = 201, description = "Created", body = PublicProfile),
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
    request_body = ProfilePatch,
    responses(
        (status = 200, description = "Updated", body = PublicProfile),
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
