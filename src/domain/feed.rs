//! A bot's live vote feed: the readers of its vote stream, fed once each vote is durable.
//!
//! Only the bot's actor registers readers and only its publication (which runs once a vote's
//! record is durable, in record order, on the journal's thread) publishes. Publication only
//! queues the vote and wakes the readers that wait idle, so its cost does not grow with the
//! number of readers, and a reader that is busy (or pausing between writes) is not woken at
//! all: it takes what has accumulated when it comes back.
//!
//! The votes are rendered for the wire once, not once per reader: the first reader that takes
//! renders what was queued into the bot's log, one block of bytes for the lot, and every
//! reader takes a slice of those blocks, everything it has not yet taken in one piece. The log
//! holds the last `buffer` votes: a reader further behind than that is cut off (its `take`
//! says so), never waited for.
//!
//! Events of other kinds (`vote.expired`) have no place in the history: each is rendered once
//! when published, kept beside the log with the position of the first vote published after
//! it, and handed to every live reader between the votes it came between, so a reader sees
//! votes and events in the order their records were journaled. They are live only: a reader
//! that reconnects with `Last-Event-ID` is sent the votes of history it missed, not these.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::votes::history::HistoryEntry;

/// The bot's feed, held by its actor. When the actor lets go of it (the bot was delisted), the
/// readers are told that the feed is closed.
#[derive(Debug)]
pub struct VoteFeed {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    /// The rendered votes; taken before `readers` when both are.
    log: Mutex<Log>,
    readers: Mutex<Readers>,
    /// The first position not yet published, for readers to look at without a lock.
    published: AtomicU64,
    /// Wakes the readers that wait for a vote.
    notify: Notify,
    closed: AtomicBool,
    /// Streams open on this bot, caught up or still reading history.
    open: AtomicUsize,
    /// The number of the next event to be published (see [`Readers::events`]).
    events_published: AtomicU64,
}

#[derive(Debug, Default)]
struct Readers {
    /// Every vote before this position is durable and was queued for the readers then
    /// registered.
    published: u64,
    /// Whether any reader is registered; without one nothing is queued or kept.
    live: bool,
    /// Published votes not yet rendered into the log.
    queued: Vec<HistoryEntry>,
    /// How many votes a reader may be behind the newest before it is cut off.
    capacity: usize,
    /// The live readers, so that their places can be given back when they are cut off.
    registered: Vec<Reader>,
    /// The last events published while a reader was live (at most `capacity`): each with its
    /// number and the position of the first vote published after it, rendered.
    events: VecDeque<Event>,
    /// The number the next event gets.
    next_event: u64,
}

/// An event that is not a vote, as the feed keeps it.
#[derive(Debug)]
struct Event {
    number: u64,
    /// Every vote before this position was published before it, none at or after.
    before: u64,
    bytes: Bytes,
}

#[derive(Debug)]
struct Reader {
    progress: Arc<ReaderProgress>,
    _slot: StreamSlot,
}

/// The last votes, rendered, in blocks of consecutive positions.
#[derive(Debug, Default)]
struct Log {
    blocks: VecDeque<Block>,
    /// The position after the last rendered vote.
    end: u64,
    /// A spare vector for the queue, so that taking it allocates nothing.
    spare: Vec<HistoryEntry>,
}

#[derive(Debug)]
struct Block {
    first: u64,
    /// Where each vote's bytes start.
    starts: Vec<u32>,
    bytes: Bytes,
}

impl Block {
    fn end(&self) -> u64 {
        self.first + self.starts.len() as u64
    }

    /// The bytes of this block's votes from position `from` up to `to` (not included).
    fn between(&self, from: u64, to: u64) -> Bytes {
        let at = |position: u64| {
            let index = position.saturating_sub(self.first) as usize;
            self.starts
                .get(index)
                .map_or(self.bytes.len(), |&start| start as usize)
        };
        let (start, end) = (at(from), at(to.max(from)));
        self.bytes.slice(start..end)
    }

    /// The bytes of this block's votes from position `from` on.
    fn from(&self, from: u64) -> Bytes {
        let index = from.saturating_sub(self.first) as usize;
        match self.starts.get(index) {
            Some(&start) => self.bytes.slice(start as usize..),
            None => Bytes::new(),
        }
    }
}

/// What a live reader has taken, shared between it and the feed.
#[derive(Debug)]
pub struct ReaderProgress {
    /// The position after the last vote the reader has taken.
    next: AtomicU64,
    /// Set when the feed gave the reader's place back because it fell too far behind.
    cut_off: AtomicBool,
}

