//! A whole state loaded at once (a recovered one, or the demo's), and the registry as the
//! source a snapshot reads: its own part at once, each bot's afterwards.

use std::sync::Arc;

use actix::prelude::*;
use futures_util::future::BoxFuture;

use super::book::BotStarter;
use super::Registry;
use crate::actors::bot::ReadState;
use crate::actors::directory::{BotHandle, Directory};
use crate::domain::ids::{BotId, TokenHash};
use crate::domain::profile::Profile;
use crate::persist::state::{SavedState, StoredBot};
use crate::persist::{BotSource, Captured, SnapshotFailed, StateSource};

/// A whole directory to list at once: a recovered state, or the demo.
#[derive(Message)]
#[rtype(result = "()")]
pub struct LoadState {
    pub state: SavedState,
}

impl Handler<LoadState> for Registry {
    type Result = ();

    fn handle(&mut self, LoadState { state }: LoadState, _: &mut Self::Context) {
        self.last_seq = self.last_seq.max(state.registry_seq);
        // Into a registry with no bot yet, the loaded state's voter table is the one every bot
        // listed from now on joins; otherwise the loaded bots join the registry's.
        if self.book.bots.is_empty() && !state.bots.is_empty() {
            self.starter.voters = state.voters();
        }
        for profile in state.profiles {
            self.index_profile(&profile);
            self.directory.publish_profile(Arc::new(profile.clone()));
            self.book.profiles.insert(profile.id, profile);
        }
        crate::telemetry::profiles_listed(self.book.profiles.len());
        // What was recovered is durable already: it is published at once, as one batch. The
        // index is built from the bots' views on other threads while the registry files the
        // bots and their actors are built and started on their arbiters.
        let mut bots = state.bots;
        let prepared = BotStarter::prepare_all(&self.starter.voters, &mut bots);
        let views = prepared
            .iter()
            .map(|prepared| Arc::clone(&prepared.view))
            .collect();
        let directory = Arc::clone(&self.directory);
        directory.publish_recovered(views, || {
            self.book.bots.reserve(bots.len());
            self.bot_platform_ids.reserve(bots.len());
            for bot in &bots {
                let listing = &bot.state.listing;
                self.bot_platform_ids.claim(listing.id, listing.platform_id);
            }
            self.starter
                .start_all(bots, prepared)
                .into_iter()
                .map(|entry| {
                    let (handle, token) = (Arc::clone(&entry.handle), entry.token);
                    self.book.bots.insert(handle.id, entry);
                    (handle, token)
                })
                .collect()
        });
    }
}

/// The registry's part of a snapshot. The bots are read afterwards, one message each while
/// requests go on, and written as they come; what changes meanwhile is in the journal after
/// `seq`, and replay skips what a bot already has.
#[derive(Message)]
#[rtype(result = "Captured")]
pub struct Capture;

impl Handler<Capture> for Registry {
    type Result = MessageResult<Capture>;

    fn handle(&mut self, _: Capture, _: &mut Self::Context) -> Self::Result {
        // As few touches of each bot as can be: this runs on the registry's thread at normal
        // priority while requests wait behind it (docs/PERFORMANCE.md). The writer's thread sorts.
        let mut profiles: Vec<Profile> = self.book.profiles.values().cloned().collect();
        profiles.sort_unstable_by_key(|p| p.id);
        let bots = self
            .book
            .bots
            .values()
            .map(|entry| {
                Box::new(ListedBot {
                    handle: Arc::clone(&entry.handle),
                    token: entry.token,
                    directory: Arc::clone(&self.directory),
                }) as Box<dyn BotSource>
            })
            .collect();
        MessageResult(Captured {
            seq: self.journal.last_seq(),
            registry_seq: self.last_seq,
            profiles,
            bots,
        })
    }
}

/// Snapshots read the state from the registry and its bots.
impl StateSource for Addr<Registry> {
    fn capture(&self) -> BoxFuture<'static, Result<Captured, SnapshotFailed>> {
        let asked = self.send(Capture);
        Box::pin(async move {
            asked
                .await
                .map_err(|e| SnapshotFailed::RegistryGone(e.to_string()))
        })
    }
}

/// A listed bot as a snapshot reads it: its actor's state and its token.
struct ListedBot {
    handle: Arc<BotHandle>,
    token: TokenHash,
    directory: Arc<Directory>,
}

impl BotSource for ListedBot {
    fn id(&self) -> BotId {
        self.handle.id
    }

    fn read(&self) -> BoxFuture<'static, Result<Option<StoredBot>, SnapshotFailed>> {
        let asked = self.handle.addr.send(ReadState);
        let (bot, token, directory) = (self.handle.id, self.token, Arc::clone(&self.directory));
        Box::pin(async move {
            match asked.await {
                Ok(state) => Ok(Some(StoredBot { state, token })),
                // Delisted meanwhile: its actor stopped.
                Err(_) if directory.get(bot).is_none() => Ok(None),
                Err(error) => Err(SnapshotFailed::BotGone {
                    bot,
                    why: error.to_string(),
                }),
            }
        })
    }
}
