//! What is stored: the whole directory (a snapshot's payload) and the journal's records.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::domain::audit::{AuditEntries, AuditEntry};
use crate::domain::bot::{BotState, Claim, Decision, Listing, ServerCount, WebhookSettings};
use crate::domain::ids::{BotId, ProfileId, TokenHash};
use crate::domain::people::ProfileToken;
use crate::domain::profile::Profile;
use crate::domain::project::{Announcement, Commands};
use crate::domain::reviews::{Removal, Review};
use crate::domain::staff::VoteBan;
use crate::domain::stats::StatsUpdate;
use crate::domain::time::Timestamp;
use crate::domain::votes::{VoteCounts, Voter, VoterTable};
use crate::domain::webhook::{Delivery, ExpiredVote, Progress, VoteExpired};
use crate::domain::weekend::{self, Weight};
use uuid::Uuid;

/// The whole saved state (every profile and bot, with the tokens) at one journal sequence
/// number: a snapshot's payload, what recovery and catch-up build, what the registry loads.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SavedState {
    /// Every journal record up to and including this one is in the state.
    pub seq: u64,
    /// The last registry record (profiles, listing, delisting, tokens) applied.
    pub registry_seq: u64,
    pub profiles: Vec<Profile>,
    /// Restored (`BotState::restore`) by whoever made the state, on as many threads as it had:
    /// the registry starts them as they are.
    pub bots: Vec<StoredBot>,
    /// The audit log: every entry of every audited record up to `audit.last_seq()` (which may
    /// pass `seq`, as a bot's state may). A snapshot stores it as a part of its own; states of
    /// earlier builds have none.
    #[serde(skip)]
    pub audit: AuditEntries,
}

