//! The bot actor: one per listed bot, the only writer of that bot's votes, stats and listing.
//!
//! Every change it journals carries a publication: once the record is durable, the bot's new
//! [`BotView`] (a value readers share; only the check table it points to is updated in place,
//! by this actor's publications) is stored where readers that skip the mailbox load it
//! (`GET /bots/:id`, `GET /bots/:id/stats`) and put into the search index, before the write is
//! answered. Readers therefore see every acknowledged write and never one that was refused. On a
//! cluster node that follows the stream, the same publications run for the writer's records
//! (`actors::replicated`).

use std::collections::VecDeque;
use std::sync::Arc;

use actix::prelude::*;
use arc_swap::ArcSwap;
use uuid::Uuid;

use crate::domain::audit::{bot_target, changed_fields, Acting};
use crate::domain::bot::{
    BotPatch, BotState, BotView, Claim, DecidedBy, Decision, ListingStatus, WebhookSettings,
};
use crate::domain::feed::{Following, StreamSlot, VoteFeed};
use crate::domain::ids::Snowflake;
use crate::domain::stats::StatsUpdate;
use crate::domain::time::{Clock, Timestamp};
use crate::domain::votes::history::{HistoryEntry, Page, PageQuery, Retention};
use crate::domain::votes::{VoteCounts, Voter};
use crate::domain::webhook::{Attempt, Content, Delivery, Event, ReviewCreated};
use crate::domain::Rejection;
use crate::persist::journal::{Durable, Journal, Publish};
use crate::persist::state::{ApplyRecord, Record};
pub use crate::webhooks::outbox::DeliveryLog;
use crate::webhooks::outbox::{Outbox, Preparing};
use crate::webhooks::{Dispatcher, Prepared};

mod expiry;
mod project;
mod resume;
mod reviews;
pub use expiry::ExpireVotes;
pub use project::{
    PostAnnouncement, PostMetricsBatch, ReadProject, SetCommands, VotesFrom, VotesInOrder,
};
pub use resume::TakeDurableState;
pub use reviews::{EditReview, ReadReviews, RemoveReview, ReplyToReview, ReviewPage, WriteReview};

use super::replicated::{ApplyReplicated, BecomeWriter};
use super::{refused, when_durable, Answer};

/// Where a bot actor publishes its view; shared with the directory's readers.
pub type Published = Arc<ArcSwap<BotView>>;

/// Where a bot actor publishes what readers see once a change is durable, and the
/// directory-wide settings it reads: the directory, as a bot sees it.
pub trait Publications: Send + Sync {
    fn publish_view(&self, published: &Published, view: Arc<BotView>);
    fn history_retention(&self) -> &Retention;
    fn weekend(&self) -> &crate::domain::weekend::WeekendRule;
}

/// Requests that queue behind a busy bot wait for room instead of growing its mailbox.
const MAILBOX_CAPACITY: usize = 1024;

pub struct BotActor {
    state: BotState,
    published: Published,
    directory: Arc<dyn Publications>,
    clock: Arc<dyn Clock>,
    journal: Journal,
    /// Set when the journal refused a change this actor had already applied: from then on its
    /// state holds something no reader may see, so reads through the actor are refused too.
    /// Set too when it dropped a delivery's outcome while the journal was failed (no next
    /// attempt is scheduled then). Either way it takes the durable state back, and schedules
    /// its open deliveries, before writes are taken again (`bot/resume.rs`).
    refused: bool,
    /// The bot's webhook deliveries, from queueing to giving up: every webhook matter is
    /// delegated to it (`webhooks/outbox.rs`).
    outbox: Outbox,
    /// The voters list as last built; dropped on each vote, so repeated reads share one copy.
    recent_voters: Option<Arc<[RecentVoter]>>,
    /// The live vote stream's readers, fed once each vote is durable.
    feed: Arc<VoteFeed>,
    /// Changes applied and submitted but not yet known durable, oldest first: what a read must
    /// leave out if the journal fails before they reach the disk.
    unacked: VecDeque<Unacked>,
    /// The end the expiry timer was last armed with for this bot, until it wakes the actor:
    /// a later vote's end arms nothing (`bot/expiry.rs`).
    armed_expiry: Option<Timestamp>,
}

/// What a change not yet known durable added that reads through the actor would show.
#[derive(Clone, Copy, Debug)]
struct Unacked {
    /// Its journal number; `u64::MAX` for a change the journal refused outright.
    seq: u64,
    /// The history position of the vote it recorded.
    vote: Option<u64>,
    /// The delivery it queued.
    delivery: Option<Uuid>,
    /// What it added to the growth history: a vote of this weight, or a stats post, at `at`.
    growth: Option<(Timestamp, GrowthChange)>,
}

