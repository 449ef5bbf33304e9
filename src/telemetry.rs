//! Logs and metrics: the per-request line, request ids, and the Prometheus families.
//!
//! Metrics go through the `metrics` facade into one process-wide Prometheus recorder, so an
//! instrumentation point anywhere is one call with no handle to pass around; all but the
//! per-request families, which each application counts in its own access log, beside the
//! request's line ([`AccessLog::answered`]): every request pays for them, and the facade's
//! counters and histograms are shared by all the workers. Every label is
//! bounded: routes are patterns (unmatched paths share `unmatched`), methods are the known nine
//! or `other`, outcomes and key kinds are fixed words.

use std::borrow::Cow;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpMessage, HttpRequest};
use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::domain::webhook::{Delivery, DeliveryState};
use crate::domain::Rejection;
use crate::shutdown::Shutdown;

/// The request id header, read from the client and echoed back.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// A client's request id is used as sent when it is at most this long and visible ASCII.
pub const MAX_REQUEST_ID: usize = 128;

/// How logs are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event; coloured only when standard error is a terminal.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the log subscriber on standard error. `RUST_LOG` overrides the default filter.
pub fn init_logs(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    // actix-http logs malformed requests from clients at ERROR before any of our code runs;
    // they are the client's mistake, not the operator's problem, so they stay off unless
    // RUST_LOG names actix_http itself.
    let wanted = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    let directives = if wanted.contains("actix_http") {
        wanted
    } else {
        format!("{wanted},actix_http::h1=off")
    };
    let filter = EnvFilter::try_new(&directives).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(EventTime)
        .with_writer(LogWriter);
    let terminal = std::io::stderr().is_terminal();
    let installed = match format {
        LogFormat::Text => builder.with_ansi(terminal).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
    // Colours are tracing-subscriber's to draw; without them the access lines are written by
    // `AccessLine::write`, the same bytes for a tenth of the cost.
    if installed.is_ok() && !(terminal && format == LogFormat::Text) {
        let _ = ACCESS_FORMAT.set(format);
    }
    if installed.is_ok() {
        use tracing::Level;
        let _ = ACCESS_LEVELS.set([
            tracing::enabled!(target: ACCESS_TARGET, Level::ERROR),
            tracing::enabled!(target: ACCESS_TARGET, Level::DEBUG),
            tracing::enabled!(target: ACCESS_TARGET, Level::INFO),
        ]);
    }
}

/// Whether the subscriber [`init_logs`] installed writes the access lines of a 5xx, a 4xx and
/// any other answer: decided once, since its filter does not change after, rather than asked
/// of the subscriber per request.
static ACCESS_LEVELS: OnceLock<[bool; 3]> = OnceLock::new();

/// The format of the access lines, when `AccessLine::write` writes them rather than
/// tracing-subscriber: set once by [`init_logs`], with the process's one subscriber, and only
/// when that subscriber writes the lines without colour.
static ACCESS_FORMAT: OnceLock<LogFormat> = OnceLock::new();

thread_local! {
    /// When the event being written happened, if not now: set by the access-log thread while it
    /// writes the lines of requests answered earlier.
    static EVENT_TIME: std::cell::Cell<Option<SystemTime>> = const { std::cell::Cell::new(None) };
}

/// The log's timestamps, as tracing-subscriber's default writes them (RFC 3339, microseconds,
/// UTC), of the moment the event happened: an access line is written after its request.
struct EventTime;

impl tracing_subscriber::fmt::time::FormatTime for EventTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        w.write_str(&log_time(EVENT_TIME.get().unwrap_or_else(SystemTime::now)))
    }
}

/// `%Y-%m-%dT%H:%M:%S%.6fZ` without parsing that format for every line: the access-log
/// thread writes one per request (issue 25's profile found the parsing a tenth of its time).
fn log_time(at: SystemTime) -> String {
    let at: chrono::DateTime<chrono::Utc> = at.into();
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The target of the per-request lines.
const ACCESS_TARGET: &str = "botlist::access";
/// How long an access line may wait in memory before it is written.
const ACCESS_FLUSH: Duration = Duration::from_millis(50);
/// Past this many bytes waiting, the line that crosses it writes them all at once.
const ACCESS_BUFFER: usize = 64 * 1024;

/// Standard error, except for the access lines: one per request, they are formatted and written
/// by the access-log thread every [`ACCESS_FLUSH`] (or when [`ACCESS_BUFFER`] bytes wait), so a
/// request pays neither the formatting nor a write system call. Other events (warnings, errors,
/// startup) are written at once.
struct LogWriter;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = tracing_subscriber::fmt::writer::EitherWriter<AccessLines, std::io::Stderr>;

    fn make_writer(&'a self) -> Self::Writer {
        tracing_subscriber::fmt::writer::EitherWriter::B(std::io::stderr())
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        if meta.target() == ACCESS_TARGET && ACCESS_LINES.with_borrow(Option::is_some) {
            tracing_subscriber::fmt::writer::EitherWriter::A(AccessLines)
        } else {
            tracing_subscriber::fmt::writer::EitherWriter::B(std::io::stderr())
        }
    }
}

/// A request's line as the request leaves it: formatted later, on the access-log thread.
struct AccessRecord {
    /// When it was answered: the clock read its latency was measured with, made a wall-clock
    /// time on the access-log thread ([`WallClock`]), so a request reads the clock twice, not
    /// three times.
    at: Instant,
    method: &'static str,
    route: RouteName,
    status: StatusCode,
    latency: Duration,
    id: IdBytes,
    key: Option<&'static str>,
}

