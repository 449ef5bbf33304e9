//! Vote webhooks: the formats, one delivery and its retries, and a bot's outbox.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::Duration;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use super::ids::{BotId, Snowflake};
use super::time::Timestamp;
use super::votes::{vote_window, VoteCounts, Voter};
use super::weekend::{self, Weight};

/// The bot an event is about, as the event's bodies name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventBot {
    pub id: BotId,
    pub platform_id: Snowflake,
}

/// How deliveries to a bot's receiver are shaped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    /// botlist's event, signed with HMAC-SHA256 of the secret.
    #[default]
    Signed,
    /// The classic bot-list vote body, with the secret as the `Authorization` header.
    Legacy,
}

/// By name (JSON and files) or by index (MessagePack written by other encoders, never a JSON
/// body: `"webhook_format": 0` is refused); anything else is refused in the API's words, not as
/// a malformed document.
impl<'de> Deserialize<'de> for WebhookFormat {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor {
            by_index: bool,
        }
        impl serde::de::Visitor<'_> for Visitor {
            type Value = WebhookFormat;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`signed` or `legacy`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<WebhookFormat, E> {
                match v {
                    "signed" => Ok(WebhookFormat::Signed),
                    "legacy" => Ok(WebhookFormat::Legacy),
                    other => Err(E::custom(format!(
                        "must be `signed` or `legacy`, got `{other}`"
                    ))),
                }
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<WebhookFormat, E> {
                match std::str::from_utf8(v) {
                    Ok(text) => self.visit_str(text),
                    Err(_) => Err(E::custom("must be `signed` or `legacy`")),
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<WebhookFormat, E> {
                if !self.by_index {
                    return Err(E::invalid_type(serde::de::Unexpected::Unsigned(v), &self));
                }
                match v {
                    0 => Ok(WebhookFormat::Signed),
                    1 => Ok(WebhookFormat::Legacy),
                    other => Err(E::custom(format!(
                        "must be `signed` or `legacy`, got {other}"
                    ))),
                }
            }
        }
        let by_index = !deserializer.is_human_readable();
        deserializer.deserialize_any(Visitor { by_index })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum Event {
    #[serde(rename = "vote.create")]
    VoteCreate,
    #[serde(rename = "webhook.test")]
    Test,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Self::VoteCreate => "vote.create",
            Self::Test => "webhook.test",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Not tried yet.
    Pending,
    /// Tried, failed, and due again at `next_attempt_at`.
    Retrying,
    Delivered,
    /// Given up: a 4xx, a refused target, or out of tries.
    Failed,
}

/// Tries before a delivery is given up: 1 s, 2 s, 4 s ... capped at 15 min, about 62 min in all.
pub const MAX_ATTEMPTS: u32 = 14;
const MAX_DELAY_SECONDS: i64 = 15 * 60;
/// A receiver's Retry-After is honoured up to this.
const MAX_RETRY_AFTER_SECONDS: u64 = 60 * 60;
/// Deliveries shown per bot; pending ones are never dropped to make room.
pub const KEPT_DELIVERIES: usize = 100;
/// The error of a delivery given up at its receiver's gate.
pub const EXPIRED: &str =
    "given up: its receiver failed every probe until this delivery's tries ran out";
/// The error of a delivery given up because its bot's outbox held [`MAX_PENDING`] open ones.
pub const OUTBOX_FULL: &str = "given up: the outbox of this bot held 10000 open deliveries";

/// The wait after the `attempts`-th failed try: 1 s, 2 s, 4 s ... capped at 15 minutes. The gate
/// of a failing receiver waits as long between its probes (`attempts` is then its failures).
pub fn backoff_seconds(attempts: u32) -> i64 {
    (1i64 << attempts.saturating_sub(1).min(20)).min(MAX_DELAY_SECONDS)
}

/// Pending deliveries per bot past which the oldest are given up (a receiver dead for hours).
pub const MAX_PENDING: usize = 10_000;

/// One event for one bot's receiver.
///
/// Its bodies are not kept: they are rendered from what they are made of ([`Content`]) each
/// time an attempt is sent, so a vote's delivery costs the vote's path neither the rendering
/// nor the bytes of two bodies in memory and in the journal. The rendering depends only on what
/// is stored (the voter, the vote's time, the counts just after it), so every retry, and every
/// retry after a restart, sends the same bytes whatever happens to the bot meanwhile.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    pub id: Uuid,
    pub created_at: Timestamp,
    pub content: Content,
    pub state: DeliveryState,
    pub attempts: u32,
    pub last_status: Option<u16>,
    pub last_error: Option<Cow<'static, str>>,
    pub next_attempt_at: Option<Timestamp>,
    pub delivered_at: Option<Timestamp>,
}

/// What a delivery's bodies are made of.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// A vote at the delivery's `created_at`, with the bot's counts just after it.
    Vote {
        bot: EventBot,
        voter: Arc<Voter>,
        counts: VoteCounts,
        /// What the vote counted (more than 1 on a weekend with a multiplier).
        weight: Weight,
    },
    /// An operator's test event.
    Test { bot: EventBot },
    /// Bodies rendered when the delivery was queued, by a build that stored them so (journals
    /// and snapshots of format versions up to 3): sent as they are.
    Rendered(Arc<RenderedBodies>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedBodies {
    pub event: Event,
    pub signed: String,
    pub legacy: String,
}

impl Content {
    pub fn event(&self) -> Event {
        match self {
            Content::Vote { .. } => Event::VoteCreate,
            Content::Test { .. } => Event::Test,
            Content::Rendered(bodies) => bodies.event,
        }
    }
}

/// What changes in a delivery after it is queued: journaled alone, without its content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub state: DeliveryState,
    pub attempts: u32,
    pub last_status: Option<u16>,
    pub last_error: Option<Cow<'static, str>>,
    pub next_attempt_at: Option<Timestamp>,
    pub delivered_at: Option<Timestamp>,
}

/// What one attempt came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// A 2xx within the timeout.
    Delivered(u16),
    /// An answer that is not 2xx; `retry_after` from a 429's header.
    Status {
        status: u16,
        retry_after: Option<u64>,
    },
    /// No answer: timeout, connection refused, reset.
    Unreachable(String),
    /// The target was refused before connecting (a private address).
    Refused(String),
    /// Never sent: it waited at its failing receiver's gate until its tries would have run out.
    Expired,
}

impl Delivery {
    fn new(id: Uuid, created_at: Timestamp, content: Content) -> Self {
        Self {
            id,
            created_at,
            content,
            state: DeliveryState::Pending,
            attempts: 0,
            last_status: None,
            last_error: None,
            next_attempt_at: Some(created_at),
            delivered_at: None,
        }
    }

