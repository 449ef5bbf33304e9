//! What one stream sends: the votes of history after its `Last-Event-ID` first, then the
//! bot's live votes in writes at most one a write interval, heartbeats while idle, and an
//! `overflow` event for a reader that fell too far behind.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use actix_web::web::{self, Bytes, BytesMut};

use super::VoteEntry;
use crate::actors::bot::{Follow, FollowReply};
use crate::actors::directory::BotHandle;
use crate::config::HistorySettings;
use crate::domain::feed::{Following, StreamSlot, Taken};
use crate::domain::votes::history::HistoryEntry;

enum Phase {
    CatchUp(StreamSlot),
    Live(Following),
    Done,
}

/// One stream's state: where it is in the bot's history and what it has yet to send.
pub struct Feed {
    bot: Arc<BotHandle>,
    /// The next position to read from history.
    next: u64,
    /// Live votes below this position were sent already (or the client had them).
    skip_below: u64,
    buffer: usize,
    /// Votes of history asked for (and rendered) at once while catching up.
    replay_page: usize,
    /// Votes of history rendered since the last chunk handed out.
    replayed: usize,
    write_interval: Duration,
    /// When votes were last written, while they come faster than the write interval.
    last_write: Option<tokio::time::Instant>,
    phase: Phase,
    /// Ticks when nothing was sent for its period.
    heartbeat: tokio::time::Interval,
    queue: VecDeque<Bytes>,
}

impl Feed {
    /// A stream that holds `slot` among the bot's streams, starting after the vote `last` (with
    /// the votes of history after it), or with the next vote.
    pub fn open(
        bot: Arc<BotHandle>,
        slot: StreamSlot,
        last: Option<u64>,
        settings: &HistorySettings,
    ) -> Self {
        let (next, skip_below) = match last {
            Some(id) => (id.saturating_add(1), id.saturating_add(1)),
            // From the next vote on: registered at once, nothing skipped.
            None => (u64::MAX, 0),
        };
        let heartbeat = settings.heartbeat.max(Duration::from_millis(10));
        let mut heartbeat =
            tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Self {
            bot,
            next,
            skip_below,
            buffer: settings.buffer,
            replay_page: settings.replay_page.max(1),
            replayed: 0,
            write_interval: settings.write_interval,
            last_write: None,
            phase: Phase::CatchUp(slot),
            heartbeat,
            queue: VecDeque::from([Bytes::from_static(b": votes stream open\n\n")]),
        }
    }

    /// What the stream sends, chunk by chunk, until it ends. A chunk that comes with a page
    /// of history says how many votes rendering it took (the connection yields after it).
    pub fn chunks(self) -> impl futures_util::Stream<Item = Chunk> {
        futures_util::stream::unfold(self, |mut feed| async move {
            let chunk = feed.next_chunk().await?;
            Some((chunk, feed))
        })
    }

    async fn next_chunk(&mut self) -> Option<Chunk> {
        loop {
            if let Some(bytes) = self.queue.pop_front() {
                let replayed = std::mem::take(&mut self.replayed);
                return Some(Chunk { bytes, replayed });
            }
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::CatchUp(slot) => {
                    let ask = Follow {
                        next: self.next,
                        slot,
                        buffer: self.buffer,
                        page: self.replay_page,
                    };
                    // A bot delisted meanwhile ends the stream.
                    match self.bot.addr.send(ask).await.ok()? {
                        FollowReply::Backlog {
                            entries,
                            next,
                            slot,
                        } => {
                            // One page, rendered as the live feed renders a vote, handed out in
                            // the live feed's piece sizes.
                            let mut backlog = BytesMut::new();
                            for entry in &entries {
                                vote_event(entry, &mut backlog);
                            }
                            self.replayed += entries.len();
                            self.queue.extend(write_sized(backlog.freeze()));
                            self.next = next;
                            self.skip_below = self.skip_below.max(next);
                            self.phase = Phase::CatchUp(slot);
                        }
                        FollowReply::Live(following) => self.phase = Phase::Live(following),
                    }
                }
                Phase::Live(following) => {
                    // After a write, the stream waits out the interval before it looks for
                    // votes again, so that while votes come fast it costs one wakeup and one
                    // write per interval, not one per vote (or group commit) and reader.
                    if let Some(last) = self.last_write.take() {
                        let due = next_write(last, self.write_interval);
                        if tokio::time::Instant::now() < due {
                            tokio::time::sleep_until(due).await;
                        }
                    }
                    if !following.ready() {
                        let beat = tokio::select! {
                            _ = following.wait() => false,
                            _ = self.heartbeat.tick() => true,
                        };
                        if beat {
                            self.queue.push_back(Bytes::from_static(b": heartbeat\n\n"));
                            self.phase = Phase::Live(following);
                            continue;
                        }
                    }
                    self.send_live(following);
                }
            }
        }
    }

    /// Queues every vote waiting, as slices of the bot's log.
    fn send_live(&mut self, mut following: Following) {
        match following.take(self.skip_below, vote_event) {
            Taken::Votes(pieces) => {
                if !pieces.is_empty() {
                    self.queue.extend(pieces.into_iter().flat_map(write_sized));
                    self.last_write = Some(tokio::time::Instant::now());
                    self.heartbeat.reset();
                }
                self.phase = Phase::Live(following);
            }
            Taken::Overflow => self.queue.push_back(overflow_event()),
            // The bot was delisted.
            Taken::Closed => {}
        }
    }
}