impl SavedState {
    /// The state's voter table: the voters of every bot's ring and history, each once, which
    /// the bots' books share (see `VoteBook::attach`); a new one for a state without bots.
    /// Each state has its own: two applications share none.
    pub fn voters(&self) -> Arc<VoterTable> {
        self.bots
            .first()
            .map_or_else(Arc::default, |bot| Arc::clone(bot.state.votes.voters()))
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredBot {
    pub state: BotState,
    pub token: TokenHash,
}

/// One acknowledged change. Records carry outcomes (the edited listing, the vote's time), not
/// requests, so replaying them never consults the clock and always gives the same state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Record {
    ProfileSaved(Profile),
    ProfileDeleted(ProfileId),
    BotListed {
        state: Box<BotState>,
        token: TokenHash,
    },
    BotDelisted(BotId),
    TokenRotated {
        bot: BotId,
        token: TokenHash,
    },
    BotEdited {
        bot: BotId,
        listing: Arc<Listing>,
        webhook: WebhookSettings,
        at: Timestamp,
        /// The status change the edit made and who decided it (CONTRACT section 14): every
        /// decision on a listing, by the operator, an owner or staff, is this record. Left
        /// out when the edit changed no status, and in records of earlier builds. Last, so
        /// those still decode.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<Decision>,
    },
    Voted {
        bot: BotId,
        voter: Voter,
        at: Timestamp,
        /// What the vote counts (the weekend multiplier when it was taken); left out when 1,
        /// and read as 1 from records of earlier builds. Last, so those still decode.
        #[serde(
            default = "weekend::single",
            skip_serializing_if = "weekend::is_single"
        )]
        weight: Weight,
    },
    StatsPosted {
        bot: BotId,
        count: ServerCount,
        at: Timestamp,
    },
    /// A test event's delivery queued (and, in files of earlier builds, a vote's delivery and
    /// each change to a delivery, with both bodies): its whole new state.
    DeliverySaved {
        bot: BotId,
        delivery: Delivery,
    },
    /// A per-shard stats post (a whole count is `StatsPosted`).
    StatsUpdated {
        bot: BotId,
        update: StatsUpdate,
        at: Timestamp,
    },
    /// A delivery attempted, redelivered or given up: only what changed, not its bodies.
    DeliveryProgressed {
        bot: BotId,
        delivery: Uuid,
        progress: Progress,
    },
    /// The oldest open deliveries given up because the bot's outbox was full (after a test
    /// event's delivery, and in files of earlier builds after a vote's).
    OutboxOverflowed {
        bot: BotId,
        given_up: Vec<Uuid>,
    },
    /// A vote for a bot with a `webhook_url`, and the id of the delivery it queues. The
    /// delivery's bodies are made from this record (the voter, the time and the bot's counts
    /// just after the vote) and the oldest open deliveries past the outbox's limit are given up
    /// by it, so nothing more is journaled for the vote's delivery until an attempt's outcome.
    /// Earlier builds journaled the delivery whole, bodies and all, as a `DeliverySaved` after
    /// the `Voted`, and each give-up as an `OutboxOverflowed`.
    VotedWithDelivery {
        bot: BotId,
        voter: Voter,
        at: Timestamp,
        delivery: Uuid,
        /// As in `Voted`.
        #[serde(
            default = "weekend::single",
            skip_serializing_if = "weekend::is_single"
        )]
        weight: Weight,
    },
    /// A token issued to a profile (its hash, scopes, label and expiry; never the secret).
    ProfileTokenIssued {
        profile: ProfileId,
        token: ProfileToken,
    },
    /// A profile's token revoked: refused from the moment this record is applied.
    ProfileTokenRevoked {
        profile: ProfileId,
        token: Uuid,
    },
    /// The bot's application commands replaced (the project API's `PUT`/`POST
    /// /projects/@me/commands`).
    CommandsSet {
        bot: BotId,
        commands: Commands,
        at: Timestamp,
    },
    /// An announcement posted (`POST /projects/@me/announcements`), its time in it.
    AnnouncementPosted {
        bot: BotId,
        announcement: Announcement,
    },
    /// A metrics batch (`POST /projects/@me/metrics/batch`): each entry's time and count, in
    /// time order, applied in that order into the growth history; an entry newer than the
    /// bot's last count also becomes its count.
    MetricsBatchPosted {
        bot: BotId,
        entries: Vec<(Timestamp, ServerCount)>,
        at: Timestamp,
    },
    /// A staff member took a pending listing to review (`POST /staff/bots/{id}/claim`).
    ListingClaimed {
        bot: BotId,
        claim: Claim,
    },
    /// A profile banned from voting (`ban` set) or its ban lifted (`None`), by staff member
    /// `by`.
    VoteBanSet {
        profile: ProfileId,
        ban: Option<VoteBan>,
        by: ProfileId,
    },
    /// A management change and its audit log entry, in one record: the journal keeps, replicates
    /// and replays them together, so neither exists without the other. The change is applied
    /// as if it came alone (its owner is the change's); the entry joins the audit log once the
    /// record is durable (`Journal::submit_settled`), or as it is replayed (`Replayer::apply`)
    /// or read from the stream (`cluster::follow`). Make one with [`Record::audited`].
    Audited {
        entry: AuditEntry,
        change: Box<Record>,
    },
    /// A review written, edited or replied to (CONTRACT section 14): its whole new state.
    ReviewSaved {
        bot: BotId,
        review: Review,
        /// The review was written by this record (not edited or replied to): what tells the
        /// vote stream `review.create` when the writer makes it and when a follower applies it.
        /// Left out when false, and in records of earlier builds. Last, so those still decode.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        created: bool,
    },
    /// A review deleted by its author or removed by staff (with the reason).
    ReviewRemoved {
        bot: BotId,
        review: Uuid,
        removal: Removal,
        at: Timestamp,
    },
    /// Votes whose 12-hour window ended, announced (`vote.expired`, CONTRACT section 14): the
    /// bot's mark moves to `through` (every window ending by then is announced), and each vote
    /// with a delivery queues it, made from this record as a vote's is from its own. Made only
    /// by the writer's bot actor, from votes its journal holds, so that a restart or a failover
    /// continues from the mark: no expiry is announced twice, none for a vote not journaled.
    VotesExpired {
        bot: BotId,
        through: Timestamp,
        expired: Vec<ExpiredVote>,
    },
}

