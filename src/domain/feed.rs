//! A bot's live vote feed: the readers of its vote stream, fed once each vote is durable.
//!
//! Only the bot's actor registers readers and only its publication (which runs once a vote's
//! record is durable, in record order) publishes. A reader's buffer is bounded and filled with
//! `try_send`: a reader that falls behind is dropped from the feed, never waited for.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use actix_web::web::Bytes;

use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::votes::history::HistoryEntry;

/// A vote on its way to the readers, shared by all of them: it is rendered for the wire once,
/// by the first reader that sends it, not once per reader.
#[derive(Debug)]
pub struct FeedVote {
    pub entry: HistoryEntry,
    rendered: OnceLock<Bytes>,
}

impl FeedVote {
    pub fn rendered(&self, render: impl FnOnce(&HistoryEntry) -> Bytes) -> Bytes {
        self.rendered.get_or_init(|| render(&self.entry)).clone()
    }
}

#[derive(Debug, Default)]
pub struct VoteFeed {
    inner: Mutex<Readers>,
    /// Streams open on this bot, caught up or still reading history.
    open: AtomicUsize,
}

#[derive(Debug, Default)]
struct Readers {
    /// Every vote before this position is durable and was sent to the readers then registered.
    published: u64,
    readers: Vec<Reader>,
}

#[derive(Debug)]
struct Reader {
    send: mpsc::Sender<Arc<FeedVote>>,
    overflowed: Arc<AtomicBool>,
    _slot: StreamSlot,
}

/// One of the bot's stream places, given back when dropped.
#[derive(Debug)]
pub struct StreamSlot(Arc<VoteFeed>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a registered reader holds: its buffer, and whether it was cut off for falling behind.
pub struct Following {
    pub receive: mpsc::Receiver<Arc<FeedVote>>,
    pub overflowed: Arc<AtomicBool>,
}

impl VoteFeed {
    /// A feed whose votes before `published` are all durable (a state just loaded).
    pub fn new(published: u64) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Readers {
                published,
                readers: Vec::new(),
            }),
            open: AtomicUsize::new(0),
        })
    }

    /// A stream place, unless `max` are open.
    pub fn open(self: &Arc<Self>, max: usize) -> Option<StreamSlot> {
        if self.open.load(Ordering::Acquire) >= max {
            // Readers whose client went away give their places back now, not at the next vote.
            self.inner.lock().readers.retain(|r| !r.send.is_closed());
        }
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < max).then_some(open + 1)
            })
            .ok()
            .map(|_| StreamSlot(Arc::clone(self)))
    }

    pub fn open_streams(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The first position not yet published.
    pub fn published(&self) -> u64 {
        self.inner.lock().published
    }

    /// Registers a reader if it has read everything published before `next`; otherwise says
    /// where publication stands, and the reader reads history up to there first.
    pub fn follow(
        &self,
        next: u64,
        buffer: usize,
        slot: StreamSlot,
    ) -> Result<Following, (u64, StreamSlot)> {
        let mut inner = self.inner.lock();
        if next < inner.published {
            return Err((inner.published, slot));
        }
        let (send, receive) = mpsc::channel(buffer.max(1));
        let overflowed = Arc::new(AtomicBool::new(false));
        inner.readers.push(Reader {
            send,
            overflowed: Arc::clone(&overflowed),
            _slot: slot,
        });
        Ok(Following {
            receive,
            overflowed,
        })
    }

    /// Sends a durable vote to every reader; a reader whose buffer is full is cut off.
    pub fn publish(&self, entry: HistoryEntry) {
        let mut inner = self.inner.lock();
        inner.published = inner.published.max(entry.position + 1);
        if inner.readers.is_empty() {
            return;
        }
        let vote = Arc::new(FeedVote {
            entry,
            rendered: OnceLock::new(),
        });
        inner
            .readers
            .retain(|reader| match reader.send.try_send(Arc::clone(&vote)) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    reader.overflowed.store(true, Ordering::Release);
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
    }

    /// Readers registered, for tests.
    pub fn readers(&self) -> usize {
        self.inner.lock().readers.len()
    }
}
