//! The registry actor: lists and delists bots, owns profiles, tokens and platform ids.
//!
//! It is the only writer of the [`Directory`]; every rule that spans bots (unique platform ids,
//! owners that exist, unique usernames) is checked here, one message at a time. Its rooms:
//!
//! - `book.rs`: what it holds besides its records' book (a bot's entry, the platform ids
//!   claimed, the starting of bot actors) and the rules checked against it;
//! - `records.rs`: its own records, applied and published by one function for a change made
//!   here and one read from a cluster's stream alike, and a follower's bot records;
//! - `bots.rs`, `profiles.rs`: the messages that change bots and profiles;
//! - `snapshot.rs`: a recovered state loaded, and the registry as a snapshot's source.

mod book;
mod bots;
mod profiles;
mod records;
mod resume;
mod snapshot;
mod staff;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use futures_util::future::{join_all, BoxFuture, Shared};
use tokio::sync::oneshot;

use super::directory::{BotHandle, Directory};
use super::when_durable;
use crate::domain::audit::Acting;
use crate::domain::ids::{BotId, ProfileId, Snowflake};
use crate::domain::text::ProfileUsername;
use crate::domain::time::Clock;
use crate::domain::votes::VoterTable;
use crate::domain::Rejection;
use crate::persist::journal::{Durable, Journal, Publish};
use crate::persist::state::{Record, RegistryBook};
use crate::webhooks::Dispatcher;

pub use book::BotSpawner;
use book::{BotStarter, Entry, PlatformIds};
pub use bots::{
    BotUpdatesItself, CreateBot, DelistBot, OwnerDelistBot, OwnerRotateToken, OwnerUpdateBot,
    RotateToken, SubmitBot, UpdateBot,
};
pub use profiles::{
    CreateProfile, DeleteProfile, IssueProfileToken, RevokeProfileToken, UpdateProfile,
};
pub use resume::TakeDurableBook;
pub use snapshot::{Capture, LoadState};
pub use staff::{SetVoteBan, StaffActOnBot, StaffRemoveReview};

/// Done once a bot has journaled an edit (or refused it).
type Settling = Shared<BoxFuture<'static, ()>>;

/// An edit sent to a bot whose record is not durable yet.
struct EditInFlight {
    /// It gave up a platform id or an owner, which a later change may now take.
    releases: bool,
    done: Settling,
}

pub struct Registry {
    directory: Arc<Directory>,
    clock: Arc<dyn Clock>,
    journal: Journal,
    starter: BotStarter,
    /// The last journal record of the registry's own (profiles, listing, tokens).
    last_seq: u64,
    /// Profiles and listed bots, changed only by applying the registry's records.
    book: RegistryBook<Entry>,
    bot_platform_ids: PlatformIds,
    /// The registry does not wait for a bot to journal an edit; a change that depends on one
    /// (taking a platform id or deleting a profile that it released) waits for it instead.
    edits: Vec<EditInFlight>,
    usernames: HashMap<ProfileUsername, ProfileId>,
    profile_platform_ids: HashMap<Snowflake, ProfileId>,
}

impl Registry {
    pub fn new(
        directory: Arc<Directory>,
        clock: Arc<dyn Clock>,
        journal: Journal,
        dispatcher: Arc<Dispatcher>,
        spawner: BotSpawner,
    ) -> Self {
        Self {
            starter: BotStarter {
                directory: Arc::clone(&directory),
                clock: Arc::clone(&clock),
                journal: journal.clone(),
                dispatcher,
                spawner,
                voters: Arc::default(),
            },
            directory,
            clock,
            journal,
            last_seq: 0,
            book: RegistryBook::default(),
            bot_platform_ids: PlatformIds::default(),
            edits: Vec::new(),
            usernames: HashMap::new(),
            profile_platform_ids: HashMap::new(),
        }
    }

    fn handle_of(&self, id: BotId) -> Result<Arc<BotHandle>, Rejection> {
        self.book
            .bots
            .get(&id)
            .map(|entry| Arc::clone(&entry.handle))
            .ok_or_else(|| Self::not_found_bot(id))
    }