impl Record {
    /// `change` with its audit log entry: how every management write is journaled.
    pub fn audited(entry: AuditEntry, change: Record) -> Record {
        Record::Audited {
            entry,
            change: Box::new(change),
        }
    }

    /// The audit log entry this record carries, if it is one of a management change.
    pub fn audit_entry(&self) -> Option<&AuditEntry> {
        if let Record::Audited { entry, .. } = self {
            Some(entry)
        } else {
            None
        }
    }

    /// The change itself, without its audit entry.
    pub fn change(&self) -> &Record {
        if let Record::Audited { change, .. } = self {
            change.change()
        } else {
            self
        }
    }

    /// The bot whose own record this is (a vote, stats, an edit, a delivery), applied by that
    /// bot's owner; `None` for the registry's records (profiles, listing, delisting, tokens).
    pub fn bot(&self) -> Option<BotId> {
        match self {
            Record::Voted { bot, .. }
            | Record::VotedWithDelivery { bot, .. }
            | Record::StatsPosted { bot, .. }
            | Record::StatsUpdated { bot, .. }
            | Record::BotEdited { bot, .. }
            | Record::DeliverySaved { bot, .. }
            | Record::DeliveryProgressed { bot, .. }
            | Record::OutboxOverflowed { bot, .. }
            | Record::CommandsSet { bot, .. }
            | Record::AnnouncementPosted { bot, .. }
            | Record::MetricsBatchPosted { bot, .. }
            | Record::ListingClaimed { bot, .. }
            | Record::ReviewSaved { bot, .. }
            | Record::ReviewRemoved { bot, .. }
            | Record::VotesExpired { bot, .. } => Some(*bot),
            Record::VoteBanSet { .. }
            | Record::ProfileSaved(_)
            | Record::ProfileDeleted(_)
            | Record::BotListed { .. }
            | Record::BotDelisted(_)
            | Record::TokenRotated { .. }
            | Record::ProfileTokenIssued { .. }
            | Record::ProfileTokenRevoked { .. } => None,
            Record::Audited { change, .. } => change.bot(),
        }
    }
}

/// Why a record could not be applied to the state it names.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotApplied {
    #[error("a vote replayed as already voted")]
    AlreadyVoted,
    #[error("not a record of a bot")]
    NotABotRecord,
    #[error("not a record of the registry")]
    NotARegistryRecord,
}

/// The effect of a bot's own records on its state, written once: the bot's actor applies each
/// change it makes this way before journaling the record, and replay applies the record read
/// back, so the two cannot drift apart (a node that applies records it did not produce, such as
/// a read replica, needs nothing else).
pub trait ApplyRecord {
    fn apply_record(&mut self, record: &Record) -> Result<(), NotApplied>;
}