impl Unacked {
    /// What `record`, numbered `seq`, adds that reads through the actor would show (`last_vote`
    /// being the history position of the vote it recorded, if it recorded one).
    fn of(record: &Record, seq: u64, last_vote: u64) -> Self {
        let nothing = Self {
            seq,
            vote: None,
            delivery: None,
            growth: None,
        };
        match record {
            Record::Voted { at, weight, .. } => Self {
                vote: Some(last_vote),
                growth: Some((*at, GrowthChange::Vote(*weight))),
                ..nothing
            },
            Record::VotedWithDelivery {
                at,
                weight,
                delivery,
                ..
            } => Self {
                vote: Some(last_vote),
                delivery: Some(*delivery),
                growth: Some((*at, GrowthChange::Vote(*weight))),
                ..nothing
            },
            Record::StatsPosted { at, .. } | Record::StatsUpdated { at, .. } => Self {
                growth: Some((*at, GrowthChange::Post)),
                ..nothing
            },
            // Its earliest entry: from that interval on, a failed journal's reads show the
            // count acknowledged last.
            Record::MetricsBatchPosted { entries, at, .. } => Self {
                growth: Some((
                    entries.first().map_or(*at, |(first, _)| *first),
                    GrowthChange::Post,
                )),
                ..nothing
            },
            Record::DeliverySaved { delivery, .. } => Self {
                delivery: Some(delivery.id),
                ..nothing
            },
            // Read through the actor only once durable (`ReadProject`, `ReadReviews`), and
            // never published.
            Record::CommandsSet { .. }
            | Record::AnnouncementPosted { .. }
            | Record::ReviewSaved { .. }
            | Record::ReviewRemoved { .. } => nothing,
            // Its deliveries, each one (`BotActor::submitted` adds those past the first).
            Record::VotesExpired { expired, .. } => Self {
                delivery: expired.iter().find_map(|vote| vote.delivery),
                ..nothing
            },
            Record::BotEdited { .. }
            | Record::ListingClaimed { .. }
            | Record::VoteBanSet { .. }
            | Record::DeliveryProgressed { .. }
            | Record::OutboxOverflowed { .. }
            | Record::ProfileSaved(_)
            | Record::ProfileDeleted(_)
            | Record::BotListed { .. }
            | Record::BotDelisted(_)
            | Record::TokenRotated { .. }
            | Record::ProfileTokenIssued { .. }
            | Record::ProfileTokenRevoked { .. } => nothing,
            // What the change itself adds.
            Record::Audited { change, .. } => Self::of(change, seq, last_vote),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum GrowthChange {
    Vote(u32),
    Post,
}

/// Where reads through the actor stop when the journal failed: the first history position and
/// the deliveries that were never acknowledged.
struct Acknowledged {
    votes_before: u64,
    /// The time of the first vote that was never acknowledged.
    voted_before: Option<Timestamp>,
    deliveries: Vec<Uuid>,
}

impl BotActor {
    pub fn new(
        state: BotState,
        published: Published,
        directory: Arc<dyn Publications>,
        clock: Arc<dyn Clock>,
        journal: Journal,
        dispatcher: Arc<Dispatcher>,
    ) -> Self {
        let feed = VoteFeed::new(state.votes.history.next_position());
        Self {
            feed,
            state,
            published,
            directory,
            clock,
            journal,
            refused: false,
            outbox: Outbox::new(dispatcher),
            recent_voters: None,
            unacked: VecDeque::new(),
            armed_expiry: None,
        }
    }

    /// Keeps a test event's delivery, journals it, and schedules its first attempt; past the
    /// open limit the oldest open ones are given up, journaled by id only.
    fn send_test(
        &mut self,
        owner: Option<crate::domain::webhook::TestOwner>,
    ) -> Result<(Delivery, Durable), Rejection> {
        let (delivery, record) = self
            .outbox
            .test_event(&self.state, self.clock.now(), owner)?;
        let durable = self.apply_and_journal(record);
        Ok(match self.outbox.overflowed(&self.state) {
            Some(given_up) => (delivery, self.apply_and_journal(given_up)),
            None => (delivery, durable),
        })
    }

    /// Queues an event of `kind` if the bot chose it (`webhook_events`) and has a URL: its
    /// delivery is journaled whole after the change it tells of (so it is never sent before
    /// that change is durable), then the oldest open deliveries past the limit are given up.
    fn queue_event<K: crate::domain::webhook::EventKind>(&mut self, kind: K) {
        let Some((_, record)) = self
            .outbox
            .queue(&self.state, kind, self.clock.now(), false)
        else {
            return;
        };
        self.apply_and_journal(record);
        if let Some(given_up) = self.outbox.overflowed(&self.state) {
            self.apply_and_journal(given_up);
        }
    }

    /// Keeps what happened to a delivery already in the outbox, journals only that, and
    /// schedules its next attempt if it has one.
    fn progress_delivery(&mut self, delivery: &Delivery) -> Durable {
        let record = self.outbox.progressed(&self.state, delivery);
        self.apply_and_journal(record)
    }

    /// Once the journal has failed, a write is refused before it changes anything: the answer
    /// the journal would give it (503 "not stored"), counted and logged as the journal's
    /// refusals are. Without this the change would be applied first and then refused, and stay
    /// applied: a voter refused once would be told 409 "already voted" on the retry, which
    /// clients read as "stored" (docs/API.md). Only a change in flight when the journal failed
    /// is applied and then refused (`refused`).
    pub(super) fn refuse_while_failed(&self) -> Option<Rejection> {
        let error = self.journal.failure()?;
        self.journal.note_refusal(&error);
        Some(refused(error))
    }

    /// Makes a change to the state the way replay makes it: through the record's one function.
    fn apply(&mut self, record: &Record) {
        if let Err(why) = self.state.apply_record(record) {
            // Every record this actor makes was checked against its state first.
            tracing::error!(bot = %self.state.listing.id, %why, "a change did not apply");
        }
    }

    /// Applies a change and journals it.
    fn apply_and_journal(&mut self, record: Record) -> Durable {
        self.apply(&record);
        self.commit(record).0
    }

    /// Journals a change already applied in memory; what it shows readers
    /// ([`BotActor::after_applied`]) is published once the record is durable. The reply waits
    /// for durability while the actor goes on with its next message; records are numbered in
    /// the order this actor applies them, which is the order replay applies them in.
    fn commit(&mut self, record: Record) -> (Durable, Option<Arc<BotView>>) {
        let (publish, view) = self.after_applied(&record).unzip();
        (self.submit(record, publish), view)
    }

    /// As [`BotActor::commit`], with the write's answer sent by the journal once durable.
    fn commit_answering<T: Send + 'static>(&mut self, record: Record, answer: Answer<T>, reply: T) {
        let publish = self.after_applied(&record).map(|(publish, _)| publish);
        let seq = self
            .journal
            .submit_settled(&record, publish, answer.once_durable(reply));
        self.submitted(&record, seq);
    }

    /// What a record of this bot, just applied, changes beside the state, and what readers are
    /// shown once it is durable (the publication and the view in it): the one decision per
    /// record kind, for the changes this actor makes and for those a follower applies from the
    /// stream alike.
    fn after_applied(&mut self, record: &Record) -> Option<(Publish, Arc<BotView>)> {
        match record {
            Record::Voted { voter, at, .. } | Record::VotedWithDelivery { voter, at, .. } => {
                self.prune_history(*at);
                self.recent_voters = None;
                let voted = self.vote_publication(voter.id, *at);
                Some(self.publication(Some(voted)))
            }
            Record::StatsPosted { .. }
            | Record::StatsUpdated { .. }
            | Record::MetricsBatchPosted { .. }
            | Record::BotEdited { decision: None, .. }
            | Record::ListingClaimed { .. } => Some(self.publication(None)),
            // A decision is told to the vote stream before the view that shows it is published
            // (`publication` runs the stream's part first): `listing.delisted` reaches the
            // stream before anything a delisting changes.
            Record::BotEdited {
                decision: Some(decision),
                ..
            } => {
                let told = self.decision_event(*decision);
                let told = self.stream_publication(told.into_iter());
                Some(self.publication(told))
            }
            // The vote stream is told, in record order, once durable (the view, unchanged, is
            // published again with it: once per announcement, not per vote).
            Record::VotesExpired { expired, .. } => {
                let told = self.expiry_publication(expired);
                Some(self.publication(told))
            }
            // A review just written is told to the vote stream once durable, with the view
            // that counts it (`GET /projects/@me` reads the view's review figures); the
            // reviews themselves are read through the actor.
            Record::ReviewSaved {
                review,
                created: true,
                ..
            } => {
                let written = ReviewCreated::of(self.state.listing.event_bot(), review);
                let told = self.stream_publication(std::iter::once(written.into()));
                Some(self.publication(told))
            }
            Record::ReviewSaved { .. } | Record::ReviewRemoved { .. } => {
                Some(self.publication(None))
            }
            // Commands and announcements are read through the actor, once durable.
            Record::CommandsSet { .. } | Record::AnnouncementPosted { .. } => None,
            // Deliveries are not shown to readers of the bot.
            Record::DeliverySaved { .. }
            | Record::DeliveryProgressed { .. }
            | Record::OutboxOverflowed { .. } => None,
            // The registry's records: never a bot's.
            Record::VoteBanSet { .. }
            | Record::ProfileSaved(_)
            | Record::ProfileDeleted(_)
            | Record::BotListed { .. }
            | Record::BotDelisted(_)
            | Record::TokenRotated { .. }
            | Record::ProfileTokenIssued { .. }
            | Record::ProfileTokenRevoked { .. } => None,
            // The change decides; its entry joins the audit log through the journal.
            Record::Audited { change, .. } => self.after_applied(change),
        }
    }

    /// What readers see once a change is durable: the bot's new view, and `also` (a vote's check
    /// and stream entry) at the same moment.
    fn publication(&self, also: Option<Publish>) -> (Publish, Arc<BotView>) {
        let view = Arc::new(self.state.view());
        // An edited listing is rendered here, on the actor's thread, not by the journal's
        // writer or a reader (a vote keeps the listing and its rendering).
        view.listing.rendered();
        let directory = Arc::clone(&self.directory);
        let published = Arc::clone(&self.published);
        let shown = Arc::clone(&view);
        let publish: Publish = Box::new(move || {
            if let Some(also) = also {
                also();
            }
            directory.publish_view(&published, shown);
        });
        (publish, view)
    }

    /// A vote just applied, as readers learn of it: the check table and the live stream.
    fn vote_publication(&self, user: Snowflake, at: Timestamp) -> Publish {
        let checks = Arc::clone(self.state.votes.window.published());
        let last = self.state.votes.history.next_position().saturating_sub(1);
        let entry = self.state.votes.history_entry(last);
        let feed = Arc::clone(&self.feed);
        Box::new(move || {
            checks.publish(user, at);
            // The stream sees the vote at the moment its 201 may be sent, not before.
            if let Some(entry) = entry {
                feed.publish(entry);
            }
        })
    }

    /// Deliveries queued or in retry go out again (after a start, or when the node becomes
    /// the writer).
    fn schedule_open_deliveries(&mut self) {
        self.outbox.reopen(&self.state);
        self.outbox.hand_over(Some(self.state.last_seq));
    }

    /// Every change this actor makes goes through here: numbered, queued for disk, and only
    /// then are the webhook attempts it scheduled handed over, carrying its number.
    fn submit(&mut self, record: Record, publish: Option<Publish>) -> Durable {
        let (seq, durable) = self.journal.submit_then(&record, publish);
        self.submitted(&record, seq);
        durable
    }

    /// What follows a record's submission (`seq`, 0 if refused): the vote, delivery and growth
    /// it holds wait for its acknowledgement, and the webhook attempts it scheduled are handed
    /// over carrying its number.
    fn submitted(&mut self, record: &Record, seq: u64) {
        self.forget_acknowledged();
        let last_vote = self.state.votes.history.next_position().saturating_sub(1);
        let unacked = Unacked::of(record, if seq == 0 { u64::MAX } else { seq }, last_vote);
        if unacked.vote.is_some() || unacked.delivery.is_some() || unacked.growth.is_some() {
            self.unacked.push_back(unacked);
        }
        // An announcement of expiries queues a delivery per vote: each is left out alike.
        if let Record::VotesExpired { expired, .. } = record.change() {
            let more = expired.iter().filter_map(|vote| vote.delivery).skip(1);
            self.unacked.extend(more.map(|delivery| Unacked {
                delivery: Some(delivery),
                ..unacked
            }));
        }
        match seq {
            0 => {
                self.refused = true;
                self.outbox.hand_over(None);
            }
            seq => {
                self.state.last_seq = seq;
                self.outbox.hand_over(Some(seq));
            }
        }
    }

    /// Forgets history older than the service keeps (`--vote-history-days`).
    fn prune_history(&mut self, now: Timestamp) {
        if let Some(horizon) = self.directory.history_retention().horizon(now) {
            self.state.votes.history.prune_before(horizon);
        }
    }

    /// Drops what the journal has made durable from the changes reads might have to leave out.
    fn forget_acknowledged(&mut self) {
        let durable = self.journal.durable_seq();
        while self.unacked.front().is_some_and(|u| u.seq <= durable) {
            self.unacked.pop_front();
        }
    }

    /// Once the journal has failed, what reads through the actor leave out: every change it
    /// holds past the last durable record. `None` while the journal works.
    fn acknowledged(&mut self) -> Option<Acknowledged> {
        if !self.refused && self.journal.failure().is_none() {
            return None;
        }
        self.forget_acknowledged();
        let votes = &self.state.votes;
        let first_vote = self.unacked.iter().find_map(|u| u.vote);
        Some(Acknowledged {
            votes_before: first_vote.unwrap_or_else(|| votes.history.next_position()),
            voted_before: first_vote
                .and_then(|position| votes.history_entry(position))
                .map(|entry| entry.voted_at),
            deliveries: self.unacked.iter().filter_map(|u| u.delivery).collect(),
        })
    }

    /// A read through the actor sees changes that may still be on their way to disk: it is
    /// answered once they are durable, so nobody learns of a write that is then refused. If the
    /// journal fails meanwhile, the read is asked again, and then answered from what was
    /// acknowledged (see [`BotActor::acknowledged`]): reads stay up while writes cannot be kept.
    fn when_seen_durable<T, M>(
        &self,
        value: T,
        again: M,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<T, Rejection>>
    where
        T: Send + 'static,
        M: Message<Result = Result<T, Rejection>> + Send + 'static,
        Self: Handler<M>,
    {
        if self.state.last_seq <= self.journal.durable_seq() {
            return Box::pin(async move { Ok(value) });
        }
        let journal = self.journal.clone();
        let actor = ctx.address();
        Box::pin(async move {
            match journal.barrier().wait().await {
                Ok(()) => Ok(value),
                // Asked again only for a failed journal, which the handler then reads around;
                // a journal that stopped (shutdown) has nothing to read around.
                Err(why) if journal.failure().is_some() => actor
                    .send(again)
                    .await
                    .map_err(|_| Rejection::NotStored(why.to_string()))?,
                Err(why) => Err(Rejection::NotStored(why.to_string())),
            }
        })
    }
}

impl Actor for BotActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        self.prune_history(self.clock.now());
        // Only the writer sends webhooks: a cluster node that follows the stream schedules
        // its bots' deliveries when it becomes the writer.
        if !self.journal.follows() {
            self.schedule_open_deliveries();
            self.arm_expiry();
        }
    }
}

/// Takes a vote now, or says when the user may vote again.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RecordVote(pub Voter, pub Answer<Cast>);

/// A vote taken: the bot's counts just after it, and when it was taken (its 12 hours end at
/// `at` plus the window).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cast {
    pub counts: VoteCounts,
    pub at: Timestamp,
}