    /// The delivery of a vote taken at `voted_at`, `counts` being the bot's just after it.
    pub fn vote(
        id: Uuid,
        bot: EventBot,
        voter: Arc<Voter>,
        voted_at: Timestamp,
        counts: VoteCounts,
        weight: Weight,
    ) -> Self {
        Self::new(
            id,
            voted_at,
            Content::Vote {
                bot,
                voter,
                counts,
                weight,
            },
        )
    }

    pub fn test(id: Uuid, bot: EventBot, now: Timestamp) -> Self {
        Self::new(id, now, Content::Test { bot })
    }

    pub fn event(&self) -> Event {
        self.content.event()
    }

    /// The body an attempt sends in this format: the same bytes every time.
    pub fn body(&self, format: WebhookFormat) -> Cow<'_, str> {
        let bot = match &self.content {
            Content::Rendered(bodies) => {
                return Cow::Borrowed(match format {
                    WebhookFormat::Signed => &bodies.signed,
                    WebhookFormat::Legacy => &bodies.legacy,
                })
            }
            Content::Vote { bot, .. } | Content::Test { bot } => bot,
        };
        let body = match (&self.content, format) {
            (
                Content::Vote {
                    voter,
                    counts,
                    weight,
                    ..
                },
                WebhookFormat::Signed,
            ) => {
                let voted_at = self.created_at;
                let mut body = json!({
                    "type": Event::VoteCreate.name(),
                    "id": self.id,
                    "created_at": voted_at,
                    "data": {
                        "bot": { "id": bot.id, "platform_id": bot.platform_id },
                        "user": { "id": voter.id, "username": voter.username, "avatar": voter.avatar },
                        "voted_at": voted_at,
                        "expires_at": voted_at.plus(vote_window()),
                        "vote_count": counts.vote_count,
                        "monthly_vote_count": counts.monthly_vote_count,
                    }
                });
                // Only a vote that counted more than once says so: every other body stays
                // byte for byte what earlier builds sent (a retry after an upgrade included).
                if *weight > 1 {
                    body["data"]["weight"] = json!(weight);
                }
                body
            }
            (Content::Vote { voter, weight, .. }, WebhookFormat::Legacy) => json!({
                "bot": bot.platform_id,
                "user": voter.id,
                "type": "upvote",
                "isWeekend": *weight > 1,
                "query": "",
            }),
            (_, WebhookFormat::Signed) => json!({
                "type": Event::Test.name(),
                "id": self.id,
                "created_at": self.created_at,
                "data": { "bot": { "id": bot.id, "platform_id": bot.platform_id } }
            }),
            (_, WebhookFormat::Legacy) => json!({
                "bot": bot.platform_id,
                "user": "0",
                "type": "test",
                "isWeekend": false,
                "query": "",
            }),
        };
        Cow::Owned(body.to_string())
    }

    pub fn is_open(&self) -> bool {
        matches!(self.state, DeliveryState::Pending | DeliveryState::Retrying)
    }

