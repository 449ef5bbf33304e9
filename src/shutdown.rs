//! Telling the server and its background loops to stop (the model is mini-redis's `Shutdown`).
//!
//! The application holds the [`Trigger`]; every loop holds a [`Shutdown`] and ends when the
//! trigger is pulled or dropped, so nothing outlives the application that started it.

use tokio::sync::watch;

/// Pulled once, by whoever decides the service stops.
pub struct Trigger(watch::Sender<bool>);

/// Held by each background loop.
#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

pub fn channel() -> (Trigger, Shutdown) {
    let (sender, receiver) = watch::channel(false);
    (Trigger(sender), Shutdown(receiver))
}

impl Trigger {
    pub fn pull(&self) {
        let _ = self.0.send(true);
    }
}

impl Shutdown {
    /// Resolves once the trigger is pulled or dropped.
    pub async fn requested(&mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn loops_hear_a_pull_and_a_dropped_trigger() {
        let (trigger, mut shutdown) = channel();
        let mut other = shutdown.clone();
        trigger.pull();
        shutdown.requested().await;
        other.requested().await;

        let (trigger, mut shutdown) = channel();
        drop(trigger);
        shutdown.requested().await;
    }
}