impl Handler<RecordVote> for BotActor {
    type Result = ();

    fn handle(&mut self, RecordVote(voter, answer): RecordVote, _: &mut Self::Context) {
        if let Some(why) = self.refuse_while_failed() {
            return answer.refuse(why);
        }
        let at = self.clock.now();
        if let Some(retry_at) = self.state.votes.window.active_until(voter.id, at) {
            return answer.refuse(Rejection::AlreadyVoted { retry_at });
        }
        // The weight is decided here, once, and kept in the record: replay counts it again.
        let weight = self.directory.weekend().weight_at(at);
        let (record, queued) = self.outbox.vote_record(&self.state, voter, at, weight);
        self.apply(&record);
        if let Some(queued) = queued {
            self.outbox.queued_by_vote(&self.state, queued);
        }
        let counts = self.state.votes.counts(at);
        self.commit_answering(record, answer, Cast { counts, at });
        self.arm_expiry();
    }
}

/// The dispatcher asks, when an attempt comes due, what to send and where: the bot's settings
/// as they are now. `None` when the attempt is stale or there is nowhere to send.
#[derive(Message)]
#[rtype(result = "Option<Prepared>")]
pub struct PrepareAttempt {
    pub delivery: Uuid,
    pub token: u64,
}

impl Handler<PrepareAttempt> for BotActor {
    type Result = Option<Prepared>;

