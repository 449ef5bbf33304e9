//! Taking writes again without a restart (docs/PERSISTENCE.md): once the journal's disk takes
//! writes again, the durable state is rebuilt from the data directory by start-up's own
//! `recovery::recover`, and each bot actor whose state holds a change the journal refused takes
//! its part of it, in its own mailbox order, before the journal takes writes again.

use std::sync::Arc;

use actix::prelude::*;

use super::BotActor;
use crate::domain::bot::BotState;
use crate::domain::votes::VoterTable;

/// The bot's durable state, rebuilt from the disk, and the running registry's voter table
/// (which every bot's votes are numbered in). Answers whether the actor took it.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct TakeDurableState {
    pub state: Box<BotState>,
    pub voters: Arc<VoterTable>,
}

impl Handler<TakeDurableState> for BotActor {
    type Result = bool;

    fn handle(&mut self, taken: TakeDurableState, _: &mut Self::Context) -> bool {
        if !self.holds_refused_change() {
            // Every change it made is durable: its state is the rebuilt one already.
            return false;
        }
        let mut state = *taken.state;
        if let Err(why) = state.votes.attach(&taken.voters) {
            tracing::warn!(bot = %state.listing.id, %why, "a bot's votes keep a voter table of their own");
        }
        // Answers kept from the history are told apart by its count of changes: it goes on.
        state.growth.replaces(&self.state.growth);
        self.state = state;
        self.refused = false;
        self.unacked.clear();
        self.recent_voters = None;
        self.prune_history(self.clock.now());
        // The view readers see is the durable one already (nothing refused was published);
        // published again so that it points at the rebuilt state's check table, which the
        // next vote publishes to.
        let view = Arc::new(self.state.view());
        self.directory.publish_view(&self.published, view);
        // As at start: open deliveries scheduled anew (an attempt scheduled before is stale
        // from now on), and the expiry timer armed for the rebuilt window's next end.
        self.schedule_open_deliveries();
        self.armed_expiry = None;
        self.arm_expiry();
        true
    }
}

impl BotActor {
    /// Whether this actor applied a change the journal then refused: one refused before it
    /// was numbered (`refused`), or one numbered past the journal's last durable record (once
    /// the journal failed, every record queued after that was refused).
    fn holds_refused_change(&self) -> bool {
        self.refused || self.state.last_seq > self.journal.durable_seq()
    }
}