/// A route's pattern as a request's line keeps it: the route table's patterns are static, and
/// actix's are shared with the counts of its shard ([`RouteCounts`]). A line holds nothing the
/// request allocated (but a client's over-long id, [`IdBytes`]): what a worker allocates and
/// the access-log thread frees costs both of them the allocator's locks (docs/PERFORMANCE.md,
/// session 10).
#[doc(hidden)]
#[derive(Clone, Debug)]
pub enum RouteName {
    Static(&'static str),
    Shared(std::sync::Arc<str>),
}

impl RouteName {
    fn as_str(&self) -> &str {
        match self {
            Self::Static(route) => route,
            Self::Shared(route) => route,
        }
    }
}

/// A request id's bytes: in place when it is as long as the ids we make or shorter (nearly
/// every id), so a line copies one cache line of id rather than [`MAX_REQUEST_ID`] bytes. A
/// longer one, a client's own, is boxed: the one thing a line may hold that its request
/// allocated.
enum IdBytes {
    Inline { len: u8, bytes: [u8; INLINE_ID] },
    Long(Box<[u8]>),
}

/// The length of the ids [`generated_id`] makes.
const INLINE_ID: usize = 32;

impl AccessRecord {
    /// The line through tracing-subscriber (colours on a terminal, or no `init_logs` in this
    /// process), stamped `at`, when the request was answered.
    fn through_tracing(&self, at: SystemTime) {
        EVENT_TIME.set(Some(at));
        log_line(
            self.method,
            self.route.as_str(),
            self.status,
            self.latency,
            self.id.as_str(),
            self.key,
        );
        EVENT_TIME.set(None);
    }
}

impl IdBytes {
    fn of(id: &HeaderValue) -> Self {
        let given = id.as_bytes();
        let given = &given[..given.len().min(MAX_REQUEST_ID)];
        if given.len() > INLINE_ID {
            return Self::Long(given.into());
        }
        let mut bytes = [0; INLINE_ID];
        bytes[..given.len()].copy_from_slice(given);
        Self::Inline {
            len: given.len() as u8,
            bytes,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Self::Long(bytes) => bytes,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

/// The wall-clock time of a monotonic instant, read from one pair of clock reads: the
/// access-log thread takes one pair per batch of lines.
struct WallClock {
    system: SystemTime,
    instant: Instant,
}

impl WallClock {
    fn now() -> Self {
        Self {
            system: SystemTime::now(),
            instant: Instant::now(),
        }
    }

    fn at(&self, instant: Instant) -> SystemTime {
        match self.instant.checked_duration_since(instant) {
            Some(ago) => self.system.checked_sub(ago).unwrap_or(self.system),
            None => self.system + instant.saturating_duration_since(self.instant),
        }
    }
}

/// Past this many requests waiting in its shard, a request writes its own line: the queue
/// stays bounded even if the log thread falls behind (at most [`SHARDS`] times this many
/// lines of about 220 bytes, 29 MiB; two workers use two shards, 16,384 lines, two and a
/// half times what 130,000 requests a second leave in one [`ACCESS_FLUSH`]).
const ACCESS_QUEUE: usize = 8_192;

/// An application's access log: the requests waiting for their lines, which its access-log
/// thread ([`Threads::start`]) formats and writes every [`ACCESS_FLUSH`], the requests in
/// flight, and the count and latencies of the requests answered, by route, method and status
/// (the `botlist_http_*` families, [`AccessLog::render_requests`]). The layer every request
/// passes (`api::layer`) is handed it; while its thread is not running, a line is written at
/// once.
///
/// All of it lives in shards, one per worker thread as far as the threads' addresses spread
/// them: a queue, a counter or a metric shared by every worker costs each request a cache line
/// taken from the other core (docs/PERFORMANCE.md, sessions 10 and 12). A request takes its
/// shard's lock once, for its counts and its line together.
pub struct AccessLog {
    shards: Box<[Shard]>,
    /// Whether the thread runs: until then, and once it has ended, requests write their own.
    running: std::sync::atomic::AtomicBool,
}

/// Cache-line aligned, so that two workers' shards never share a line.
#[repr(align(128))]
#[derive(Default)]
struct Shard {
    answers: std::sync::Mutex<Answers>,
    in_flight: std::sync::atomic::AtomicI64,
}

/// What a shard holds of the requests answered on its threads.
#[derive(Default)]
struct Answers {
    /// Lines not yet written.
    waiting: Vec<AccessRecord>,
    counts: RouteCounts,
}

/// Shards of an [`AccessLog`]: more than workers on most machines, so that threads seldom share.
const SHARDS: usize = 16;

impl Default for AccessLog {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            running: Default::default(),
        }
    }
}

impl AccessLog {
    /// The calling thread's shard: chosen by the address of a thread-local, which differs
    /// from thread to thread, so no count of threads is kept anywhere.
    fn shard(&self) -> &Shard {
        thread_local! {
            static HERE: u8 = const { 0 };
        }
        let address = HERE.with(|here| std::ptr::from_ref(here) as usize);
        let mixed = (address as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        &self.shards[(mixed >> 60) as usize % SHARDS]
    }

    /// A request came in, on this thread. Counted on the thread's shard, so the workers do
    /// not share a cache line per request.
    pub fn arrived(&self) {
        self.shard().in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// A request counted by [`arrived`](Self::arrived) was answered, or dropped.
    pub fn left(&self) {
        self.shard().in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// Requests that have come in and not yet been answered.
    pub fn in_flight(&self) -> i64 {
        self.shards
            .iter()
            .map(|shard| shard.in_flight.load(Ordering::Relaxed))
            .sum()
    }

    /// A request was answered: counted under its route, method and status, and its line
    /// queued for the access-log thread to format and write with the others of the last
    /// [`ACCESS_FLUSH`] (a line its level leaves out is not queued at all). One lock, of this
    /// thread's shard, for both.
    /// Public for `benches/layer.rs`.
    #[doc(hidden)]
    pub fn answered(&self, answer: AnsweredRequest<'_>) {
        let enabled = access_enabled(answer.status);
        let queue = enabled && self.running.load(Ordering::Acquire);
        let mut answers = self
            .shard()
            .answers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let route = answers.counts.count(&answer);
        if queue && answers.waiting.len() < ACCESS_QUEUE {
            answers.waiting.push(AccessRecord {
                at: answer.at,
                method: answer.method,
                route,
                status: answer.status,
                latency: answer.latency,
                id: IdBytes::of(answer.id),
                key: answer.key,
            });
            return;
        }
        drop(answers);
        if enabled {
            log_line(
                answer.method,
                route.as_str(),
                answer.status,
                answer.latency,
                answer.id.to_str().unwrap_or(""),
                answer.key,
            );
        }
    }
}

/// A request as it is answered: what its line and its counts are made of.
#[doc(hidden)]
pub struct AnsweredRequest<'a> {
    pub method: &'static str,
    pub route: Cow<'static, str>,
    pub status: StatusCode,
    pub latency: Duration,
    /// When it was answered (the clock read the latency ended with).
    pub at: Instant,
    pub id: &'a HeaderValue,
    pub key: Option<&'static str>,
}

/// Whether the subscriber writes the access line of an answer with `status`.
fn access_enabled(status: StatusCode) -> bool {
    use tracing::Level;
    match (status.as_u16(), ACCESS_LEVELS.get()) {
        (500.., Some(levels)) => levels[0],
        (400..=499, Some(levels)) => levels[1],
        (_, Some(levels)) => levels[2],
        (500.., None) => tracing::enabled!(target: ACCESS_TARGET, Level::ERROR),
        (400..=499, None) => tracing::enabled!(target: ACCESS_TARGET, Level::DEBUG),
        (_, None) => tracing::enabled!(target: ACCESS_TARGET, Level::INFO),
    }
}

thread_local! {
    /// The access lines formatted on this thread and not yet written: present only on an
    /// access-log thread, which writes them out every [`ACCESS_FLUSH`].
    static ACCESS_LINES: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

impl AccessLog {
    /// Formats (with the access-log thread's `line`) and writes the lines of the requests
    /// waiting.
    fn write_waiting(&self, records: &mut Vec<AccessRecord>, line: &mut AccessLine) {
        for shard in &self.shards {
            let mut answers = shard.answers.lock().unwrap_or_else(|p| p.into_inner());
            records.append(&mut answers.waiting);
        }
        // Each shard's lines are in order; across shards, by when each request was answered.
        records.sort_by_key(|record| record.at);
        let format = ACCESS_FORMAT.get().copied();
        let clock = WallClock::now();
        for record in records.drain(..) {
            let at = clock.at(record.at);
            match format {
                Some(format) => append_lines(|lines| line.write(format, &record, at, lines)),
                None => record.through_tracing(at),
            }
        }
        write_out();
    }
}

/// Writes access lines as tracing-subscriber's formatter would for [`log_line`]'s event, byte
/// for byte (a test holds them equal), without its machinery: no event, no visitor, no
/// `fmt::Write` per field. The access-log thread's per-line cost was most of what the log line
/// cost a request (docs/PERFORMANCE.md).
/// Public for `benches/layer.rs`.
#[doc(hidden)]
#[derive(Default)]
pub struct AccessLine {
    /// The second last written, and its timestamp up to the seconds: lines come in bursts
    /// within one second.
    second: u64,
    prefix: Vec<u8>,
}

impl AccessLine {
    /// One line, of a request answered now, onto `out`. For `benches/layer.rs`.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn bench(
        &mut self,
        format: LogFormat,
        method: &'static str,
        route: &'static str,
        status: StatusCode,
        latency: Duration,
        id: &HeaderValue,
        out: &mut Vec<u8>,
    ) {
        let record = AccessRecord {
            at: Instant::now(),
            method,
            route: RouteName::Static(route),
            status,
            latency,
            id: IdBytes::of(id),
            key: None,
        };
        self.write(format, &record, SystemTime::now(), out);
    }

    /// `record`'s line, stamped `at`.
    fn write(
        &mut self,
        format: LogFormat,
        record: &AccessRecord,
        at: SystemTime,
        out: &mut Vec<u8>,
    ) {
        let level = match record.status.as_u16() {
            500.. => "ERROR",
            400..=499 => "DEBUG",
            _ => "INFO",
        };
        // The head, then each field as ` name=value` (text) or `,"name":value` (JSON): quoted
        // values are escaped alike in both (Rust's `Debug` and JSON agree on visible ASCII).
        // Each field's name comes with what surrounds it, one copy rather than three.
        const TEXT: [&[u8]; 6] = [
            b" method=",
            b" route=",
            b" status=",
            b" latency_ms=",
            b" request_id=",
            b" rate_key=",
        ];
        const JSON: [&[u8]; 6] = [
            b",\"method\":",
            b",\"route\":",
            b",\"status\":",
            b",\"latency_ms\":",
            b",\"request_id\":",
            b",\"rate_key\":",
        ];
        out.reserve(256);
        let names = match format {
            LogFormat::Text => {
                self.timestamp(at, out);
                out.push(b' ');
                if level.len() < 5 {
                    out.push(b' ');
                }
                out.extend_from_slice(level.as_bytes());
                out.extend_from_slice(b" botlist::access: request");
                &TEXT
            }
            LogFormat::Json => {
                out.extend_from_slice(b"{\"timestamp\":\"");
                self.timestamp(at, out);
                out.extend_from_slice(b"\",\"level\":\"");
                out.extend_from_slice(level.as_bytes());
                out.extend_from_slice(b"\",\"message\":\"request\"");
                &JSON
            }
        };
        let mut numbers = itoa::Buffer::new();
        let fields: [Field<'_>; 6] = [
            Field::Quoted(record.method.as_bytes()),
            Field::Quoted(record.route.as_str().as_bytes()),
            Field::Number(record.status.as_u16()),
            Field::Milliseconds(record.latency),
            Field::Quoted(record.id.as_bytes()),
            Field::Quoted(record.key.unwrap_or("none").as_bytes()),
        ];
        for (name, value) in names.iter().zip(fields) {
            out.extend_from_slice(name);
            match value {
                Field::Quoted(text) => {
                    out.push(b'"');
                    escaped(text, out);
                    out.push(b'"');
                }
                Field::Number(n) => out.extend_from_slice(numbers.format(n).as_bytes()),
                Field::Milliseconds(latency) => milliseconds(latency, out),
            }
        }
        out.extend_from_slice(match format {
            LogFormat::Text => b"\n",
            LogFormat::Json => b",\"target\":\"botlist::access\"}\n",
        });
    }

    /// [`log_time`]'s bytes: the seconds' part made once a second, the microseconds each line.
    fn timestamp(&mut self, at: SystemTime, out: &mut Vec<u8>) {
        let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        if self.prefix.is_empty() || self.second != since.as_secs() {
            let whole = UNIX_EPOCH + Duration::from_secs(since.as_secs());
            let text = log_time(whole);
            // `YYYY-MM-DDTHH:MM:SS.000000Z`: keep what comes before the fraction.
            self.prefix.clear();
            self.prefix
                .extend_from_slice(text.as_bytes().get(..text.len() - 8).unwrap_or_default());
            self.second = since.as_secs();
        }
        out.extend_from_slice(&self.prefix);
        let micros = since.subsec_micros();
        let mut digits = [b'0'; 7];
        digits[0] = b'.';
        let mut rest = micros;
        for digit in digits[1..].iter_mut().rev() {
            *digit = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        out.extend_from_slice(&digits);
        out.push(b'Z');
    }
}

/// A field's value in an access line.
enum Field<'a> {
    Quoted(&'a [u8]),
    Number(u16),
    Milliseconds(Duration),
}

/// A request id or route as the formatters quote it: every byte is visible ASCII (ids are
/// checked, routes are ours), so only `"` and `\` need escaping, the same way in JSON and in
/// Rust's `Debug`.
fn escaped(text: &[u8], out: &mut Vec<u8>) {
    // Routes never hold either, nor do nearly all ids: one copy rather than a push a byte.
    if memchr::memchr2(b'"', b'\\', text).is_none() {
        out.extend_from_slice(text);
        return;
    }
    for &byte in text {
        if byte == b'"' || byte == b'\\' {
            out.push(b'\\');
        }
        out.push(byte);
    }
}

/// The latency in milliseconds to the microsecond, as `f64`'s `Debug` and serde_json print
/// [`log_line`]'s `latency_ms` (both the shortest decimal that reads back the same value).
fn milliseconds(latency: Duration, out: &mut Vec<u8>) {
    let micros = (latency.as_secs_f64() * 1e6).round() as u64;
    let mut numbers = itoa::Buffer::new();
    out.extend_from_slice(numbers.format(micros / 1000).as_bytes());
    out.push(b'.');
    let fraction = micros % 1000;
    if fraction == 0 {
        out.push(b'0');
        return;
    }
    let digits = [
        b'0' + (fraction / 100) as u8,
        b'0' + (fraction / 10 % 10) as u8,
        b'0' + (fraction % 10) as u8,
    ];
    let keep = if digits[2] != b'0' {
        3
    } else if digits[1] != b'0' {
        2
    } else {
        1
    };
    out.extend_from_slice(&digits[..keep]);
}

/// Writes this thread's formatted access lines to standard error.
fn write_out() {
    let lines = ACCESS_LINES.with_borrow_mut(|lines| lines.as_mut().map(std::mem::take));
    if let Some(lines) = lines.filter(|lines| !lines.is_empty()) {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), &lines);
    }
}

/// Adds to this access-log thread's lines waiting to be written, and writes them all once
/// [`ACCESS_BUFFER`] bytes wait. Nothing on any other thread.
fn append_lines(add: impl FnOnce(&mut Vec<u8>)) {
    let full = ACCESS_LINES.with_borrow_mut(|lines| match lines {
        Some(lines) => {
            add(lines);
            lines.len() >= ACCESS_BUFFER
        }
        None => false,
    });
    if full {
        write_out();
    }
}

/// Writes into the access-log thread's lines (one formatted line per `write_all`).
pub struct AccessLines;

impl std::io::Write for AccessLines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        append_lines(|lines| lines.extend_from_slice(bytes));
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The threads of an application's telemetry: its access-log writer and the metrics upkeep.
/// Each holds the application's [`Shutdown`] and ends when the application stops (after
/// writing the lines still waiting), so `Trigger::stopped` waits for them, and none outlives
/// the application that started it.
pub struct Threads(Vec<std::thread::JoinHandle<()>>);

impl Threads {
    /// Starts the threads, named after the application's port (`access-PORT`,
    /// `metrics-PORT`): two applications in one process have two of each.
    pub fn start(log: &std::sync::Arc<AccessLog>, port: u16, shutdown: &Shutdown) -> Self {
        let mut threads = Vec::new();
        // Each thread says when it runs (named, as the application's threads are then listed).
        let (running, ran) = std::sync::mpsc::channel::<()>();
        let (access, stop, up) = (
            std::sync::Arc::clone(log),
            shutdown.clone(),
            running.clone(),
        );
        let started = std::thread::Builder::new()
            .name(format!("access-{port}"))
            .spawn(move || {
                let _ = up.send(());
                ACCESS_LINES.set(Some(Vec::new()));
                let mut records = Vec::new();
                let mut line = AccessLine::default();
                loop {
                    let stopping = stop.is_requested();
                    if !stopping {
                        std::thread::sleep(ACCESS_FLUSH);
                    }
                    access.write_waiting(&mut records, &mut line);
                    if stopping {
                        // Later requests (none, once the server has stopped) write their own.
                        access.running.store(false, Ordering::Release);
                        access.write_waiting(&mut records, &mut line);
                        return;
                    }
                }
            });
        if let Ok(thread) = started {
            log.running.store(true, Ordering::Release);
            threads.push(thread);
        }
        if let Some(exporter) = exporter() {
            // Histograms keep raw samples until drained; a scrape drains them too, but a
            // server nobody scrapes must not grow.
            let (upkeep, stop, up) = (exporter.handle.clone(), shutdown.clone(), running.clone());
            let started = std::thread::Builder::new()
                .name(format!("metrics-{port}"))
                .spawn(move || {
                    let _ = up.send(());
                    let mut since = Instant::now();
                    while !stop.is_requested() {
                        std::thread::sleep(STOP_POLL);
                        if since.elapsed() >= UPKEEP {
                            upkeep.run_upkeep();
                            since = Instant::now();
                        }
                    }
                });
            threads.extend(started.ok());
        }
        drop(running);
        for _ in &threads {
            let _ = ran.recv();
        }
        Self(threads)
    }