    fn handle(&mut self, ask: PrepareAttempt, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        match self
            .outbox
            .prepare(&self.state, ask.delivery, ask.token, now)
        {
            Preparing::Send(prepared) => Some(prepared),
            // The URL was removed while the delivery waited, or the listing stopped being
            // public (it is sent its decisions only): nothing will ever take it (given up once
            // the journal takes writes again, not applied and then refused).
            Preparing::GiveUp(given_up) => {
                if self.journal.failure().is_some() {
                    // Its attempt is over: only the durable state taken back schedules it.
                    self.refused = true;
                } else {
                    self.progress_delivery(&given_up);
                }
                None
            }
            Preparing::Nothing => None,
        }
    }
}

/// What one webhook attempt came to, from the dispatcher.
#[derive(Message)]
#[rtype(result = "()")]
pub struct DeliveryOutcome {
    pub delivery: Uuid,
    pub token: u64,
    pub attempt: Attempt,
}

impl Handler<DeliveryOutcome> for BotActor {
    type Result = ();

    fn handle(&mut self, outcome: DeliveryOutcome, _: &mut Self::Context) {
        let now = self.clock.now();
        let DeliveryOutcome {
            delivery,
            token,
            attempt,
        } = outcome;
        // While the journal is failed an outcome would be applied and then refused: it is
        // dropped before it changes the outbox, and the delivery, open in the durable state,
        // is attempted again once writes are taken again (deliveries are at least once).
        if self.journal.failure().is_some() {
            // The attempt is over and nothing schedules the next one: this actor takes the
            // durable state back (and schedules its open deliveries) before writes are taken.
            self.refused = true;
            return;
        }
        // A late answer of an attempt since replaced (redelivered, given up) is news of nothing.
        if let Some(delivery) = self
            .outbox
            .outcome(&self.state, delivery, token, attempt, now)
        {
            self.progress_delivery(&delivery);
        }
    }
}

/// Queues a `webhook.test` event to the bot's receiver.
#[derive(Message)]
#[rtype(result = "Result<Delivery, Rejection>")]
pub struct SendTest(pub Option<crate::domain::webhook::TestOwner>);

impl Handler<SendTest> for BotActor {
    type Result = ResponseFuture<Result<Delivery, Rejection>>;

