//! A bot's reviews (CONTRACT section 14): at most one per profile, a rating of 1 to 5 and a
//! text, edited or deleted by its author, one reply by an owner, removed by staff with a reason.
//!
//! [`Reviews`] is part of the bot's state (`BotState::reviews`), changed only by the records
//! `ReviewSaved` and `ReviewRemoved` (applied by the bot's actor and by replay alike). It keeps
//! two orders as sorted sets beside the reviews, so a page of either order is a range read, and
//! the sum of the ratings, so the average is one division. Files store the reviews only; the
//! orders and the sum are rebuilt when they are read.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::ids::ProfileId;
use super::text::{DecisionReason, ReplyContent, ReviewContent};
use super::time::Timestamp;

/// A review's rating: a whole number from 1 to 5. Read from any JSON number with no fraction
/// (`4` or `4.0`: both are integers to JSON Schema, so to the OpenAPI document), as the stats
/// post reads its counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(into = "u8")]
pub struct Rating(u8);

impl<'de> Deserialize<'de> for Rating {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RatingVisitor)
    }
}

struct RatingVisitor;

impl serde::de::Visitor<'_> for RatingVisitor {
    type Value = Rating;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a whole number from 1 to 5")
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Rating, E> {
        Rating::try_from(value).map_err(E::custom)
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Rating, E> {
        Rating::try_from(i64::try_from(value).unwrap_or(i64::MAX)).map_err(E::custom)
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Rating, E> {
        if value.fract() != 0.0 || !(1.0..=5.0).contains(&value) {
            return Err(E::custom(format!(
                "rating must be a whole number from 1 to 5, got {value}"
            )));
        }
        // In 1..=5 with no fraction: the cast is exact.
        Rating::try_from(value as i64).map_err(E::custom)
    }
}

impl Rating {
    pub fn get(self) -> u8 {
        self.0
    }
}

impl TryFrom<i64> for Rating {
    type Error = String;

    fn try_from(value: i64) -> Result<Self, String> {
        match u8::try_from(value) {
            Ok(rating @ 1..=5) => Ok(Self(rating)),
            _ => Err(format!(
                "rating must be a whole number from 1 to 5, got {value}"
            )),
        }
    }
}

impl From<Rating> for u8 {
    fn from(rating: Rating) -> u8 {
        rating.0
    }
}

impl utoipa::PartialSchema for Rating {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1))
            .maximum(Some(5))
            .description(Some("A whole number from 1 to 5"))
            .into()
    }
}

impl utoipa::ToSchema for Rating {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("Rating")
    }
}

/// Bidirectional controls reorder how the text around them is shown (a review could seem to
/// say what it does not): refused in reviews and replies. Other format characters stay
/// allowed in this multiline text, as in every other multiline field: the zero-width joiner
/// makes emoji sequences.
pub fn check_review_text(text: &str) -> Result<(), String> {
    match text
        .chars()
        .find(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
    {
        Some(c) => Err(format!(
            "content must not contain bidirectional formatting characters, got U+{:04X}",
            u32::from(c)
        )),
        None => Ok(()),
    }
}

/// An owner's reply to a review.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewReply {
    pub author: ProfileId,
    pub content: ReplyContent,
    pub at: Timestamp,
}

/// One review, whole: what a `ReviewSaved` record carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    pub id: Uuid,
    pub author: ProfileId,
    pub rating: Rating,
    pub content: ReviewContent,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub reply: Option<ReviewReply>,
}

/// Who removed a review, as its `ReviewRemoved` record says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Remover {
    /// Its author, deleting it.
    Author(ProfileId),
    /// A staff profile, with a reason: a management change, so its record carries its audit
    /// log entry (`BotActor`'s `RemoveReview`).
    Staff(ProfileId),
}

/// Removal of a review, as a record stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removal {
    pub by: Remover,
    pub reason: Option<DecisionReason>,
}

/// The orders a list of reviews comes in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReviewSort {
    /// Newest first.
    #[default]
    Newest,
    /// Highest rating first, newest first among equal ratings.
    Rating,
}

/// Where a page starts: the last review of the page before, as its order places it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cursor {
    Newest(Timestamp, Uuid),
    Rating(u8, Timestamp, Uuid),
}

impl Cursor {
    /// The text a page's `next_cursor` says: opaque to clients.
    pub fn encode(self) -> String {
        match self {
            Cursor::Newest(at, id) => format!("n.{}.{}", at.millis(), id.simple()),
            Cursor::Rating(rating, at, id) => {
                format!("r.{rating}.{}.{}", at.millis(), id.simple())
            }
        }
    }

