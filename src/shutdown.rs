//! Telling the server and its background loops to stop, and waiting until they have (the model
//! is mini-redis's `Shutdown`).
//!
//! The application holds the [`Trigger`]; every loop, and every task a loop starts that must
//! finish its work (a webhook attempt in flight), holds a [`Shutdown`]. A loop ends when the
//! trigger is pulled or dropped, and [`Trigger::stopped`] resolves once every [`Shutdown`] is
//! gone, so nothing outlives the application that started it.

use std::time::Duration;

use tokio::sync::{mpsc, watch};

/// Pulled once, by whoever decides the service stops.
pub struct Trigger {
    stop: watch::Sender<bool>,
    /// Closed once every [`Shutdown`] has been dropped.
    done: mpsc::Receiver<()>,
}

/// Held by each background loop, and by each task that must end before the application does.
#[derive(Clone)]
pub struct Shutdown {
    stop: watch::Receiver<bool>,
    _alive: mpsc::Sender<()>,
}

pub fn channel() -> (Trigger, Shutdown) {
    let (stop, receiver) = watch::channel(false);
    let (alive, done) = mpsc::channel(1);
    (
        Trigger { stop, done },
        Shutdown {
            stop: receiver,
            _alive: alive,
        },
    )
}

impl Trigger {
    pub fn pull(&self) {
        let _ = self.stop.send(true);
    }

    /// Pulls the trigger and waits until every loop and task holding a [`Shutdown`] has ended,
    /// for at most `patience`; `false` if some were still running then.
    pub async fn stopped(mut self, patience: Duration) -> bool {
        self.pull();
        tokio::time::timeout(patience, async {
            while self.done.recv().await.is_some() {}
        })
        .await
        .is_ok()
    }
}

impl Shutdown {
    /// Resolves once the trigger is pulled or dropped.
    pub async fn requested(&mut self) {
        let _ = self.stop.wait_for(|stop| *stop).await;
    }

    /// Whether the trigger has been pulled or dropped, for a loop on a thread of its own (the
    /// telemetry threads), which looks between its rounds instead of awaiting.
    pub fn is_requested(&self) -> bool {
        *self.stop.borrow() || self.stop.has_changed().is_err()
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

    #[actix_web::test]
    async fn stopped_waits_for_every_holder_to_end() {
        let (trigger, shutdown) = channel();
        let (finished_tx, mut finished) = mpsc::unbounded_channel();
        for n in 0..3u64 {
            let mut stop = shutdown.clone();
            let finished = finished_tx.clone();
            actix_web::rt::spawn(async move {
                stop.requested().await;
                // Work that must end before the application does.
                actix_web::rt::time::sleep(Duration::from_millis(20 * n)).await;
                let _ = finished.send(n);
            });
        }
        drop(shutdown);
        assert!(trigger.stopped(Duration::from_secs(10)).await);
        let mut ended = Vec::new();
        while let Ok(n) = finished.try_recv() {
            ended.push(n);
        }
        assert_eq!(ended.len(), 3, "every task ended before stopped() returned");

        let (trigger, shutdown) = channel();
        let held = shutdown.clone();
        drop(shutdown);
        assert!(
            !trigger.stopped(Duration::from_millis(50)).await,
            "one still held"
        );
        drop(held);
    }
}
