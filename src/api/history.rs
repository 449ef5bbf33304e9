//! `GET /bots/:id/votes/history` and `GET /bots/:id/votes/stream` (and their forms without an
//! id): every vote with its time, a page at a time, and live as Server-Sent Events.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::{HeaderValue, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE};
use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes, BytesMut};
use actix_web::{HttpRequest, HttpResponse};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use futures_util::Stream as _;
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

use super::connection::{Busy, PeerGone};
use super::error::{ApiError, Code};
use super::extract::OwnBot;
use super::limits::RetryAfter;
use super::routes::{Classic, Limit, Route};
use super::{reply, AppState};
use crate::actors::bot::{Follow, FollowReply, OpenStream, ReadHistoryPage};
use crate::actors::directory::BotHandle;
use crate::domain::feed::{Following, StreamSlot, Taken};
use crate::domain::ids::{BotId, Snowflake};
use crate::domain::text::{HttpUrl, VoterName};
use crate::domain::time::Timestamp;
use crate::domain::votes::history::{HistoryEntry, PageQuery};

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
}

impl Default for HistorySettings {
    fn default() -> Self {
        Self {
            retention: None,
            max_streams_per_bot: 5,
            heartbeat: Duration::from_secs(15),
            buffer: STREAM_BUFFER,
            write_interval: Duration::from_millis(u64::from(WRITE_INTERVAL_MS)),
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

/// The settings, and the key that signs cursors.
pub struct History {
    pub settings: HistorySettings,
    key: [u8; 32],
}

/// The file in the data directory that holds the cursor key, so cursors outlive a restart.
pub const KEY_FILE: &str = "history-cursor.key";

impl History {
    /// Reads the cursor key from the data directory, or makes one (and writes it there).
    /// Without a data directory the key lives as long as the process.
    pub fn new(settings: HistorySettings, data_dir: Option<&Path>) -> std::io::Result<Self> {
        let key = match data_dir {
            Some(dir) => load_or_create_key(dir)?,
            None => random_key()?,
        };
        Ok(Self { settings, key })
    }

    /// Cluster mode: the key every node shares, so a cursor from one node is valid on another.
    pub fn with_key(settings: HistorySettings, key: [u8; 32]) -> Self {
        Self { settings, key }
    }

    fn mac(&self, body: &[u8]) -> [u8; 16] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(body);
        let mut out = [0; 16];
        out.copy_from_slice(&mac.finalize().into_bytes()[..16]);
        out
    }

    /// A cursor: the bot, the position of the last vote shown, and a MAC over both.
    fn cursor(&self, bot: BotId, position: u64) -> String {
        let mut bytes = Vec::with_capacity(40);
        bytes.extend_from_slice(&bot.as_u128().to_be_bytes());
        bytes.extend_from_slice(&position.to_be_bytes());
        let mac = self.mac(&bytes);
        bytes.extend_from_slice(&mac);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position a cursor stands at, if this service made it for this bot.
    fn read_cursor(&self, bot: BotId, cursor: &str) -> Result<u64, ApiError> {
        let refused = || {
            Code::BadRequest.with(
                "`cursor` is not a cursor this service gave for this bot's history; \
                 use the `next` of the previous page"
                    .into(),
            )
        };
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| refused())?;
        if bytes.len() != 40 {
            return Err(refused());
        }
        let (body, mac) = bytes.split_at(24);
        let expected = self.mac(body);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(&expected[..], mac)) {
            return Err(refused());
        }
        if body[..16] != bot.as_u128().to_be_bytes() {
            return Err(refused());
        }
        let mut position = [0; 8];
        position.copy_from_slice(&body[16..]);
        Ok(u64::from_be_bytes(position))
    }
}

fn random_key() -> std::io::Result<[u8; 32]> {
    let mut key = [0; 32];
    getrandom::fill(&mut key).map_err(std::io::Error::other)?;
    Ok(key)
}

fn load_or_create_key(dir: &Path) -> std::io::Result<[u8; 32]> {
    let path = dir.join(KEY_FILE);
    match std::fs::read(&path) {
        Ok(bytes) if bytes.len() == 32 => {
            let mut key = [0; 32];
            key.copy_from_slice(&bytes);
            return Ok(key);
        }
        Ok(_) => tracing::warn!(
            "{} is not a 32-byte key; a new one is made, and history cursors given before are refused",
            path.display()
        ),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    let key = random_key()?;
    let temp = dir.join(format!("{KEY_FILE}.tmp"));
    {
        use std::io::Write;
        // New, 0600, and never through a symlink: a link planted at the temporary name would
        // otherwise get the key written into its target.
        let mut file = crate::persist::private::create_new(&temp)?;
        file.write_all(&key)?;
        file.sync_all()?;
    }
    std::fs::rename(&temp, &path)?;
    if let Ok(dir) = std::fs::File::open(dir) {
        // The rename is durable once the directory is; a failure here only risks a new key.
        let _ = dir.sync_all();
    }
    Ok(key)
}

/// One vote, as history and the stream show it.
#[derive(Serialize, ToSchema)]
pub struct VoteEntry<'a> {
    /// The voter's platform snowflake
    #[schema(value_type = Snowflake)]
    pub id: Snowflake,
    #[schema(value_type = crate::domain::text::PlatformUsername)]
    pub username: &'a VoterName,
    /// null when the user has no custom avatar
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub avatar: Option<&'a HttpUrl>,
    /// When the vote was taken
    #[schema(value_type = String, format = DateTime)]
    pub voted_at: Timestamp,
    /// voted_at + 12 hours: when the user may vote again and check stops counting the vote
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
}

impl<'a> From<&'a HistoryEntry> for VoteEntry<'a> {
    fn from(entry: &'a HistoryEntry) -> Self {
        Self {
            id: entry.voter.id,
            username: &entry.voter.username,
            avatar: entry.voter.avatar.as_ref(),
            voted_at: entry.voted_at,
            expires_at: entry.expires_at(),
        }
    }
}