    /// Waits until the threads have ended; call once the application's `Trigger::stopped`
    /// has resolved (they end within [`ACCESS_FLUSH`] of the stop), so that none is left
    /// behind, even for a moment, when the application's `run_until` returns.
    pub fn join(self) {
        for thread in self.0 {
            let _ = thread.join();
        }
    }
}

/// How often the metrics upkeep runs.
const UPKEEP: Duration = Duration::from_secs(5);
/// How soon the metrics upkeep thread notices a stop.
const STOP_POLL: Duration = Duration::from_millis(50);

/// Seconds, for request and search latency.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];
/// Seconds, for snapshots of large directories.
const SNAPSHOT_BUCKETS: [f64; 10] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0];

struct Exporter {
    handle: PrometheusHandle,
    process: metrics_process::Collector,
}

static EXPORTER: OnceLock<Option<Exporter>> = OnceLock::new();

/// Installs the process-wide recorder once (later calls, as from a second app in one test
/// process, share it). `None` if another recorder was installed first. The `metrics` facade
/// has one recorder per process; the thread that keeps it is each application's
/// ([`Threads::start`]).
fn exporter() -> Option<&'static Exporter> {
    EXPORTER
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets(&LATENCY_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("botlist_snapshot_duration_seconds".into()),
                        &SNAPSHOT_BUCKETS,
                    )
                })
                .ok()?;
            let handle = builder.install_recorder().ok()?;
            let process = metrics_process::Collector::default();
            process.describe();
            describe_all();
            register_all();
            gauge!("botlist_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
            Some(Exporter { handle, process })
        })
        .as_ref()
}

