//! A bot's webhook outbox: every delivery of one bot, from queueing to giving up.
//!
//! The bot's actor holds one [`Outbox`] and delegates every webhook matter to it: what record
//! a vote makes (and which open deliveries it gives up to make room), an event of any other
//! kind ([`Outbox::queue`], generic over `EventKind`: a test event is one), a redelivery, what an attempt sends, what its outcome changes, and the delivery log. The
//! deliveries themselves are part of the bot's state (`BotState::deliveries`), changed only by
//! records, so replay rebuilds them; the outbox says which records to make and schedules each
//! delivery's next attempt. The actor applies and journals the records, and hands the attempts
//! over with the record's journal number ([`Outbox::hand_over`]): the dispatcher sends none
//! before that record is durable.
//!
//! - the rules of one delivery (its tries, its state): `domain/webhook/mod.rs`;
//! - each kind of event (what it is made of and stores, its bodies, who receives it):
//!   `domain/webhook/events.rs`;
//! - its stored shape: `persist/codec/deliveries.rs`;
//! - its bodies on the wire, and the sender: `webhooks/wire.rs`, `webhooks/mod.rs`.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use uuid::Uuid;

use super::{receiver_key, Dispatcher, Job, Prepared, Target};
use crate::domain::bot::BotState;
use crate::domain::time::Timestamp;
use crate::domain::votes::Voter;
use crate::domain::webhook::{
    Attempt, Delivery, DeliveryState, EventKind, ExpiredVote, TestEvent, TestOwner, VoteCreated,
    VoteExpired, Wants,
};
use crate::domain::weekend::Weight;
use crate::domain::Rejection;
use crate::persist::state::Record;

pub struct Outbox {
    dispatcher: Arc<Dispatcher>,
    /// The token of each delivery's one scheduled attempt: an attempt that comes due or
    /// reports back with another token is stale (redelivered, given up) and does nothing.
    attempts: FxHashMap<Uuid, u64>,
    next_token: u64,
    /// Attempts scheduled by the change being made, handed to the dispatcher with that change's
    /// journal number once it is submitted (see [`Outbox::hand_over`]).
    unsent: Vec<Job>,
    /// The webhook URL last scheduled for and the receiver it names.
    receiver: Option<(String, Arc<str>)>,
}

/// The delivery a vote's record queues, and the open ones it gives up to make room.
pub struct QueuedByVote {
    delivery: Uuid,
    given_up: Vec<Uuid>,
}

/// What an attempt that came due is to do.
pub enum Preparing {
    /// Send this.
    Send(Prepared),
    /// Nothing will ever take it (the bot's URL was removed, or the listing is not public and
    /// this is not one of its decisions): this is the delivery given up,
    /// to be kept with [`Outbox::progressed`].
    GiveUp(Delivery),
    /// Stale, or no longer kept: nothing.
    Nothing,
}

/// The delivery log: the latest deliveries, and how many were given up for a full outbox.
pub struct DeliveryLog {
    pub recent: Vec<Delivery>,
    pub given_up_full: u64,
}

/// What the bot's webhook settings say about the events it is sent.
fn wants(state: &BotState) -> Wants {
    Wants {
        url: state.webhook.url.is_some(),
        events: state.webhook.events,
    }
}

fn no_webhook() -> Rejection {
    Rejection::Invalid("this bot has no webhook_url to send to".into())
}

impl Outbox {
    pub fn new(dispatcher: Arc<Dispatcher>) -> Self {
        Self {
            dispatcher,
            attempts: FxHashMap::default(),
            next_token: 0,
            unsent: Vec::new(),
            receiver: None,
        }
    }

    /// Schedules again the deliveries open in `state` (queued or in retry before a restart).
    pub fn reopen(&mut self, state: &BotState) {
        for delivery in state.deliveries.open() {
            self.schedule(state, delivery, false);
        }
    }

    /// The record of a vote: with a webhook, it also queues the vote's delivery (and gives up
    /// the oldest open ones past the outbox's limit): one record, rendered into bodies only
    /// when sent. Once it is applied, [`Self::queued_by_vote`] schedules the delivery.
    pub fn vote_record(
        &self,
        state: &BotState,
        voter: Voter,
        at: Timestamp,
        weight: Weight,
    ) -> (Record, Option<QueuedByVote>) {
        let bot = state.listing.id;
        if !VoteCreated::receives(&wants(state)) {
            let record = Record::Voted {
                bot,
                voter,
                at,
                weight,
            };
            return (record, None);
        }
        let delivery = Uuid::new_v4();
        let given_up = state.deliveries.making_room();
        let record = Record::VotedWithDelivery {
            bot,
            voter,
            at,
            delivery,
            weight,
        };
        (record, Some(QueuedByVote { delivery, given_up }))
    }