/// A page of the vote history.
#[derive(Serialize, ToSchema)]
pub struct VoteHistoryPage<'a> {
    /// Newest first
    pub results: Vec<VoteEntry<'a>>,
    /// Pass as `cursor` for the next (older) page; null on the last page
    #[schema(required = true)]
    pub next: Option<String>,
}

/// The history and stream routes: for a bot by id, and for the token's own bot.
pub fn routes() -> Vec<Route> {
    let history = Route::own_bot(
        __path_history,
        history,
        Classic {
            operation_id: "own_history",
            summary: "The token's bot's vote history, newest first.",
        },
    )
    .map(|route| {
        route.refuses(
            Code::BadRequest,
            "a parameter out of range, given twice, or a cursor this service did not give for this bot",
        )
    });
    let stream = Route::own_bot(
        __path_stream,
        stream,
        Classic {
            operation_id: "own_stream",
            summary: "The token's bot's votes as Server-Sent Events.",
        },
    )
    .map(|route| {
        route
            .amend(stream_events)
            .refuses(Code::BadRequest, "Last-Event-ID is not a vote id")
    });
    history
        .into_iter()
        .chain(stream)
        .map(|route| route.limited(Limit::PerBot))
        .collect()
}

/// Every vote the bot accepted, newest first (its own token).
#[utoipa::path(
    get, path = "/bots/{id}/votes/history", tag = "votes",
    params(
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Votes per page, 1 to 1000; default 100"),
        ("cursor" = Option<String>, Query, description = "The `next` of the previous page; opaque"),
        ("since" = Option<String>, Query, format = DateTime, description = "RFC 3339: only votes at or after this instant"),
        ("until" = Option<String>, Query, format = DateTime, description = "RFC 3339: only votes before this instant"),
    ),
    responses(
        (status = 200, description = "A page of votes, newest first", body = VoteHistoryPage),
    )
)]
pub async fn history(
    bot: OwnBot,
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    history_page(&bot.0, &state, request.query_string()).await
}

const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

