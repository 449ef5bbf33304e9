//! How a node leaves: fenced at once when it lost its role (no write acknowledged, no last
//! snapshot), and the lease handed back when it was asked to stop or to step down.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::Ended;
use crate::cluster::lease::FenceClock;
use crate::cluster::view::{self, ClusterView, NodeRole};
use crate::persist::journal::{Journal, JournalError};

/// What the node holds while it holds the lease: the way to hand it back, and the writer's
/// fence clock, revoked the moment the role ends. Both empty until the lease is taken.
#[derive(Clone, Default)]
pub(super) struct Held {
    pub release: Arc<Mutex<Option<oneshot::Sender<()>>>>,
    pub fence: Arc<Mutex<Option<Arc<FenceClock>>>>,
}

/// Resolves when the node is to stop serving: asked to (`stop`), its role ended (`role`), or
/// the stream left it behind (`overtaken`). A node that lost its role is fenced before the
/// application stops; the reason is left in `ending`.
pub(super) async fn when_done(
    stop: impl Future<Output = ()>,
    role: impl Future<Output = Ended>,
    mut overtaken: mpsc::UnboundedReceiver<Ended>,
    journal: Journal,
    held: Held,
    view: Arc<ClusterView>,
    ending: Arc<Mutex<Option<Ended>>>,
) {
    let why = tokio::select! {
        () = stop => Ended::Stopped,
        why = role => why,
        Some(why) = overtaken.recv() => why,
    };
    let was_writer = view.role() == NodeRole::Writer;
    // No write is acknowledged from here on, and no last snapshot is written. A node asked
    // to stop finishes its requests in flight and writes its last snapshot instead.
    if let Ended::Demoted(why)
    | Ended::Refused(why)
    | Ended::Config(why)
    | Ended::Newer(why)
    | Ended::Failed(why) = &why
    {
        if let Some(clock) = held
            .fence
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            clock.revoke();
        }
        journal.fence(JournalError::Fenced(why.clone()));
    }
    view.set_role(match (&why, was_writer) {
        (Ended::Demoted(_), true) => NodeRole::Fenced,
        _ => NodeRole::Follower,
    });
    if was_writer && matches!(why, Ended::Demoted(_)) {
        view::count_fenced();
    }
    tracing::warn!(?why, "leaving the cluster");
    *ending.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
}

/// Handing the lease back lets another node take it at once; a node that lost it has nothing
/// to hand back.
pub(super) async fn hand_back(why: &Ended, held: &Held) {
    let hand_back = match why {
        Ended::Stopped => true,
        Ended::Demoted(why) => why.contains("on request"),
        _ => false,
    };
    if hand_back {
        if let Some(release) = held
            .release
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = release.send(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