    pub fn progress(&self) -> Progress {
        Progress {
            state: self.state,
            attempts: self.attempts,
            last_status: self.last_status,
            last_error: self.last_error.clone(),
            next_attempt_at: self.next_attempt_at,
            delivered_at: self.delivered_at,
        }
    }

    fn set_progress(&mut self, progress: Progress) {
        self.state = progress.state;
        self.attempts = progress.attempts;
        self.last_status = progress.last_status;
        self.last_error = progress.last_error;
        self.next_attempt_at = progress.next_attempt_at;
        self.delivered_at = progress.delivered_at;
    }

    /// Gives the delivery up because the bot's outbox is full.
    fn give_up_full(&mut self) {
        self.state = DeliveryState::Failed;
        self.next_attempt_at = None;
        self.last_error = Some(Cow::Borrowed(OUTBOX_FULL));
    }

    /// Records an attempt's outcome and decides whether and when to try again.
    pub fn record(&mut self, attempt: Attempt, now: Timestamp) {
        if attempt != Attempt::Expired {
            self.attempts = self.attempts.saturating_add(1);
        }
        let (status, error, retry_after) = match attempt {
            Attempt::Delivered(status) => {
                self.state = DeliveryState::Delivered;
                self.last_status = Some(status);
                self.last_error = None;
                self.delivered_at = Some(now);
                self.next_attempt_at = None;
                return;
            }
            Attempt::Status {
                status,
                retry_after,
            } => {
                let retryable = status == 408 || status == 429 || status >= 500;
                let error = format!("the receiver answered {status}");
                (Some(status), error.into(), retryable.then_some(retry_after))
            }
            Attempt::Unreachable(error) => (None, error.into(), Some(None)),
            Attempt::Refused(error) => (None, error.into(), None),
            // Not a try: the receiver's probes failed for it all along.
            Attempt::Expired => (self.last_status, Cow::Borrowed(EXPIRED), None),
        };
        self.last_status = status;
        self.last_error = Some(error);
        match retry_after.and_then(|hint| self.delay(hint)) {
            Some(delay) => {
                self.state = DeliveryState::Retrying;
                self.next_attempt_at = Some(now.plus(delay));
            }
            None => {
                self.state = DeliveryState::Failed;
                self.next_attempt_at = None;
            }
        }
    }

    /// When its last try would be made if every try from its next one on failed: a delivery
    /// still waiting at its receiver's gate then is given up ([`Attempt::Expired`]).
    pub fn tries_run_out_at(&self) -> Option<Timestamp> {
        let next = self.next_attempt_at?;
        let waits: i64 = (self.attempts.saturating_add(1)..MAX_ATTEMPTS)
            .map(backoff_seconds)
            .sum();
        Some(next.plus(Duration::seconds(waits)))
    }

    /// Exponential from 1 s, capped; `None` once the tries are used up.
    fn delay(&self, retry_after: Option<u64>) -> Option<Duration> {
        if self.attempts >= MAX_ATTEMPTS {
            return None;
        }
        let backoff = backoff_seconds(self.attempts);
        let asked = retry_after.map_or(0, |s| s.min(MAX_RETRY_AFTER_SECONDS) as i64);
        Some(Duration::seconds(backoff.max(asked)))
    }

    /// Starts over, as `POST .../redeliver` asks: the same id and body, a fresh set of tries.
    pub fn requeue(&mut self, now: Timestamp) {
        self.state = DeliveryState::Pending;
        self.attempts = 0;
        self.last_error = None;
        self.last_status = None;
        self.delivered_at = None;
        self.next_attempt_at = Some(now);
    }
}

/// A bot's deliveries: every open one, and the finished ones up to [`KEPT_DELIVERIES`] in all.
///
/// Kept in arrival order with an index by id and the sets of open and finished ones, so a vote,
/// an attempt's outcome and the trimming each cost O(log n) whatever the number of open
/// deliveries. Stored in files as the list of deliveries, newest first.
#[derive(Clone, Debug, Default)]
pub struct Deliveries {
    /// By arrival, oldest first.
    /// Boxed: a vote past the open limit inserts one and removes one, and the tree's nodes
    /// then move pointers, not 150-byte deliveries.
    items: BTreeMap<u64, Box<Delivery>>,
    /// Delivery ids are random (made here, never by clients): Fx hashing needs no defence.
    ids: FxHashMap<Uuid, u64>,
    open: BTreeSet<u64>,
    finished: BTreeSet<u64>,
    next: u64,
    /// Open deliveries given up because the outbox held [`MAX_PENDING`], since the bot was listed.
    given_up_full: u64,
}

