//! A bot edited as the service edits one, for the tests and benches that change a bot's state
//! without an actor: the listing and settings the patch makes, applied as the bot's record.

use std::sync::Arc;

use botlist::domain::bot::{BotPatch, BotState};
use botlist::domain::time::Timestamp;
use botlist::persist::state::{ApplyRecord, Record};

pub fn apply_edit(state: &mut BotState, patch: BotPatch, at: Timestamp) {
    let (listing, webhook) = state.edited(patch);
    let record = Record::BotEdited {
        bot: state.listing.id,
        listing: Arc::new(listing),
        webhook,
        at,
        decision: None,
    };
    state.apply_record(&record).expect("a bot's own record");
}