async fn history_page(
    bot: &BotHandle,
    state: &AppState,
    query_string: &str,
) -> Result<HttpResponse, ApiError> {
    let history = &state.history;
    let mut limit = None;
    let mut cursor = None;
    let mut since = None;
    let mut until = None;
    let pairs =
        crate::domain::query::pairs(query_string).map_err(|e| Code::BadRequest.with(e.0))?;
    for (name, value) in pairs {
        let slot = match &*name {
            "limit" => &mut limit,
            "cursor" => &mut cursor,
            "since" => &mut since,
            "until" => &mut until,
            _ => continue,
        };
        if slot.is_some() {
            return Err(Code::BadRequest.with(format!("`{name}` is given more than once")));
        }
        // An empty cursor is the first page; an empty limit or time is not a value.
        *slot = Some(value).filter(|v| !(v.is_empty() && name == "cursor"));
    }
    let limit = match limit {
        None => DEFAULT_LIMIT,
        Some(raw) => raw
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                Code::BadRequest.with(format!(
                    "`limit` must be a whole number from 1 to {MAX_LIMIT}, got `{raw}`"
                ))
            })?,
    };
    let before = cursor
        .map(|c| history.read_cursor(bot.id, &c))
        .transpose()?;
    let since = since.map(|s| instant("since", &s)).transpose()?;
    let until = until.map(|s| instant("until", &s)).transpose()?;
    let page = bot
        .ask(ReadHistoryPage(PageQuery {
            before,
            since,
            until,
            limit,
        }))
        .await??;
    let next = page
        .more
        .then(|| page.entries.last())
        .flatten()
        .map(|last| history.cursor(bot.id, last.position));
    Ok(reply::ok(&VoteHistoryPage {
        results: page.entries.iter().map(VoteEntry::from).collect(),
        next,
    }))
}

fn instant(name: &str, raw: &str) -> Result<Timestamp, ApiError> {
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|at| Timestamp::from_datetime(at.with_timezone(&chrono::Utc)))
        .map_err(|_| {
            Code::BadRequest.with(format!(
                "`{name}` must be an RFC 3339 date and time like 2026-11-23T04:00:00Z, got `{raw}`"
            ))
        })
}

/// The bot's votes as Server-Sent Events, as they are accepted (its own token).
///
/// Each accepted vote is one `vote` event whose `id` is the vote's position in the bot's
/// history and whose `data` is the history entry. A comment line is sent every 15 s when no
/// vote is. Reconnect with `Last-Event-ID` to get every vote after that id from history first,
/// then live ones. A reader too slow for the votes is sent an `overflow` event and the stream
/// ends; it reconnects with its last id. Past the bot's limit of open streams (5 unless the
/// operator sets `--max-streams-per-bot`) the answer is 429 with `Retry-After`, as for a rate limit.
#[utoipa::path(
    get, path = "/bots/{id}/votes/stream", tag = "votes",
    params(
        ("Last-Event-ID" = Option<u64>, Header, description = "The id of the last event received: the stream starts with the votes after it. Without it, the stream starts with the next vote"),
    ),
    responses(
        (status = 200, description = "A `text/event-stream` of `vote` events (data: a history entry) and, last, possibly one `overflow` event", content_type = "text/event-stream", body = VoteEntry),
    )
)]
pub async fn stream(
    bot: OwnBot,
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    open_stream(bot.0, &state, &request).await
}

/// The stream's OpenAPI entry: `Last-Event-ID` is a vote's id (digits), and each Server-Sent
/// Event is an object of its `event`, `id` and `data` lines, `data` holding the history entry as
/// JSON.
fn stream_events(get: &mut Operation) {
    for parameter in get.parameters.iter_mut().flatten() {
        if parameter.name == "Last-Event-ID" {
            parameter.schema = Some(RefOr::T(Schema::Object(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some("^[0-9]*$"))
                    .build(),
            )));
        }
    }
    let event = ObjectBuilder::new()
        .property(
            "event",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["vote", "overflow"])),
        )
        .property(
            "id",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some("^[0-9]+$"))
                .description(Some("A vote's position in the bot's history")),
        )
        .property(
            "data",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(
                    "For `vote`: the vote as a history entry (`VoteEntry`) in JSON; for \
                 `overflow`: `{\"message\": ...}`",
                )),
        )
        .required("data")
        .build();
    if let Some(RefOr::T(ok)) = get.responses.responses.get_mut("200") {
        if let Some(content) = ok.content.get_mut("text/event-stream") {
            content.schema = Some(RefOr::T(Schema::Object(event)));
        }
    }
}

/// Seconds a client refused for too many streams is told to wait.
const STREAM_RETRY_AFTER: u64 = 5;

