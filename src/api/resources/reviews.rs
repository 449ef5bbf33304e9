//! A bot's reviews (CONTRACT section 14): `GET /bots/{id}/reviews` (public), `POST` (a profile
//! token of the `reviews` scope; one per profile), `PATCH`/`DELETE .../{review_id}` (its
//! author), `PUT .../{review_id}/reply` (an owner of the bot), `POST .../{review_id}/remove`
//! (staff, with a reason; audited). A listing that is not approved is 404 on every one of them.
//! Each checks, in order: the token (401), the bot (404), the scope or role (403), the review
//! (404), then its rules (403, 409); the removal takes the staff guard first, so it refuses as
//! every staff route does (401, 403 scope, 403 role) before it looks at the bot.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::actors::bot::{EditReview, ReadReviews, RemoveReview, ReplyToReview, WriteReview};
use crate::actors::registry::StaffRemoveReview;
use crate::actors::Answer;
use crate::api::http::error::{ApiError, Code};
use crate::api::http::extract::{AsProfile, Json, ManagedBot, PathBot};
use crate::api::http::routes::{Limit, Route, Subject};
use crate::api::http::staff::Staff;
use crate::api::{http::reply, AppState};
use crate::domain::ids::ProfileId;
use crate::domain::people::Scope;
use crate::domain::reviews::{
    check_review_text, Cursor, Rating, Removal, Remover, Review, ReviewSort,
};
use crate::domain::text::{DecisionReason, ReplyContent, ReviewContent};
use crate::domain::time::Timestamp;

/// Reviews per page: the default and the most.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 100;

const BAD_REVIEW: &str = "the body is not a JSON object, a field is missing, unknown or invalid: rating not a whole number from 1 to 5, content over 2000 characters or holding control or bidirectional formatting characters";
const NO_REVIEW: &str = "no such bot (or the listing is not approved), or no review with this id";

pub fn routes() -> Vec<Route> {
    vec![
        Route::new(__path_list, list)
            .refuses(Code::BadRequest, "sort not `newest` or `rating`, limit not 1 to 100, a cursor this list did not give, or a parameter given twice")
            .about(Subject::Bot),
        Route::new(__path_write, write)
            .refuses(Code::BadRequest, BAD_REVIEW)
            .refuses(Code::Forbidden, "the token lacks the `reviews` scope, or its profile is an owner of the bot")
            .refuses(Code::Conflict, "this profile has already reviewed this bot")
            .about(Subject::Bot),
        Route::new(__path_edit, edit)
            .refuses(Code::BadRequest, BAD_REVIEW)
            .refuses(Code::Forbidden, "the token lacks the `reviews` scope, or its profile did not write this review")
            .refuses(Code::NotFound, NO_REVIEW)
            .about(Subject::Bot),
        Route::new(__path_delete, delete)
            .refuses(Code::Forbidden, "the token lacks the `reviews` scope, or its profile did not write this review")
            .refuses(Code::NotFound, NO_REVIEW)
            .about(Subject::Bot),
        Route::new(__path_reply_to, reply_to)
            .refuses(Code::BadRequest, "content missing, empty, over 2000 characters or holding control or bidirectional formatting characters")
            .refuses(Code::Forbidden, "the token lacks the `bots` scope, or its profile is not an owner of the bot")
            .refuses(Code::NotFound, NO_REVIEW)
            .about(Subject::Bot),
        Route::new(__path_remove, remove)
            .refuses(Code::BadRequest, "reason missing, empty or over 500 characters")
            .refuses(Code::Forbidden, "the token lacks the `staff` scope, or its profile is not `mod` or `admin` (now)")
            .refuses(Code::NotFound, NO_REVIEW)
            .about(Subject::Bot),
    ]
    .into_iter()
    .map(|route| route.limited(Limit::PerBot))
    .collect()
}

/// An owner's reply, as shown.
#[derive(Serialize, ToSchema)]
pub struct ReplyBody<'a> {
    /// The owner who wrote it
    #[schema(value_type = String, format = Uuid)]
    pub author_id: ProfileId,
    #[schema(value_type = String)]
    pub content: &'a str,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

/// A review, as shown.
#[derive(Serialize, ToSchema)]
pub struct ReviewBody<'a> {
    #[schema(value_type = String, format = Uuid)]
    pub id: Uuid,
    /// The profile that wrote it
    #[schema(value_type = String, format = Uuid)]
    pub author_id: ProfileId,
    #[schema(value_type = Rating)]
    pub rating: u8,
    #[schema(value_type = String)]
    pub content: &'a str,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
    /// The owners' reply; null without one
    #[schema(required = true)]
    pub reply: Option<ReplyBody<'a>>,
}

impl<'a> From<&'a Review> for ReviewBody<'a> {
    fn from(review: &'a Review) -> Self {
        Self {
            id: review.id,
            author_id: review.author,
            rating: review.rating.get(),
            content: review.content.as_str(),
            created_at: review.created_at,
            updated_at: review.updated_at,
            reply: review.reply.as_ref().map(|reply| ReplyBody {
                author_id: reply.author,
                content: reply.content.as_str(),
                created_at: reply.at,
            }),
        }
    }
}