    /// The record announcing the votes whose window ended after the bot's mark and by `now`
    /// (`vote.expired`), each with a delivery when the bot's webhook receives the kind, and
    /// the open deliveries those give up to make room; `None` when none is due or the bot
    /// announces none.
    pub fn expiry_record(&self, state: &BotState, now: Timestamp) -> Option<(Record, Vec<Uuid>)> {
        let window = &state.votes.window;
        let through = now.max(window.announced()?);
        let deliver = VoteExpired::receives(&wants(state));
        let expired: Vec<ExpiredVote> = window
            .due(through)
            .map(|(user, voted_at)| ExpiredVote {
                user,
                voted_at,
                delivery: deliver.then(Uuid::new_v4),
            })
            .collect();
        if expired.is_empty() {
            return None;
        }
        let given_up = match deliver {
            true => state.deliveries.making_room_for(expired.len()),
            false => Vec::new(),
        };
        let record = Record::VotesExpired {
            bot: state.listing.id,
            through,
            expired,
        };
        Some((record, given_up))
    }

    /// Schedules the first attempts of the deliveries an expiry record queued (applied to
    /// `state`), and forgets the attempts of those it gave up.
    pub fn queued_by_expiry(&mut self, state: &BotState, record: &Record, given_up: &[Uuid]) {
        self.forget(given_up);
        if let Record::VotesExpired { expired, .. } = record {
            for id in expired.iter().filter_map(|vote| vote.delivery) {
                if let Some(delivery) = state.deliveries.get(id) {
                    self.schedule(state, delivery, false);
                    crate::telemetry::event_queued(delivery.event().name());
                }
            }
        }
    }

    /// Wakes the bot's actor once `end` has come (the next end of a voter's window).
    pub fn arm_expiry(&self, state: &BotState, end: Timestamp) {
        self.dispatcher.arm_expiry(state.listing.id, end);
    }

    /// Schedules the first attempt of the delivery a vote's record queued (applied to `state`),
    /// and forgets the attempts of the deliveries it gave up to make room.
    pub fn queued_by_vote(&mut self, state: &BotState, queued: QueuedByVote) {
        self.forget(&queued.given_up);
        if let Some(delivery) = state.deliveries.get(queued.delivery) {
            self.schedule(state, delivery, false);
            crate::telemetry::event_queued(delivery.event().name());
        }
    }

    /// A test event's delivery: scheduled (through a failing receiver's gate: an operator asked
    /// for it), and the record that keeps it. Once that is applied, [`Self::overflowed`] says
    /// what it gave up.
    pub fn test_event(
        &mut self,
        state: &BotState,
        now: Timestamp,
        owner: Option<TestOwner>,
    ) -> Result<(Delivery, Record), Rejection> {
        let test = TestEvent {
            bot: state.listing.event_bot(),
            owner,
        };
        self.queue(state, test, now, true).ok_or_else(no_webhook)
    }

    /// The delivery of an event of any kind, if the bot receives that kind: scheduled
    /// (`forced` through a failing receiver's gate), and the record that keeps it whole. Once
    /// that is applied, [`Self::overflowed`] says what it gave up.
    pub fn queue<K: EventKind>(
        &mut self,
        state: &BotState,
        kind: K,
        now: Timestamp,
        forced: bool,
    ) -> Option<(Delivery, Record)> {
        if !K::receives(&wants(state)) {
            return None;
        }
        let delivery = Delivery::queued(Uuid::new_v4(), now, kind);
        self.schedule(state, &delivery, forced);
        crate::telemetry::event_queued(delivery.event().name());
        let record = Record::DeliverySaved {
            bot: state.listing.id,
            delivery: delivery.clone(),
        };
        Some((delivery, record))
    }

    /// The oldest open deliveries past the outbox's limit after a test event, given up by id.
    pub fn overflowed(&mut self, state: &BotState) -> Option<Record> {
        let given_up = state.deliveries.overflowing();
        if given_up.is_empty() {
            return None;
        }
        self.forget(&given_up);
        Some(Record::OutboxOverflowed {
            bot: state.listing.id,
            given_up,
        })
    }

    /// A delivery sent again from its first try (the same id and body), as an operator asks.
    pub fn redelivery(
        &self,
        state: &BotState,
        id: Uuid,
        now: Timestamp,
    ) -> Result<Delivery, Rejection> {
        let Some(mut delivery) = state.deliveries.get(id).cloned() else {
            return Err(Rejection::NotFound(format!(
                "no delivery with id {id} for this bot"
            )));
        };
        if state.webhook.url.is_none() {
            return Err(no_webhook());
        }
        delivery.requeue(now);
        Ok(delivery)
    }