    /// A cursor for `sort`, or why not (a 400 naming `cursor`).
    pub fn parse(text: &str, sort: ReviewSort) -> Result<Self, String> {
        let bad = || format!("cursor `{text}` is not one this list gave for sort `{sort:?}`");
        let parts: Vec<&str> = text.split('.').collect();
        let at = |s: &str| {
            s.parse::<i64>()
                .map(Timestamp::from_millis)
                .map_err(|_| bad())
        };
        let id = |s: &str| Uuid::try_parse(s).map_err(|_| bad());
        match (sort, parts.as_slice()) {
            (ReviewSort::Newest, ["n", millis, uuid]) => Ok(Cursor::Newest(at(millis)?, id(uuid)?)),
            (ReviewSort::Rating, ["r", rating, millis, uuid]) => {
                let rating = rating.parse::<u8>().map_err(|_| bad())?;
                Ok(Cursor::Rating(rating, at(millis)?, id(uuid)?))
            }
            _ => Err(bad()),
        }
    }
}

type NewestKey = (Reverse<Timestamp>, Uuid);
type RatingKey = (Reverse<u8>, Reverse<Timestamp>, Uuid);

/// A bot's count of reviews and the sum of their ratings, as a view shows them to readers
/// that do not ask the actor (`GET /projects/@me`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReviewFigures {
    pub count: u64,
    pub sum: u64,
}

impl ReviewFigures {
    /// The average rating; `None` without reviews.
    pub fn average(self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }
}

/// A bot's reviews, with both orders and the sum of the ratings kept as they change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reviews {
    by_id: HashMap<Uuid, Review>,
    by_author: HashMap<ProfileId, Uuid>,
    newest: BTreeSet<NewestKey>,
    by_rating: BTreeSet<RatingKey>,
    sum: u64,
}

fn newest_key(review: &Review) -> NewestKey {
    (Reverse(review.created_at), review.id)
}

fn rating_key(review: &Review) -> RatingKey {
    (
        Reverse(review.rating.get()),
        Reverse(review.created_at),
        review.id,
    )
}

impl Reviews {
    pub fn get(&self, id: Uuid) -> Option<&Review> {
        self.by_id.get(&id)
    }

    /// The review `author` wrote, if any.
    pub fn by_author(&self, author: ProfileId) -> Option<&Review> {
        self.by_author
            .get(&author)
            .and_then(|id| self.by_id.get(id))
    }

    pub fn count(&self) -> u64 {
        self.by_id.len() as u64
    }

    /// The average rating; `None` without reviews.
    pub fn average(&self) -> Option<f64> {
        self.figures().average()
    }

    /// How many reviews and the sum of their ratings: what a view publishes.
    pub fn figures(&self) -> ReviewFigures {
        ReviewFigures {
            count: self.count(),
            sum: self.sum,
        }
    }

    /// Keeps a review (new, or its new state): the one change besides removal.
    pub fn save(&mut self, review: Review) {
        self.remove(review.id);
        self.newest.insert(newest_key(&review));
        self.by_rating.insert(rating_key(&review));
        self.sum += u64::from(review.rating.get());
        self.by_author.insert(review.author, review.id);
        self.by_id.insert(review.id, review);
    }

    /// Forgets a review; nothing when there is none by that id.
    pub fn remove(&mut self, id: Uuid) -> Option<Review> {
        let review = self.by_id.remove(&id)?;
        self.newest.remove(&newest_key(&review));
        self.by_rating.remove(&rating_key(&review));
        self.sum -= u64::from(review.rating.get());
        if self.by_author.get(&review.author) == Some(&id) {
            self.by_author.remove(&review.author);
        }
        Some(review)
    }

