//! Taking writes again without a restart (docs/PERSISTENCE.md): the registry's part. Its book
//! is rebuilt from the durable state that start-up's `recovery::recover` read from the data
//! directory (profiles, listed bots, tokens, owners, platform ids and usernames claimed), and
//! every bot actor with a refused change takes its own rebuilt state; a bot whose listing was
//! refused is stopped (it was never published), one whose delisting was refused is kept (its
//! actor never stopped, and readers still see it).

use std::sync::Arc;

use actix::prelude::*;
use futures_util::future::join_all;

use super::book::{Entry, PlatformIds};
use super::Registry;
use crate::actors::bot::{Stop, TakeDurableState};
use crate::persist::state::{RegistryBook, SavedState, StoredBot};

/// The durable state, rebuilt from the disk while the journal is failed (so nothing changes
/// meanwhile: every write is refused before it applies). Answers how many bot actors took
/// their part, and how many were stopped.
#[derive(Message)]
#[rtype(result = "Result<(usize, usize), String>")]
pub struct TakeDurableBook {
    pub state: SavedState,
}

impl Handler<TakeDurableBook> for Registry {
    type Result = ResponseFuture<Result<(usize, usize), String>>;

    fn handle(
        &mut self,
        TakeDurableBook { state }: TakeDurableBook,
        _: &mut Self::Context,
    ) -> Self::Result {
        if self.journal.failure().is_none() {
            return Box::pin(async {
                Err("the journal takes writes: nothing to take back".into())
            });
        }
        let mut old = std::mem::take(&mut self.book.bots);
        let mut book = RegistryBook::<Entry>::default();
        self.usernames.clear();
        self.profile_platform_ids.clear();
        for profile in state.profiles {
            self.index_profile(&profile);
            book.profiles.insert(profile.id, profile);
        }
        let mut platform_ids = PlatformIds::default();
        let mut told = Vec::with_capacity(state.bots.len());
        for StoredBot { state: bot, token } in state.bots {
            let id = bot.listing.id;
            platform_ids.claim(id, bot.listing.platform_id);
            // Its actor: the registry's, or, when its delisting was refused, the one readers
            // still reach (it was never stopped). A durable listing always has one.
            let handle = old
                .remove(&id)
                .map(|entry| entry.handle)
                .or_else(|| self.directory.managed(id));
            let Some(handle) = handle else {
                tracing::error!(bot = %id, "a durable listing has no actor: started again");
                let entry = self.starter.start(bot, token);
                book.bots.insert(id, entry);
                continue;
            };
            let owners = bot.listing.owner_ids.clone();
            told.push(handle.addr.send(TakeDurableState {
                state: Box::new(bot),
                voters: Arc::clone(&self.starter.voters),
            }));
            book.bots.insert(
                id,
                Entry {
                    handle,
                    token,
                    owners,
                },
            );
        }
        // Listed by a change the journal refused: never published, so nobody reaches it.
        let stopped = old.len();
        for (_, entry) in old.drain() {
            entry.handle.addr.do_send(Stop);
        }
        self.book = book;
        self.bot_platform_ids = platform_ids;
        self.edits.clear();
        self.last_seq = state.registry_seq;
        crate::telemetry::profiles_listed(self.book.profiles.len());
        Box::pin(async move {
            let mut taken = 0;
            for answer in join_all(told).await {
                match answer {
                    Ok(true) => taken += 1,
                    Ok(false) => {}
                    Err(error) => return Err(format!("a bot actor did not answer: {error}")),
                }
            }
            Ok((taken, stopped))
        })
    }
}