impl Deliveries {
    /// Adds a delivery or replaces the one with its id.
    pub fn save(&mut self, delivery: Delivery) {
        let at = match self.ids.get(&delivery.id) {
            Some(&at) => at,
            None => {
                let at = self.next;
                self.next += 1;
                self.ids.insert(delivery.id, at);
                at
            }
        };
        self.file(at, delivery.is_open());
        self.items.insert(at, Box::new(delivery));
        self.trim();
    }

    /// Applies what an attempt, a redelivery or a give-up changed; `false` when the delivery is
    /// no longer kept.
    pub fn update(&mut self, id: Uuid, progress: Progress) -> bool {
        let Some(&at) = self.ids.get(&id) else {
            return false;
        };
        let Some(delivery) = self.items.get_mut(&at) else {
            return false;
        };
        delivery.set_progress(progress);
        let open = delivery.is_open();
        self.file(at, open);
        self.trim();
        true
    }

    fn file(&mut self, at: u64, open: bool) {
        if open {
            self.finished.remove(&at);
            self.open.insert(at);
        } else {
            self.open.remove(&at);
            self.finished.insert(at);
        }
    }

    fn trim(&mut self) {
        while self.items.len() > KEPT_DELIVERIES {
            let Some(oldest_finished) = self.finished.pop_first() else {
                break;
            };
            if let Some(gone) = self.items.remove(&oldest_finished) {
                self.ids.remove(&gone.id);
            }
        }
    }

    /// The oldest open deliveries past [`MAX_PENDING`], to be given up (by
    /// [`Self::give_up_full`], through their record).
    pub fn overflowing(&self) -> Vec<Uuid> {
        let over = self.open.len().saturating_sub(MAX_PENDING);
        self.open
            .iter()
            .take(over)
            .filter_map(|at| self.items.get(at).map(|delivery| delivery.id))
            .collect()
    }

    /// The oldest open deliveries that one more open one would give up (see [`Self::queue`]).
    pub fn making_room(&self) -> Vec<Uuid> {
        let over = (self.open.len() + 1).saturating_sub(MAX_PENDING);
        self.open
            .iter()
            .take(over)
            .filter_map(|at| self.items.get(at).map(|delivery| delivery.id))
            .collect()
    }

    /// Adds a new open delivery, giving up the oldest open ones past [`MAX_PENDING`] (those
    /// [`Self::making_room`] names), so a vote's record alone says what its delivery changed.
    pub fn queue(&mut self, delivery: Delivery) {
        let room = self.making_room();
        if !room.is_empty() {
            self.give_up_full(&room);
        }
        self.save(delivery);
    }

    /// Gives up these deliveries for a full outbox, as the record says.
    pub fn give_up_full(&mut self, ids: &[Uuid]) {
        for id in ids {
            let Some(&at) = self.ids.get(id) else {
                continue;
            };
            if let Some(delivery) = self.items.get_mut(&at) {
                delivery.give_up_full();
                self.given_up_full += 1;
                self.file(at, false);
            }
        }
        self.trim();
    }

    /// Open deliveries given up because the outbox was full, since the bot was listed.
    pub fn given_up_full(&self) -> u64 {
        self.given_up_full
    }

    pub fn get(&self, id: Uuid) -> Option<&Delivery> {
        self.items
            .get(self.ids.get(&id)?)
            .map(|delivery| &**delivery)
    }

    pub fn open(&self) -> impl Iterator<Item = &Delivery> {
        self.open
            .iter()
            .filter_map(|at| self.items.get(at).map(|delivery| &**delivery))
    }

    /// The newest [`KEPT_DELIVERIES`], newest first.
    pub fn recent(&self) -> impl Iterator<Item = &Delivery> {
        self.items
            .values()
            .rev()
            .take(KEPT_DELIVERIES)
            .map(|delivery| &**delivery)
    }
}

/// The same deliveries in the same order, whatever their arrival numbers.
impl PartialEq for Deliveries {
    fn eq(&self, other: &Self) -> bool {
        self.given_up_full == other.given_up_full && self.items.values().eq(other.items.values())
    }
}

/// How deliveries are stored: newest first, and the count of those given up for a full outbox.
#[derive(Serialize)]
struct StoredDeliveries<'a> {
    items: Newest<'a>,
    given_up_full: u64,
}

struct Newest<'a>(&'a BTreeMap<u64, Box<Delivery>>);

impl Serialize for Newest<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.values().rev())
    }
}

#[derive(Deserialize)]
struct ReadDeliveries {
    items: Vec<Delivery>,
    #[serde(default)]
    given_up_full: u64,
}

impl Serialize for Deliveries {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StoredDeliveries {
            items: Newest(&self.items),
            given_up_full: self.given_up_full,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Deliveries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = ReadDeliveries::deserialize(deserializer)?;
        let mut deliveries = Deliveries::default();
        for delivery in read.items.into_iter().rev() {
            deliveries.save(delivery);
        }
        deliveries.given_up_full = read.given_up_full;
        Ok(deliveries)
    }
}

