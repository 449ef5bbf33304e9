//! What is stored: the whole directory (a snapshot's payload) and the journal's records.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::domain::bot::{BotState, Listing, ServerCount, WebhookSettings};
use crate::domain::ids::{BotId, ProfileId, TokenHash};
use crate::domain::profile::Profile;
use crate::domain::stats::StatsUpdate;
use crate::domain::time::Timestamp;
use crate::domain::votes::Voter;
use crate::domain::webhook::{Delivery, Progress};
use uuid::Uuid;

/// The whole directory at one journal sequence number.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DirectoryState {
    /// Every journal record up to and including this one is in the state.
    pub seq: u64,
    /// The last registry record (profiles, listing, delisting, tokens) applied.
    pub registry_seq: u64,
    pub profiles: Vec<Profile>,
    pub bots: Vec<StoredBot>,
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
    },
    Voted {
        bot: BotId,
        voter: Voter,
        at: Timestamp,
    },
    StatsPosted {
        bot: BotId,
        count: ServerCount,
        at: Timestamp,
    },
    /// A webhook delivery queued (and, in files of earlier builds, each change to it): its whole
    /// new state.
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
    /// The oldest open deliveries given up because the bot's outbox was full.
    OutboxOverflowed {
        bot: BotId,
        given_up: Vec<Uuid>,
    },
}

/// Applies journal records on top of a snapshot.
///
/// A snapshot is taken while writes go on, so a bot's state in it may already hold records
/// after the snapshot's own sequence number: each bot, and the registry, remember the last
/// record they applied, and older records are skipped.
pub struct Replayer {
    seq: u64,
    registry_seq: u64,
    profiles: HashMap<ProfileId, Profile>,
    bots: HashMap<BotId, StoredBot>,
    pub warnings: Vec<String>,
}

impl Replayer {
    pub fn new(state: DirectoryState) -> Self {
        Self {
            seq: state.seq,
            registry_seq: state.registry_seq,
            profiles: state.profiles.into_iter().map(|p| (p.id, p)).collect(),
            bots: state
                .bots
                .into_iter()
                // A snapshot's bots come restored from the file (see `snapshot::decode`).
                .map(|bot| (bot.state.listing.id, bot))
                .collect(),
            warnings: Vec::new(),
        }
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn apply(&mut self, seq: u64, record: Record) {
        self.seq = self.seq.max(seq);
        match record {
            Record::Voted { bot, voter, at } => self.on_bot(seq, bot, |state| {
                state
                    .votes
                    .vote(voter, at)
                    .map(drop)
                    .map_err(|_| "a vote replayed as already voted".to_string())
            }),
            Record::StatsPosted { bot, count, at } => self.on_bot(seq, bot, |state| {
                state.post_stats(&StatsUpdate::Whole(count), at);
                Ok(())
            }),
            Record::StatsUpdated { bot, update, at } => self.on_bot(seq, bot, |state| {
                state.post_stats(&update, at);
                Ok(())
            }),
            Record::DeliverySaved { bot, delivery } => self.on_bot(seq, bot, |state| {
                state.deliveries.save(delivery);
                Ok(())
            }),
            Record::DeliveryProgressed {
                bot,
                delivery,
                progress,
            } => self.on_bot(seq, bot, |state| {
                // A delivery trimmed from the outbox since is no longer kept: nothing to change.
                state.deliveries.update(delivery, progress);
                Ok(())
            }),
            Record::OutboxOverflowed { bot, given_up } => self.on_bot(seq, bot, |state| {
                state.deliveries.give_up_full(&given_up);
                Ok(())
            }),
            Record::BotEdited {
                bot,
                listing,
                webhook,
                at,
            } => self.on_bot(seq, bot, |state| {
                state.listing = listing;
                state.restore_listing();
                state.webhook = webhook;
                state.updated_at = at;
                Ok(())
            }),
            registry_record => {
                if seq > self.registry_seq {
                    self.registry_seq = seq;
                    self.on_registry(seq, registry_record);
                }
            }
        }
    }

    fn on_bot(
        &mut self,
        seq: u64,
        bot: BotId,
        change: impl FnOnce(&mut BotState) -> Result<(), String>,
    ) {
        // A record for a bot that is not here belongs to a bot delisted later in the journal
        // or before the snapshot: nothing to apply.
        let Some(stored) = self.bots.get_mut(&bot) else {
            return;
        };
        if seq <= stored.state.last_seq {
            return;
        }
        stored.state.last_seq = seq;
        if let Err(why) = change(&mut stored.state) {
            self.warnings
                .push(format!("record {seq} for bot {bot}: {why}"));
        }
    }

    fn on_registry(&mut self, seq: u64, record: Record) {
        match record {
            Record::ProfileSaved(profile) => {
                self.profiles.insert(profile.id, profile);
            }
            Record::ProfileDeleted(id) => {
                self.profiles.remove(&id);
            }
            Record::BotListed { mut state, token } => {
                state.last_seq = seq;
                state.restore();
                let id = state.listing.id;
                self.bots.insert(
                    id,
                    StoredBot {
                        state: *state,
                        token,
                    },
                );
            }
            Record::BotDelisted(id) => {
                self.bots.remove(&id);
            }
            Record::TokenRotated { bot, token } => {
                if let Some(stored) = self.bots.get_mut(&bot) {
                    stored.token = token;
                }
            }
            Record::Voted { .. }
            | Record::StatsPosted { .. }
            | Record::StatsUpdated { .. }
            | Record::BotEdited { .. }
            | Record::DeliverySaved { .. }
            | Record::DeliveryProgressed { .. }
            | Record::OutboxOverflowed { .. } => {}
        }
    }

    pub fn finish(self) -> DirectoryState {
        let mut profiles: Vec<Profile> = self.profiles.into_values().collect();
        profiles.sort_by_key(|p| p.id);
        let mut bots: Vec<StoredBot> = self.bots.into_values().collect();
        bots.sort_by_key(|b| b.state.listing.id);
        DirectoryState {
            seq: self.seq,
            registry_seq: self.registry_seq,
            profiles,
            bots,
        }
    }
}
