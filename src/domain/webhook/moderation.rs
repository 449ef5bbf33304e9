//! The event kinds of CONTRACT section 14 besides votes: `review.create` and the listing's
//! decisions (`listing.approved`, `listing.denied`, `listing.delisted`). Each is one
//! [`EventKind`] implementation and one row of the `event_kinds!` table in `events.rs`; a bot
//! is sent one only when its `webhook_events` names it.
//!
//! These kinds were never sent by an earlier build, so they have no classic body: the `legacy`
//! format sends botlist's own (`signed`) body for them, and docs/API.md says so.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use super::events::{numeric_id, v1_project, Event, EventKind, Head, Wants};
use super::EventBot;
use crate::domain::ids::ProfileId;
use crate::domain::reviews::Review;
use crate::domain::time::Timestamp;

/// The body every one of these kinds shares, per format, around its own `data`.
fn bodies(event: Event, bot: &EventBot, head: Head, data: Value) -> [Value; 3] {
    let signed = json!({
        "type": event.name(),
        "id": head.id,
        "created_at": head.created_at,
        "data": named(bot, data.clone()),
    });
    let mut v1_data = data.clone();
    v1_data["id"] = json!(numeric_id(head.id));
    v1_data["created_at"] = json!(head.created_at);
    v1_data["project"] = v1_project(bot);
    let v1 = json!({ "type": event.name(), "data": v1_data });
    let standard = json!({
        "type": event.name(),
        "timestamp": head.created_at,
        "data": named(bot, data),
    });
    [signed, v1, standard]
}

/// The kind's own `data` with the bot it is about: the `data` of the `signed` and `standard`
/// bodies, and of the vote stream's event.
fn named(bot: &EventBot, mut data: Value) -> Value {
    data["bot"] = json!({ "id": bot.id, "platform_id": bot.platform_id });
    data
}

/// `review.create`: a review written (not an edit or a reply), as it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct ReviewCreated {
    pub bot: EventBot,
    pub review: StoredReview,
}

/// What a `review.create` delivery stores: the review when it was written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredReview {
    pub id: Uuid,
    pub author: ProfileId,
    pub rating: u8,
    pub content: String,
    pub created_at: Timestamp,
}

impl ReviewCreated {
    pub fn of(bot: EventBot, review: &Review) -> Self {
        Self {
            bot,
            review: StoredReview {
                id: review.id,
                author: review.author,
                rating: review.rating.get(),
                content: review.content.as_str().to_owned(),
                created_at: review.created_at,
            },
        }
    }

    fn data(&self) -> Value {
        let review = &self.review;
        json!({
            "review": {
                "id": review.id,
                "author_id": review.author,
                "rating": review.rating,
                "content": review.content,
                "created_at": review.created_at,
            }
        })
    }
}

impl EventKind for ReviewCreated {
    type Stored = StoredReview;

    fn bot(&self) -> EventBot {
        self.bot
    }

    fn stored(&self) -> StoredReview {
        self.review.clone()
    }

    fn from_stored(bot: EventBot, review: StoredReview) -> Self {
        Self { bot, review }
    }

    fn signed(&self, head: Head) -> Value {
        let [signed, _, _] = bodies(Event::ReviewCreate, &self.bot, head, self.data());
        signed
    }

    fn legacy(&self, head: Head) -> Value {
        self.signed(head)
    }

    fn v1(&self, head: Head) -> Value {
        let [_, v1, _] = bodies(Event::ReviewCreate, &self.bot, head, self.data());
        v1
    }

    fn standard(&self, head: Head) -> Value {
        let [_, _, standard] = bodies(Event::ReviewCreate, &self.bot, head, self.data());
        standard
    }

    fn receives(wants: &Wants) -> bool {
        wants.chose(Event::ReviewCreate)
    }

    const ON_STREAM: bool = true;

    fn stream_data(&self) -> Value {
        named(&self.bot, self.data())
    }
}

/// One decision on a listing, a kind each: its status now and the reason given (none for an
/// approval). Stored as the reason alone.
macro_rules! listing_decision {
    ($(#[$doc:meta])* $kind:ident, $event:ident, $status:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $kind {
            pub bot: EventBot,
            pub reason: Option<String>,
        }

        impl $kind {
            fn data(&self) -> Value {
                json!({ "status": $status, "reason": self.reason })
            }
        }

        impl EventKind for $kind {
            type Stored = Option<String>;

            fn bot(&self) -> EventBot {
                self.bot
            }

            fn stored(&self) -> Option<String> {
                self.reason.clone()
            }

            fn from_stored(bot: EventBot, reason: Option<String>) -> Self {
                Self { bot, reason }
            }

            fn signed(&self, head: Head) -> Value {
                let [signed, _, _] = bodies(Event::$event, &self.bot, head, self.data());
                signed
            }

            fn legacy(&self, head: Head) -> Value {
                self.signed(head)
            }

            fn v1(&self, head: Head) -> Value {
                let [_, v1, _] = bodies(Event::$event, &self.bot, head, self.data());
                v1
            }

            fn standard(&self, head: Head) -> Value {
                let [_, _, standard] = bodies(Event::$event, &self.bot, head, self.data());
                standard
            }

            fn receives(wants: &Wants) -> bool {
                wants.chose(Event::$event)
            }

            const ON_STREAM: bool = true;

            fn stream_data(&self) -> Value {
                named(&self.bot, self.data())
            }
        }
    };
}

listing_decision!(
    /// `listing.approved`: the listing is public from now on.
    ListingApproval, ListingApproved, "approved");
listing_decision!(
    /// `listing.denied`: the listing was denied, with the reason; an owner's edit sends it back
    /// to `pending`.
    ListingDenial, ListingDenied, "denied");
listing_decision!(
    /// `listing.delisted`: the listing was taken down, with the reason; the last delivery the
    /// bot is sent.
    ListingDelisting, ListingDelisted, "delisted");
