//! A node that does not write keeps live actors over the stream and serves reads from them:
//! each stream message is judged (`catchup::judge`), its records are applied by the actors that
//! own them (the registry's own, or a bot's through the registry), and once every record of the
//! message is applied their publications run in record order and the journal's watermark
//! advances. A read on this node therefore shows exactly a prefix of the journal the writer
//! showed, and `X-Botlist-Seq` / `min_seq` speak of that watermark.

use std::sync::Arc;

use actix::Addr;
use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use super::catchup::{judge, Judged, Target};
use super::view::ClusterView;
use super::ClusterError;
use crate::actors::registry::Registry;
use crate::actors::replicated::ApplyReplicated;
use crate::persist::journal::Journal;

/// Where a node is in the stream.
#[derive(Clone, Copy, Debug, Default)]
pub struct Position {
    /// The last stream message applied.
    pub stream_seq: u64,
    /// The newest writer epoch seen.
    pub epoch: u64,
    /// Messages skipped as void.
    pub void_messages: u64,
}

/// Applies stream messages to the node's actors.
pub struct Applier {
    registry: Addr<Registry>,
    /// The follower's journal: its durable sequence is the applied watermark.
    journal: Journal,
    view: Arc<ClusterView>,
    pub position: Position,
}

impl Applier {
    pub fn new(
        registry: Addr<Registry>,
        journal: Journal,
        view: Arc<ClusterView>,
        position: Position,
    ) -> Self {
        Self {
            registry,
            journal,
            view,
            position,
        }
    }

    /// The last journal record applied and shown.
    pub fn applied_seq(&self) -> u64 {
        self.journal.durable_seq()
    }

    pub async fn apply_message(
        &mut self,
        stream_seq: u64,
        epoch: u64,
        payload: &[u8],
    ) -> Result<(), ClusterError> {
        let applied = self.applied_seq();
        match judge(stream_seq, epoch, self.position.epoch, applied, payload)? {
            Judged::Void => {
                self.position.void_messages += 1;
                metrics::counter!("botlist_cluster_void_messages_total").increment(1);
            }
            Judged::Records(records) => {
                let mut last = applied;
                let mut replies = Vec::with_capacity(records.len());
                let mut audited = Vec::new();
                for (seq, record) in records {
                    if let Some(entry) = record.audit_entry() {
                        audited.push((seq, entry.clone()));
                    }
                    let (reply, answer) = oneshot::channel();
                    // `do_send`: in stream order whatever the mailboxes hold; the message
                    // bounds how many are in flight.
                    self.registry
                        .do_send(ApplyReplicated { seq, record, reply });
                    replies.push(answer);
                    last = seq;
                }
                for answer in replies {
                    // A dropped reply is a record passed over (its bot was delisted).
                    if let Ok(Some(publish)) = answer.await {
                        publish();
                    }
                }
                // After the changes are shown, as the writer's journal adds them.
                for (seq, entry) in &audited {
                    self.journal.audit_applied(*seq, entry);
                }
                self.journal.advance(last);
                self.position.epoch = epoch;
            }
        }
        self.position.stream_seq = stream_seq;
        self.view
            .set_caught_up(self.applied_seq(), stream_seq, self.position.epoch);
        Ok(())
    }
}

impl Target for Applier {
    fn stream_seq(&self) -> u64 {
        self.position.stream_seq
    }