/// Installs the recorder; call before serving so every family exists from the start.
pub fn install_metrics() {
    let _ = exporter();
}

fn describe_all() {
    use metrics::Unit;
    describe_gauge!(
        "botlist_http_requests_in_flight",
        "Requests being answered now."
    );
    describe_counter!(
        "botlist_votes_total",
        "Votes recorded (outcome=accepted) and refused because the user voted in the last 12 hours (outcome=refused_cooldown)."
    );
    describe_counter!("botlist_stats_posts_total", "Server-count posts stored.");
    describe_counter!(
        "botlist_rate_limit_refusals_total",
        "Requests refused with 429, by key kind."
    );
    describe_gauge!(
        "botlist_rate_limit_keys",
        "Rate-limit keys the limiter holds."
    );
    describe_histogram!(
        "botlist_journal_fsync_duration_seconds",
        Unit::Seconds,
        "Time of one journal fsync."
    );
    describe_counter!(
        "botlist_journal_written_bytes_total",
        Unit::Bytes,
        "Bytes of records appended to the journal."
    );
    describe_counter!(
        "botlist_journal_fsync_failures_total",
        "Journal fsyncs that failed (writes are refused after the first)."
    );
    describe_histogram!(
        "botlist_snapshot_duration_seconds",
        Unit::Seconds,
        "Time to capture and write a snapshot."
    );
    describe_gauge!(
        "botlist_snapshot_size_bytes",
        Unit::Bytes,
        "Size of the last snapshot written."
    );
    describe_gauge!(
        "botlist_snapshot_last_success_timestamp_seconds",
        Unit::Seconds,
        "Unix time the last snapshot was written."
    );
    describe_counter!(
        "botlist_webhook_deliveries_total",
        "Webhook deliveries finished, by outcome (delivered, failed)."
    );
    describe_counter!(
        "botlist_webhook_retries_total",
        "Webhook attempts that failed and were scheduled again."
    );
    describe_gauge!(
        "botlist_webhook_queue_depth",
        "Webhook attempts scheduled and not yet started."
    );
    describe_histogram!(
        "botlist_search_duration_seconds",
        Unit::Seconds,
        "Time to answer GET /bots (search and list)."
    );
    describe_gauge!("botlist_bots_listed", "Bots currently listed.");
    describe_gauge!("botlist_profiles_listed", "User profiles currently held.");
    describe_gauge!(
        "botlist_build_info",
        "Always 1; the labels say which build is running."
    );
}