/// A page of a bot's reviews.
#[derive(Serialize, ToSchema)]
pub struct ReviewList<'a> {
    /// The average rating of all the bot's reviews; null without any
    #[schema(required = true)]
    pub rating: Option<f64>,
    /// How many reviews the bot has
    pub count: u64,
    pub results: Vec<ReviewBody<'a>>,
    /// Pass as `cursor` for the next page; null on the last page
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// The body of `POST /bots/{id}/reviews`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewReview {
    pub rating: Rating,
    #[serde(default = "empty_content")]
    #[schema(value_type = ReviewContent, required = false)]
    pub content: ReviewContent,
}

fn empty_content() -> ReviewContent {
    ReviewContent::parse(String::new()).unwrap_or_else(|_| unreachable!("0 characters are allowed"))
}

/// The body of `PATCH /bots/{id}/reviews/{review_id}`: fields left out are kept.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewPatch {
    #[serde(default)]
    pub rating: Option<Rating>,
    #[serde(default)]
    pub content: Option<ReviewContent>,
}

/// The body of `PUT /bots/{id}/reviews/{review_id}/reply`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplyPut {
    pub content: ReplyContent,
}

/// The body of `POST /bots/{id}/reviews/{review_id}/remove`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemovalBody {
    pub reason: DecisionReason,
}

fn bad(why: String) -> ApiError {
    Code::BadRequest.with(why)
}

/// `{review_id}`: a UUID, else 404 (no review has it).
fn review_id(request: &HttpRequest) -> Result<Uuid, ApiError> {
    let raw = request.match_info().get("review_id").unwrap_or_default();
    Uuid::parse_str(raw).map_err(|_| Code::NotFound.with(format!("no review with id `{raw}`")))
}

/// The names `sort` takes, for the document (the handler reads them in `list_query`).
#[derive(ToSchema)]
#[allow(dead_code, non_camel_case_types)]
enum ReviewSortName {
    newest,
    rating,
}

/// The list's query: `sort`, `cursor`, `limit`.
fn list_query(query_string: &str) -> Result<(ReviewSort, Option<Cursor>, usize), ApiError> {
    let (mut sort, mut cursor, mut limit) = (None, None, None);
    let pairs = crate::domain::query::pairs(query_string).map_err(|e| bad(e.0))?;
    for (name, value) in pairs {
        let slot = match &*name {
            "sort" => &mut sort,
            "cursor" => &mut cursor,
            "limit" => &mut limit,
            _ => continue,
        };
        if slot.is_some() {
            return Err(bad(format!("`{name}` is given more than once")));
        }
        *slot = Some(value);
    }
    let sort = match sort.as_deref() {
        None | Some("newest") => ReviewSort::Newest,
        Some("rating") => ReviewSort::Rating,
        Some(other) => {
            return Err(bad(format!(
                "sort must be `newest` or `rating`, got `{other}`"
            )))
        }
    };
    let limit = match limit.as_deref() {
        None => DEFAULT_LIMIT,
        Some(raw) => raw
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| bad(format!("limit must be 1 to {MAX_LIMIT}, got `{raw}`")))?,
    };
    let cursor = match cursor.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(Cursor::parse(raw, sort).map_err(bad)?),
    };
    Ok((sort, cursor, limit))
}

/// A bot's reviews, with their average and count, newest first or by rating.
#[utoipa::path(
    get, path = "/bots/{id}/reviews", tag = "reviews", operation_id = "list_reviews",
    params(
        ("sort" = inline(Option<ReviewSortName>), Query, description = "`newest` (default) or `rating` (highest first, newest first among equal ratings); any other value is 400"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Reviews per page, 1 to 100; default 20"),
        ("cursor" = Option<String>, Query, description = "The `next_cursor` of the previous page, with the same `sort`; opaque"),
    ),
    responses(
        (status = 200, description = "A page of reviews", body = ReviewList),
    )
)]
pub async fn list(request: HttpRequest, PathBot(bot): PathBot) -> Result<HttpResponse, ApiError> {
    let (sort, after, limit) = list_query(request.query_string())?;
    let page = bot.ask(ReadReviews { sort, after, limit }).await??;
    Ok(reply::ok(&ReviewList {
        rating: page.average,
        count: page.count,
        results: page.results.iter().map(ReviewBody::from).collect(),
        next_cursor: page.next.map(Cursor::encode),
    }))
}

/// Review a bot as the token's profile: one review per profile per bot.
#[utoipa::path(
    post, path = "/bots/{id}/reviews", tag = "reviews", operation_id = "write_review",
    request_body = NewReview,
    security(("profile_token" = [])),
    responses(
        (status = 201, description = "Written", body = ReviewBody),
    )
)]
pub async fn write(
    who: AsProfile,
    PathBot(bot): PathBot,
    Json(new): Json<NewReview>,
) -> Result<HttpResponse, ApiError> {
    let author = who.require(Scope::Reviews)?;
    // An owner may not review their own bot: the bot's actor decides it, in order with the
    // edits that change its owners (a view read here could be a moment old).
    check_review_text(new.content.as_str()).map_err(bad)?;
    let (answer, answered) = Answer::pair();
    bot.tell(WriteReview {
        author,
        rating: new.rating,
        content: new.content,
        answer,
    })?;
    let review = answered.wait().await?;
    crate::telemetry::review_changed("create");
    Ok(reply::created(&ReviewBody::from(&review)))
}

