//! The settings of the vote history and the live vote stream.

use std::time::Duration;

/// What the history and the stream are set to.
#[derive(Clone, Debug)]
pub struct HistorySettings {
    /// How long a vote stays in history; `None` keeps every vote.
    pub retention: Option<chrono::Duration>,
    /// Streams open at once on one bot; one more is answered 429.
    pub max_streams_per_bot: usize,
    /// Time between heartbeat comments on an idle stream.
    pub heartbeat: Duration,
    /// Votes a stream may have waiting to be sent before it is cut off. The bot's streams
    /// share what they wait for, so this bounds the bot's memory once, not once per stream.
    pub buffer: usize,
    /// Least time between two writes of votes to a stream: a vote that finds the stream idle
    /// goes out at once, the votes that follow it within this time go out together after it.
    pub write_interval: Duration,
    /// Votes of history a stream renders in one poll of its connection while it catches up
    /// from a `Last-Event-ID`: the rest follows as the client reads (no flag; tests lower it).
    pub replay_page: usize,
}

impl Default for HistorySettings {
    fn default() -> Self {
        Self {
            retention: None,
            max_streams_per_bot: 5,
            heartbeat: Duration::from_secs(15),
            buffer: STREAM_BUFFER,
            write_interval: Duration::from_millis(u64::from(WRITE_INTERVAL_MS)),
            replay_page: REPLAY_PAGE,
        }
    }
}

/// The default least time between two writes of votes to a stream, in milliseconds: a tenth
/// of a second, below what a person notices, and long enough that a bot taking thousands of
/// votes a second costs each stream ten writes a second, not one or more per vote
/// (docs/API.md, "Vote history and the live vote feed", gives the reasons and figures).
pub const WRITE_INTERVAL_MS: u32 = 100;

/// How many votes a stream may be behind the bot's newest before it is cut off, by default:
/// four write intervals' worth at 40,000 votes a second, so that a stream that keeps up is not
/// cut off by a late timer on a loaded machine. Held once per bot, not per stream: about 3 MB
/// of votes at their usual 190 bytes.
pub const STREAM_BUFFER: usize = 16_384;

/// Votes of history a catching-up stream renders in one poll of its connection: 256 votes are
/// about 54 KB and 55 µs of rendering in a release build (docs/PERFORMANCE.md, "Vote history
/// and the live stream"), far under the 5 ms a request may cost before it yields.
pub const REPLAY_PAGE: usize = 256;
