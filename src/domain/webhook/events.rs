//! The kinds of webhook event. Each is one [`EventKind`] implementation (what it is made of, what
//! it stores, what each wire format sends, which bots receive it) and one row of the
//! `event_kinds!` table at the end of this file, which makes [`Event`] (the names) and
//! [`Content`] (one arm per kind) and dispatches to the implementations. Nothing else names a
//! kind: the outbox queues any kind (`Outbox::queue`), the stored shape
//! (`persist/codec/deliveries.rs`) and the wire bodies (`webhooks/wire.rs`) are written once,
//! generic over [`EventKind`], through [`KindVisitor`] and [`StoredReader`].
//!
//! The record that makes a kind's delivery is `Record::DeliverySaved`, which stores it whole
//! (what `Outbox::queue` makes for any kind); only `vote.create` rides on its vote's own record
//! (`Record::VotedWithDelivery`), so that a vote journals nothing more than itself.

use std::fmt::Debug;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use super::expiry::VoteExpired;
use super::moderation::{ListingApproval, ListingDelisting, ListingDenial, ReviewCreated};
use super::EventBot;
use crate::domain::time::Timestamp;
use crate::domain::votes::{vote_window, VoteCounts, Voter};
use crate::domain::weekend::{self, Weight};

/// What every body knows besides its kind: the delivery's id and when it was queued.
#[derive(Clone, Copy, Debug)]
pub struct Head {
    pub id: Uuid,
    pub created_at: Timestamp,
}

/// What a bot's webhook settings say about the events it is sent.
#[derive(Clone, Copy, Debug)]
pub struct Wants {
    /// It has a `webhook_url`.
    pub url: bool,
    /// The kinds it chose (`webhook_events`).
    pub events: EventSet,
}

impl Event {
    /// Whether a delivery of this kind is still sent while the listing is not public: only the
    /// listing's decisions are (a denial, a delisting), which is why `listing.delisted` is the
    /// last delivery a delisted bot is sent; a delivery of any other kind that comes due while
    /// the listing is not public is given up (CONTRACT section 14: they stop).
    pub fn sent_while_hidden(self) -> bool {
        match self {
            Event::ListingApproved | Event::ListingDenied | Event::ListingDelisted => true,
            Event::VoteCreate | Event::Test | Event::ReviewCreate | Event::VoteExpired => false,
        }
    }
}

impl Wants {
    /// A `webhook_url`, and `event` among the chosen kinds.
    pub(super) fn chose(&self, event: Event) -> bool {
        self.url && self.events.has(event)
    }
}

/// The kinds of event a bot chose to be sent (`webhook_events`): a set of [`Event`]s, written
/// as a list of names. Votes only by default, so a receiver set up before these kinds existed
/// is sent nothing new; a test event is sent whenever an operator asks, whatever the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventSet(u32);

impl Default for EventSet {
    fn default() -> Self {
        Self::of(&[Event::VoteCreate])
    }
}

impl EventSet {
    pub fn of(events: &[Event]) -> Self {
        Self(events.iter().fold(0, |bits, event| bits | event.bit()))
    }

    pub fn has(self, event: Event) -> bool {
        self.0 & event.bit() != 0
    }

    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The chosen kinds, in the table's order.
    pub fn events(self) -> impl Iterator<Item = Event> {
        Event::ALL
            .iter()
            .copied()
            .filter(move |event| self.has(*event))
    }
}

impl Serialize for EventSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.events())
    }
}

impl<'de> Deserialize<'de> for EventSet {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let events = Vec::<Event>::deserialize(deserializer)?;
        if events.len() > Event::ALL.len() {
            return Err(serde::de::Error::custom(
                "webhook_events names a kind more than once",
            ));
        }
        Ok(Self::of(&events))
    }
}

impl utoipa::PartialSchema for EventSet {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
        let names: Vec<&str> = Event::ALL.iter().map(|event| event.name()).collect();
        ArrayBuilder::new()
            .items(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(names)))
            // Counted as sent, as `deserialize` does: a repeat counts toward the bound.
            .max_items(Some(Event::ALL.len()))
            .description(Some("The kinds of event the bot's webhook (and vote stream) is sent, each at most once in effect (a repeat counts toward the bound and means nothing more); default `[\"vote.create\"]`"))
            .into()
    }
}

impl utoipa::ToSchema for EventSet {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("WebhookEvents")
    }
}

