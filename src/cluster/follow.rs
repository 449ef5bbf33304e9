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
                for (seq, record) in records {
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