    fn handle(&mut self, SendTest(owner): SendTest, _: &mut Self::Context) -> Self::Result {
        if let Some(why) = self.refuse_while_failed() {
            return Box::pin(async move { Err(why) });
        }
        match self.send_test(owner) {
            Ok((delivery, durable)) => when_durable(durable, delivery),
            Err(rejection) => Box::pin(async move { Err(rejection) }),
        }
    }
}

/// Sends a delivery again from its first try: the same id and body.
#[derive(Message)]
#[rtype(result = "Result<Delivery, Rejection>")]
pub struct Redeliver(pub Uuid);

impl Handler<Redeliver> for BotActor {
    type Result = ResponseFuture<Result<Delivery, Rejection>>;

    fn handle(&mut self, Redeliver(id): Redeliver, _: &mut Self::Context) -> Self::Result {
        if let Some(why) = self.refuse_while_failed() {
            return Box::pin(async move { Err(why) });
        }
        match self.outbox.redelivery(&self.state, id, self.clock.now()) {
            Ok(delivery) => when_durable(self.progress_delivery(&delivery), delivery),
            Err(rejection) => Box::pin(async move { Err(rejection) }),
        }
    }
}

/// The latest deliveries, newest first.
#[derive(Message, Clone, Copy)]
#[rtype(result = "Result<DeliveryLog, Rejection>")]
pub struct RecentDeliveries;

impl Handler<RecentDeliveries> for BotActor {
    type Result = ResponseFuture<Result<DeliveryLog, Rejection>>;

    fn handle(&mut self, ask: RecentDeliveries, ctx: &mut Self::Context) -> Self::Result {
        let acknowledged = self.acknowledged();
        let never_stored = acknowledged.as_ref().map_or(&[][..], |a| &a.deliveries);
        let log = Outbox::log(&self.state, never_stored);
        if acknowledged.is_some() {
            return Box::pin(async move { Ok(log) });
        }
        self.when_seen_durable(log, ask, ctx)
    }
}

/// A page of the vote history, of durable votes only.
#[derive(Message, Clone, Copy)]
#[rtype(result = "Result<Page, Rejection>")]
pub struct ReadHistoryPage(pub PageQuery);

impl Handler<ReadHistoryPage> for BotActor {
    type Result = ResponseFuture<Result<Page, Rejection>>;

    fn handle(&mut self, ask: ReadHistoryPage, ctx: &mut Self::Context) -> Self::Result {
        let ReadHistoryPage(mut query) = ask;
        let retention = self.directory.history_retention().horizon(self.clock.now());
        query.since = query.since.max(retention);
        if let Some(acknowledged) = self.acknowledged() {
            let before = acknowledged.votes_before;
            query.before = Some(query.before.map_or(before, |b| b.min(before)));
            let page = self.state.votes.history_page(&query);
            return Box::pin(async move { Ok(page) });
        }
        self.when_seen_durable(self.state.votes.history_page(&query), ask, ctx)
    }
}

/// The bot's server counts and votes over time, as far as they are durable.
#[derive(Message, Clone, Copy)]
#[rtype(result = "Result<GrowthAnswer, Rejection>")]
pub struct GrowthPoints {
    pub interval: crate::domain::growth::Interval,
    pub from: Timestamp,
    pub to: Timestamp,
}

/// [`GrowthPoints`]' answer.
pub struct GrowthAnswer {
    pub points: Vec<crate::domain::growth::Point>,
    /// The number of the last record the points include: the bot's state at that record gives
    /// exactly these points (`None` once the journal has failed and refused changes are left
    /// out).
    pub seq: Option<u64>,
    /// The history's count of changes the points were read at, to compare with a view's
    /// [`BotView::growth_changes`] (meaningful only with `seq`).
    pub changes: u64,
}

impl Handler<GrowthPoints> for BotActor {
    type Result = ResponseFuture<Result<GrowthAnswer, Rejection>>;

    fn handle(&mut self, ask: GrowthPoints, ctx: &mut Self::Context) -> Self::Result {
        let mut points = self.state.growth.points(ask.interval, ask.from, ask.to);
        let changes = self.state.growth.changes();
        if self.acknowledged().is_some() {
            self.leave_out_refused_growth(&mut points, ask.interval);
            let answer = GrowthAnswer {
                points,
                seq: None,
                changes,
            };
            return Box::pin(async move { Ok(answer) });
        }
        let seq = Some(self.state.last_seq);
        let answer = GrowthAnswer {
            points,
            seq,
            changes,
        };
        self.when_seen_durable(answer, ask, ctx)
    }
}

impl BotActor {
    /// Once the journal has failed, the growth history's points without the refused changes:
    /// their votes taken out of their intervals, and, from the interval of the first refused
    /// stats post on, the count acknowledged last (the published one: no post after a refused
    /// one was ever acknowledged).
    fn leave_out_refused_growth(
        &self,
        points: &mut [crate::domain::growth::Point],
        interval: crate::domain::growth::Interval,
    ) {
        let span = interval.span_ms();
        let first_post = self
            .unacked
            .iter()
            .filter_map(|u| match u.growth {
                Some((at, GrowthChange::Post)) => Some(at),
                _ => None,
            })
            .min();
        let acknowledged_count = self.published.load().server_count.map(|c| c.get());
        for point in points {
            let end = point.at.millis().saturating_add(span);
            for unacked in &self.unacked {
                if let Some((at, GrowthChange::Vote(weight))) = unacked.growth {
                    if at >= point.at && at.millis() < end {
                        point.votes = point.votes.saturating_sub(u64::from(weight));
                    }
                }
            }
            if first_post.is_some_and(|first| first.millis() < end) {
                point.server_count = acknowledged_count;
            }
        }
    }
}

/// A place for one more vote stream, unless `0` are open already.
#[derive(Message)]
#[rtype(result = "Option<StreamSlot>")]
pub struct OpenStream(pub usize);

impl Handler<OpenStream> for BotActor {
    type Result = Option<StreamSlot>;

    fn handle(&mut self, OpenStream(max): OpenStream, _: &mut Self::Context) -> Self::Result {
        self.feed.open(max)
    }
}