/// What a delivery is made of, as files store it: the bot as the event names it, and for a vote
/// the voter and the counts.
#[derive(Serialize, Deserialize)]
struct StoredContent {
    bot: BotId,
    platform_id: Snowflake,
    vote: Option<StoredVote>,
}

#[derive(Serialize, Deserialize)]
struct StoredVote {
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

/// Stored as a sequence: `[id, event, created_at, content, state, attempts, last_status,
/// last_error, next_attempt_at, delivered_at]`. Deliveries read from files of earlier builds,
/// which stored both bodies where `content` is (`..., created_at, signed_body, legacy_body,
/// state, ...`), are written back the same way.
impl Serialize for Delivery {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let rendered = match &self.content {
            Content::Rendered(bodies) => Some(bodies),
            _ => None,
        };
        let mut seq = serializer.serialize_seq(Some(10 + usize::from(rendered.is_some())))?;
        seq.serialize_element(&self.id)?;
        seq.serialize_element(&self.event())?;
        seq.serialize_element(&self.created_at)?;
        match &self.content {
            Content::Rendered(bodies) => {
                seq.serialize_element(&bodies.signed)?;
                seq.serialize_element(&bodies.legacy)?;
            }
            Content::Vote {
                bot,
                voter,
                counts,
                weight,
            } => seq.serialize_element(&StoredContent {
                bot: bot.id,
                platform_id: bot.platform_id,
                vote: Some(StoredVote {
                    voter: Arc::clone(voter),
                    vote_count: counts.vote_count,
                    monthly_vote_count: counts.monthly_vote_count,
                    weight: *weight,
                }),
            })?,
            Content::Test { bot } => seq.serialize_element(&StoredContent {
                bot: bot.id,
                platform_id: bot.platform_id,
                vote: None,
            })?,
        }
        seq.serialize_element(&self.state)?;
        seq.serialize_element(&self.attempts)?;
        seq.serialize_element(&self.last_status)?;
        seq.serialize_element(&self.last_error)?;
        seq.serialize_element(&self.next_attempt_at)?;
        seq.serialize_element(&self.delivered_at)?;
        seq.end()
    }
}

/// The fourth element of a stored delivery: the signed body (earlier builds) or the content.
enum BodyOrContent {
    Body(String),
    Content(StoredContent),
}

