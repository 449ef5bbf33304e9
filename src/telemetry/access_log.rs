//! An application's access log: the requests answered, queued by shard for the access-log
//! thread to write their lines, and counted by route, method and status.
//!
//! The counts live here beside the queue, and only their exposition in `request_families`:
//! a request counts and queues under one lock, and what every request calls stays in one
//! module, which the compiler builds as one unit and inlines within (a call into another
//! module may cross codegen units).

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use actix_web::http::header::HeaderValue;
use actix_web::http::StatusCode;
use metrics::histogram;

use super::access_line::AccessLine;
use super::exporter::LATENCY_BUCKETS;
use super::logging::{log_line, ACCESS_FORMAT, ACCESS_LEVELS, ACCESS_TARGET, EVENT_TIME};
use super::request::MAX_REQUEST_ID;

/// How long an access line may wait in memory before it is written.
pub(super) const ACCESS_FLUSH: Duration = Duration::from_millis(50);
/// Past this many bytes waiting, the line that crosses it writes them all at once.
const ACCESS_BUFFER: usize = 64 * 1024;

/// A request's line as the request leaves it: formatted later, on the access-log thread.
pub(super) struct AccessRecord {
    /// When it was answered: the clock read its latency was measured with, made a wall-clock
    /// time on the access-log thread ([`WallClock`]), so a request reads the clock twice, not
    /// three times.
    pub(super) at: Instant,
    pub(super) method: &'static str,
    pub(super) route: RouteName,
    pub(super) status: StatusCode,
    pub(super) latency: Duration,
    pub(super) id: IdBytes,
    pub(super) key: Option<&'static str>,
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
    pub(super) fn as_str(&self) -> &str {
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
pub(super) enum IdBytes {
    Inline { len: u8, bytes: [u8; INLINE_ID] },
    Long(Box<[u8]>),
}

/// The length of the ids [`generated_id`](super::request::generated_id) makes.
const INLINE_ID: usize = 32;

impl AccessRecord {
    /// The line through tracing-subscriber (colours on a terminal, or no `init_logs` in this
    /// process), stamped `at`, when the request was answered.
    pub(super) fn through_tracing(&self, at: SystemTime) {
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
    pub(super) fn of(id: &HeaderValue) -> Self {
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

    pub(super) fn as_bytes(&self) -> &[u8] {
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
/// thread ([`Threads::start`](super::Threads::start)) formats and writes every [`ACCESS_FLUSH`], the requests in
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
    pub(super) shards: Box<[Shard]>,
    /// The API surfaces' base paths, for the `surface` label (set once the router's paths are
    /// known; see [`super::Surface`]).
    pub(super) surfaces: std::sync::OnceLock<Vec<(String, super::Surface)>>,
    /// Whether the thread runs: until then, and once it has ended, requests write their own.
    pub(super) running: std::sync::atomic::AtomicBool,
}

/// Cache-line aligned, so that two workers' shards never share a line.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Shard {
    pub(super) answers: std::sync::Mutex<Answers>,
    in_flight: std::sync::atomic::AtomicI64,
}

/// What a shard holds of the requests answered on its threads.
#[derive(Default)]
pub(super) struct Answers {
    /// Lines not yet written.
    waiting: Vec<AccessRecord>,
    pub(super) counts: RouteCounts,
}

/// Shards of an [`AccessLog`]: more than workers on most machines, so that threads seldom share.
const SHARDS: usize = 16;

impl Default for AccessLog {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            surfaces: std::sync::OnceLock::new(),
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
    pub(super) static ACCESS_LINES: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

impl AccessLog {
    /// Formats (with the access-log thread's `line`) and writes the lines of the requests
    /// waiting.
    pub(super) fn write_waiting(&self, records: &mut Vec<AccessRecord>, line: &mut AccessLine) {
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

/// A shard's counts of the requests answered: where each route's entry is (found with one
/// hash of the route a request matched), then the entries. Bounded like the labels: routes are
/// patterns, methods the known nine or `other`.
#[derive(Default)]
pub(super) struct RouteCounts {
    at: rustc_hash::FxHashMap<Box<str>, usize>,
    pub(super) routes: Vec<RouteEntry>,
}

/// One route's counts, by method and status.
pub(super) struct RouteEntry {
    /// The route's name, shared with the log lines.
    pub(super) name: std::sync::Arc<str>,
    /// `GET .../bots` is also timed as a search (`botlist_search_duration_seconds`).
    search: Option<metrics::Histogram>,
    pub(super) by: Vec<(&'static str, StatusCode, Latencies)>,
}

/// A histogram of latencies in [`LATENCY_BUCKETS`], as Prometheus reads one: how many, their
/// sum, and how many fell in each bucket (not yet cumulative).
#[derive(Clone, Default)]
pub(super) struct Latencies {
    pub(super) count: u64,
    pub(super) sum: f64,
    pub(super) buckets: [u64; LATENCY_BUCKETS.len()],
}

impl Latencies {
    fn record(&mut self, seconds: f64) {
        self.count += 1;
        self.sum += seconds;
        if let Some(bucket) = LATENCY_BUCKETS.iter().position(|bound| seconds <= *bound) {
            self.buckets[bucket] += 1;
        }
    }

    pub(super) fn add(&mut self, other: &Self) {
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
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_monotonic_instant_becomes_the_wall_clock_time_it_was() {
        let clock = WallClock::now();
        let earlier = clock.instant - Duration::from_millis(20);
        assert_eq!(clock.at(earlier), clock.system - Duration::from_millis(20));
        let later = clock.instant + Duration::from_millis(5);
        assert_eq!(clock.at(later), clock.system + Duration::from_millis(5));
    }
}
