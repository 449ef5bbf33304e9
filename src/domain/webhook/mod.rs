//! Webhooks' rules: one delivery and its retries, and the list of a bot's deliveries; the kinds
//! of event, each one implementation, are `events.rs`'s, the wire formats a receiver may ask
//! for, each one implementation too, `formats.rs`'s (signed with `sign.rs`).
//! Who queues and schedules deliveries is the bot's outbox (`webhooks/outbox.rs`); their bodies
//! on the wire are rendered by `webhooks/wire.rs`, their stored shape is
//! `persist/codec/deliveries.rs`'s, both written once for every kind.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::Duration;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::ids::{BotId, Snowflake};
use super::time::Timestamp;
use super::votes::{VoteCounts, Voter};
use super::weekend::Weight;

mod events;
mod expiry;
mod formats;
mod moderation;
mod sign;
pub use events::*;
pub use expiry::*;
pub use formats::*;
pub use moderation::*;

/// The bot an event is about, as the event's bodies name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventBot {
    pub id: BotId,
    pub platform_id: Snowflake,
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

    /// The delivery of an event of any kind, queued at `at`.
    pub fn queued(id: Uuid, at: Timestamp, kind: impl EventKind) -> Self {
        Self::new(id, at, kind.into())
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
        let vote = VoteCreated {
            bot,
            voter,
            counts,
            weight,
        };
        Self::queued(id, voted_at, vote)
    }

    pub fn test(id: Uuid, bot: EventBot, now: Timestamp) -> Self {
        Self::queued(id, now, TestEvent { bot, owner: None })
    }

    /// What every body of this delivery knows besides its kind.
    pub fn head(&self) -> Head {
        Head {
            id: self.id,
            created_at: self.created_at,
        }
    }

    pub fn event(&self) -> Event {
        self.content.event()
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
        self.making_room_for(1)
    }

    /// The oldest open deliveries that `more` open ones would give up.
    pub fn making_room_for(&self, more: usize) -> Vec<Uuid> {
        let over = (self.open.len() + more).saturating_sub(MAX_PENDING);
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

    /// Every delivery kept, newest first: what a file stores (`persist/codec/deliveries.rs`).
    pub fn newest_first(&self) -> impl Iterator<Item = &Delivery> {
        self.items.values().rev().map(|delivery| &**delivery)
    }

    /// The deliveries a file stores, newest first, and the count of those given up for a full
    /// outbox.
    pub fn stored(newest_first: Vec<Delivery>, given_up_full: u64) -> Self {
        let mut deliveries = Self::default();
        for delivery in newest_first.into_iter().rev() {
            deliveries.save(delivery);
        }
        deliveries.given_up_full = given_up_full;
        deliveries
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