/// One kind of webhook event.
///
/// Its stored shape is `[bot, platform_id, stored]` (see `persist/codec/deliveries.rs`): what
/// [`EventKind::stored`] gives is the third element, and the bytes of a kind already stored must
/// never change (a delivery is rendered from them on every attempt, after any restart).
pub trait EventKind: Clone + Debug + PartialEq + Into<Content> + Send + Sync + 'static {
    /// What it stores beside the bot (`()` for nothing: MessagePack's nil).
    type Stored: Serialize + DeserializeOwned;

    /// The bot it is about, as its bodies name it.
    fn bot(&self) -> EventBot;
    fn stored(&self) -> Self::Stored;
    fn from_stored(bot: EventBot, stored: Self::Stored) -> Self;

    /// The body of the `signed` format (botlist's event).
    fn signed(&self, head: Head) -> Value;
    /// The body of the `legacy` format (the classic bot-list body).
    fn legacy(&self, head: Head) -> Value;
    /// The body of the `v1` format: `{"type", "data"}` as the webhook classes of
    /// @top-gg/sdk 4.0.0 and topggpy 2.0.0 parse it, every id numeric text.
    fn v1(&self, head: Head) -> Value;
    /// The body of the `standard` format (Standard Webhooks): `{"type", "timestamp", "data"}`.
    fn standard(&self, head: Head) -> Value;

    /// Whether a bot with these settings is sent this kind of event.
    fn receives(wants: &Wants) -> bool;

    /// Whether the bot's live vote stream is sent this kind too (CONTRACT section 14: "a bot's
    /// webhook (and its vote stream)"), as `event: <name>` with [`EventKind::stream_data`],
    /// once the change is durable, when the bot's `webhook_events` names it (a URL or not).
    /// Written for every kind, so a new kind says whether the stream carries it.
    const ON_STREAM: bool;

    /// What the stream's event carries: the webhook body's `data` (the `signed` and `standard`
    /// formats'). Read only for a kind [`EventKind::ON_STREAM`].
    fn stream_data(&self) -> Value;
}

/// `vote.create`: a vote at the delivery's `created_at`, with the bot's counts just after it.
#[derive(Clone, Debug, PartialEq)]
pub struct VoteCreated {
    pub bot: EventBot,
    pub voter: Arc<Voter>,
    pub counts: VoteCounts,
    /// What the vote counted (more than 1 on a weekend with a multiplier).
    pub weight: Weight,
}

/// A vote's delivery as files store it.
#[derive(Serialize, Deserialize)]
pub struct StoredVote {
    voter: Arc<Voter>,
    vote_count: u64,
    monthly_vote_count: u64,
    /// Left out when 1 (and read as 1 from files of earlier builds).
    #[serde(
        default = "weekend::single",
        skip_serializing_if = "weekend::is_single"
    )]
    weight: Weight,
}

impl EventKind for VoteCreated {
    type Stored = StoredVote;

    fn bot(&self) -> EventBot {
        self.bot
    }

    fn stored(&self) -> StoredVote {
        StoredVote {
            voter: Arc::clone(&self.voter),
            vote_count: self.counts.vote_count,
            monthly_vote_count: self.counts.monthly_vote_count,
            weight: self.weight,
        }
    }

    fn from_stored(bot: EventBot, stored: StoredVote) -> Self {
        Self {
            bot,
            voter: stored.voter,
            counts: VoteCounts {
                vote_count: stored.vote_count,
                monthly_vote_count: stored.monthly_vote_count,
            },
            weight: stored.weight,
        }
    }

    fn signed(&self, head: Head) -> Value {
        let (bot, voter, voted_at) = (&self.bot, &self.voter, head.created_at);
        let mut body = json!({
            "type": Event::VoteCreate.name(),
            "id": head.id,
            "created_at": voted_at,
            "data": {
                "bot": { "id": bot.id, "platform_id": bot.platform_id },
                "user": { "id": voter.id, "username": voter.username, "avatar": voter.avatar },
                "voted_at": voted_at,
                "expires_at": voted_at.plus(vote_window()),
                "vote_count": self.counts.vote_count,
                "monthly_vote_count": self.counts.monthly_vote_count,
            }
        });
        // Only a vote that counted more than once says so: every other body stays byte for
        // byte what earlier builds sent (a retry after an upgrade included).
        if self.weight > 1 {
            body["data"]["weight"] = json!(self.weight);
        }
        body
    }