    /// Up to `limit` reviews in `sort` order after `after`, and the cursor of the next page
    /// (`None` on the last page): a range read of the order's set.
    pub fn page(
        &self,
        sort: ReviewSort,
        after: Option<Cursor>,
        limit: usize,
    ) -> (Vec<&Review>, Option<Cursor>) {
        use std::ops::Bound::{Excluded, Unbounded};
        let ids: Vec<Uuid> = match (sort, after) {
            (ReviewSort::Newest, Some(Cursor::Newest(at, id))) => self
                .newest
                .range((Excluded((Reverse(at), id)), Unbounded))
                .take(limit + 1)
                .map(|key| key.1)
                .collect(),
            (ReviewSort::Rating, Some(Cursor::Rating(rating, at, id))) => self
                .by_rating
                .range((Excluded((Reverse(rating), Reverse(at), id)), Unbounded))
                .take(limit + 1)
                .map(|key| key.2)
                .collect(),
            (ReviewSort::Newest, _) => self.newest.iter().take(limit + 1).map(|k| k.1).collect(),
            (ReviewSort::Rating, _) => self.by_rating.iter().take(limit + 1).map(|k| k.2).collect(),
        };
        let more = ids.len() > limit;
        let page: Vec<&Review> = ids
            .iter()
            .take(limit)
            .filter_map(|id| self.by_id.get(id))
            .collect();
        let next = page.last().filter(|_| more).map(|last| match sort {
            ReviewSort::Newest => Cursor::Newest(last.created_at, last.id),
            ReviewSort::Rating => Cursor::Rating(last.rating.get(), last.created_at, last.id),
        });
        (page, next)
    }

    /// Every review, in id order: what files store.
    pub fn in_id_order(&self) -> Vec<&Review> {
        let mut all: Vec<&Review> = self.by_id.values().collect();
        all.sort_unstable_by_key(|review| review.id);
        all
    }
}

impl Serialize for Reviews {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.in_id_order().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Reviews {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = Vec::<Review>::deserialize(deserializer)?;
        let mut reviews = Reviews::default();
        for review in stored {
            reviews.save(review);
        }
        Ok(reviews)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(n: u128, author: u128, rating: u8, at: i64) -> Review {
        Review {
            id: Uuid::from_u128(n),
            author: ProfileId::parse(&Uuid::from_u128(author).to_string()).expect("a uuid"),
            rating: Rating::try_from(i64::from(rating)).expect("1 to 5"),
            content: ReviewContent::parse(String::new()).expect("empty is allowed"),
            created_at: Timestamp::from_millis(at),
            updated_at: Timestamp::from_millis(at),
            reply: None,
        }
    }

    #[test]
    fn ratings_outside_one_to_five_are_refused() {
        for bad in [0, 6, -1, 256] {
            assert!(Rating::try_from(bad).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<Rating>("4.5").is_err());
        assert_eq!(serde_json::from_str::<Rating>("5").expect("5").get(), 5);
    }

    #[test]
    fn pages_follow_each_order_and_the_average_follows_changes() {
        let mut reviews = Reviews::default();
        for (n, rating) in [(1, 3), (2, 5), (3, 1), (4, 5)] {
            reviews.save(review(n, n, rating, n as i64 * 1000));
        }
        assert_eq!(reviews.average(), Some(3.5));
        let ids = |page: Vec<&Review>| page.iter().map(|r| r.id.as_u128()).collect::<Vec<_>>();
        let (first, next) = reviews.page(ReviewSort::Rating, None, 3);
        assert_eq!(ids(first), [4, 2, 1]);
        let next = Cursor::parse(&next.expect("more").encode(), ReviewSort::Rating).expect("ok");
        let (rest, none) = reviews.page(ReviewSort::Rating, Some(next), 3);
        assert_eq!((ids(rest), none), (vec![3], None));
        assert_eq!(
            ids(reviews.page(ReviewSort::Newest, None, 10).0),
            [4, 3, 2, 1]
        );
        // An edit moves it in the rating order; a removal leaves the average.
        reviews.save(review(3, 3, 5, 3000));
        reviews.remove(Uuid::from_u128(1));
        assert_eq!(reviews.average(), Some(5.0));
        assert!(reviews
            .by_author(ProfileId::parse(&Uuid::from_u128(1).to_string()).expect("a uuid"))
            .is_none());
        let bytes = rmp_serde::to_vec(&reviews).expect("encodes");
        let back: Reviews = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(back, reviews);
    }

    #[test]
    fn a_cursor_of_the_other_order_is_refused() {
        let cursor = Cursor::Newest(Timestamp::from_millis(5), Uuid::from_u128(9)).encode();
        assert!(Cursor::parse(&cursor, ReviewSort::Rating).is_err());
        assert!(Cursor::parse("n.x.y", ReviewSort::Newest).is_err());
    }

    #[test]
    fn bidirectional_controls_are_refused() {
        assert!(check_review_text("good \u{202E}dab").is_err());
        assert!(check_review_text("family 👨\u{200D}👩\u{200D}👧").is_ok());
    }
}
