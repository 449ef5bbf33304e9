//! Announcing the end of voters' windows (`vote.expired`, CONTRACT section 14) from the bot's
//! actor, which owns the votes: its check window is the queue of ends, in time order, and its
//! mark says up to where they were announced (`domain/votes`). The one expiry timer
//! (`webhooks/expiry.rs`, looked at by the dispatcher's loop on the injected clock) holds only
//! this bot's next end, armed here, and wakes the actor with [`ExpireVotes`].
//!
//! Only the writer announces (a follower neither arms nor answers), and every announcement is
//! one record, `Record::VotesExpired`, with the new mark and the deliveries: the deliveries
//! leave once that record is durable, like any other, and a restart or a failover continues
//! from the mark that replay or the stream rebuilt. The votes announced are those the actor's
//! state holds, which the journal holds before the announcement's record: an announcement that
//! became durable is of votes that are.

use actix::prelude::*;

use super::BotActor;
use crate::domain::webhook::{ExpiredVote, VoteExpired};
use crate::persist::journal::Publish;
use crate::persist::state::Record;

/// The bot's next end has come on the clock: announce what is due, and arm the timer again.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ExpireVotes;

impl Handler<ExpireVotes> for BotActor {
    type Result = ();

    fn handle(&mut self, _: ExpireVotes, _: &mut Self::Context) {
        self.armed_expiry = None;
        self.announce_expiries();
        self.arm_expiry();
    }
}

impl BotActor {
    /// Journals the announcement of every vote whose window ended by now, after the mark.
    /// Nothing while the journal is failed: the announcement would be applied and then refused
    /// (the mark moved past votes never announced); it is made once writes are taken again.
    fn announce_expiries(&mut self) {
        if self.journal.follows() || self.refused || self.journal.failure().is_some() {
            return;
        }
        let Some((record, given_up)) = self.outbox.expiry_record(&self.state, self.clock.now())
        else {
            return;
        };
        let mut count = 0;
        if let Record::VotesExpired { expired, .. } = &record {
            count = expired.len();
        }
        self.apply(&record);
        self.outbox
            .queued_by_expiry(&self.state, &record, &given_up);
        self.commit(record);
        crate::telemetry::votes_expired(count);
    }

    /// Arms the expiry timer for the bot's next end, unless it is armed for that end or an
    /// earlier one already (a vote costs the timer nothing then). Only the writer arms.
    pub(super) fn arm_expiry(&mut self) {
        if self.journal.follows() {
            return;
        }
        let Some(end) = self.state.votes.window.next_end() else {
            return;
        };
        if self.armed_expiry.is_some_and(|armed| armed <= end) {
            return;
        }
        self.armed_expiry = Some(end);
        self.outbox.arm_expiry(&self.state, end);
    }

    /// What readers learn of an announcement once it is durable: each expiry, in order, on
    /// the bot's live vote stream, if the bot chose `vote.expired`.
    pub(super) fn expiry_publication(&self, expired: &[ExpiredVote]) -> Option<Publish> {
        let bot = self.state.listing.event_bot();
        self.stream_publication(expired.iter().map(|vote| VoteExpired::of(bot, vote).into()))
    }
}
