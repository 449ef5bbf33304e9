//! The audit log's reads (CONTRACT section 14): `GET /staff/audit` for staff (and the admin
//! token), `GET /bots/{id}/audit` for the bot's owners. Entries are newest first, cursor-paged;
//! the log itself is written by the journal, in the record of each change (docs/API.md, "The
//! audit log").

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::{presented_token, AsProfile, ManagedBot};
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::resources::owners::owner_of;
use crate::api::{http::reply, AppState};
use crate::domain::audit::{bot_target, ActorFilter, AuditAction, AuditFilter, AuditView};
use crate::domain::ids::TokenHash;
use crate::domain::people::Scope;
use crate::domain::time::Timestamp;

/// Entries per page unless `limit` says otherwise, and the most a page holds.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 100;

const BAD_QUERY: &str = "`target` or `actor` is neither a UUID nor (for `actor`) `admin`, `action` is unknown, `cursor` is not an entry id, `limit` is not 1 to 100, or a parameter is given twice";

pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_staff_audit, staff_audit)
            .refuses(Code::BadRequest, BAD_QUERY)
            .refuses(
                Code::Forbidden,
                "the token lacks the `staff` scope (the message names it), or its profile is neither `mod` nor `admin`",
            )
            .limited(super::staff::STAFF_LIMIT),
        Route::new(__path_bot_audit, bot_audit)
            .refuses(Code::BadRequest, BAD_QUERY)
            .refuses(
                Code::Forbidden,
                "the token lacks the `bots` scope (the message names it), or its profile is not an owner",
            )
            .about(Subject::Bot)
            .limited(Limit::PerBot),
    ]
}

/// The query of both reads; every parameter is optional.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct AuditQuery {
    /// Only entries about this target (a bot's, profile's or token's UUID)
    #[param(value_type = Option<String>, format = Uuid)]
    target: Option<String>,
    /// Only entries by this actor: a profile's or a bot's UUID, or `admin`
    #[param(value_type = Option<ActorParam>, inline)]
    actor: Option<String>,
    /// Only entries of this action (`bot.update`, `token.issue`, ...; docs/API.md lists them)
    #[param(value_type = Option<ActionParam>, inline)]
    action: Option<String>,
    /// `next_cursor` of the page before: entries older than it
    #[param(value_type = Option<i64>, minimum = 0, maximum = 9223372036854775807_i64)]
    cursor: Option<String>,
    /// Entries per page, 1 to 100 (default 50)
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
}

/// `actor`, for the OpenAPI document: a UUID or `admin` (schemathesis found the document
/// saying "any string" of the parameters `parse_query` refuses unless they are these).
pub struct ActorParam;

impl utoipa::PartialSchema for ActorParam {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{
            KnownFormat, ObjectBuilder, OneOfBuilder, SchemaFormat, Type,
        };
        let uuid = ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)));
        let admin = ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["admin"]));
        OneOfBuilder::new().item(uuid).item(admin).into()
    }
}

impl ToSchema for ActorParam {}

/// `action`, for the OpenAPI document: the name of an [`AuditAction`].
pub struct ActionParam;

impl utoipa::PartialSchema for ActionParam {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(AuditAction::ALL.iter().map(|action| action.name())))
            .into()
    }
}

impl ToSchema for ActionParam {}

/// Who made a change.
#[derive(Serialize, ToSchema)]
pub struct ActorOut {
    /// `admin`, `profile` or `bot`
    kind: &'static str,
    /// The profile's or bot's UUID; null for the admin token
    #[schema(value_type = Option<String>, format = Uuid, required = true)]
    id: Option<Uuid>,
}

/// What a change was about.
#[derive(Serialize, ToSchema)]
pub struct TargetOut {
    /// `bot`, `profile` or `token`
    kind: &'static str,
    #[schema(value_type = String, format = Uuid)]
    id: Uuid,
}

/// One audit log entry: never a secret or a token, only the names of the fields changed.
#[derive(Serialize, ToSchema)]
pub struct AuditEntryOut {
    /// The entry's id: the number of the journal record that holds it and its change
    id: String,
    #[schema(value_type = String, format = DateTime)]
    at: Timestamp,
    actor: ActorOut,
    /// `bot.update`, `token.issue`, ... (docs/API.md lists them)
    action: &'static str,
    target: TargetOut,
    /// Why, when the change was a decision with a reason; else null
    #[schema(value_type = Option<String>, required = true)]
    reason: Option<Box<str>>,
    /// The names of the fields the change set or changed
    #[schema(value_type = Vec<String>)]
    changes: Vec<Box<str>>,
}

impl From<AuditView> for AuditEntryOut {
    fn from(view: AuditView) -> Self {
        Self {
            id: view.id.to_string(),
            at: view.at,
            actor: ActorOut {
                kind: view.actor.kind(),
                id: view.actor.id(),
            },
            action: view.action.name(),
            target: TargetOut {
                kind: view.target_kind.name(),
                id: view.target,
            },
            reason: view.reason,
            changes: view.changes.to_vec(),
        }
    }
}