impl ReaderProgress {
    pub fn cut_off(&self) -> bool {
        self.cut_off.load(Ordering::Acquire)
    }
}

/// One of the bot's stream places, given back when dropped.
#[derive(Debug)]
pub struct StreamSlot(Arc<Shared>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A registered reader: where it is in the feed. Dropping it gives its place back.
#[derive(Debug)]
pub struct Following {
    shared: Arc<Shared>,
    progress: Arc<ReaderProgress>,
    /// The position after the last vote taken.
    next: u64,
    /// The number of the next event (not a vote) to take.
    next_event: u64,
}

/// What a reader found when it took from the feed.
#[derive(Debug, PartialEq)]
pub enum Taken {
    /// The votes published since it last took, rendered, in order, as slices of the shared
    /// log (never copied per reader); empty when they were all below the position it asked
    /// from.
    Votes(Vec<Bytes>),
    /// It fell further behind than the feed keeps: it is cut off and gets nothing more.
    Overflow,
    /// The bot is gone: nothing more will come.
    Closed,
}

impl VoteFeed {
    /// A feed whose votes before `published` are all durable (a state just loaded).
    pub fn new(published: u64) -> Arc<Self> {
        let shared = Shared {
            published: AtomicU64::new(published),
            ..Shared::default()
        };
        shared.readers.lock().published = published;
        Arc::new(Self {
            shared: Arc::new(shared),
        })
    }

    /// A stream place, unless `max` are open.
    pub fn open(&self, max: usize) -> Option<StreamSlot> {
        let shared = &self.shared;
        if shared.open.load(Ordering::Acquire) >= max {
            // Readers that fell behind the log and wait to be told give their places back now.
            let mut log = shared.log.lock();
            shared.readers.lock().sweep(&mut log);
        }
        shared
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < max).then_some(open + 1)
            })
            .ok()
            .map(|_| StreamSlot(Arc::clone(shared)))
    }

    pub fn open_streams(&self) -> usize {
        self.shared.open.load(Ordering::Acquire)
    }

    /// The first position not yet published.
    pub fn published(&self) -> u64 {
        self.shared.published.load(Ordering::Acquire)
    }

    /// Registers a reader if it has read everything published before `next`; otherwise says
    /// where publication stands, and the reader reads history up to there first. A reader
    /// may fall `buffer` votes behind before it is cut off.
    pub fn follow(
        &self,
        next: u64,
        buffer: usize,
        slot: StreamSlot,
    ) -> Result<Following, (u64, StreamSlot)> {
        let shared = &self.shared;
        let mut log = shared.log.lock();
        let mut readers = shared.readers.lock();
        if next < readers.published {
            return Err((readers.published, slot));
        }
        readers.sweep(&mut log);
        if !readers.live {
            readers.live = true;
            readers.capacity = buffer.max(1);
            log.blocks.clear();
            log.end = readers.published;
        }
        let progress = Arc::new(ReaderProgress {
            next: AtomicU64::new(readers.published),
            cut_off: AtomicBool::new(false),
        });
        readers.registered.push(Reader {
            progress: Arc::clone(&progress),
            _slot: slot,
        });
        Ok(Following {
            shared: Arc::clone(shared),
            next: readers.published,
            next_event: readers.next_event,
            progress,
        })
    }

    /// Hands a durable vote to every live reader: one push and one wake of those waiting,
    /// whatever their number.
    pub fn publish(&self, entry: HistoryEntry) {
        let shared = &self.shared;
        {
            let mut readers = shared.readers.lock();
            let published = readers.published.max(entry.position + 1);
            readers.published = published;
            if readers.live {
                // Bounded while no reader takes: a vote further back than a reader may be
                // behind is one no reader will be sent.
                if readers.queued.len() >= readers.capacity {
                    let over = readers.queued.len() + 1 - readers.capacity;
                    readers.queued.drain(..over);
                }
                readers.queued.push(entry);
            }
            shared.published.store(published, Ordering::Release);
        }
        shared.notify.notify_waiters();
    }

    /// Hands a durable event that is not a vote (`name`, with its JSON `data`) to every live
    /// reader, after the votes published before it: rendered once, as a server-sent event
    /// without an id (a reader's `Last-Event-ID` stays its last vote's).
    pub fn publish_event(&self, name: &str, data: &serde_json::Value) {
        let shared = &self.shared;
        {
            let mut readers = shared.readers.lock();
            if !readers.live {
                return;
            }
            let mut bytes = BytesMut::new();
            bytes.extend_from_slice(b"event: ");
            bytes.extend_from_slice(name.as_bytes());
            bytes.extend_from_slice(b"\ndata: ");
            bytes.extend_from_slice(data.to_string().as_bytes());
            bytes.extend_from_slice(b"\n\n");
            let number = readers.next_event;
            readers.next_event += 1;
            if readers.events.len() >= readers.capacity {
                readers.events.pop_front();
            }
            let before = readers.published;
            readers.events.push_back(Event {
                number,
                before,
                bytes: bytes.freeze(),
            });
            shared
                .events_published
                .store(readers.next_event, Ordering::Release);
        }
        shared.notify.notify_waiters();
    }

    /// Readers registered.
    #[cfg(test)]
    pub fn readers(&self) -> usize {
        self.shared.readers.lock().registered.len()
    }
}