/// Every family shows from the first scrape, at zero, so dashboards and alerts never see a gap.
fn register_all() {
    for outcome in ["accepted", "refused_cooldown"] {
        counter!("botlist_votes_total", "outcome" => outcome).absolute(0);
    }
    for kind in ["bot", "bots_ip", "users_ip"] {
        counter!("botlist_rate_limit_refusals_total", "kind" => kind).absolute(0);
    }
    for outcome in ["delivered", "failed"] {
        counter!("botlist_webhook_deliveries_total", "outcome" => outcome).absolute(0);
    }
    for name in [
        "botlist_stats_posts_total",
        "botlist_journal_written_bytes_total",
        "botlist_journal_fsync_failures_total",
        "botlist_webhook_retries_total",
    ] {
        counter!(name).absolute(0);
    }
    for name in [
        "botlist_journal_fsync_duration_seconds",
        "botlist_snapshot_duration_seconds",
        "botlist_search_duration_seconds",
    ] {
        let _ = histogram!(name);
    }
    for name in [
        "botlist_http_requests_in_flight",
        "botlist_snapshot_size_bytes",
        "botlist_snapshot_last_success_timestamp_seconds",
        "botlist_webhook_queue_depth",
        "botlist_profiles_listed",
    ] {
        let _ = gauge!(name);
    }
}

/// The Prometheus text exposition, with gauges read at scrape time brought up to date, and
/// the application's own request families from its access log.
pub fn render(bots_listed: usize, limiter_keys: Option<usize>, log: &AccessLog) -> String {
    let requests = log.render_requests();
    let Some(exporter) = exporter() else {
        return requests;
    };
    gauge!("botlist_http_requests_in_flight").set(log.in_flight() as f64);
    gauge!("botlist_bots_listed").set(bots_listed as f64);
    gauge!("botlist_rate_limit_keys").set(limiter_keys.unwrap_or(0) as f64);
    exporter.process.collect();
    let mut text = exporter.handle.render();
    text.push_str(&requests);
    text
}

fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

// ---- instrumentation points: one call each ----

/// The counters every write bumps, looked up in the recorder's registry once per thread rather
/// than once per write (a lookup hashes the name and labels and takes the registry's lock).
/// Every thread that writes starts after the recorder is installed (`install_metrics`).
struct WriteCounters {
    votes_accepted: metrics::Counter,
    votes_refused: metrics::Counter,
    stats_posts: metrics::Counter,
    journal_bytes: metrics::Counter,
}

thread_local! {
    static WRITE_COUNTERS: WriteCounters = WriteCounters {
        votes_accepted: counter!("botlist_votes_total", "outcome" => "accepted"),
        votes_refused: counter!("botlist_votes_total", "outcome" => "refused_cooldown"),
        stats_posts: counter!("botlist_stats_posts_total"),
        journal_bytes: counter!("botlist_journal_written_bytes_total"),
    };
}

/// A vote's outcome, counted; the result passes through.
pub fn count_vote<T>(result: Result<T, Rejection>) -> Result<T, Rejection> {
    WRITE_COUNTERS.with(|counters| match &result {
        Ok(_) => counters.votes_accepted.increment(1),
        Err(Rejection::AlreadyVoted { .. }) => counters.votes_refused.increment(1),
        Err(_) => {}
    });
    result
}

pub fn stats_posted() {
    WRITE_COUNTERS.with(|counters| counters.stats_posts.increment(1));
}

/// Which bucket kind a request drew from, kept for its log line; refusals counted.
pub fn rate_key(request: &ServiceRequest, kind: &'static str, allowed: bool) {
    request.extensions_mut().insert(RateKeyKind(kind));
    if !allowed {
        counter!("botlist_rate_limit_refusals_total", "kind" => kind).increment(1);
    }
}

/// Runs one journal fsync, timing it and counting a failure.
pub fn timed_fsync<T, E>(fsync: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    let started = Instant::now();
    let result = fsync();
    histogram!("botlist_journal_fsync_duration_seconds").record(started.elapsed().as_secs_f64());
    if result.is_err() {
        counter!("botlist_journal_fsync_failures_total").increment(1);
    }
    result
}

pub fn journal_written(bytes: usize) {
    WRITE_COUNTERS.with(|counters| counters.journal_bytes.increment(bytes as u64));
}

