//! The one guard of every staff route (CONTRACT section 14): [`Staff`] for what `mod` or
//! `admin` may do, [`AdminStaff`] for what only `admin` may do. Either is an extractor a
//! handler takes first, so every staff route (the moderation queue and decisions, the audit
//! log, the removal of reviews) refuses in the same order with the same words:
//!
//! 1. 401 `unauthorized` without a live profile token ([`AsProfile`]);
//! 2. 403 `forbidden` when the token lacks the `staff` scope (naming it);
//! 3. 403 `forbidden` when the token's profile does not hold the role *now*: the flag is read
//!    from the directory's published profile at request time, never from the token, so a
//!    profile that loses `mod`/`admin` loses staff rights with its next request. (The
//!    registry checks the role again when it applies the write, in order with the change of
//!    the profile.)

use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use futures_util::future::{ready, Ready};

use super::error::{ApiError, Code};
use super::extract::{app_state, AsProfile};
use crate::domain::people::Scope;
use crate::domain::profile::Profile;
use crate::domain::staff::StaffRole;

/// A request by a staff member (`mod` or `admin`) with a `staff` token.
pub struct Staff {
    /// The staff member, as published when the request came.
    pub profile: Arc<Profile>,
}

/// A request by a staff member with `admin` (featuring): [`Staff`] with the stronger role.
pub struct AdminStaff(pub Staff);

impl Staff {
    /// The guard itself: the token, its scope, then the role.
    pub fn check(request: &HttpRequest, role: StaffRole) -> Result<Staff, ApiError> {
        let state = app_state(request)?;
        let who = AsProfile::from_request(request, &mut Payload::None).into_inner()?;
        let id = who.require(Scope::Staff)?;
        // Deleted since the token was looked up: its tokens went with it.
        let profile = state.directory.profile(id).ok_or_else(|| {
            Code::Unauthorized.with("unknown, revoked or expired profile token".into())
        })?;
        if !role.held_by(&profile) {
            return Err(Code::Forbidden.with(format!(
                "this profile is not staff: this needs {} on the profile",
                role.name()
            )));
        }
        Ok(Staff { profile })
    }

    pub fn id(&self) -> crate::domain::ids::ProfileId {
        self.profile.id
    }
}

impl FromRequest for Staff {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Staff::check(request, StaffRole::Staff))
    }
}

impl FromRequest for AdminStaff {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Staff::check(request, StaffRole::Admin).map(AdminStaff))
    }
}