    fn legacy(&self, _: Head) -> Value {
        json!({
            "bot": self.bot.platform_id,
            "user": self.voter.id,
            "type": "upvote",
            "isWeekend": self.weight > 1,
            "query": "",
        })
    }

    fn v1(&self, head: Head) -> Value {
        let voted_at = head.created_at;
        json!({
            "type": Event::VoteCreate.name(),
            "data": {
                "id": numeric_id(head.id),
                "weight": self.weight,
                "created_at": voted_at,
                "expires_at": voted_at.plus(vote_window()),
                "project": v1_project(&self.bot),
                "query": {},
                "user": {
                    "id": self.voter.id,
                    "platform_id": self.voter.id,
                    "name": self.voter.username,
                    "avatar_url": self.voter.avatar,
                },
            }
        })
    }

    fn standard(&self, head: Head) -> Value {
        let (bot, voter, voted_at) = (&self.bot, &self.voter, head.created_at);
        json!({
            "type": Event::VoteCreate.name(),
            "timestamp": voted_at,
            "data": {
                "bot": { "id": bot.id, "platform_id": bot.platform_id },
                "user": { "id": voter.id, "username": voter.username, "avatar": voter.avatar },
                "voted_at": voted_at,
                "expires_at": voted_at.plus(vote_window()),
                "weight": self.weight,
                "vote_count": self.counts.vote_count,
                "monthly_vote_count": self.counts.monthly_vote_count,
            }
        })
    }

    fn receives(wants: &Wants) -> bool {
        wants.chose(Event::VoteCreate)
    }

    /// Votes are the stream's own `vote` entries, with an id and history behind them.
    const ON_STREAM: bool = false;

    fn stream_data(&self) -> Value {
        Value::Null
    }
}

/// `webhook.test`: an operator's test event, naming the bot, and (for the `v1` format, whose
/// receivers read a user) the bot's first owner with a platform id, when it has one.
#[derive(Clone, Debug, PartialEq)]
pub struct TestEvent {
    pub bot: EventBot,
    pub owner: Option<TestOwner>,
}

/// The user a test event names: an owner of the bot, by its platform id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestOwner {
    pub platform_id: crate::domain::ids::Snowflake,
    pub name: String,
    pub avatar: Option<crate::domain::text::HttpUrl>,
}

impl EventKind for TestEvent {
    /// Nil without an owner: the bytes earlier builds stored (`()`), which read back as none.
    type Stored = Option<TestOwner>;

    fn bot(&self) -> EventBot {
        self.bot
    }

    fn stored(&self) -> Option<TestOwner> {
        self.owner.clone()
    }

    fn from_stored(bot: EventBot, owner: Option<TestOwner>) -> Self {
        Self { bot, owner }
    }

    fn v1(&self, _: Head) -> Value {
        // Without an owner that has a platform id, user 0: the receivers convert every id to
        // a number, so it cannot be left out or null.
        let user = match &self.owner {
            Some(owner) => json!({
                "id": owner.platform_id,
                "platform_id": owner.platform_id,
                "name": owner.name,
                "avatar_url": owner.avatar,
            }),
            None => json!({ "id": "0", "platform_id": "0", "name": "", "avatar_url": null }),
        };
        json!({
            "type": Event::Test.name(),
            "data": { "project": v1_project(&self.bot), "user": user }
        })
    }

    fn standard(&self, head: Head) -> Value {
        json!({
            "type": Event::Test.name(),
            "timestamp": head.created_at,
            "data": { "bot": { "id": self.bot.id, "platform_id": self.bot.platform_id } }
        })
    }

    fn signed(&self, head: Head) -> Value {
        json!({
            "type": Event::Test.name(),
            "id": head.id,
            "created_at": head.created_at,
            "data": { "bot": { "id": self.bot.id, "platform_id": self.bot.platform_id } }
        })
    }

    fn legacy(&self, _: Head) -> Value {
        json!({
            "bot": self.bot.platform_id,
            "user": "0",
            "type": "test",
            "isWeekend": false,
            "query": "",
        })
    }

    fn receives(wants: &Wants) -> bool {
        wants.url
    }

    /// An operator's check of the webhook alone.
    const ON_STREAM: bool = false;

    fn stream_data(&self) -> Value {
        Value::Null
    }
}

/// A delivery's id as the `v1` receivers read ids: numeric text (topggpy converts it with
/// `int()`), the id's first 63 bits, the same for every attempt.
pub fn numeric_id(id: Uuid) -> String {
    let bytes = id.as_bytes();
    let mut first = [0u8; 8];
    first.copy_from_slice(&bytes[..8]);
    (u64::from_be_bytes(first) >> 1).to_string()
}