    /// What an attempt that came due sends, as the bot's settings are now.
    pub fn prepare(
        &self,
        state: &BotState,
        delivery: Uuid,
        token: u64,
        now: Timestamp,
    ) -> Preparing {
        if !self.is_current(delivery, token) {
            return Preparing::Nothing;
        }
        let Some(delivery) = state.deliveries.get(delivery) else {
            return Preparing::Nothing;
        };
        let webhook = &state.webhook;
        let Some(url) = &webhook.url else {
            let mut given_up = delivery.clone();
            given_up.record(
                Attempt::Refused("the bot no longer has a webhook_url".into()),
                now,
            );
            return Preparing::GiveUp(given_up);
        };
        // CONTRACT section 14: `listing.delisted` is the last delivery a delisted bot is sent
        // and its other deliveries stop (as a removed bot's do): one that comes due while the
        // listing is not public is given up, never held for a later approval.
        if !state.listing.status.is_public() && !delivery.event().sent_while_hidden() {
            let mut given_up = delivery.clone();
            given_up.record(
                Attempt::Refused(
                    "the listing is not public: only its decisions are sent to it".into(),
                ),
                now,
            );
            return Preparing::GiveUp(given_up);
        }
        Preparing::Send(Prepared {
            target: Target {
                url: url.as_str().to_owned(),
                secret: webhook.secret.as_ref().map(|s| s.as_str().to_owned()),
                format: webhook.format,
            },
            event: delivery.event(),
            body: super::wire::body(delivery, webhook.format).into_owned(),
        })
    }

    /// What an attempt came to: the delivery with its outcome, to be kept with
    /// [`Self::progressed`]; `None` for a late answer of an attempt since replaced, or of a
    /// delivery no longer open.
    pub fn outcome(
        &self,
        state: &BotState,
        delivery: Uuid,
        token: u64,
        attempt: Attempt,
        now: Timestamp,
    ) -> Option<Delivery> {
        if !self.is_current(delivery, token) {
            return None;
        }
        let mut delivery = state
            .deliveries
            .get(delivery)
            .filter(|d| d.is_open())?
            .clone();
        delivery.record(attempt, now);
        crate::telemetry::webhook_outcome(state.listing.id, &delivery);
        Some(delivery)
    }

    /// The record of what happened to a delivery already in the outbox (only that, not its
    /// content), with its next attempt scheduled if it has one.
    pub fn progressed(&mut self, state: &BotState, delivery: &Delivery) -> Record {
        // Only a redelivery leaves a delivery pending: asked by an operator, it goes out at once.
        self.schedule(state, delivery, delivery.state == DeliveryState::Pending);
        Record::DeliveryProgressed {
            bot: state.listing.id,
            delivery: delivery.id,
            progress: delivery.progress(),
        }
    }

    /// The newest deliveries, newest first, without those never stored.
    pub fn log(state: &BotState, never_stored: &[Uuid]) -> DeliveryLog {
        DeliveryLog {
            recent: state
                .deliveries
                .recent()
                .filter(|delivery| !never_stored.contains(&delivery.id))
                .cloned()
                .collect(),
            given_up_full: state.deliveries.given_up_full(),
        }
    }

    /// Hands the attempts the change numbered `after` scheduled to the dispatcher, which sends
    /// none of them before that record is durable; a change the journal refused (`None`)
    /// schedules nothing, ever.
    pub fn hand_over(&mut self, after: Option<u64>) {
        for mut job in self.unsent.drain(..) {
            match after {
                Some(seq) => {
                    job.after = seq;
                    self.dispatcher.schedule(job);
                }
                None => {
                    self.attempts.remove(&job.delivery);
                }
            }
        }
    }

    /// Hands an open delivery's next attempt to the dispatcher (at [`Self::hand_over`]),
    /// replacing any attempt scheduled before for it; `forced` lets it through a failing
    /// receiver's gate. A delivery no longer open has none.
    fn schedule(&mut self, state: &BotState, delivery: &Delivery, forced: bool) {
        let Some(due) = delivery.next_attempt_at.filter(|_| delivery.is_open()) else {
            self.attempts.remove(&delivery.id);
            return;
        };
        let receiver = self.receiver(state);
        self.next_token += 1;
        let token = self.next_token;
        self.attempts.insert(delivery.id, token);
        self.unsent.push(Job {
            bot: state.listing.id,
            delivery: delivery.id,
            token,
            due,
            receiver,
            give_up_at: delivery.tries_run_out_at(),
            forced,
            after: 0,
        });
    }

    /// Forgets the attempts of deliveries given up.
    fn forget(&mut self, given_up: &[Uuid]) {
        if given_up.is_empty() {
            return;
        }
        for id in given_up {
            self.attempts.remove(id);
        }
        self.dispatcher.forget(given_up);
    }

    fn is_current(&self, delivery: Uuid, token: u64) -> bool {
        self.attempts.get(&delivery) == Some(&token)
    }

    /// The receiver the bot's URL names (the key of its gate), parsed once per URL rather than
    /// once per vote.
    fn receiver(&mut self, state: &BotState) -> Arc<str> {
        let url = state.webhook.url.as_ref().map(|url| url.as_str());
        match &self.receiver {
            Some((known, key)) if Some(known.as_str()) == url => Arc::clone(key),
            _ => {
                let key = url.map_or_else(|| Arc::from(""), receiver_key);
                self.receiver = url.map(|url| (url.to_owned(), Arc::clone(&key)));
                key
            }
        }
    }
}