/// Edit one's own review: fields left out are kept.
#[utoipa::path(
    patch, path = "/bots/{id}/reviews/{review_id}", tag = "reviews", operation_id = "edit_review",
    params(("review_id" = String, Path, format = Uuid, description = "The review's id")),
    request_body = ReviewPatch,
    security(("profile_token" = [])),
    responses(
        (status = 200, description = "Edited", body = ReviewBody),
    )
)]
pub async fn edit(
    who: AsProfile,
    request: HttpRequest,
    PathBot(bot): PathBot,
    Json(patch): Json<ReviewPatch>,
) -> Result<HttpResponse, ApiError> {
    let author = who.require(Scope::Reviews)?;
    let review = review_id(&request)?;
    if let Some(content) = &patch.content {
        check_review_text(content.as_str()).map_err(bad)?;
    }
    let (answer, answered) = Answer::pair();
    bot.tell(EditReview {
        review,
        author,
        rating: patch.rating,
        content: patch.content,
        answer,
    })?;
    let review = answered.wait().await?;
    crate::telemetry::review_changed("edit");
    Ok(reply::ok(&ReviewBody::from(&review)))
}

/// Delete one's own review.
#[utoipa::path(
    delete, path = "/bots/{id}/reviews/{review_id}", tag = "reviews", operation_id = "delete_review",
    params(("review_id" = String, Path, format = Uuid, description = "The review's id")),
    security(("profile_token" = [])),
    responses(
        (status = 204, description = "Deleted"),
    )
)]
pub async fn delete(
    who: AsProfile,
    request: HttpRequest,
    PathBot(bot): PathBot,
) -> Result<HttpResponse, ApiError> {
    let author = who.require(Scope::Reviews)?;
    let review = review_id(&request)?;
    let (answer, answered) = Answer::pair();
    bot.tell(RemoveReview {
        review,
        removal: Removal {
            by: Remover::Author(author),
            reason: None,
        },
        answer,
    })?;
    answered.wait().await?;
    crate::telemetry::review_changed("delete");
    Ok(HttpResponse::NoContent().finish())
}

/// Reply to a review as an owner of the bot: one reply per review, replaced by the next.
#[utoipa::path(
    put, path = "/bots/{id}/reviews/{review_id}/reply", tag = "reviews", operation_id = "reply_to_review",
    params(("review_id" = String, Path, format = Uuid, description = "The review's id")),
    request_body = ReplyPut,
    security(("profile_token" = [])),
    responses(
        (status = 200, description = "The review with its reply", body = ReviewBody),
    )
)]
pub async fn reply_to(
    who: AsProfile,
    request: HttpRequest,
    PathBot(bot): PathBot,
    Json(put): Json<ReplyPut>,
) -> Result<HttpResponse, ApiError> {
    let owner = who.require(Scope::Bots)?;
    // Refused here before the review is looked up (the routes' order of refusals); the bot's
    // actor checks it again in order with the edits that change its owners, and decides.
    if !bot.view().listing.owner_ids.contains(&owner) {
        return Err(Code::Forbidden.with("this profile is not an owner of this bot".into()));
    }
    let review = review_id(&request)?;
    check_review_text(put.content.as_str()).map_err(bad)?;
    let (answer, answered) = Answer::pair();
    bot.tell(ReplyToReview {
        review,
        owner,
        content: put.content,
        answer,
    })?;
    let review = answered.wait().await?;
    crate::telemetry::review_changed("reply");
    Ok(reply::ok(&ReviewBody::from(&review)))
}

/// Remove a review as staff (a `staff` token of a `mod` or `admin` profile, refused in the
/// order of every staff route), with a reason its author and the audit log are shown: one
/// audit entry, `bot.review.remove`, journaled in the same record as the removal.
#[utoipa::path(
    post, path = "/bots/{id}/reviews/{review_id}/remove", tag = "reviews", operation_id = "remove_review",
    params(("review_id" = String, Path, format = Uuid, description = "The review's id")),
    request_body = RemovalBody,
    security(("profile_token" = [])),
    responses(
        (status = 204, description = "Removed"),
    )
)]
pub async fn remove(
    staff: Staff,
    state: web::Data<AppState>,
    request: HttpRequest,
    // Any listing, whatever its status: an abusive review of a delisted bot is removed too.
    ManagedBot(bot): ManagedBot,
    Json(body): Json<RemovalBody>,
) -> Result<HttpResponse, ApiError> {
    let review = review_id(&request)?;
    state
        .registry
        .send(StaffRemoveReview {
            bot: bot.id,
            staff: staff.id(),
            review,
            reason: body.reason,
        })
        .await??;
    crate::telemetry::review_changed("remove");
    Ok(HttpResponse::NoContent().finish())
}