impl Drop for VoteFeed {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.notify.notify_waiters();
    }
}

impl Readers {
    /// Gives back the places of readers further behind than the log holds (they find out
    /// when they next take); with no reader left, the log is let go.
    fn sweep(&mut self, log: &mut Log) {
        let (published, capacity) = (self.published, self.capacity as u64);
        self.registered.retain(|reader| {
            let progress = &reader.progress;
            let behind = published.saturating_sub(progress.next.load(Ordering::Acquire));
            if behind > capacity {
                progress.cut_off.store(true, Ordering::Release);
                return false;
            }
            true
        });
        if self.registered.is_empty() {
            self.stop(log);
        }
    }

    fn stop(&mut self, log: &mut Log) {
        self.live = false;
        self.queued = Vec::new();
        self.events = VecDeque::new();
        *log = Log::default();
    }
}

impl Log {
    /// The rendered votes from position `from` up to `to` (not included), as slices.
    fn pieces(&self, from: u64, to: u64, out: &mut Vec<Bytes>) {
        for block in &self.blocks {
            if block.end() > from && block.first < to {
                let piece = match to {
                    u64::MAX => block.from(from),
                    to => block.between(from, to),
                };
                if !piece.is_empty() {
                    out.push(piece);
                }
            }
        }
    }

    /// Renders the queued votes into one block, and drops the blocks no reader may still take.
    fn append(
        &mut self,
        queued: &mut Vec<HistoryEntry>,
        keep: Keep,
        render: &impl Fn(&HistoryEntry, &mut BytesMut),
    ) {
        let mut bytes = BytesMut::new();
        let mut block: Option<Block> = None;
        for entry in queued.drain(..) {
            // Positions follow one another; should one ever be skipped, a new block starts.
            if entry.position != self.end {
                if let Some(mut done) = block.take() {
                    done.bytes = bytes.split().freeze();
                    self.blocks.push_back(done);
                }
            }
            let block = block.get_or_insert_with(|| Block {
                first: entry.position,
                starts: Vec::new(),
                bytes: Bytes::new(),
            });
            block.starts.push(bytes.len() as u32);
            render(&entry, &mut bytes);
            self.end = entry.position + 1;
        }
        if let Some(mut done) = block {
            done.bytes = bytes.freeze();
            self.blocks.push_back(done);
        }
        // What every reader has taken, and what is further behind than a reader may be.
        let keep_from = keep
            .slowest
            .max(self.end.saturating_sub(keep.capacity as u64));
        while self
            .blocks
            .front()
            .is_some_and(|block| block.end() <= keep_from)
        {
            self.blocks.pop_front();
        }
    }
}

/// Which votes the log must keep.
#[derive(Clone, Copy)]
struct Keep {
    capacity: usize,
    /// The least position a registered reader has yet to take.
    slowest: u64,
}

impl Following {
    /// Whether there is something to take: a vote published after the last one taken, or the
    /// end of the feed.
    pub fn ready(&self) -> bool {
        self.shared.published.load(Ordering::Acquire) > self.next
            || self.shared.events_published.load(Ordering::Acquire) > self.next_event
            || self.shared.closed.load(Ordering::Acquire)
            || self.progress.cut_off()
    }

    /// Waits until there is something to take.
    pub async fn wait(&self) {
        let notified = self.shared.notify.notified();
        tokio::pin!(notified);
        // Registered before looking, so that a vote published in between wakes it.
        notified.as_mut().enable();
        if self.ready() {
            return;
        }
        notified.await;
    }

