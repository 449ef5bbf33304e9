//! The owners: an actor per bot, and the registry, which decides which bots and profiles exist
//! and who may claim what; `directory.rs` holds what they publish for handlers to read.

pub mod bot;
pub mod directory;
pub mod registry;
pub mod replicated;

use actix::ResponseFuture;

use crate::domain::Rejection;
use crate::persist::journal::Durable;

/// A write's reply and the journal record it waits for, handed to the asker at once: the asker
/// awaits the record on its own thread, so the journal's publisher wakes the asker directly
/// rather than the actor's thread, which would then wake the asker (one thread hop less on
/// every vote and stats post). The reply is still only had once the record is durable.
pub struct WhenDurable<T> {
    durable: Durable,
    reply: T,
}

impl<T> WhenDurable<T> {
    pub(crate) fn new(durable: Durable, reply: T) -> Self {
        Self { durable, reply }
    }

    /// The reply, once the record is durable; `NotStored` if it never will be.
    pub async fn wait(self) -> Result<T, Rejection> {
        self.durable
            .wait()
            .await
            .map_err(|e| Rejection::NotStored(e.to_string()))?;
        Ok(self.reply)
    }
}

/// The reply to a write, sent once its journal record is durable.
pub(crate) fn when_durable<T: Send + 'static>(
    durable: Durable,
    reply: T,
) -> ResponseFuture<Result<T, Rejection>> {
    Box::pin(async move {
        durable
            .wait()
            .await
            .map_err(|e| Rejection::NotStored(e.to_string()))?;
        Ok(reply)
    })
}