impl ApplyRecord for BotState {
    fn apply_record(&mut self, record: &Record) -> Result<(), NotApplied> {
        match record {
            Record::Voted {
                voter, at, weight, ..
            } => {
                self.votes
                    .vote_weighted(voter.clone(), *at, *weight)
                    .map_err(|_| NotApplied::AlreadyVoted)?;
                self.growth.vote(*at, *weight);
            }
            Record::VotedWithDelivery {
                voter,
                at,
                delivery,
                weight,
                ..
            } => {
                let counts = self
                    .votes
                    .vote_weighted(voter.clone(), *at, *weight)
                    .map_err(|_| NotApplied::AlreadyVoted)?;
                self.growth.vote(*at, *weight);
                queue_vote_delivery(self, *delivery, voter, *at, counts, *weight);
            }
            Record::StatsPosted { count, at, .. } => {
                self.post_stats(&StatsUpdate::Whole(*count), *at)
            }
            Record::StatsUpdated { update, at, .. } => self.post_stats(update, *at),
            Record::BotEdited {
                listing,
                webhook,
                at,
                ..
            } => {
                self.listing = Arc::clone(listing);
                self.restore_listing();
                self.webhook = webhook.clone();
                self.updated_at = *at;
                self.follow_expiry_choice(*at);
            }
            Record::DeliverySaved { delivery, .. } => self.deliveries.save(delivery.clone()),
            Record::DeliveryProgressed {
                delivery, progress, ..
            } => {
                // A delivery trimmed from the outbox since is no longer kept: nothing to change.
                self.deliveries.update(*delivery, progress.clone());
            }
            Record::OutboxOverflowed { given_up, .. } => self.deliveries.give_up_full(given_up),
            Record::CommandsSet { commands, at, .. } => {
                self.project.set_commands(commands.clone(), *at)
            }
            Record::AnnouncementPosted { announcement, .. } => {
                self.project.announce(announcement.clone())
            }
            Record::MetricsBatchPosted { entries, .. } => self.post_metrics_batch(entries),
            Record::ListingClaimed { claim, .. } => {
                Arc::make_mut(&mut self.listing).claim = Some(*claim);
            }
            Record::ReviewSaved { review, .. } => self.reviews.save(review.clone()),
            Record::ReviewRemoved { review, .. } => {
                self.reviews.remove(*review);
            }
            Record::VotesExpired {
                through, expired, ..
            } => {
                let bot = self.listing.event_bot();
                for vote in expired {
                    if let Some(id) = vote.delivery {
                        let event = VoteExpired::of(bot, vote);
                        self.deliveries.queue(Delivery::queued(id, *through, event));
                    }
                }
                self.votes.window.announced_through(*through);
            }
            Record::VoteBanSet { .. }
            | Record::ProfileSaved(_)
            | Record::ProfileDeleted(_)
            | Record::BotListed { .. }
            | Record::BotDelisted(_)
            | Record::TokenRotated { .. }
            | Record::ProfileTokenIssued { .. }
            | Record::ProfileTokenRevoked { .. } => return Err(NotApplied::NotABotRecord),
            Record::Audited { change, .. } => return self.apply_record(change),
        }
        Ok(())
    }
}

/// Queues the delivery of the vote just taken, giving up the oldest open deliveries past the
/// outbox's limit: all of it follows from the vote's record and the state before it.
fn queue_vote_delivery(
    state: &mut BotState,
    id: Uuid,
    voter: &Voter,
    at: Timestamp,
    counts: VoteCounts,
    weight: Weight,
) {
    // The history's shared copy of the voter, which it has just taken.
    let last = state.votes.history.next_position().saturating_sub(1);
    let shared = state
        .votes
        .history_entry(last)
        .map(|entry| entry.voter)
        .filter(|shared| **shared == *voter)
        .unwrap_or_else(|| Arc::new(voter.clone()));
    let delivery = Delivery::vote(id, state.listing.event_bot(), shared, at, counts, weight);
    state.deliveries.queue(delivery);
}

/// The registry's durable state: the profiles, and every listed bot with its token.
///
/// The registry's records change it through [`RegistryBook::apply`], written once: the live
/// registry keeps a book whose bots are running actors, replay one whose bots are stored states.
pub struct RegistryBook<B> {
    pub profiles: HashMap<ProfileId, Profile>,
    pub bots: HashMap<BotId, B>,
}

/// A listed bot as a registry book holds it.
pub trait Listed {
    fn set_token(&mut self, token: TokenHash);
}

impl Listed for StoredBot {
    fn set_token(&mut self, token: TokenHash) {
        self.token = token;
    }
}

impl<B> Default for RegistryBook<B> {
    fn default() -> Self {
        Self {
            profiles: HashMap::new(),
            bots: HashMap::new(),
        }
    }
}