/// A stream wants votes from position `next` on: it gets history up to what is published,
/// a page at a time, and once it has read that, it is registered for live votes.
#[derive(Message)]
#[rtype(result = "FollowReply")]
pub struct Follow {
    pub next: u64,
    pub slot: StreamSlot,
    pub buffer: usize,
    pub page: usize,
}

pub enum FollowReply {
    /// Durable votes to send first; then ask again from `next`.
    Backlog {
        entries: Vec<HistoryEntry>,
        next: u64,
        slot: StreamSlot,
    },
    /// Caught up: every later vote comes through here.
    Live(Following),
}

impl Handler<Follow> for BotActor {
    type Result = MessageResult<Follow>;

    fn handle(&mut self, ask: Follow, _: &mut Self::Context) -> Self::Result {
        MessageResult(match self.feed.follow(ask.next, ask.buffer, ask.slot) {
            Ok(following) => FollowReply::Live(following),
            Err((published, slot)) => {
                let entries = self
                    .state
                    .votes
                    .history_range(ask.next, published, ask.page);
                let next = entries.last().map_or(published, |last| last.position + 1);
                FollowReply::Backlog {
                    entries,
                    next,
                    slot,
                }
            }
        })
    }
}

#[derive(Clone, Debug)]
pub struct RecentVoter {
    pub voter: Arc<Voter>,
    pub voted_at: Timestamp,
}

/// The last 1000 distinct voters, most recent first.
#[derive(Message, Clone, Copy)]
#[rtype(result = "Result<Arc<[RecentVoter]>, Rejection>")]
pub struct RecentVoters;

impl Handler<RecentVoters> for BotActor {
    type Result = ResponseFuture<Result<Arc<[RecentVoter]>, Rejection>>;

    fn handle(&mut self, ask: RecentVoters, ctx: &mut Self::Context) -> Self::Result {
        if let Some(acknowledged) = self.acknowledged() {
            let voters = self.acknowledged_voters(&acknowledged);
            return Box::pin(async move { Ok(voters) });
        }
        let voters = self.recent_voters.get_or_insert_with(|| {
            self.state
                .votes
                .recent_voters()
                .map(|(voter, voted_at)| RecentVoter { voter, voted_at })
                .collect()
        });
        let voters = Arc::clone(voters);
        self.when_seen_durable(voters, ask, ctx)
    }
}