    /// Takes every vote published since the last take, those below `skip_below` left out,
    /// rendered by `render` (once for all readers), as the log's pieces in order.
    pub fn take(
        &mut self,
        skip_below: u64,
        render: impl Fn(&HistoryEntry, &mut BytesMut),
    ) -> Taken {
        if self.progress.cut_off() {
            return Taken::Overflow;
        }
        let shared = &*self.shared;
        let mut pieces = Vec::new();
        let mut events = Vec::new();
        let end = {
            let mut log = shared.log.lock();
            let keep = {
                let mut readers = shared.readers.lock();
                if readers
                    .events
                    .front()
                    .is_some_and(|first| first.number > self.next_event)
                {
                    // Events it had not taken were let go: it fell too far behind.
                    self.progress.cut_off.store(true, Ordering::Release);
                    return Taken::Overflow;
                }
                events.extend(
                    readers
                        .events
                        .iter()
                        .filter(|event| event.number >= self.next_event)
                        .map(|event| (event.before, event.bytes.clone())),
                );
                self.next_event = readers.next_event;
                std::mem::swap(&mut readers.queued, &mut log.spare);
                // Only when there is something to render: once for all readers, not per take.
                let slowest = if log.spare.is_empty() {
                    0
                } else {
                    let taken = readers.registered.iter();
                    let next = taken.map(|reader| reader.progress.next.load(Ordering::Acquire));
                    next.min().unwrap_or(0).min(self.next)
                };
                Keep {
                    capacity: readers.capacity,
                    slowest,
                }
            };
            let capacity = keep.capacity;
            let mut queued = std::mem::take(&mut log.spare);
            if !queued.is_empty() {
                log.append(&mut queued, keep, &render);
            }
            log.spare = queued;
            if log.end.saturating_sub(self.next) > capacity as u64 {
                self.progress.cut_off.store(true, Ordering::Release);
                return Taken::Overflow;
            }
            // The votes in order, each event between the votes it came between.
            let mut from = self.next.max(skip_below);
            for (before, bytes) in events {
                if before > from {
                    log.pieces(from, before, &mut pieces);
                    from = before;
                }
                pieces.push(bytes);
            }
            log.pieces(from, u64::MAX, &mut pieces);
            log.end
        };
        self.next = self.next.max(end);
        self.progress.next.store(self.next, Ordering::Release);
        if pieces.is_empty() && shared.closed.load(Ordering::Acquire) {
            return Taken::Closed;
        }
        Taken::Votes(pieces)
    }