impl<B: Listed> RegistryBook<B> {
    /// Applies one of the registry's records; `list` makes the book's bot from a newly listed
    /// bot's first state and token.
    pub fn apply(
        &mut self,
        record: &Record,
        list: impl FnOnce(BotState, TokenHash) -> B,
    ) -> Result<(), NotApplied> {
        match record {
            Record::ProfileSaved(profile) => {
                self.profiles.insert(profile.id, profile.clone());
            }
            Record::ProfileDeleted(id) => {
                self.profiles.remove(id);
            }
            Record::BotListed { state, token } => {
                let id = state.listing.id;
                self.bots.insert(id, list(BotState::clone(state), *token));
            }
            Record::BotDelisted(id) => {
                self.bots.remove(id);
            }
            Record::TokenRotated { bot, token } => {
                if let Some(listed) = self.bots.get_mut(bot) {
                    listed.set_token(*token);
                }
            }
            Record::ProfileTokenIssued { profile, token } => {
                if let Some(profile) = self.profiles.get_mut(profile) {
                    profile.tokens.retain(|kept| kept.id != token.id);
                    profile.tokens.push(token.clone());
                }
            }
            Record::ProfileTokenRevoked { profile, token } => {
                if let Some(profile) = self.profiles.get_mut(profile) {
                    profile.tokens.retain(|kept| kept.id != *token);
                }
            }
            Record::VoteBanSet { profile, ban, .. } => {
                if let Some(profile) = self.profiles.get_mut(profile) {
                    profile.vote_ban.clone_from(ban);
                }
            }
            Record::Voted { .. }
            | Record::VotedWithDelivery { .. }
            | Record::StatsPosted { .. }
            | Record::StatsUpdated { .. }
            | Record::BotEdited { .. }
            | Record::DeliverySaved { .. }
            | Record::DeliveryProgressed { .. }
            | Record::OutboxOverflowed { .. }
            | Record::CommandsSet { .. }
            | Record::AnnouncementPosted { .. }
            | Record::MetricsBatchPosted { .. }
            | Record::ListingClaimed { .. }
            | Record::ReviewSaved { .. }
            | Record::ReviewRemoved { .. }
            | Record::VotesExpired { .. } => return Err(NotApplied::NotARegistryRecord),
            Record::Audited { change, .. } => return self.apply(change, list),
        }
        Ok(())
    }
}

/// Applies journal records on top of a snapshot.
///
/// A snapshot is taken while writes go on, so a bot's state in it may already hold records
/// after the snapshot's own sequence number: each bot, and the registry, remember the last
/// record they applied, and older records are skipped.
pub struct Replayer {
    seq: u64,
    registry_seq: u64,
    /// The snapshot's state as it was loaded, until a record needs the book: a start with no
    /// record to replay hands it on as it is (moving 100,000 bots into a map and back out,
    /// then sorting them, was a sixth of such a start).
    loaded: Option<Loaded>,
    registry: RegistryBook<StoredBot>,
    /// The state's voter table, which every bot listed by a record joins.
    voters: Arc<VoterTable>,
    /// Bots a record was applied to: their derived indexes are rebuilt once, at the end.
    replayed: HashSet<BotId>,
    /// The audit log: the snapshot's, then each audited record's entry after it, once.
    audit: AuditEntries,
    pub warnings: Vec<String>,
}

struct Loaded {
    profiles: Vec<Profile>,
    bots: Vec<StoredBot>,
}

impl Replayer {
    pub fn new(state: SavedState) -> Self {
        let voters = state.voters();
        Self {
            audit: state.audit,
            seq: state.seq,
            registry_seq: state.registry_seq,
            loaded: Some(Loaded {
                profiles: state.profiles,
                bots: state.bots,
            }),
            registry: RegistryBook::default(),
            voters,
            replayed: HashSet::new(),
            warnings: Vec::new(),
        }
    }