pub fn snapshot_written(started: Instant, bytes: u64) {
    histogram!("botlist_snapshot_duration_seconds").record(started.elapsed().as_secs_f64());
    gauge!("botlist_snapshot_size_bytes").set(bytes as f64);
    gauge!("botlist_snapshot_last_success_timestamp_seconds").set(unix_seconds(SystemTime::now()));
}

pub fn profiles_listed(count: usize) {
    gauge!("botlist_profiles_listed").set(count as f64);
}

pub fn webhook_queue(depth: usize) {
    gauge!("botlist_webhook_queue_depth").set(depth as f64);
}

/// Logs and counts what an attempt's outcome made of a delivery: delivered, retrying or
/// failed. Never the URL or the secret: the delivery id finds the rest in the admin API.
pub fn webhook_outcome(bot: impl std::fmt::Display, delivery: &Delivery) {
    let id = delivery.id;
    let attempts = delivery.attempts;
    let event = delivery.event().name();
    match delivery.state {
        DeliveryState::Delivered => {
            counter!("botlist_webhook_deliveries_total", "outcome" => "delivered").increment(1);
            tracing::info!(delivery = %id, %bot, event, attempts, status = delivery.last_status, "webhook delivered");
        }
        DeliveryState::Retrying => {
            counter!("botlist_webhook_retries_total").increment(1);
            let next = delivery.next_attempt_at.map(|t| t.to_string());
            tracing::warn!(delivery = %id, %bot, event, attempts, status = delivery.last_status,
                error = delivery.last_error.as_deref().unwrap_or(""), next_attempt_at = next.as_deref().unwrap_or(""),
                "webhook attempt failed; retrying");
        }
        DeliveryState::Failed => {
            counter!("botlist_webhook_deliveries_total", "outcome" => "failed").increment(1);
            tracing::warn!(delivery = %id, %bot, event, attempts, status = delivery.last_status,
                error = delivery.last_error.as_deref().unwrap_or(""), "webhook delivery failed; giving up");
        }
        DeliveryState::Pending => {}
    }
}

// ---- the request middleware ----

/// The pattern of the route a request was matched to, when the API's own table of routes with
/// parameters matched it (`api::routes::ParamTable`); actix's router keeps its own.
#[derive(Clone, Copy, Debug)]
pub struct RoutePattern(pub &'static str);

/// The pattern of the route that answered `request`, as declared (base path included).
pub fn route_pattern(request: &HttpRequest) -> Option<Cow<'static, str>> {
    if let Some(pattern) = request.extensions().get::<RoutePattern>() {
        return Some(Cow::Borrowed(pattern.0));
    }
    request.match_pattern().map(Cow::Owned)
}

/// The rate-limit key kind a request was counted under, in its extensions.
#[derive(Clone, Copy, Debug)]
pub struct RateKeyKind(pub &'static str);

/// The client's id when it is short visible ASCII, else a fresh one. Public for
/// `benches/layer.rs`, which states its cost per request.
#[doc(hidden)]
pub fn request_id(headers: &HeaderMap) -> HeaderValue {
    headers
        .get(&REQUEST_ID)
        .filter(|v| {
            let bytes = v.as_bytes();
            !bytes.is_empty()
                && bytes.len() <= MAX_REQUEST_ID
                && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
        })
        .cloned()
        .unwrap_or_else(generated_id)
}

/// 32 hex digits: a random half drawn once per process, then the thread's number and a count
/// of the thread's own. Unique without a system call per request, and without a counter the
/// workers share (whose cache line would move between them on every request); ids need not be
/// secret, only distinct. Each thread writes the first 20 digits once and then only its count.
fn generated_id() -> HeaderValue {
    static PROCESS: OnceLock<u64> = OnceLock::new();
    static THREADS: AtomicU64 = AtomicU64::new(0);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    fn hex_into(digits: &mut [u8], mut word: u64) {
        for digit in digits.iter_mut().rev() {
            *digit = HEX[(word & 0xf) as usize];
            word >>= 4;
        }
    }
    thread_local! {
        /// This thread's next id, and its count so far.
        static NEXT: std::cell::RefCell<([u8; 32], u64)> = std::cell::RefCell::new({
            let process = *PROCESS.get_or_init(|| {
                let mut seed = [0u8; 8];
                if getrandom::fill(&mut seed).is_err() {
                    let nanos = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos());
                    seed = (nanos as u64 ^ u64::from(std::process::id())).to_le_bytes();
                }
                u64::from_le_bytes(seed)
            });
            let mut id = [b'0'; 32];
            hex_into(&mut id[..16], process);
            hex_into(&mut id[16..20], THREADS.fetch_add(1, Ordering::Relaxed));
            (id, 0)
        });
    }
    NEXT.with_borrow_mut(|(id, count)| {
        hex_into(&mut id[20..], *count);
        *count = (*count + 1) & ((1 << 48) - 1);
        HeaderValue::from_bytes(id.as_slice()).unwrap_or(HeaderValue::from_static("unknown"))
    })
}

fn known_method(method: &Method) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE",
    ];
    KNOWN
        .into_iter()
        .find(|known| *known == method.as_str())
        .unwrap_or("other")
}

/// A request seen as it arrives: what its log line and metrics need once it is answered
/// (`api::layer`, the one middleware, holds it). The line holds no header, path or query as
/// sent: only the route pattern.
pub struct Observation {
    started: Instant,
    id: HeaderValue,
    method: &'static str,
}

impl Observation {
    /// Gives the request its id (the client's, when it is a usable one).
    pub fn begin(request: &ServiceRequest) -> Self {
        Self {
            started: Instant::now(),
            id: request_id(request.headers()),
            method: known_method(request.method()),
        }
    }

    /// The request's id, as its answer and its log line carry it.
    pub fn id(&self) -> &str {
        self.id.to_str().unwrap_or_default()
    }

    /// Writes the request's one log line and its metrics, and gives its answer the id.
    pub fn end<B>(
        self,
        log: &AccessLog,
        result: Result<ServiceResponse<B>, actix_web::Error>,
    ) -> Result<ServiceResponse<B>, actix_web::Error> {
        let (status, route, key) = match &result {
            Ok(response) => {
                let request = response.request();
                (
                    response.status(),
                    route_pattern(request),
                    request.extensions().get::<RateKeyKind>().map(|k| k.0),
                )
            }
            Err(error) => (error.as_response_error().status_code(), None, None),
        };
        let at = Instant::now();
        log.answered(AnsweredRequest {
            method: self.method,
            route: route.unwrap_or(Cow::Borrowed("unmatched")),
            status,
            latency: at.saturating_duration_since(self.started),
            at,
            id: &self.id,
            key,
        });
        let id = self.id;
        match result {
            Ok(mut response) => {
                response.headers_mut().insert(REQUEST_ID.clone(), id);
                Ok(response)
            }
            // An error still unrendered (from a layer inside) gets the id when it is.
            Err(mut error) => {
                error.add_response_mapper(move |mut response| {
                    response
                        .headers_mut()
                        .insert(REQUEST_ID.clone(), id.clone());
                    response
                });
                Err(error)
            }
        }
    }
}