/// A page of entries, newest first.
#[derive(Serialize, ToSchema)]
pub struct AuditPageOut {
    results: Vec<AuditEntryOut>,
    /// Pass as `cursor` for the older entries; null when there are none
    #[schema(value_type = Option<String>, required = true)]
    next_cursor: Option<String>,
}

/// The parsed query.
struct Read {
    filter: AuditFilter,
    before: Option<u64>,
    limit: usize,
}

fn parse_query(query: &str) -> Result<Read, ApiError> {
    let mut seen: Vec<String> = Vec::new();
    let mut read = Read {
        filter: AuditFilter::default(),
        before: None,
        limit: DEFAULT_LIMIT,
    };
    for pair in crate::domain::query::each_pair(query) {
        let (key, value) = pair.map_err(|e| Code::BadRequest.with(e.0))?;
        let known = ["target", "actor", "action", "cursor", "limit"];
        if !known.contains(&key.as_ref()) {
            continue;
        }
        if seen.iter().any(|k| *k == key) {
            return Err(Code::BadRequest.with(format!("`{key}` is given more than once")));
        }
        seen.push(key.to_string());
        let bad =
            |what: &str| Code::BadRequest.with(format!("`{key}` must be {what}, got `{value}`"));
        match key.as_ref() {
            "target" => {
                read.filter.target = Some(Uuid::parse_str(&value).map_err(|_| bad("a UUID"))?)
            }
            "actor" => {
                read.filter.actor = Some(if value == "admin" {
                    ActorFilter::Admin
                } else {
                    ActorFilter::Id(Uuid::parse_str(&value).map_err(|_| bad("a UUID or `admin`"))?)
                });
            }
            "action" => {
                read.filter.action = Some(
                    AuditAction::parse(&value).ok_or_else(|| bad("an action docs/API.md lists"))?,
                )
            }
            "cursor" => {
                // At most 2^63 - 1, as the document's `int64` says (no entry id comes near).
                let id: i64 = value.parse().map_err(|_| bad("a `next_cursor` value"))?;
                let id = u64::try_from(id).map_err(|_| bad("a `next_cursor` value"))?;
                read.before = Some(id)
            }
            _ => {
                read.limit = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| bad("an integer from 1 to 100"))?
            }
        }
    }
    Ok(read)
}

fn page(state: &AppState, read: &Read) -> HttpResponse {
    let page = state
        .directory
        .audit
        .page(&read.filter, read.before, read.limit);
    reply::ok(&AuditPageOut {
        results: page.entries.into_iter().map(AuditEntryOut::from).collect(),
        next_cursor: page.next.map(|id| id.to_string()),
    })
}

/// Staff's right to read the whole log: the admin token, or a `staff`-scoped profile token of a
/// profile that is `mod` or `admin` now (so one that loses the flag loses the right at once).
///
/// Not the `Staff` extractor of the staff routes (`api/http/staff.rs`): that one refuses the
/// admin token, and the operator reads the log with it. The profile half answers the same
/// statuses in the same order; folding both into one extractor is left to do.
fn check_staff(state: &AppState, request: &HttpRequest) -> Result<(), ApiError> {
    let presented = presented_token(request.headers())?;
    let hash = TokenHash::of(presented.as_bytes());
    if state
        .admin_token
        .as_ref()
        .is_some_and(|admin| admin.matches(&hash))
    {
        return Ok(());
    }
    let grant = state
        .directory
        .authenticate_profile(presented.as_bytes())
        .filter(|grant| grant.live_at(state.clock.now()))
        .ok_or_else(|| Code::Unauthorized.with("unknown token".into()))?;
    if !grant.scopes.has(Scope::Staff) {
        return Err(Code::Forbidden.with("this token does not have the `staff` scope".into()));
    }
    let staff = state
        .directory
        .profile(grant.profile)
        .is_some_and(|profile| profile.moderator || profile.admin);
    if staff {
        Ok(())
    } else {
        Err(Code::Forbidden.with("this profile is not staff (neither `mod` nor `admin`)".into()))
    }
}

/// The audit log, for staff: every management change, newest first, with filters.
#[utoipa::path(
    get, path = "/staff/audit", tag = "staff",
    params(AuditQuery),
    security(("profile_token" = []), ("admin_token" = [])),
    responses(
        (status = 200, description = "A page of entries, newest first", body = AuditPageOut),
    )
)]
pub async fn staff_audit(
    request: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    check_staff(&state, &request)?;
    let read = parse_query(request.query_string())?;
    Ok(page(&state, &read))
}

/// A bot's audit log, for its owners: every management change of the listing, newest first.
#[utoipa::path(
    get, path = "/bots/{id}/audit", tag = "owners",
    params(AuditQuery),
    security(("profile_token" = [])),
    responses(
        (status = 200, description = "A page of the bot's entries, newest first", body = AuditPageOut),
    )
)]
pub async fn bot_audit(
    request: HttpRequest,
    who: AsProfile,
    state: web::Data<AppState>,
    ManagedBot(bot): ManagedBot,
) -> Result<HttpResponse, ApiError> {
    owner_of(&who, &bot)?;
    let mut read = parse_query(request.query_string())?;
    // The bot's own entries, whatever `target` asked for.
    read.filter.target = Some(bot_target(bot.id));
    Ok(page(&state, &read))
}