    /// The book the records apply to, filled from the snapshot on first use.
    fn book(&mut self) -> &mut RegistryBook<StoredBot> {
        if let Some(Loaded { profiles, bots }) = self.loaded.take() {
            self.registry = RegistryBook {
                profiles: profiles.into_iter().map(|p| (p.id, p)).collect(),
                bots: bots
                    .into_iter()
                    // A snapshot's bots come restored from the file (see `snapshot::decode`).
                    .map(|bot| (bot.state.listing.id, bot))
                    .collect(),
            };
        }
        &mut self.registry
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The state so far, profiles and bots each in id order, without finishing: what a
    /// cluster standby hashes for its digest.
    pub fn parts(&mut self) -> (Vec<&Profile>, Vec<&StoredBot>) {
        let book = self.book();
        let mut profiles: Vec<&Profile> = book.profiles.values().collect();
        profiles.sort_unstable_by_key(|p| p.id);
        let mut bots: Vec<&StoredBot> = book.bots.values().collect();
        bots.sort_unstable_by_key(|b| b.state.listing.id);
        (profiles, bots)
    }

    pub fn apply(&mut self, seq: u64, record: Record) {
        self.seq = self.seq.max(seq);
        // Kept whatever becomes of the change (a bot delisted later passes over its records),
        // as the live log kept it; an entry the snapshot holds already is passed over.
        if let Some(entry) = record.audit_entry() {
            self.audit.push(seq, entry);
        }
        match record.bot() {
            Some(bot) => self.on_bot(seq, bot, &record),
            None if seq > self.registry_seq => {
                self.registry_seq = seq;
                let voters = Arc::clone(&self.voters);
                let mut unattached = None;
                let listed = self.book().apply(&record, |mut state, token| {
                    state.last_seq = seq;
                    // A record holds its voters in full: the state's table takes them.
                    unattached = state.votes.attach(&voters).err();
                    state.restore();
                    StoredBot { state, token }
                });
                if let Err(why) = listed {
                    self.warnings.push(format!("record {seq}: {why}"));
                }
                if let Some(why) = unattached {
                    self.warnings.push(format!("record {seq}: {why}"));
                }
            }
            None => {}
        }
    }

    fn on_bot(&mut self, seq: u64, bot: BotId, record: &Record) {
        // A record for a bot that is not here belongs to a bot delisted later in the journal
        // or before the snapshot: nothing to apply.
        let Some(stored) = self.book().bots.get_mut(&bot) else {
            return;
        };
        if seq <= stored.state.last_seq {
            return;
        }
        stored.state.last_seq = seq;
        if let Err(why) = stored.state.apply_record(record) {
            self.warnings
                .push(format!("record {seq} for bot {bot}: {why}"));
        }
        self.replayed.insert(bot);
    }

    pub fn finish(mut self) -> SavedState {
        let voters = std::mem::take(&mut self.voters);
        let (mut profiles, mut bots) = match self.loaded {
            Some(Loaded { profiles, bots }) => (profiles, bots),
            None => {
                let mut bots = self.registry.bots;
                for id in &self.replayed {
                    if let Some(bot) = bots.get_mut(id) {
                        bot.state.restore();
                    }
                }
                (
                    self.registry.profiles.into_values().collect(),
                    bots.into_values().collect(),
                )
            }
        };
        // Snapshots are written in id order, so this is usually a check, not a sort.
        if !profiles.is_sorted_by_key(|p| p.id) {
            profiles.sort_unstable_by_key(|p| p.id);
        }
        if !bots.is_sorted_by_key(|b| b.state.listing.id) {
            bots.sort_unstable_by_key(|b| b.state.listing.id);
        }
        // A state made elsewhere than from a snapshot file (decoded whole, or built) may hold
        // books with tables of their own: they join the state's here, a pointer compare for
        // the others. A book that cannot keeps its own table, and works as well.
        for bot in &mut bots {
            if let Err(why) = bot.state.votes.attach(&voters) {
                tracing::warn!(bot = %bot.state.listing.id, %why, "a bot's votes keep a voter table of their own");
            }
        }
        SavedState {
            seq: self.seq,
            registry_seq: self.registry_seq,
            profiles,
            bots,
            audit: self.audit,
        }
    }
}