    /// Once the journal has failed, a write is refused before it changes anything, with the
    /// answer the journal would give it (503 "not stored"), counted and logged as its refusals
    /// are: checked at the top of every write handler, before the rules that read the book,
    /// so that a create retried after a refused one is refused again, never told 409 (the
    /// bots' `BotActor::refuse_while_failed` does the same). Only a change in flight when the
    /// journal failed is applied and then refused (docs/PERSISTENCE.md).
    fn refuse_while_failed(&self) -> Result<(), Rejection> {
        match self.journal.failure() {
            None => Ok(()),
            Some(error) => {
                self.journal.note_refusal(&error);
                Err(super::refused(error))
            }
        }
    }

    /// Applies a change of the registry's own and journals it, to be published once durable
    /// ([`Registry::apply_own`] says how). Refused before it is applied once the journal has
    /// failed (the handlers check first; this is the last word, at the one place that applies).
    fn make(&mut self, record: Record) -> Result<Durable, Rejection> {
        self.refuse_while_failed()?;
        let publish = self.apply_own(&record, None);
        Ok(self.commit(&record, publish).1)
    }

    /// As [`Registry::make`], for a management change: journaled with its audit log entry, in
    /// one record.
    fn make_audited(
        &mut self,
        acting: Acting,
        target: uuid::Uuid,
        changes: Vec<String>,
        record: Record,
    ) -> Result<Durable, Rejection> {
        let entry = acting.entry(target, changes, self.clock.now());
        self.make(Record::audited(entry, record))
    }

    /// Journals a registry change, to be published once durable. Called before the bot
    /// concerned can journal anything of its own, so a bot's records always come after the
    /// record that listed it.
    fn commit(&mut self, record: &Record, publish: Option<Publish>) -> (u64, Durable) {
        let (seq, durable) = self.journal.submit_then(record, publish);
        self.last_seq = self.last_seq.max(seq);
        (seq, durable)
    }

    fn not_found_bot(id: BotId) -> Rejection {
        Rejection::NotFound(format!("no bot with id {id}"))
    }

    fn not_found_profile(id: ProfileId) -> Rejection {
        Rejection::NotFound(format!("no profile with id {id}"))
    }
}

impl Actor for Registry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
    }
}

/// The application stopped: the registry lets go of everything it holds.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Close;

impl Handler<Close> for Registry {
    type Result = ();

    fn handle(&mut self, _: Close, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// The voter table of the registry's state, which every bot's votes are numbered in.
#[derive(Message)]
#[rtype(result = "Arc<VoterTable>")]
pub struct StateVoters;

impl Handler<StateVoters> for Registry {
    type Result = MessageResult<StateVoters>;

    fn handle(&mut self, _: StateVoters, _: &mut Self::Context) -> Self::Result {
        MessageResult(Arc::clone(&self.starter.voters))
    }
}

type Reply<T> = ResponseFuture<Result<T, Rejection>>;

/// The answer to a registry write: refused at once, or given once its record is durable.
fn reply<T: Send + 'static>(outcome: Result<(Durable, T), Rejection>) -> Reply<T> {
    match outcome {
        Ok((durable, value)) => when_durable(durable, value),
        Err(rejection) => Box::pin(async move { Err(rejection) }),
    }
}

impl Registry {
    /// Edits whose records may not be journaled yet and that gave something up: a change that
    /// takes a platform id or deletes a profile waits for them, so that its record never comes
    /// before the edit that allowed it (a crash between the two would otherwise keep both).
    fn releases_in_flight(&mut self) -> Vec<Settling> {
        self.edits.retain(|edit| edit.done.peek().is_none());
        self.edits
            .iter()
            .filter(|edit| edit.releases)
            .map(|edit| edit.done.clone())
            .collect()
    }

    /// Runs `change` once `waits` are done, before the registry takes any other message: the
    /// registry waits only when a change depends on an edit in flight, which is rare.
    fn after<T: Send + 'static>(
        &mut self,
        ctx: &mut Context<Self>,
        waits: Vec<Settling>,
        change: impl FnOnce(&mut Self) -> Reply<T> + 'static,
    ) -> Reply<T> {
        if waits.is_empty() {
            return change(self);
        }
        let (sender, receiver) = oneshot::channel();
        ctx.wait(join_all(waits).into_actor(self).map(move |_, registry, _| {
            let _ = sender.send(change(registry));
        }));
        Box::pin(async move {
            match receiver.await {
                Ok(answer) => answer.await,
                Err(_) => Err(Rejection::NotStored("the directory stopped".into())),
            }
        })
    }
}
