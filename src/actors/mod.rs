//! The owners: an actor per bot, and the registry, which decides which bots and profiles exist
//! and who may claim what; `directory.rs` holds what they publish for handlers to read.

pub mod bot;
pub mod directory;
pub mod registry;
pub mod replicated;

use actix::ResponseFuture;

use crate::domain::Rejection;
use crate::persist::journal::Durable;

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
