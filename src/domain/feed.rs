//! A bot's live vote feed: the readers of its vote stream, fed once each vote is durable.
//!
//! Only the bot's actor registers readers and only its publication (which runs once a vote's
//! record is durable, in record order, on the journal's thread) publishes. Publication is one
//! send into a ring shared by every reader of the bot (a `tokio::sync::broadcast` channel), so
//! its cost does not grow with the number of readers, and it wakes only the readers that are
//! waiting for a vote: a reader that is busy, or pausing between writes, takes what has
//! accumulated when it comes back. The ring holds `buffer` votes: a reader that falls further
//! behind than that is cut off (it sees the ring's lag error), never waited for.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use actix_web::web::Bytes;

use parking_lot::Mutex;
use tokio::sync::broadcast;

use super::votes::history::HistoryEntry;

/// A vote on its way to the readers, shared by all of them: it is rendered for the wire once,
/// by the first reader that sends it, not once per reader, and not on the journal's thread.
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
    /// The ring every live reader reads from; none while the bot has no live reader, so that
    /// a bot without readers holds no ring.
    ring: Option<broadcast::Sender<Arc<FeedVote>>>,
    /// How many votes the ring holds.
    capacity: usize,
    /// The live readers, so that their places can be given back when they are gone or cut off.
    readers: Vec<Reader>,
}

#[derive(Debug)]
struct Reader {
    progress: Arc<Progress>,
    _slot: StreamSlot,
}

/// What a live reader has taken from the ring, shared between it and the feed.
#[derive(Debug)]
pub struct Progress {
    /// The position after the last vote the reader has taken.
    next: AtomicU64,
    /// Set when the feed gave the reader's place back because it fell too far behind.
    cut_off: AtomicBool,
}

impl Progress {
    /// The reader has taken every vote before `next`.
    pub fn taken(&self, next: u64) {
        self.next.store(next, Ordering::Release);
    }

    pub fn cut_off(&self) -> bool {
        self.cut_off.load(Ordering::Acquire)
    }
}

/// One of the bot's stream places, given back when dropped.
#[derive(Debug)]
pub struct StreamSlot(Arc<VoteFeed>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a registered reader holds: its place in the ring, and its progress.
pub struct Following {
    pub receive: broadcast::Receiver<Arc<FeedVote>>,
    pub progress: Arc<Progress>,
}

impl VoteFeed {
    /// A feed whose votes before `published` are all durable (a state just loaded).
    pub fn new(published: u64) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Readers {
                published,
                ring: None,
                capacity: 0,
                readers: Vec::new(),
            }),
            open: AtomicUsize::new(0),
        })
    }

    /// A stream place, unless `max` are open.
    pub fn open(self: &Arc<Self>, max: usize) -> Option<StreamSlot> {
        if self.open.load(Ordering::Acquire) >= max {
            // Readers whose client went away, or that fell behind the ring and wait to be told,
            // give their places back now.
            self.inner.lock().sweep();
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
    /// where publication stands, and the reader reads history up to there first. A reader
    /// may fall `buffer` votes behind (rounded up to a power of two) before it is cut off.
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
        inner.sweep();
        let receive = match &inner.ring {
            Some(ring) => ring.subscribe(),
            None => {
                let (ring, receive) = broadcast::channel(buffer.max(1));
                inner.ring = Some(ring);
                inner.capacity = buffer.max(1).next_power_of_two();
                receive
            }
        };
        let progress = Arc::new(Progress {
            next: AtomicU64::new(inner.published),
            cut_off: AtomicBool::new(false),
        });
        inner.readers.push(Reader {
            progress: Arc::clone(&progress),
            _slot: slot,
        });
        Ok(Following { receive, progress })
    }

    /// Sends a durable vote to every live reader: one send, whatever their number.
    pub fn publish(&self, entry: HistoryEntry) {
        let mut inner = self.inner.lock();
        inner.published = inner.published.max(entry.position + 1);
        let Some(ring) = &inner.ring else {
            return;
        };
        let vote = Arc::new(FeedVote {
            entry,
            rendered: OnceLock::new(),
        });
        if ring.send(vote).is_err() {
            // No receiver left: the bot's readers are all gone.
            inner.ring = None;
            inner.readers.clear();
        }
    }

    /// Readers registered, for tests.
    pub fn readers(&self) -> usize {
        self.inner.lock().readers.len()
    }
}

impl Readers {
    /// Gives back the places of readers that are gone, and of those further behind than the
    /// ring holds (they will find the ring's lag error when they next read).
    fn sweep(&mut self) {
        let (published, capacity) = (self.published, self.capacity as u64);
        self.readers.retain(|reader| {
            if Arc::strong_count(&reader.progress) == 1 {
                return false;
            }
            let behind = published.saturating_sub(reader.progress.next.load(Ordering::Acquire));
            if behind > capacity {
                reader.progress.cut_off.store(true, Ordering::Release);
                return false;
            }
            true
        });
        if self.readers.is_empty() {
            self.ring = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::Snowflake;
    use crate::domain::text::VoterName;
    use crate::domain::time::Timestamp;
    use crate::domain::votes::Voter;

    fn entry(position: u64) -> HistoryEntry {
        HistoryEntry {
            position,
            voter: Arc::new(Voter {
                id: Snowflake::from_u64(position + 1),
                username: VoterName::parse(format!("u{position}")).expect("valid"),
                avatar: None,
            }),
            voted_at: Timestamp::from_millis(1_790_000_000_000),
        }
    }

    #[test]
    fn publication_is_one_send_and_a_reader_behind_the_ring_is_cut_off() {
        let feed = VoteFeed::new(0);
        let slot = |feed: &Arc<VoteFeed>| feed.open(10).expect("a place");
        let mut fast = feed.follow(0, 4, slot(&feed)).expect("live");
        let mut slow = feed.follow(0, 4, slot(&feed)).expect("live");
        for position in 0..6 {
            feed.publish(entry(position));
            let vote = fast.receive.try_recv().expect("a vote");
            assert_eq!(vote.entry.position, position);
            fast.progress.taken(position + 1);
        }
        assert!(matches!(
            slow.receive.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
        // At the limit, the slow reader's place is given back, and it is told it was cut off.
        assert_eq!(feed.open_streams(), 2);
        assert!(feed.open(2).is_some());
        assert!(slow.progress.cut_off());
        assert!(!fast.progress.cut_off());
        assert_eq!(feed.readers(), 1);
    }
}