    fn apply<'a>(
        &'a mut self,
        stream_seq: u64,
        epoch: u64,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ClusterError>> {
        Box::pin(self.apply_message(stream_seq, epoch, payload))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::actors::directory::Directory;
    use crate::actors::registry::{BotSpawner, LoadState};
    use crate::cluster::catchup::ops::{journaled, op, stream};
    use crate::cluster::digest::{digest, of_source};
    use crate::cluster::view::NodeRole;
    use crate::domain::time::{Clock, ManualClock, Timestamp};
    use crate::persist::state::{Replayer, SavedState};
    use crate::persist::StateSource;
    use crate::webhooks::Dispatcher;

    /// A follower's actors over `state`, as a node starts them after catching up.
    fn follower(mut state: SavedState, position: Position) -> (Applier, Addr<Registry>) {
        let clock: Arc<dyn Clock> =
            Arc::new(ManualClock::new(Timestamp::from_millis(1_790_000_000_000)));
        let directory = Arc::new(Directory::new(clock.now()));
        let journal = Journal::follower(state.seq + 1);
        // As start-up does: the recovered log, then each entry the stream brings.
        directory.audit.restore(std::mem::take(&mut state.audit));
        journal.keep_audit(Arc::clone(&directory.audit));
        let dispatcher = Dispatcher::new(
            Arc::clone(&clock),
            journal.clone(),
            Arc::clone(&directory),
            std::time::Duration::from_secs(1),
            false,
        )
        .expect("a client");
        let registry = actix::Actor::start(Registry::new(
            directory,
            clock,
            journal.clone(),
            dispatcher,
            BotSpawner::new(Vec::new()),
        ));
        registry.do_send(LoadState { state });
        let view = ClusterView::new("follower".into(), NodeRole::Follower);
        (
            Applier::new(registry.clone(), journal, view, position),
            registry,
        )
    }

    fn entries(
        log: &crate::domain::audit::AuditEntries,
    ) -> Vec<(u64, crate::domain::audit::AuditEntry)> {
        (0..log.len()).filter_map(|n| log.entry(n)).collect()
    }

    /// The follower's whole state, read as a snapshot reads it.
    async fn captured(registry: &Addr<Registry>) -> SavedState {
        let captured = registry.capture().await.expect("captured");
        let mut bots = Vec::new();
        for bot in captured.bots {
            if let Some(stored) = bot.read().await.expect("read") {
                bots.push(stored);
            }
        }
        bots.sort_unstable_by_key(|b| b.state.listing.id);
        SavedState {
            seq: captured.seq,
            registry_seq: captured.registry_seq,
            profiles: captured.profiles,
            bots,
            audit: Default::default(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Records a writer journaled, sent as the stream carries them (batches of any size,
        /// a batch stored twice, a failover's epoch message and a stale writer's message after
        /// it) and applied by a follower's live actors, which snapshot and restart on the way,
        /// give the writer's state.
        #[test]
        fn live_followers_hold_the_writers_state(
            ops in prop::collection::vec(op(), 1..50),
            cuts in prop::collection::vec(1usize..6, 1..20),
            snapshot_at in 0usize..50,
            failover_at in 0usize..50,
        ) {
            let records = journaled(&ops);
            let mut writer = Replayer::new(SavedState::default());
            for (seq, record) in &records {
                writer.apply(*seq, record.clone());
            }
            let state = writer.finish();
            let writer_log = entries(&state.audit);
            // The digest covers the audit log too: a follower missing or doubling an entry
            // differs here as well as in the entries compared below.
            let audit_chain = state.audit.chain();
            let mut writer = Replayer::new(state);
            let (profiles, bots) = writer.parts();
            let writer_digest = digest(profiles, bots, audit_chain);

            let (follower_digest, follower_log) = actix::System::new().block_on(async move {
                let (mut applier, mut registry) =
                    follower(SavedState::default(), Position::default());
                for message in stream(&records, &cuts, snapshot_at, failover_at) {
                    applier
                        .apply_message(message.stream_seq, message.epoch, &message.payload)
                        .await
                        .expect("applies");
                    if message.snapshot_after {
                        let state = captured(&registry).await;
                        let bytes = rmp_serde::to_vec(&state).expect("encodes");
                        let mut state: SavedState =
                            rmp_serde::from_slice(&bytes).expect("decodes");
                        // As reading a snapshot file does.
                        for bot in &mut state.bots {
                            bot.state.restore();
                        }
                        // The log, as a snapshot's sixth part carries it.
                        state.audit = applier.journal.audit().expect("a log").snapshot();
                        let position = applier.position;
                        (applier, registry) = follower(state, position);
                    }
                }
                assert_eq!(applier.applied_seq(), records.len() as u64);
                let audit = applier.journal.audit().expect("a log");
                let log = entries(&audit.snapshot());
                (of_source(&registry, &audit).await.expect("a digest"), log)
            });
            prop_assert_eq!(follower_digest, writer_digest);
            // Each audited record's entry, once, as replay keeps it.
            prop_assert_eq!(follower_log, writer_log);
        }
    }
}