/// A shard's counts of the requests answered: where each route's entry is (found with one
/// hash of the route a request matched), then the entries. Bounded like the labels: routes are
/// patterns, methods the known nine or `other`.
#[derive(Default)]
struct RouteCounts {
    at: rustc_hash::FxHashMap<Box<str>, usize>,
    routes: Vec<RouteEntry>,
}

/// One route's counts, by method and status.
struct RouteEntry {
    /// The route's name, shared with the log lines.
    name: std::sync::Arc<str>,
    /// `GET .../bots` is also timed as a search (`botlist_search_duration_seconds`).
    search: Option<metrics::Histogram>,
    by: Vec<(&'static str, StatusCode, Latencies)>,
}

/// A histogram of latencies in [`LATENCY_BUCKETS`], as Prometheus reads one: how many, their
/// sum, and how many fell in each bucket (not yet cumulative).
#[derive(Clone, Default)]
struct Latencies {
    count: u64,
    sum: f64,
    buckets: [u64; LATENCY_BUCKETS.len()],
}

impl Latencies {
    fn record(&mut self, seconds: f64) {
        self.count += 1;
        self.sum += seconds;
        if let Some(bucket) = LATENCY_BUCKETS.iter().position(|bound| seconds <= *bound) {
            self.buckets[bucket] += 1;
        }
    }

    fn add(&mut self, other: &Self) {
        self.count += other.count;
        self.sum += other.sum;
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets) {
            *mine += theirs;
        }
    }
}

impl RouteCounts {
    /// Counts `answer`, and gives the route's name for its line.
    fn count(&mut self, answer: &AnsweredRequest<'_>) -> RouteName {
        let seconds = answer.latency.as_secs_f64();
        let route = &answer.route;
        let at = match self.at.get(&**route) {
            Some(&at) => at,
            None => {
                self.routes.push(RouteEntry {
                    name: route.as_ref().into(),
                    search: route
                        .ends_with("/bots")
                        .then(|| histogram!("botlist_search_duration_seconds")),
                    by: Vec::new(),
                });
                self.at.insert(route.as_ref().into(), self.routes.len() - 1);
                self.routes.len() - 1
            }
        };
        let entry = &mut self.routes[at];
        let found = entry
            .by
            .iter()
            .position(|(method, status, _)| *method == answer.method && *status == answer.status);
        let at = found.unwrap_or_else(|| {
            entry
                .by
                .push((answer.method, answer.status, Latencies::default()));
            entry.by.len() - 1
        });
        entry.by[at].2.record(seconds);
        if let (Some(search), "GET") = (&entry.search, answer.method) {
            search.record(seconds);
        }
        match route {
            Cow::Borrowed(route) => RouteName::Static(route),
            Cow::Owned(_) => RouteName::Shared(std::sync::Arc::clone(&entry.name)),
        }
    }
}