async fn open_stream(
    bot: Arc<BotHandle>,
    state: &AppState,
    request: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    // Digits only, as the schema says; a number past u64 is past every vote there will be.
    let last = match request.headers().get("last-event-id").map(|v| v.to_str()) {
        None => None,
        Some(Ok(text)) if text.trim().is_empty() => None,
        Some(Ok(text)) if text.trim().bytes().all(|b| b.is_ascii_digit()) => {
            Some(text.trim().parse::<u64>().unwrap_or(u64::MAX))
        }
        Some(text) => {
            let shown: String = text.unwrap_or("").chars().take(40).collect();
            return Err(Code::BadRequest.with(format!(
                "Last-Event-ID must be the id of a vote event (a whole number), got `{shown}`"
            )));
        }
    };
    let settings = &state.history.settings;
    let Some(slot) = bot.ask(OpenStream(settings.max_streams_per_bot)).await? else {
        let mut response = reply::json(
            StatusCode::TOO_MANY_REQUESTS,
            &RetryAfter {
                retry_after: STREAM_RETRY_AFTER,
            },
        );
        response.headers_mut().insert(
            actix_web::http::header::RETRY_AFTER,
            STREAM_RETRY_AFTER.into(),
        );
        return Ok(response);
    };
    let (next, skip_below) = match last {
        Some(id) => (id.saturating_add(1), id.saturating_add(1)),
        // From the next vote on: registered at once, nothing skipped.
        None => (u64::MAX, 0),
    };
    let heartbeat = settings.heartbeat.max(Duration::from_millis(10));
    let mut heartbeat =
        tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let feed = Feed {
        bot,
        next,
        skip_below,
        buffer: settings.buffer,
        write_interval: settings.write_interval,
        last_write: None,
        phase: Phase::CatchUp(slot),
        heartbeat,
        queue: VecDeque::from([Bytes::from_static(b": votes stream open\n\n")]),
    };
    let mut body = Box::pin(futures_util::stream::unfold(feed, |mut feed| async move {
        let chunk = feed.next_chunk().await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), feed))
    }));
    // The connection polls its body again whenever it reads, the end of the client's input
    // included: a stream whose client has left ends then, not at its next write.
    let gone = PeerGone::of(request);
    // A connection with a stream open is never closed to make room for a new client.
    let busy = Busy::of(request);
    let body = futures_util::stream::poll_fn(move |cx| {
        let _busy = &busy;
        if gone.is_gone() {
            return std::task::Poll::Ready(None);
        }
        body.as_mut().poll_next(cx)
    });
    Ok(HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, HeaderValue::from_static("text/event-stream")))
        .insert_header((CACHE_CONTROL, HeaderValue::from_static("no-store")))
        // Not compressed: a compressor holds back what it has until it has enough.
        .insert_header((CONTENT_ENCODING, HeaderValue::from_static("identity")))
        .insert_header(("x-accel-buffering", HeaderValue::from_static("no")))
        .streaming(body))
}

/// Votes of history sent per ask while a stream catches up.
const BACKLOG_PAGE: usize = 256;

enum Phase {
    CatchUp(StreamSlot),
    Live(Following),
    Done,
}

/// One stream's state: where it is in the bot's history and what it has yet to send.
struct Feed {
    bot: Arc<BotHandle>,
    /// The next position to read from history.
    next: u64,
    /// Live votes below this position were sent already (or the client had them).
    skip_below: u64,
    buffer: usize,
    write_interval: Duration,
    /// When votes were last written, while they come faster than the write interval.
    last_write: Option<tokio::time::Instant>,
    phase: Phase,
    /// Ticks when nothing was sent for its period.
    heartbeat: tokio::time::Interval,
    queue: VecDeque<Bytes>,
}

impl Feed {
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if let Some(chunk) = self.queue.pop_front() {
                return Some(chunk);
            }
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::CatchUp(slot) => {
                    let ask = Follow {
                        next: self.next,
                        slot,
                        buffer: self.buffer,
                        page: BACKLOG_PAGE,
                    };
                    // A bot delisted meanwhile ends the stream.
                    match self.bot.addr.send(ask).await.ok()? {
                        FollowReply::Backlog {
                            entries,
                            next,
                            slot,
                        } => {
                            let mut backlog = BytesMut::new();
                            for entry in &entries {
                                vote_event(entry, &mut backlog);
                            }
                            if !backlog.is_empty() {
                                self.queue.push_back(backlog.freeze());
                            }
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