/// The bot as the `v1` bodies name it: a project whose id is its platform snowflake.
pub(super) fn v1_project(bot: &EventBot) -> Value {
    json!({
        "id": bot.platform_id,
        "type": "bot",
        "platform": "discord",
        "platform_id": bot.platform_id,
    })
}

/// Bodies rendered when the delivery was queued, by a build that stored them so (journals and
/// snapshots of format versions up to 3): sent as they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedBodies {
    pub event: Event,
    pub signed: String,
    pub legacy: String,
}

/// Code written once for every kind: called with the kind a [`Content`] holds.
pub trait KindVisitor {
    type Output;
    fn visit<K: EventKind>(self, kind: &K) -> Self::Output;
}

/// Reads what a kind stores, for [`Content::read_stored`].
pub trait StoredReader<E> {
    fn read<T: DeserializeOwned>(self) -> Result<T, E>;
}

/// The table of kinds: `Variant(Kind) = "name"`. `Variant` names both the [`Event`] and the
/// [`Content`] arm; the name is what bodies, headers, files and the admin API say.
macro_rules! event_kinds {
    ($($variant:ident($kind:ty) = $name:literal,)+) => {
        /// A kind of event, by name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub enum Event {
            $(#[serde(rename = $name)] $variant,)+
        }

        // Written out, not derived: the derive does not see a `rename` that comes through this
        // macro, and documented the variants' Rust names (`VoteCreate`) instead of the names
        // the server sends.
        impl utoipa::PartialSchema for Event {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($name),+]))
                    .description(Some("A kind of event, by name."))
                    .into()
            }
        }

        impl ToSchema for Event {}

        impl Event {
            /// Every kind, in the table's order.
            pub const ALL: &'static [Event] = &[$(Event::$variant,)+];

            /// Its bit in an [`EventSet`]: its place in the table.
            fn bit(self) -> u32 {
                1 << (self as u32)
            }

            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)+
                }
            }

            /// Whether the bot's vote stream is sent this kind ([`EventKind::ON_STREAM`]).
            pub fn on_stream(self) -> bool {
                match self {
                    $(Self::$variant => <$kind as EventKind>::ON_STREAM,)+
                }
            }
        }

        /// What a delivery's bodies are made of: one arm per kind, or the bodies an earlier
        /// build rendered.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Content {
            $($variant($kind),)+
            Rendered(Arc<RenderedBodies>),
        }

        $(impl From<$kind> for Content {
            fn from(kind: $kind) -> Self {
                Self::$variant(kind)
            }
        })+

        impl Content {
            pub fn event(&self) -> Event {
                match self {
                    $(Self::$variant(_) => Event::$variant,)+
                    Self::Rendered(bodies) => bodies.event,
                }
            }

            /// The stream's event for this, if its kind is on the stream: its kind and `data`.
            pub fn stream_event(&self) -> Option<(Event, Value)> {
                match self {
                    $(Self::$variant(kind) if <$kind as EventKind>::ON_STREAM => {
                        Some((Event::$variant, kind.stream_data()))
                    })+
                    _ => None,
                }
            }

            /// `visitor` with the kind this holds; the bodies of an earlier build otherwise.
            pub fn visit<V: KindVisitor>(&self, visitor: V) -> Result<V::Output, &RenderedBodies> {
                match self {
                    $(Self::$variant(kind) => Ok(visitor.visit(kind)),)+
                    Self::Rendered(bodies) => Err(bodies),
                }
            }

            /// The content of a stored delivery of `event` about `bot`, whose kind's stored
            /// part `reader` reads.
            pub fn read_stored<E, R: StoredReader<E>>(
                event: Event,
                bot: EventBot,
                reader: R,
            ) -> Result<Self, E> {
                Ok(match event {
                    $(Event::$variant => Self::$variant(<$kind>::from_stored(bot, reader.read()?)),)+
                })
            }
        }
    };
}

event_kinds! {
    VoteCreate(VoteCreated) = "vote.create",
    Test(TestEvent) = "webhook.test",
    ReviewCreate(ReviewCreated) = "review.create",
    ListingApproved(ListingApproval) = "listing.approved",
    ListingDenied(ListingDenial) = "listing.denied",
    ListingDelisted(ListingDelisting) = "listing.delisted",
    VoteExpired(VoteExpired) = "vote.expired",
}