impl AccessLog {
    /// `botlist_http_requests_total` and `botlist_http_request_duration_seconds` in the
    /// Prometheus text exposition: the application's requests answered, by route, method and
    /// status, summed over the shards.
    pub fn render_requests(&self) -> String {
        use std::collections::BTreeMap;
        use std::fmt::Write;
        let mut all: BTreeMap<(std::sync::Arc<str>, &'static str, u16), Latencies> =
            BTreeMap::new();
        for shard in &self.shards {
            let answers = shard.answers.lock().unwrap_or_else(|p| p.into_inner());
            for entry in &answers.counts.routes {
                for (method, status, latencies) in &entry.by {
                    all.entry((std::sync::Arc::clone(&entry.name), method, status.as_u16()))
                        .or_default()
                        .add(latencies);
                }
            }
        }
        // The two families side by side, each sample's labels written once for both.
        let mut counts = format!("# HELP {REQUESTS} {REQUESTS_HELP}\n# TYPE {REQUESTS} counter\n");
        let mut durations =
            format!("# HELP {DURATION} {DURATION_HELP}\n# TYPE {DURATION} histogram\n");
        for ((route, method, status), latencies) in &all {
            let labels = format!(
                "route=\"{}\",method=\"{method}\",status=\"{status}\"",
                label_value(route)
            );
            let count = latencies.count;
            let _ = writeln!(counts, "{REQUESTS}{{{labels}}} {count}");
            let mut cumulative = 0;
            for (bound, in_bucket) in LATENCY_BUCKETS.iter().zip(latencies.buckets) {
                cumulative += in_bucket;
                let _ = writeln!(
                    durations,
                    "{DURATION}_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                durations,
                "{DURATION}_bucket{{{labels},le=\"+Inf\"}} {count}\n{DURATION}_sum{{{labels}}} {sum}\n{DURATION}_count{{{labels}}} {count}",
                sum = latencies.sum,
            );
        }
        counts + &durations
    }
}

const REQUESTS: &str = "botlist_http_requests_total";
const REQUESTS_HELP: &str = "HTTP requests answered, by route pattern, method and status.";
const DURATION: &str = "botlist_http_request_duration_seconds";
const DURATION_HELP: &str = "Time to answer a request, by route pattern, method and status.";

/// A label value as the text exposition escapes it.
fn label_value(value: &str) -> Cow<'_, str> {
    if !value.contains(['\\', '"', '\n']) {
        return Cow::Borrowed(value);
    }
    Cow::Owned(
        value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n"),
    )
}

/// INFO for answers, DEBUG for a client's mistakes (4xx), ERROR for ours (5xx); the target
/// `botlist::access` lets an operator raise or lower them alone.
/// Public for `benches/layer.rs`: what the access-log thread does per line.
#[doc(hidden)]
pub fn log_line(
    method: &str,
    route: &str,
    status: StatusCode,
    latency: Duration,
    id: &str,
    key: Option<&'static str>,
) {
    let status = status.as_u16();
    // Microsecond precision, without float noise in the printed value.
    let latency_ms = (latency.as_secs_f64() * 1e6).round() / 1e3;
    let key = key.unwrap_or("none");
    macro_rules! line {
        ($level:ident) => {
            tracing::$level!(target: ACCESS_TARGET, method, route, status, latency_ms, request_id = id, rate_key = key, "request")
        };
    }
    match status {
        500.. => line!(error),
        400..=499 => line!(debug),
        _ => line!(info),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_id_is_the_process_half_then_the_thread_and_its_count_in_hex() {
        let first = generated_id();
        let second = generated_id();
        let (first, second) = (
            first.to_str().expect("ascii"),
            second.to_str().expect("ascii"),
        );
        assert_eq!(first.len(), 32);
        assert!(first
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(first[..16], second[..16]);
        let count = |id: &str| u64::from_str_radix(&id[16..], 16).expect("hex");
        assert_eq!(count(second), count(first) + 1);
        // Another thread counts on its own, under another number: no id is made twice.
        let elsewhere = std::thread::spawn(|| generated_id().to_str().map(str::to_owned))
            .join()
            .expect("joined")
            .expect("ascii");
        assert_eq!(elsewhere[..16], first[..16]);
        assert_ne!(count(&elsewhere) >> 48, count(first) >> 48);
    }

    /// What tracing-subscriber writes for [`log_line`]'s event, configured as [`init_logs`]
    /// configures it (without colour), at `at`.
    fn through_tracing(format: LogFormat, record: &AccessRecord, at: SystemTime) -> Vec<u8> {
        #[derive(Clone, Default)]
        struct Buffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("unpoisoned").extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let builder = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_timer(EventTime)
            .with_writer(move || writer.clone());
        let emit = || record.through_tracing(at);
        match format {
            LogFormat::Text => {
                tracing::subscriber::with_default(builder.with_ansi(false).finish(), emit);
            }
            LogFormat::Json => tracing::subscriber::with_default(
                builder
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .finish(),
                emit,
            ),
        }
        let written = buffer.0.lock().expect("unpoisoned").clone();
        written
    }

    #[test]
    fn access_lines_are_the_bytes_tracing_subscriber_writes() {
        let statuses = [200_u16, 201, 204, 304, 400, 404, 429, 500, 503];
        let latencies = [
            0_u64,
            1,
            499,
            500,
            999,
            1_000,
            1_499,
            10_000,
            120_000,
            999_999,
            1_000_000,
            1_234_567,
            61_000_000_000,
            3_600_000_000_000,
        ];
        let ids = [
            "86f856a630299e780000000000000002",
            "a\"quoted\\id",
            "x",
            "an-id-longer-than-the-ids-we-make-0123456789",
        ];
        let mut line = AccessLine::default();
        let mut n = 0_u64;
        for format in [LogFormat::Text, LogFormat::Json] {
            for status in statuses {
                for nanos in latencies {
                    for id in ids {
                        n += 1;
                        let at =
                            UNIX_EPOCH + Duration::from_micros(1_790_000_000_000_000 + n * 333_331);
                        let record = AccessRecord {
                            at: Instant::now(),
                            method: ["GET", "POST", "other"][(n % 3) as usize],
                            route: RouteName::Static(
                                ["/api/v1/bots/{id}", "unmatched"][(n % 2) as usize],
                            ),
                            status: StatusCode::from_u16(status).expect("a status"),
                            latency: Duration::from_nanos(nanos),
                            id: IdBytes::of(&HeaderValue::from_str(id).expect("visible ascii")),
                            key: [None, Some("bot"), Some("ip")][(n % 3) as usize],
                        };
                        let mut ours = Vec::new();
                        line.write(format, &record, at, &mut ours);
                        let theirs = through_tracing(format, &record, at);
                        assert!(!theirs.is_empty());
                        assert_eq!(
                            String::from_utf8_lossy(&ours),
                            String::from_utf8_lossy(&theirs)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn request_families_are_summed_over_shards_with_cumulative_buckets() {
        let log = AccessLog::default();
        let id = HeaderValue::from_static("an-id");
        let answer = |route: &'static str, status: u16, micros: u64| AnsweredRequest {
            method: "GET",
            route: Cow::Borrowed(route),
            status: StatusCode::from_u16(status).expect("a status"),
            latency: Duration::from_micros(micros),
            at: Instant::now(),
            id: &id,
            key: None,
        };
        log.answered(answer("/a", 200, 50));
        // Another thread counts in its own shard (or the same one); the sums are the same.
        std::thread::scope(|scope| {
            scope.spawn(|| log.answered(answer("/a", 200, 300)));
        });
        log.answered(answer("/a", 200, 9_000_000));
        log.answered(answer("/weird\"\\", 404, 1));
        let text = log.render_requests();
        let bucket = |le: &str| {
            format!(
            "botlist_http_request_duration_seconds_bucket{{route=\"/a\",method=\"GET\",status=\"200\",le=\"{le}\"}} "
        )
        };
        for (le, count) in [
            ("0.0001", 1),
            ("0.00025", 1),
            ("0.0005", 2),
            ("5", 2),
            ("+Inf", 3),
        ] {
            assert!(
                text.contains(&format!("{}{count}\n", bucket(le))),
                "{le} in {text}"
            );
        }
        assert!(text.contains(
            "botlist_http_requests_total{route=\"/a\",method=\"GET\",status=\"200\"} 3\n"
        ));
        assert!(text.contains(
            "botlist_http_request_duration_seconds_sum{route=\"/a\",method=\"GET\",status=\"200\"} 9.00035"
        ));
        assert!(text.contains(
            "botlist_http_requests_total{route=\"/weird\\\"\\\\\",method=\"GET\",status=\"404\"} 1\n"
        ), "{text}");
        assert_eq!(text.matches("# TYPE ").count(), 2);
    }

    #[test]
    fn a_monotonic_instant_becomes_the_wall_clock_time_it_was() {
        let clock = WallClock::now();
        let earlier = clock.instant - Duration::from_millis(20);
        assert_eq!(clock.at(earlier), clock.system - Duration::from_millis(20));
        let later = clock.instant + Duration::from_millis(5);
        assert_eq!(clock.at(later), clock.system + Duration::from_millis(5));
    }

    #[test]
    fn the_log_time_is_the_format_it_replaced() {
        for millis in [0_u64, 1, 999, 1_790_000_000_123, 4_102_444_799_999] {
            for micros in [0_u64, 7, 456] {
                let at = UNIX_EPOCH + Duration::from_micros(millis * 1000 + micros);
                let old: chrono::DateTime<chrono::Utc> = at.into();
                assert_eq!(
                    log_time(at),
                    old.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
                );
            }
        }
    }
}