impl BotActor {
    /// The voters list as it was after the last acknowledged vote: the ring holds votes the
    /// journal refused, so the list is made again from the history before the first of them,
    /// then from the ring's older voters (a history pruned by retention may not reach back as
    /// far as the ring does).
    fn acknowledged_voters(&self, acknowledged: &Acknowledged) -> Arc<[RecentVoter]> {
        let votes = &self.state.votes;
        if acknowledged.voted_before.is_none() {
            // No vote was refused: the ring is as acknowledged.
            return votes
                .recent_voters()
                .map(|(voter, voted_at)| RecentVoter { voter, voted_at })
                .collect();
        }
        let capacity = crate::domain::votes::RECENT_VOTERS;
        let mut seen = rustc_hash::FxHashSet::default();
        let mut voters = Vec::new();
        let mut position = acknowledged.votes_before;
        while voters.len() < capacity && position > votes.history.first_position() {
            position -= 1;
            if let Some(entry) = votes.history_entry(position) {
                if seen.insert(entry.voter.id) {
                    voters.push(RecentVoter {
                        voter: entry.voter,
                        voted_at: entry.voted_at,
                    });
                }
            }
        }
        let oldest = voters.last().map(|v| v.voted_at);
        for (voter, voted_at) in votes.recent_voters() {
            if voters.len() >= capacity {
                break;
            }
            let refused = acknowledged.voted_before.is_some_and(|t| voted_at >= t);
            let newer = oldest.is_some_and(|t| voted_at > t);
            if !refused && !newer && seen.insert(voter.id) {
                voters.push(RecentVoter { voter, voted_at });
            }
        }
        voters.into()
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct PostStats(pub StatsUpdate, pub Answer<()>);

impl Handler<PostStats> for BotActor {
    type Result = ();

    fn handle(&mut self, PostStats(update, answer): PostStats, _: &mut Self::Context) {
        if let Some(why) = self.refuse_while_failed() {
            return answer.refuse(why);
        }
        let at = self.clock.now();
        let bot = self.state.listing.id;
        let record = match update {
            StatsUpdate::Whole(count) => Record::StatsPosted { bot, count, at },
            update => Record::StatsUpdated { bot, update, at },
        };
        self.apply(&record);
        self.commit_answering(record, answer, ());
    }
}

/// Edits the listing; the registry has already checked what needs the whole directory. A moved
/// platform id is published with the view (the directory indexes published listings).
#[derive(Message)]
#[rtype(result = "Result<Arc<BotView>, Rejection>")]
pub struct ApplyPatch(pub BotPatch, pub DecidedBy, pub Acting);

impl Handler<ApplyPatch> for BotActor {
    type Result = ResponseFuture<Result<Arc<BotView>, Rejection>>;

    fn handle(
        &mut self,
        ApplyPatch(patch, by, acting): ApplyPatch,
        _: &mut Self::Context,
    ) -> Self::Result {
        if let Some(why) = self.refuse_while_failed() {
            return Box::pin(async move { Err(why) });
        }
        let at = self.clock.now();
        // The status lives in the listing, so its moves are checked here, in order with every
        // other edit of the bot.
        let (listing, webhook, decision) = match self.state.edited_by(patch, by) {
            Ok(edited) => edited,
            Err(rejection) => return Box::pin(async move { Err(rejection) }),
        };
        let mut changes = changed_fields(&*self.state.listing, &listing);
        changes.extend(webhook_changes(&self.state.webhook, &webhook));
        let bot = self.state.listing.id;
        let entry = acting.entry(bot_target(bot), changes, at);
        let record = Record::BotEdited {
            bot,
            listing: Arc::new(listing),
            webhook,
            at,
            decision,
        };
        if let Some(decision) = decision {
            crate::telemetry::moderation_decision(decision.to.name());
        }
        let record = Record::audited(entry, record);
        self.apply(&record);
        let (durable, view) = self.commit(record);
        if let Some(decision) = decision {
            self.announce_decision(decision);
        }
        // An edit always shows its view (`after_applied`).
        let view = view.unwrap_or_else(|| Arc::new(self.state.view()));
        when_durable(durable, view)
    }
}

impl BotActor {
    /// The listing's decision just journaled, told to the bot's receiver if it chose that kind:
    /// it is read from the decision of the `BotEdited` record, the one record every decision
    /// journals, whoever made it (the admin API, staff's routes, an owner's edit).
    fn announce_decision(&mut self, decision: Decision) {
        match self.decision_event(decision) {
            Some(Content::ListingApproved(kind)) => self.queue_event(kind),
            Some(Content::ListingDenied(kind)) => self.queue_event(kind),
            Some(Content::ListingDelisted(kind)) => self.queue_event(kind),
            // Back to review (the owners made that change themselves): no event.
            _ => {}
        }
    }

    /// The event a decision just applied makes, with the reason the listing now holds: the one
    /// mapping from a status to its kind, for the webhook and the vote stream alike.
    fn decision_event(&self, decision: Decision) -> Option<Content> {
        use crate::domain::webhook::{ListingApproval, ListingDelisting, ListingDenial};
        let bot = self.state.listing.event_bot();
        let reason = self
            .state
            .listing
            .reason
            .as_ref()
            .map(|r| r.as_str().to_owned());
        Some(match decision.to {
            ListingStatus::Approved => ListingApproval { bot, reason: None }.into(),
            ListingStatus::Denied => ListingDenial { bot, reason }.into(),
            ListingStatus::Delisted => ListingDelisting { bot, reason }.into(),
            ListingStatus::Pending => return None,
        })
    }

    /// What the bot's live vote stream is told of `events` once their record is durable: each
    /// whose kind is on the stream ([`EventKind::ON_STREAM`](crate::domain::webhook::EventKind))
    /// and that the bot chose (`webhook_events`; a URL is not needed, the stream is its own
    /// reader), in order; none when nothing is left. Run in the record's publication, so in
    /// record order with the votes, by the writer and by a follower applying the record alike.
    pub(super) fn stream_publication(
        &self,
        events: impl Iterator<Item = Content>,
    ) -> Option<Publish> {
        let chosen = self.state.webhook.events;
        let told: Vec<(Event, serde_json::Value)> = events
            .filter_map(|content| content.stream_event())
            .filter(|(event, _)| chosen.has(*event))
            .collect();
        if told.is_empty() {
            return None;
        }
        let feed = Arc::clone(&self.feed);
        Some(Box::new(move || {
            for (event, data) in &told {
                feed.publish_event(event.name(), data);
            }
        }))
    }
}

/// A staff member claims the listing for review: only while it is `pending` (checked here, in
/// order with the bot's edits); the claim is published with the view once durable.
#[derive(Message)]
#[rtype(result = "Result<Arc<BotView>, Rejection>")]
pub struct ClaimListing(pub Claim, pub Acting);

impl Handler<ClaimListing> for BotActor {
    type Result = ResponseFuture<Result<Arc<BotView>, Rejection>>;

    fn handle(
        &mut self,
        ClaimListing(claim, acting): ClaimListing,
        _: &mut Self::Context,
    ) -> Self::Result {
        if let Some(why) = self.refuse_while_failed() {
            return Box::pin(async move { Err(why) });
        }
        let status = self.state.listing.status;
        if status != ListingStatus::Pending {
            return Box::pin(async move {
                Err(Rejection::Conflict(format!(
                    "the listing is `{}`: only a pending listing is claimed",
                    status.name()
                )))
            });
        }
        let bot = self.state.listing.id;
        let entry = acting.entry(bot_target(bot), vec!["claim".into()], claim.at);
        let record = Record::audited(entry, Record::ListingClaimed { bot, claim });
        self.apply(&record);
        let (durable, view) = self.commit(record);
        let view = view.unwrap_or_else(|| Arc::new(self.state.view()));
        when_durable(durable, view)
    }
}

/// The names of the webhook settings an edit changed (`webhook_secret` is a name, never the
/// secret).
fn webhook_changes(old: &WebhookSettings, new: &WebhookSettings) -> Vec<String> {
    [
        ("webhook_url", old.url != new.url),
        ("webhook_secret", old.secret != new.secret),
        ("webhook_format", old.format != new.format),
        ("webhook_events", old.events != new.events),
    ]
    .into_iter()
    .filter(|(_, changed)| *changed)
    .map(|(name, _)| name.to_string())
    .collect()
}

/// The bot's webhook settings, for its owners' view (`GET /bots/{id}/manage`), which shows
/// them without the secret.
#[derive(Message)]
#[rtype(result = "WebhookSettings")]
pub struct ReadWebhook;

impl Handler<ReadWebhook> for BotActor {
    type Result = MessageResult<ReadWebhook>;

    fn handle(&mut self, _: ReadWebhook, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.state.webhook.clone())
    }
}

/// A copy of the whole state, for snapshots and tests.
#[derive(Message)]
#[rtype(result = "BotState")]
pub struct ReadState;

impl Handler<ReadState> for BotActor {
    type Result = MessageResult<ReadState>;

    fn handle(&mut self, _: ReadState, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.state.clone())
    }
}

impl Handler<ApplyReplicated> for BotActor {
    type Result = ();

    /// Applies the writer's record through the one apply function, and what follows it
    /// through the one decision the writer made it with ([`BotActor::after_applied`]: history
    /// pruned at the record's time, what readers are to see, handed back). Delivery
    /// records change only the outbox: no attempt is scheduled here (only the writer sends).
    fn handle(&mut self, replicated: ApplyReplicated, _: &mut Self::Context) {
        let ApplyReplicated { seq, record, reply } = replicated;
        if seq <= self.state.last_seq {
            let _ = reply.send(None);
            return;
        }
        self.state.last_seq = seq;
        self.apply(&record);
        let publication = self.after_applied(&record).map(|(publish, _)| publish);
        let _ = reply.send(publication);
    }
}

