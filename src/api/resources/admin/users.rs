//! `POST /admin/users`, `PATCH` and `DELETE /admin/users/{id}`: profiles.

use actix_web::{web, HttpResponse};

use crate::actors::registry::{CreateProfile, DeleteProfile, UpdateProfile};
use crate::api::error::{ApiError, Code};
use crate::api::extract::{Admin, Json, PathProfile};
use crate::api::routes::{Route, Subject};
use crate::api::{reply, AppState};
use crate::domain::profile::{NewProfile, ProfilePatch, PublicProfile};

pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_create_user, create_user).refuses(
            Code::Conflict,
            "the username or the platform id belongs to another profile",
        ),
        Route::new(__path_update_user, update_user)
            .refuses(
                Code::Conflict,
                "the username or the platform id belongs to another profile",
            )
            .about(Subject::Profile),
        Route::new(__path_delete_user, delete_user)
            .refuses(Code::Conflict, "the profile still owns listed bots")
            .about(Subject::Profile),
    ]
}

/// List a profile.
#[utoipa::path(
    post, path = "/admin/users", tag = "admin",
    request_body = NewProfile,
    responses(
        (status = 201, description = "Created", body = PublicProfile),
    )
)]
pub async fn create_user(
    _: Admin,
    state: web::Data<AppState>,
    Json(new): Json<NewProfile>,
) -> Result<HttpResponse, ApiError> {
    let profile = state.registry.send(CreateProfile(new)).await??;
    Ok(reply::created(&profile.public()))
}

/// Change a profile: fields left out are kept, `null` clears a field that may be null.
#[utoipa::path(
    patch, path = "/admin/users/{id}", tag = "admin",
    request_body = ProfilePatch,
    responses(
        (status = 200, description = "Updated", body = PublicProfile),
    )
)]
pub async fn update_user(
    _: Admin,
    state: web::Data<AppState>,
    PathProfile(id): PathProfile,
    Json(patch): Json<ProfilePatch>,
) -> Result<HttpResponse, ApiError> {
    let profile = state.registry.send(UpdateProfile(id, patch)).await??;
    Ok(reply::ok(&profile.public()))
}

/// Delete a profile that owns no listed bot.
#[utoipa::path(
    delete, path = "/admin/users/{id}", tag = "admin",
    responses(
        (status = 204, description = "Deleted"),
    )
)]
pub async fn delete_user(
    _: Admin,
    state: web::Data<AppState>,
    PathProfile(id): PathProfile,
) -> Result<HttpResponse, ApiError> {
    state.registry.send(DeleteProfile(id)).await??;
    Ok(HttpResponse::NoContent().finish())
}