impl<'de> Deserialize<'de> for BodyOrContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = BodyOrContent;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a delivery's body or content")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<BodyOrContent, E> {
                Ok(BodyOrContent::Body(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<BodyOrContent, E> {
                Ok(BodyOrContent::Body(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<BodyOrContent, A::Error> {
                StoredContent::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(BodyOrContent::Content)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl<'de> Deserialize<'de> for Delivery {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Delivery;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a webhook delivery")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Delivery, A::Error> {
                use serde::de::Error;
                fn next<'de, T: Deserialize<'de>, A: serde::de::SeqAccess<'de>>(
                    seq: &mut A,
                ) -> Result<T, A::Error> {
                    seq.next_element()?
                        .ok_or_else(|| A::Error::custom("a webhook delivery cut short"))
                }
                let id: Uuid = next(&mut seq)?;
                let event: Event = next(&mut seq)?;
                let created_at: Timestamp = next(&mut seq)?;
                let content = match (next(&mut seq)?, event) {
                    (BodyOrContent::Body(signed), event) => {
                        Content::Rendered(Arc::new(RenderedBodies {
                            event,
                            signed,
                            legacy: next(&mut seq)?,
                        }))
                    }
                    (BodyOrContent::Content(stored), Event::VoteCreate) => {
                        let vote = stored.vote.ok_or_else(|| {
                            A::Error::custom("a vote's delivery without its vote")
                        })?;
                        Content::Vote {
                            bot: EventBot {
                                id: stored.bot,
                                platform_id: stored.platform_id,
                            },
                            voter: vote.voter,
                            counts: VoteCounts {
                                vote_count: vote.vote_count,
                                monthly_vote_count: vote.monthly_vote_count,
                            },
                            weight: vote.weight,
                        }
                    }
                    (BodyOrContent::Content(stored), Event::Test) => {
                        if stored.vote.is_some() {
                            return Err(A::Error::custom("a test event's delivery with a vote"));
                        }
                        Content::Test {
                            bot: EventBot {
                                id: stored.bot,
                                platform_id: stored.platform_id,
                            },
                        }
                    }
                };
                Ok(Delivery {
                    id,
                    created_at,
                    content,
                    state: next(&mut seq)?,
                    attempts: next(&mut seq)?,
                    last_status: next(&mut seq)?,
                    last_error: next(&mut seq)?,
                    next_attempt_at: next(&mut seq)?,
                    delivered_at: next(&mut seq)?,
                })
            }
        }
        deserializer.deserialize_seq(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery() -> Delivery {
        Delivery::test(Uuid::new_v4(), bot(), Timestamp::from_millis(0))
    }

    fn bot() -> EventBot {
        EventBot {
            id: BotId::parse("0eb87e52-6e64-4636-be84-37bfa0718f05").expect("an id"),
            platform_id: Snowflake::from_u64(4242),
        }
    }

    #[test]
    fn retries_back_off_from_one_second_for_about_an_hour() {
        let mut d = delivery();
        let mut now = Timestamp::from_millis(0);
        let mut waits = Vec::new();
        while d.state != DeliveryState::Failed {
            d.record(
                Attempt::Status {
                    status: 503,
                    retry_after: None,
                },
                now,
            );
            if let Some(next) = d.next_attempt_at {
                waits.push((next.millis() - now.millis()) / 1000);
                now = next;
            }
        }
        assert_eq!(d.attempts, MAX_ATTEMPTS);
        assert_eq!(&waits[..5], &[1, 2, 4, 8, 16]);
        assert_eq!(*waits.last().expect("waits"), 900);
        let total: i64 = waits.iter().sum();
        assert!((3000..=4500).contains(&total), "{total} s in all");
    }

    #[test]
    fn only_timeouts_429_408_and_5xx_are_retried() {
        for (attempt, retried) in [
            (
                Attempt::Status {
                    status: 500,
                    retry_after: None,
                },
                true,
            ),
            (
                Attempt::Status {
                    status: 408,
                    retry_after: None,
                },
                true,
            ),
            (
                Attempt::Status {
                    status: 429,
                    retry_after: Some(30),
                },
                true,
            ),
            (Attempt::Unreachable("timed out".into()), true),
            (
                Attempt::Status {
                    status: 400,
                    retry_after: None,
                },
                false,
            ),
            (
                Attempt::Status {
                    status: 404,
                    retry_after: None,
                },
                false,
            ),
            (
                Attempt::Status {
                    status: 301,
                    retry_after: None,
                },
                false,
            ),
            (Attempt::Refused("private".into()), false),
        ] {
            let mut d = delivery();
            d.record(attempt.clone(), Timestamp::from_millis(0));
            assert_eq!(d.state == DeliveryState::Retrying, retried, "{attempt:?}");
        }
        let mut d = delivery();
        d.record(
            Attempt::Status {
                status: 429,
                retry_after: Some(30),
            },
            Timestamp::from_millis(0),
        );
        assert_eq!(
            d.next_attempt_at,
            Some(Timestamp::from_millis(30_000)),
            "Retry-After is honoured"
        );
    }

    #[test]
    fn finished_deliveries_make_room_open_ones_stay() {
        let mut all = Deliveries::default();
        let first = delivery();
        all.save(first.clone());
        for _ in 0..150 {
            let mut d = delivery();
            d.record(Attempt::Delivered(200), Timestamp::from_millis(0));
            all.save(d);
        }
        assert_eq!(all.recent().count(), KEPT_DELIVERIES);
        assert!(all.get(first.id).is_some(), "the open delivery is kept");
        let back: Deliveries =
            rmp_serde::from_slice(&rmp_serde::to_vec(&all).expect("encodes")).expect("decodes");
        assert_eq!(back, all);
    }

    #[test]
    fn queueing_past_the_open_limit_gives_up_the_oldest_that_making_room_names() {
        let mut all = Deliveries::default();
        let oldest = delivery();
        all.queue(oldest.clone());
        for _ in 1..MAX_PENDING {
            all.queue(delivery());
        }
        assert_eq!(all.open().count(), MAX_PENDING);
        assert_eq!(all.given_up_full(), 0);
        assert_eq!(all.making_room(), [oldest.id]);
        let newest = delivery();
        all.queue(newest.clone());
        assert_eq!(all.open().count(), MAX_PENDING);
        assert_eq!(all.given_up_full(), 1);
        // Finished, and older than the last 100: no longer kept.
        assert!(all.get(oldest.id).is_none());
        assert!(all.get(newest.id).is_some_and(Delivery::is_open));
        let mut given_up = oldest;
        given_up.give_up_full();
        assert_eq!(given_up.state, DeliveryState::Failed);
        assert_eq!(given_up.last_error.as_deref(), Some(OUTBOX_FULL));
    }

    #[test]
    fn past_the_open_limit_the_oldest_are_given_up_and_counted() {
        let mut all = Deliveries::default();
        let oldest = delivery();
        all.save(oldest.clone());
        for _ in 0..MAX_PENDING {
            all.save(delivery());
        }
        let mut replayed = all.clone();
        let given_up = all.overflowing();
        all.give_up_full(&given_up);
        assert_eq!(given_up, [oldest.id]);
        assert_eq!(all.open().count(), MAX_PENDING);
        assert_eq!(all.given_up_full(), 1);
        replayed.give_up_full(&given_up);
        assert_eq!(replayed, all);
        let mut retried = all.open().next().expect("open").clone();
        retried.record(
            Attempt::Unreachable("refused".into()),
            Timestamp::from_millis(5),
        );
        assert!(all.update(retried.id, retried.progress()));
        assert_eq!(all.get(retried.id), Some(&retried));
        assert!(!all.update(oldest.id, oldest.progress()), "trimmed");
    }
}

#[cfg(test)]
mod rendering_tests {
    use super::*;
    use crate::domain::text::{HttpUrl, VoterName};

    fn bot() -> EventBot {
        EventBot {
            id: BotId::parse("0eb87e52-6e64-4636-be84-37bfa0718f05").expect("an id"),
            platform_id: Snowflake::from_u64(4242),
        }
    }

    fn ada() -> Arc<Voter> {
        Arc::new(Voter {
            id: Snowflake::from_u64(7),
            username: VoterName::parse("ada \"the\" <first>".to_owned()).expect("a name"),
            avatar: Some(HttpUrl::parse("https://cdn.example/a.png".to_owned()).expect("a URL")),
        })
    }

    /// What build 843a63ae rendered and journaled when this vote was taken (its journal is
    /// tests/durability/fixtures/843a63ae-journal).
    const SIGNED_843A63AE: &str = r#"{"created_at":"2026-11-23T08:45:22.410Z","data":{"bot":{"id":"0eb87e52-6e64-4636-be84-37bfa0718f05","platform_id":"4242"},"expires_at":"2026-11-23T20:45:22.410Z","monthly_vote_count":1,"user":{"avatar":"https://cdn.example/a.png","id":"7","username":"ada \"the\" <first>"},"vote_count":1,"voted_at":"2026-11-23T08:45:22.410Z"},"id":"545ef49a-8957-428a-827e-2f17c0a39b48","type":"vote.create"}"#;
    const LEGACY_843A63AE: &str =
        r#"{"bot":"4242","isWeekend":false,"query":"","type":"upvote","user":"7"}"#;

    fn at(text: &str) -> Timestamp {
        let parsed = chrono::DateTime::parse_from_rfc3339(text).expect("a time");
        Timestamp::from_datetime(parsed.with_timezone(&chrono::Utc))
    }

    fn voted() -> Delivery {
        let at = at("2026-11-23T08:45:22.410Z");
        Delivery::vote(
            Uuid::parse_str("545ef49a-8957-428a-827e-2f17c0a39b48").expect("an id"),
            bot(),
            ada(),
            at,
            VoteCounts {
                vote_count: 1,
                monthly_vote_count: 1,
            },
            1,
        )
    }

    #[test]
    fn a_weekend_vote_says_its_weight_in_both_formats_and_keeps_it_through_a_file() {
        let mut delivery = voted();
        let Content::Vote { weight, counts, .. } = &mut delivery.content else {
            panic!("a vote");
        };
        *weight = 2;
        *counts = VoteCounts {
            vote_count: 2,
            monthly_vote_count: 2,
        };
        let signed: serde_json::Value =
            serde_json::from_str(&delivery.body(WebhookFormat::Signed)).expect("JSON");
        assert_eq!(signed["data"]["weight"], 2);
        assert_eq!(signed["data"]["vote_count"], 2);
        assert_eq!(
            delivery.body(WebhookFormat::Legacy),
            r#"{"bot":"4242","isWeekend":true,"query":"","type":"upvote","user":"7"}"#
        );
        let packed = rmp_serde::to_vec(&delivery).expect("encodes");
        let back: Delivery = crate::persist::decode(&packed).expect("decodes");
        assert_eq!(back, delivery);
        // A delivery of weight 1 is stored as earlier builds stored it.
        let single = rmp_serde::to_vec(&voted()).expect("encodes");
        assert!(single.len() < packed.len());
    }

    #[test]
    fn a_vote_renders_the_bytes_earlier_builds_stored_when_it_was_queued() {
        let delivery = voted();
        assert_eq!(delivery.body(WebhookFormat::Signed), SIGNED_843A63AE);
        assert_eq!(delivery.body(WebhookFormat::Legacy), LEGACY_843A63AE);
        assert_eq!(delivery.event(), Event::VoteCreate);
    }

    #[test]
    fn a_test_event_renders_its_bot_only() {
        let at = at("2026-11-23T08:45:22.410Z");
        let id = Uuid::parse_str("545ef49a-8957-428a-827e-2f17c0a39b48").expect("an id");
        let delivery = Delivery::test(id, bot(), at);
        assert_eq!(
            delivery.body(WebhookFormat::Signed),
            r#"{"created_at":"2026-11-23T08:45:22.410Z","data":{"bot":{"id":"0eb87e52-6e64-4636-be84-37bfa0718f05","platform_id":"4242"}},"id":"545ef49a-8957-428a-827e-2f17c0a39b48","type":"webhook.test"}"#
        );
        assert_eq!(
            delivery.body(WebhookFormat::Legacy),
            r#"{"bot":"4242","isWeekend":false,"query":"","type":"test","user":"0"}"#
        );
    }

    #[test]
    fn the_bodies_are_the_same_after_each_try_and_a_round_trip_through_a_file() {
        let mut delivery = voted();
        delivery.record(
            Attempt::Unreachable("refused".into()),
            Timestamp::from_millis(1),
        );
        delivery.record(
            Attempt::Status {
                status: 503,
                retry_after: None,
            },
            Timestamp::from_millis(2),
        );
        let packed = rmp_serde::to_vec(&delivery).expect("encodes");
        let back: Delivery = crate::persist::decode(&packed).expect("decodes");
        assert_eq!(back, delivery);
        assert_eq!(back.body(WebhookFormat::Signed), SIGNED_843A63AE);
        assert_eq!(back.body(WebhookFormat::Legacy), LEGACY_843A63AE);
        let test = Delivery::test(Uuid::new_v4(), bot(), Timestamp::from_millis(3));
        let packed = rmp_serde::to_vec(&test).expect("encodes");
        assert_eq!(
            crate::persist::decode::<Delivery>(&packed).expect("decodes"),
            test
        );
    }

    /// A delivery as earlier builds stored it, bodies and all.
    #[derive(Serialize)]
    struct Stored843a63ae {
        id: Uuid,
        event: Event,
        created_at: Timestamp,
        signed_body: String,
        legacy_body: String,
        state: DeliveryState,
        attempts: u32,
        last_status: Option<u16>,
        last_error: Option<String>,
        next_attempt_at: Option<Timestamp>,
        delivered_at: Option<Timestamp>,
    }

    #[test]
    fn a_delivery_stored_with_its_bodies_reads_sends_them_and_is_written_back_the_same() {
        let old = Stored843a63ae {
            id: Uuid::new_v4(),
            event: Event::VoteCreate,
            created_at: Timestamp::from_millis(5),
            signed_body: SIGNED_843A63AE.to_owned(),
            legacy_body: LEGACY_843A63AE.to_owned(),
            state: DeliveryState::Retrying,
            attempts: 2,
            last_status: Some(503),
            last_error: Some("the receiver answered 503".into()),
            next_attempt_at: Some(Timestamp::from_millis(9)),
            delivered_at: None,
        };
        let packed = rmp_serde::to_vec(&old).expect("encodes");
        let read: Delivery = crate::persist::decode(&packed).expect("decodes");
        assert_eq!(read.event(), Event::VoteCreate);
        assert_eq!(read.body(WebhookFormat::Signed), SIGNED_843A63AE);
        assert_eq!(read.body(WebhookFormat::Legacy), LEGACY_843A63AE);
        assert_eq!(read.attempts, 2);
        assert_eq!(read.next_attempt_at, Some(Timestamp::from_millis(9)));
        assert_eq!(rmp_serde::to_vec(&read).expect("encodes"), packed);
    }

    #[test]
    fn a_stored_delivery_whose_event_and_content_disagree_is_refused() {
        let mut test = Delivery::test(Uuid::new_v4(), bot(), Timestamp::from_millis(3));
        test.content = voted().content;
        let packed = rmp_serde::to_vec(&test).expect("encodes");
        // Written as a vote's content under the test event's name: not a delivery.
        let mut tampered = packed.clone();
        let at = tampered
            .windows(b"vote.create".len())
            .position(|w| w == b"vote.create")
            .expect("the event's name");
        tampered[at..at + b"vote.create".len()].copy_from_slice(b"webhook.tes");
        assert!(crate::persist::decode::<Delivery>(&tampered).is_err());
        assert!(crate::persist::decode::<Delivery>(&packed[..packed.len() - 1]).is_err());
    }

    #[test]
    fn the_outbox_full_error_names_the_limit() {
        assert_eq!(
            OUTBOX_FULL,
            format!("given up: the outbox of this bot held {MAX_PENDING} open deliveries")
        );
    }
}

#[cfg(test)]
mod format_tests {
    use super::WebhookFormat;

    #[test]
    fn the_format_round_trips_through_messagepack_and_json() {
        for format in [WebhookFormat::Signed, WebhookFormat::Legacy] {
            let packed = rmp_serde::to_vec(&format).expect("encodes");
            assert_eq!(
                crate::persist::decode::<WebhookFormat>(&packed).expect("decodes"),
                format
            );
            let json = serde_json::to_string(&format).expect("encodes");
            assert_eq!(
                serde_json::from_str::<WebhookFormat>(&json).expect("decodes"),
                format
            );
        }
    }
}
