//! `POST` and `GET /admin/users/{id}/tokens`, `DELETE /admin/users/{id}/tokens/{token_id}`:
//! the tokens through which a profile acts for itself (CONTRACT section 13), issued by the
//! operator's login.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::actors::registry::{IssueProfileToken, RevokeProfileToken};
use crate::api::error::{ApiError, Code};
use crate::api::extract::{Admin, Json, PathProfile};
use crate::api::routes::{Route, Subject};
use crate::api::{reply, AppState};
use crate::domain::ids::ProfileId;
use crate::domain::people::{NewProfileToken, ProfileToken, Scope};
use crate::domain::text::TokenLabel;
use crate::domain::time::Timestamp;

pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_issue_token, issue_token)
            .refuses(
                Code::BadRequest,
                "scopes empty or unknown, label missing or invalid, expires_in out of range",
            )
            .refuses(
                Code::Conflict,
                "the profile holds the most tokens it may (50); revoke one first",
            )
            .about(Subject::Profile),
        Route::new(__path_list_tokens, list_tokens).about(Subject::Profile),
        Route::new(__path_revoke_token, revoke_token).about(Subject::Profile),
    ]
}

/// A profile's token as listed: everything but the secret, which is never kept.
#[derive(Serialize, ToSchema)]
pub struct TokenInfo<'a> {
    #[schema(value_type = String, format = Uuid)]
    pub id: Uuid,
    #[schema(value_type = Vec<Scope>)]
    pub scopes: &'a [Scope],
    #[schema(value_type = TokenLabel)]
    pub label: &'a TokenLabel,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    /// null: lives until revoked
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub expires_at: Option<Timestamp>,
}

impl<'a> From<&'a ProfileToken> for TokenInfo<'a> {
    fn from(token: &'a ProfileToken) -> Self {
        Self {
            id: token.id,
            scopes: &token.scopes,
            label: &token.label,
            created_at: token.created_at,
            expires_at: token.expires_at,
        }
    }
}

/// A token just issued: its secret, shown this once.
#[derive(Serialize, ToSchema)]
pub struct IssuedToken<'a> {
    #[schema(value_type = String, format = Uuid)]
    pub id: Uuid,
    /// The token (`usr_` and 64 hex digits), shown this once; only its hash is kept
    pub token: &'a str,
    #[schema(value_type = Vec<Scope>)]
    pub scopes: &'a [Scope],
    #[schema(value_type = TokenLabel)]
    pub label: &'a TokenLabel,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    /// null: lives until revoked
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub expires_at: Option<Timestamp>,
}

#[derive(Serialize, ToSchema)]
pub struct TokenList<'a> {
    #[schema(value_type = Vec<TokenInfo>)]
    pub tokens: Vec<TokenInfo<'a>>,
}

/// Issue a token to a profile; the secret is shown this once.
///
/// Call it from your site's login, once you know who the person is: botlist does not log
/// anyone in. The token acts for the profile within its scopes until it expires or is revoked.
#[utoipa::path(
    post, path = "/admin/users/{id}/tokens", tag = "admin",
    request_body = NewProfileToken,
    responses(
        (status = 201, description = "Issued; the token is shown once", body = IssuedToken),
    )
)]
pub async fn issue_token(
    _: Admin,
    state: web::Data<AppState>,
    PathProfile(id): PathProfile,
    Json(new): Json<NewProfileToken>,
) -> Result<HttpResponse, ApiError> {
    let scopes = new.checked().map_err(|why| Code::BadRequest.with(why))?;
    let (token, secret) = state
        .registry
        .send(IssueProfileToken {
            profile: id,
            scopes,
            label: new.label,
            expires_in: new.expires_in,
        })
        .await??;
    Ok(reply::created(&IssuedToken {
        id: token.id,
        token: secret.as_str(),
        scopes: &token.scopes,
        label: &token.label,
        created_at: token.created_at,
        expires_at: token.expires_at,
    }))
}

/// A profile's tokens, without their secrets (expired ones included, until revoked).
#[utoipa::path(
    get, path = "/admin/users/{id}/tokens", tag = "admin",
    responses(
        (status = 200, description = "The profile's tokens, oldest first", body = TokenList),
    )
)]
pub async fn list_tokens(
    _: Admin,
    state: web::Data<AppState>,
    PathProfile(id): PathProfile,
) -> Result<HttpResponse, ApiError> {
    let profile = state
        .directory
        .profile(id)
        .ok_or_else(|| crate::api::resources::users::not_found(&id.to_string()))?;
    Ok(reply::ok(&TokenList {
        tokens: profile.tokens.iter().map(TokenInfo::from).collect(),
    }))
}

/// Revoke a profile's token: refused from the next request on, on every node once the
/// revocation's sequence is applied.
#[utoipa::path(
    delete, path = "/admin/users/{id}/tokens/{token_id}", tag = "admin",
    params(("token_id" = String, Path, format = Uuid, description = "The token's id, as issued and listed")),
    responses(
        (status = 204, description = "Revoked"),
    )
)]
pub async fn revoke_token(
    _: Admin,
    state: web::Data<AppState>,
    request: HttpRequest,
    PathProfile(id): PathProfile,
) -> Result<HttpResponse, ApiError> {
    let token = token_id(&request, id)?;
    state
        .registry
        .send(RevokeProfileToken { profile: id, token })
        .await??;
    Ok(HttpResponse::NoContent().finish())
}

/// `{token_id}`: a UUID, else 404 (no token has it).
fn token_id(request: &HttpRequest, profile: ProfileId) -> Result<Uuid, ApiError> {
    let raw = request.match_info().get("token_id").unwrap_or_default();
    Uuid::parse_str(raw)
        .map_err(|_| Code::NotFound.with(format!("profile {profile} has no token with id `{raw}`")))
}
