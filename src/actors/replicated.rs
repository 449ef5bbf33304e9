//! What a cluster node that does not write asks of its actors: apply a record the writer made,
//! read back from the stream, exactly as the writer applied it; and, once the node takes the
//! writer's role, start doing what only a writer does (sending webhooks).
//!
//! Each record's publication (the view, the check table, the live vote stream) is handed back
//! instead of run, so the node's applier runs them in record order once the whole stream
//! message is applied: a node shows exactly the prefixes of the journal the writer showed.

use actix::Message;
use tokio::sync::oneshot;

use crate::persist::journal::Publish;
use crate::persist::state::Record;

/// A record from the stream, numbered `seq`. Sent with `do_send`, so records reach each actor
/// in stream order whatever its mailbox holds; the publication (or `None`: nothing shown, or
/// the record was already applied) comes back on `reply`.
pub struct ApplyReplicated {
    pub seq: u64,
    pub record: Record,
    pub reply: oneshot::Sender<Option<Publish>>,
}

impl Message for ApplyReplicated {
    type Result = ();
}

/// The node now writes: bots schedule their open webhook deliveries, as a start does.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BecomeWriter;