/// A piece of a stream's answer, and the votes of history rendered to make it (0 for
/// everything but the first piece of a page of history).
pub struct Chunk {
    pub bytes: Bytes,
    pub replayed: usize,
}

/// The most a stream hands the connection at once. The connection copies each piece into
/// its write buffer, and lets go of a buffer that grew past 128 KiB after each write; pieces
/// this size keep it under that (see `STREAM_WRITE_BUFFER` in `api::connection`), so that a
/// stream's write reuses one allocation instead of growing a fresh one every interval.
const STREAM_PIECE: usize = 32 * 1024;

/// A piece of the log as slices of at most [`STREAM_PIECE`] bytes (the same memory, not
/// copies). Event boundaries do not matter: a client reads the stream as bytes.
fn write_sized(piece: Bytes) -> impl Iterator<Item = Bytes> {
    let len = piece.len();
    (0..len)
        .step_by(STREAM_PIECE)
        .map(move |start| piece.slice(start..(start + STREAM_PIECE).min(len)))
}

/// The first instant after `last` on a grid of `interval` steps shared by every stream, so
/// that the busy streams of a worker wake together, once an interval, not each at its own time.
fn next_write(last: tokio::time::Instant, interval: Duration) -> tokio::time::Instant {
    static EPOCH: std::sync::OnceLock<tokio::time::Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(tokio::time::Instant::now);
    let step = interval.as_nanos().max(1);
    let steps = last.saturating_duration_since(epoch).as_nanos() / step + 1;
    epoch + Duration::from_nanos(u64::try_from(steps * step).unwrap_or(u64::MAX))
}

/// One `vote` event as the stream sends it. Public for the render benchmark.
pub fn vote_event(entry: &HistoryEntry, out: &mut BytesMut) {
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(itoa::Buffer::new().format(entry.position).as_bytes());
    out.extend_from_slice(b"\nevent: vote\ndata: ");
    // Writing into memory fails only on a value serde cannot render, which an entry is not.
    let _ = serde_json::to_writer(web::BufMut::writer(&mut *out), &VoteEntry::from(entry));
    out.extend_from_slice(b"\n\n");
}

fn overflow_event() -> Bytes {
    Bytes::from_static(
        b"event: overflow\ndata: {\"message\":\"this stream fell too far behind the votes and is closed; reconnect with Last-Event-ID set to the last id received\"}\n\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_goes_out_in_slices_no_larger_than_a_write_wants() {
        let piece = Bytes::from(
            (0..STREAM_PIECE * 2 + 5)
                .map(|i| i as u8)
                .collect::<Vec<_>>(),
        );
        let slices: Vec<Bytes> = write_sized(piece.clone()).collect();
        let lengths: Vec<usize> = slices.iter().map(Bytes::len).collect();
        assert_eq!(lengths, [STREAM_PIECE, STREAM_PIECE, 5]);
        assert_eq!(slices.concat(), piece);
        // The slices share the piece's memory.
        assert_eq!(slices[1].as_ptr(), piece[STREAM_PIECE..].as_ptr());
        assert_eq!(write_sized(Bytes::new()).count(), 0);
    }
}
