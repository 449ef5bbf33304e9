//! The owners: an actor per bot, and the registry, which decides which bots and profiles exist
//! and who may claim what; `directory.rs` holds what they publish for handlers to read.

pub mod bot;
pub mod directory;
pub mod registry;
pub mod replicated;

use actix::ResponseFuture;

use crate::domain::Rejection;
use tokio::sync::oneshot;

use crate::persist::journal::{Durable, JournalError, Settle};

/// Where a write's answer goes. The asker makes the pair ([`Answer::pair`]), sends the
/// [`Answer`] with its message and awaits the [`Answered`] on its own thread. The actor refuses
/// at once ([`Answer::refuse`]); an accepted write is answered by the journal's publisher once
/// its record is durable and published ([`Answer::once_durable`]). So the asker is woken once,
/// by whoever settles the write: not by the actor's thread first, only to wait again (one
/// thread hop less on every vote and stats post).
pub struct Answer<T>(oneshot::Sender<Result<T, Rejection>>);

/// The asker's end of an [`Answer`].
pub struct Answered<T>(oneshot::Receiver<Result<T, Rejection>>);

impl<T: Send + 'static> Answer<T> {
    pub fn pair() -> (Self, Answered<T>) {
        let (tx, rx) = oneshot::channel();
        (Self(tx), Answered(rx))
    }

    pub fn refuse(self, why: Rejection) {
        let _ = self.0.send(Err(why));
    }

    /// `reply`, once the record it waits for is durable; `NotStored` if it never will be.
    pub(crate) fn once_durable(self, reply: T) -> Settle {
        Box::new(move |result| {
            let answer = result.map(|()| reply).map_err(refused);
            let _ = self.0.send(answer);
        })
    }
}

impl<T> Answered<T> {
    pub async fn wait(self) -> Result<T, Rejection> {
        self.0.await.unwrap_or_else(|_| {
            Err(Rejection::NotStored(
                "the bot stopped before answering".into(),
            ))
        })
    }
}

/// What a write the journal refused is told: whether it may be stored after all.
pub(crate) fn refused(error: JournalError) -> Rejection {
    if let JournalError::Unconfirmed(_) = error {
        Rejection::OutcomeUnknown(error.to_string())
    } else if error.maybe_stored() {
        Rejection::MaybeStored(error.to_string())
    } else {
        Rejection::NotStored(error.to_string())
    }
}

/// The reply to a write, sent once its journal record is durable.
pub(crate) fn when_durable<T: Send + 'static>(
    durable: Durable,
    reply: T,
) -> ResponseFuture<Result<T, Rejection>> {
    Box::pin(async move {
        durable.wait().await.map_err(refused)?;
        Ok(reply)
    })
}