    /// The position after the last vote taken.
    pub fn next(&self) -> u64 {
        self.next
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        let mut log = self.shared.log.lock();
        let mut readers = self.shared.readers.lock();
        readers
            .registered
            .retain(|reader| !Arc::ptr_eq(&reader.progress, &self.progress));
        if readers.registered.is_empty() && readers.live {
            readers.stop(&mut log);
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
    use proptest::prelude::*;

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

    fn render(entry: &HistoryEntry, out: &mut BytesMut) {
        out.extend_from_slice(format!("{};", entry.position).as_bytes());
    }

    /// The positions in what a take gave.
    fn positions(taken: Taken) -> Vec<u64> {
        match taken {
            Taken::Votes(pieces) => std::str::from_utf8(&pieces.concat())
                .expect("text")
                .split_terminator(';')
                .map(|n| n.parse().expect("a position"))
                .collect(),
            other => panic!("expected votes, got {other:?}"),
        }
    }

    fn slot(feed: &VoteFeed) -> StreamSlot {
        feed.open(100).expect("a place")
    }

    /// What a take gave, votes by position and events by their data, in order.
    fn items(taken: Taken) -> Vec<String> {
        let Taken::Votes(pieces) = taken else {
            panic!("expected votes, got {taken:?}");
        };
        let text = String::from_utf8(pieces.concat()).expect("text");
        let mut items = Vec::new();
        let mut rest = text.as_str();
        while !rest.is_empty() {
            if let Some(event) = rest.strip_prefix("event: x\ndata: ") {
                let (data, after) = event.split_once("\n\n").expect("an event's end");
                items.push(format!("e{data}"));
                rest = after;
            } else {
                let (position, after) = rest.split_once(';').expect("a vote");
                items.push(position.to_owned());
                rest = after;
            }
        }
        items
    }

    #[test]
    fn events_come_between_the_votes_they_came_between() {
        let feed = VoteFeed::new(0);
        // No reader: nothing is kept.
        feed.publish_event("x", &serde_json::json!(0));
        let mut early = feed.follow(0, 8, slot(&feed)).expect("live");
        feed.publish(entry(0));
        feed.publish_event("x", &serde_json::json!(1));
        let mut late = feed.follow(1, 8, slot(&feed)).expect("live");
        feed.publish(entry(1));
        feed.publish_event("x", &serde_json::json!(2));
        feed.publish_event("x", &serde_json::json!(3));
        assert!(early.ready());
        assert_eq!(items(early.take(0, render)), ["0", "e1", "1", "e2", "e3"]);
        assert_eq!(items(late.take(0, render)), ["1", "e2", "e3"]);
        // An event alone wakes a reader and is taken alone.
        assert!(!early.ready());
        feed.publish_event("x", &serde_json::json!(4));
        assert!(early.ready());
        assert_eq!(items(early.take(0, render)), ["e4"]);
        feed.publish(entry(2));
        assert_eq!(items(early.take(0, render)), ["2"]);
        assert_eq!(items(late.take(0, render)), ["e4", "2"]);
    }

    #[test]
    fn a_reader_that_lets_events_pile_up_past_the_buffer_is_cut_off() {
        let feed = VoteFeed::new(0);
        let mut reader = feed.follow(0, 2, slot(&feed)).expect("live");
        for n in 0..3 {
            feed.publish_event("x", &serde_json::json!(n));
        }
        assert_eq!(reader.take(0, render), Taken::Overflow);
    }

    #[test]
    fn a_take_gives_every_vote_since_the_last_in_one_piece() {
        let feed = VoteFeed::new(0);
        let mut reader = feed.follow(0, 8, slot(&feed)).expect("live");
        assert!(!reader.ready());
        for position in 0..3 {
            feed.publish(entry(position));
        }
        assert!(reader.ready());
        assert_eq!(positions(reader.take(0, render)), [0, 1, 2]);
        assert!(!reader.ready());
        assert_eq!(positions(reader.take(0, render)), Vec::<u64>::new());
        // A second reader registered now starts with the next vote; the first goes on.
        let mut later = feed.follow(3, 8, slot(&feed)).expect("live");
        for position in 3..5 {
            feed.publish(entry(position));
        }
        assert_eq!(positions(later.take(0, render)), [3, 4]);
        feed.publish(entry(5));
        assert_eq!(positions(reader.take(0, render)), [3, 4, 5]);
        assert_eq!(positions(later.take(0, render)), [5]);
    }

    #[test]
    fn votes_below_what_the_client_has_are_left_out() {
        let feed = VoteFeed::new(0);
        let mut reader = feed.follow(6, 8, slot(&feed)).expect("live");
        for position in 0..4 {
            feed.publish(entry(position));
        }
        assert_eq!(positions(reader.take(6, render)), Vec::<u64>::new());
        for position in 4..9 {
            feed.publish(entry(position));
        }
        assert_eq!(positions(reader.take(6, render)), [6, 7, 8]);
    }

    #[test]
    fn a_reader_behind_the_log_is_cut_off_and_gives_its_place_back() {
        let feed = VoteFeed::new(0);
        let mut fast = feed.follow(0, 4, slot(&feed)).expect("live");
        let mut slow = feed.follow(0, 4, slot(&feed)).expect("live");
        for position in 0..6 {
            feed.publish(entry(position));
            assert_eq!(positions(fast.take(0, render)), [position]);
        }
        // At the limit, the slow reader's place is given back, and it is told it was cut off.
        assert_eq!(feed.open_streams(), 2);
        assert!(feed.open(2).is_some());
        assert_eq!(feed.readers(), 1);
        assert!(slow.ready());
        assert_eq!(slow.take(0, render), Taken::Overflow);
        // A reader that finds itself behind without a sweep is cut off too.
        let mut third = feed.follow(6, 4, slot(&feed)).expect("live");
        for position in 6..10 {
            feed.publish(entry(position));
        }
        assert_eq!(positions(fast.take(0, render)), [6, 7, 8, 9]);
        feed.publish(entry(10));
        assert_eq!(third.take(0, render), Taken::Overflow);
        assert_eq!(positions(fast.take(0, render)), [10]);
    }

    #[test]
    fn the_last_reader_gone_lets_the_log_go_and_a_dropped_feed_closes() {
        let feed = VoteFeed::new(5);
        let reader = feed.follow(5, 4, slot(&feed)).expect("live");
        feed.publish(entry(5));
        drop(reader);
        assert_eq!(feed.readers(), 0);
        assert_eq!(feed.open_streams(), 0);
        assert!(feed.shared.readers.lock().queued.is_empty());
        feed.publish(entry(6));
        assert!(feed.shared.readers.lock().queued.is_empty());
        let mut reader = feed.follow(7, 4, slot(&feed)).expect("live");
        feed.publish(entry(7));
        drop(feed);
        assert!(reader.ready());
        assert_eq!(positions(reader.take(0, render)), [7]);
        assert_eq!(reader.take(0, render), Taken::Closed);
    }

    #[test]
    fn what_waits_to_be_rendered_and_what_the_log_keeps_are_bounded() {
        let feed = VoteFeed::new(0);
        let mut stalled = feed.follow(0, 4, slot(&feed)).expect("live");
        let mut reader = feed.follow(0, 4, slot(&feed)).expect("live");
        for position in 0..100 {
            feed.publish(entry(position));
        }
        assert_eq!(feed.shared.readers.lock().queued.len(), 4);
        assert_eq!(reader.take(0, render), Taken::Overflow);
        assert_eq!(stalled.take(0, render), Taken::Overflow);
        let mut reader = feed.follow(100, 4, slot(&feed)).expect("live");
        for position in 100..103 {
            feed.publish(entry(position));
        }
        assert_eq!(positions(reader.take(0, render)), [100, 101, 102]);
        // Only what a reader has yet to take is kept once every reader has taken it.
        feed.publish(entry(103));
        let mut later = feed.follow(104, 4, slot(&feed)).expect("live");
        feed.publish(entry(104));
        assert_eq!(positions(later.take(0, render)), [104]);
        let kept: usize = feed
            .shared
            .log
            .lock()
            .blocks
            .iter()
            .map(|b| b.starts.len())
            .sum();
        assert_eq!(
            kept, 2,
            "votes 103 and 104, which the first reader has yet to take"
        );
        assert_eq!(positions(reader.take(0, render)), [103, 104]);
    }

    #[actix_web::test]
    async fn a_waiting_reader_is_woken_by_a_vote() {
        let feed = VoteFeed::new(0);
        let mut reader = feed.follow(0, 4, slot(&feed)).expect("live");
        let waiting = tokio::spawn(async move {
            reader.wait().await;
            positions(reader.take(0, render))
        });
        tokio::task::yield_now().await;
        feed.publish(entry(0));
        assert_eq!(waiting.await.expect("woken"), [0]);
    }

    #[derive(Clone, Debug)]
    enum Step {
        Publish(u8),
        Take(usize),
        Follow,
        Leave(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (1u8..12).prop_map(Step::Publish),
            (0usize..4).prop_map(Step::Take),
            Just(Step::Follow),
            (0usize..4).prop_map(Step::Leave),
        ]
    }

    proptest! {
        /// However publications and takes interleave, each reader gets the votes published
        /// after it registered, each once and in order, up to the end or to its overflow,
        /// which comes only when it was more than its buffer behind.
        #[test]
        fn readers_get_every_vote_once_in_order(
            steps in proptest::collection::vec(step(), 1..80),
            buffer in 1usize..20,
        ) {
            let feed = VoteFeed::new(0);
            let mut published = 0u64;
            // Each reader: its feed position, what it expects next, whether it overflowed.
            let mut readers: Vec<(Following, u64, bool)> = Vec::new();
            let take = |reader: &mut (Following, u64, bool), published: u64| {
                let behind = published - reader.0.next();
                match reader.0.take(0, render) {
                    Taken::Votes(pieces) => {
                        let got = positions(Taken::Votes(pieces));
                        let expected: Vec<u64> = (reader.1..published).collect();
                        assert_eq!(got, expected);
                        assert!(behind <= buffer as u64);
                        reader.1 = published;
                    }
                    Taken::Overflow => {
                        assert!(reader.2 || behind > buffer as u64, "cut off {behind} behind");
                        reader.2 = true;
                    }
                    Taken::Closed => panic!("the feed is open"),
                }
            };
            for step in steps {
                match step {
                    Step::Publish(count) => {
                        for _ in 0..count {
                            feed.publish(entry(published));
                            published += 1;
                        }
                    }
                    Step::Take(index) => {
                        if let Some(reader) = readers.get_mut(index) {
                            take(reader, published);
                        }
                    }
                    Step::Follow => {
                        let following = feed.follow(published, buffer, slot(&feed)).expect("live");
                        readers.push((following, published, false));
                    }
                    Step::Leave(index) => {
                        if index < readers.len() {
                            readers.remove(index);
                        }
                    }
                }
            }
            for reader in &mut readers {
                take(reader, published);
            }
        }
    }
}
