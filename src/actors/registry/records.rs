//! The registry's own records (profiles, listing, delisting, tokens): each applied, with the
//! claims and indexes it changes, and published by one function, [`Registry::apply_own`], for
//! a change this registry makes and for one a cluster node reads from the writer's stream
//! alike. Its matches name every record kind, so a new kind is decided here.

use std::sync::Arc;

use actix::prelude::*;

use super::Registry;
use crate::actors::bot::Stop;
use crate::actors::replicated::{ApplyReplicated, BecomeWriter};
use crate::domain::ids::BotId;
use crate::persist::journal::Publish;
use crate::persist::state::Record;

impl Registry {
    /// Applies one of the registry's own records and says what readers are shown once it is
    /// durable: made here (`from_stream` is `None`), or made by the writer and read back from
    /// the stream as record `from_stream`. `None` for a record that shows nothing: a bot's own
    /// (its actor applies it), or one about a bot no longer listed.
    pub(super) fn apply_own(
        &mut self,
        record: &Record,
        from_stream: Option<u64>,
    ) -> Option<Publish> {
        let directory = Arc::clone(&self.directory);
        match record {
            Record::ProfileSaved(profile) => {
                if let Some(old) = self.book.profiles.get(&profile.id).cloned() {
                    self.unindex_profile(&old);
                }
                self.index_profile(profile);
                self.apply(record, from_stream);
                let shown = Arc::new(profile.clone());
                Some(Box::new(move || directory.publish_profile(shown)))
            }
            Record::ProfileDeleted(id) => {
                if let Some(old) = self.book.profiles.get(id).cloned() {
                    self.unindex_profile(&old);
                }
                self.apply(record, from_stream);
                let id = *id;
                Some(Box::new(move || directory.publish_profile_deleted(id)))
            }
            Record::BotListed { state, token } => {
                let (id, token) = (state.listing.id, *token);
                self.apply(record, from_stream);
                let handle = self.handle_of(id).ok()?;
                // Rendered here, so that neither the journal's writer nor a reader renders it.
                handle.view().listing.rendered();
                Some(Box::new(move || directory.publish_listed(handle, token)))
            }
            Record::BotDelisted(id) => {
                let entry = self.book.bots.get(id)?;
                let (handle, token, id) = (Arc::clone(&entry.handle), entry.token, *id);
                self.bot_platform_ids.release(id);
                self.apply(record, from_stream);
                Some(Box::new(move || {
                    directory.publish_delisted(id, token);
                    handle.addr.do_send(Stop);
                }))
            }
            Record::TokenRotated { bot, token } => {
                let (old, bot, new) = (self.book.bots.get(bot)?.token, *bot, *token);
                self.apply(record, from_stream);
                Some(Box::new(move || directory.publish_token(bot, old, new)))
            }
            Record::ProfileTokenIssued { profile, .. }
            | Record::ProfileTokenRevoked { profile, .. }
            | Record::VoteBanSet { profile, .. } => {
                self.apply(record, from_stream);
                // The whole profile is published again: its tokens are read through it.
                let shown = Arc::new(self.book.profiles.get(profile)?.clone());
                Some(Box::new(move || directory.publish_profile(shown)))
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
            | Record::VotesExpired { .. } => None,
            // The change decides; its entry joins the audit log through the journal.
            Record::Audited { change, .. } => self.apply_own(change, from_stream),
        }
    }

    /// Applies one of the registry's own records to its book, the way replay does: a listed
    /// bot's actor starts here, and its platform id is claimed. A bot read back from the stream
    /// (`from_stream`, its record's number) has its derived indexes rebuilt, as replay does.
    fn apply(&mut self, record: &Record, from_stream: Option<u64>) {
        let Self {
            book,
            starter,
            bot_platform_ids,
            ..
        } = self;
        let applied = book.apply(record, |mut state, token| {
            if let Some(seq) = from_stream {
                state.last_seq = seq;
                state.restore();
            }
            bot_platform_ids.claim(state.listing.id, state.listing.platform_id);
            starter.start(state, token)
        });
        if let Err(why) = applied {
            // Every record the registry applies is one of its own.
            tracing::error!(%why, "a registry change did not apply");
        }
        crate::telemetry::profiles_listed(self.book.profiles.len());
    }

    /// What the registry keeps of a bot's own record read from the stream: an edit's claims,
    /// as the writer's registry took them when it accepted the edit.
    fn follow_bot_record(&mut self, bot: BotId, record: &Record) {
        match record {
            Record::BotEdited { listing, .. } => {
                if let Some(entry) = self.book.bots.get_mut(&bot) {
                    entry.owners.clone_from(&listing.owner_ids);
                }
                self.bot_platform_ids.claim(bot, listing.platform_id);
            }
            Record::Voted { .. }
            | Record::VotedWithDelivery { .. }
            | Record::StatsPosted { .. }
            | Record::StatsUpdated { .. }
            | Record::DeliverySaved { .. }
            | Record::DeliveryProgressed { .. }
            | Record::OutboxOverflowed { .. }
            | Record::CommandsSet { .. }
            | Record::AnnouncementPosted { .. }
            | Record::MetricsBatchPosted { .. }
            | Record::ListingClaimed { .. }
            | Record::ReviewSaved { .. }
            | Record::ReviewRemoved { .. }
            | Record::VotesExpired { .. } => {}
            // Not a bot's: `apply_own`'s.
            Record::ProfileSaved(_)
            | Record::ProfileDeleted(_)
            | Record::BotListed { .. }
            | Record::BotDelisted(_)
            | Record::TokenRotated { .. }
            | Record::ProfileTokenIssued { .. }
            | Record::ProfileTokenRevoked { .. }
            | Record::VoteBanSet { .. } => {}
            Record::Audited { change, .. } => self.follow_bot_record(bot, change),
        }
    }
}

/// Cluster mode, on a node that follows the stream: the registry's own records are applied
/// here, as the writer's registry applied them; a bot's records go on to its actor (an edit
/// also updates the rules' claims, as the writer's registry did when it accepted it).
impl Handler<ApplyReplicated> for Registry {
    type Result = ();

    fn handle(&mut self, replicated: ApplyReplicated, _: &mut Self::Context) {
        let Some(bot) = replicated.record.bot() else {
            let seq = replicated.seq;
            let publication = (seq > self.last_seq)
                .then(|| {
                    self.last_seq = seq;
                    self.apply_own(&replicated.record, Some(seq))
                })
                .flatten();
            let _ = replicated.reply.send(publication);
            return;
        };
        // A record of a bot delisted since is passed over, as replay passes over it.
        if !self.book.bots.contains_key(&bot) {
            let _ = replicated.reply.send(None);
            return;
        }
        self.follow_bot_record(bot, &replicated.record);
        if let Some(entry) = self.book.bots.get(&bot) {
            entry.handle.addr.do_send(replicated);
        }
    }
}

/// The node took the writer's role: every bot schedules its open deliveries.
impl Handler<BecomeWriter> for Registry {
    type Result = ();

    fn handle(&mut self, _: BecomeWriter, _: &mut Self::Context) {
        for entry in self.book.bots.values() {
            entry.handle.addr.do_send(BecomeWriter);
        }
    }
}