impl Handler<BecomeWriter> for BotActor {
    type Result = ();

    fn handle(&mut self, _: BecomeWriter, _: &mut Self::Context) {
        self.schedule_open_deliveries();
        self.arm_expiry();
    }
}

/// Sent when the bot is delisted.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Stop;

impl Handler<Stop> for BotActor {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::bot::{NewBot, ServerCount};
    use crate::domain::ids::{BotId, Snowflake};
    use crate::domain::text::VoterName;
    use crate::domain::time::ManualClock;
    use chrono::Duration;

    fn new_bot() -> NewBot {
        serde_json::from_value(serde_json::json!({
            "platform_id": "42", "name": "Bot", "username": "bot", "short_description": "A bot"
        }))
        .expect("valid bot")
    }

    fn voter(id: u64) -> Voter {
        Voter {
            id: Snowflake::from_u64(id),
            username: VoterName::parse(format!("u{id}")).expect("valid"),
            avatar: None,
        }
    }

    /// A bot actor on an in-memory journal and a manual clock, with what it publishes.
    fn started() -> (Addr<BotActor>, Arc<ArcSwap<BotView>>, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_790_000_000_000)));
        let state = BotState::create(BotId::new_random(), new_bot(), clock.now());
        let published = Arc::new(ArcSwap::from_pointee(state.view()));
        let directory = Arc::new(crate::actors::directory::Directory::new(clock.now()));
        let journal = Journal::in_memory(1);
        let dispatcher = Dispatcher::new(
            clock.clone(),
            journal.clone(),
            Arc::clone(&directory),
            std::time::Duration::from_secs(1),
            false,
        )
        .expect("a client");
        let bot = BotActor::new(
            state,
            Arc::clone(&published),
            directory,
            clock.clone(),
            journal,
            dispatcher,
        )
        .start();
        (bot, published, clock)
    }

    #[actix_web::test]
    async fn votes_are_published_before_the_reply() {
        let (bot, published, clock) = started();

        // A write carries its answer; the asker awaits that, not the mailbox.
        let vote = |user| {
            let (answer, answered) = Answer::pair();
            bot.do_send(RecordVote(voter(user), answer));
            answered.wait()
        };
        let counts = vote(1).await;
        assert_eq!(counts.map(|c| c.counts.vote_count), Ok(1));
        assert_eq!(published.load().vote_count, 1);
        let checks = Arc::clone(&published.load().checks);
        assert!(checks.is_active(Snowflake::from_u64(1), clock.now()));

        let again = vote(1).await;
        assert!(matches!(again, Err(Rejection::AlreadyVoted { .. })));

        clock.advance(Duration::hours(12));
        assert!(!checks.is_active(Snowflake::from_u64(1), clock.now()));
        vote(2).await.expect("accepted and durable");
        let voters = bot
            .send(RecentVoters)
            .await
            .expect("delivered")
            .expect("durable");
        let ids: Vec<u64> = voters.iter().map(|v| v.voter.id.get()).collect();
        assert_eq!(ids, [2, 1]);

        let (answer, answered) = Answer::pair();
        bot.do_send(PostStats(
            StatsUpdate::Whole(ServerCount::new(7).expect("in range")),
            answer,
        ));
        answered.wait().await.expect("stored");
        assert_eq!(published.load().servers(), 7);
    }

    /// An owner may not review their own bot, nor a stranger reply: the bot's actor decides it
    /// in order with the edit that changes its owners. The edit and the review are sent one
    /// after the other without waiting (as two requests racing), and the review asked second
    /// is refused because the owner change before it in the mailbox made its author an owner,
    /// whatever a route read of the owners a moment before.
    #[actix_web::test]
    async fn reviews_are_decided_in_order_with_the_change_of_owners() {
        use crate::domain::audit::{AuditAction, AuditActor};
        use crate::domain::bot::{BotPatch, DecidedBy};
        use crate::domain::ids::ProfileId;
        use reviews::{ReplyToReview, WriteReview};

        let (bot, _, _) = started();
        let (author, stranger) = (ProfileId::new_random(), ProfileId::new_random());
        let owners = |ids: Vec<ProfileId>| {
            let patch = BotPatch {
                owner_ids: Some(ids),
                ..BotPatch::default()
            };
            let acting = Acting::new(AuditActor::Admin, AuditAction::BotOwners);
            ApplyPatch(patch, DecidedBy::Admin, acting)
        };
        let review = |author| {
            let (answer, answered) = Answer::pair();
            let write = WriteReview {
                author,
                rating: serde_json::from_value(serde_json::json!(4)).expect("a rating"),
                content: serde_json::from_value(serde_json::json!("good")).expect("a text"),
                answer,
            };
            (write, answered)
        };

        // Made an owner, then (in the same mailbox, unawaited) a review by that profile.
        let made_owner = bot.send(owners(vec![author]));
        let (write, answered) = review(author);
        bot.do_send(write);
        made_owner.await.expect("delivered").expect("edited");
        assert!(matches!(
            answered.wait().await,
            Err(Rejection::Forbidden(_))
        ));

        // No longer an owner: the same profile's review is taken, and the reply it then asks
        // for (unawaited behind the change) is refused.
        bot.send(owners(vec![stranger]))
            .await
            .expect("delivered")
            .expect("edited");
        let (write, answered) = review(author);
        bot.do_send(write);
        let written = answered.wait().await.expect("written");
        let (answer, replied) = Answer::pair();
        bot.do_send(ReplyToReview {
            review: written.id,
            owner: author,
            content: serde_json::from_value(serde_json::json!("thanks")).expect("a text"),
            answer,
        });
        assert!(matches!(replied.wait().await, Err(Rejection::Forbidden(_))));
        let (answer, replied) = Answer::pair();
        bot.do_send(ReplyToReview {
            review: written.id,
            owner: stranger,
            content: serde_json::from_value(serde_json::json!("thanks")).expect("a text"),
            answer,
        });
        assert!(replied.wait().await.is_ok(), "an owner replies");
    }
}
