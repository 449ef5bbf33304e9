//! What the per-request layer costs, piece by piece, on the calling thread: the request id, the
//! metrics and the log line (what the request pays to count itself and queue its line, and
//! what the access-log thread pays to write it) and the rate limit (the token's bot, the bucket, the three headers).
//! docs/PERFORMANCE.md ("CPU per request, and what the layer costs") states them per request.
//!
//!   cargo bench --bench layer 2>/dev/null
//!
//! (The log lines themselves go to standard error.)

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::http::header::{HeaderMap, HeaderValue};
use actix_web::http::StatusCode;
use botlist::actors::directory::Directory;
use botlist::api::limits::{self, RateKey, RateLimiter};
use botlist::domain::ids::BotId;
use botlist::domain::time::{Clock, SystemClock};
use botlist::telemetry::{self, LogFormat, REQUEST_ID};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

const ROUTE: &str = "/api/v1/bots/{id}";

fn layer(c: &mut Criterion) {
    telemetry::install_metrics();
    telemetry::init_logs(LogFormat::Text);
    let none = HeaderMap::new();
    let mut sent = HeaderMap::new();
    sent.insert(
        REQUEST_ID.clone(),
        HeaderValue::from_static("0af7651916cd43dd8448eb211c80319c"),
    );
    c.bench_function("request id, generated", |b| {
        b.iter(|| telemetry::request_id(black_box(&none)))
    });
    c.bench_function("request id, the client's", |b| {
        b.iter(|| telemetry::request_id(black_box(&sent)))
    });
    let id = telemetry::request_id(&none);
    // An application's access log and its thread, as `serve` starts them.
    let log = Arc::new(telemetry::AccessLog::default());
    let (_stop, shutdown) = botlist::shutdown::channel();
    let _threads = telemetry::Threads::start(&log, 0, &shutdown);
    // In bursts the access-log thread takes in one turn (it empties the queue every 50 ms; a
    // request past the 8,192 waiting in its shard formats its own line, which is the next
    // bench), with the thread's turns left out of the time.
    let mut queued = c.benchmark_group("log line");
    queued
        .sample_size(10)
        .measurement_time(Duration::from_secs(2));
    // The request's counts (the metrics) and its line are one call, under one lock.
    queued.bench_function("counted and queued by the request", |b| {
        b.iter_custom(|iterations| {
            let mut spent = Duration::ZERO;
            let mut left = iterations;
            while left > 0 {
                let burst = left.min(8_000);
                let started = Instant::now();
                for _ in 0..burst {
                    log.answered(telemetry::AnsweredRequest {
                        method: "GET",
                        route: Cow::Borrowed(black_box(ROUTE)),
                        status: StatusCode::OK,
                        latency: Duration::from_micros(420),
                        at: Instant::now(),
                        id: black_box(&id),
                        key: None,
                    });
                }
                spent += started.elapsed();
                left -= burst;
                std::thread::sleep(Duration::from_millis(60));
            }
            spent
        })
    });
    queued.finish();
    c.bench_function(
        "log line, through tracing-subscriber (a terminal's colours)",
        |b| {
            b.iter(|| {
                telemetry::log_line(
                    "GET",
                    ROUTE,
                    StatusCode::OK,
                    Duration::from_micros(420),
                    black_box(id.to_str().unwrap_or("")),
                    None,
                )
            })
        },
    );
    let mut line = telemetry::AccessLine::default();
    let mut lines = Vec::with_capacity(1 << 20);
    for format in [LogFormat::Text, LogFormat::Json] {
        let name = format!("log line, {format:?}, as the access-log thread writes it");
        c.bench_function(&name, |b| {
            b.iter(|| {
                if lines.len() > 1 << 19 {
                    lines.clear();
                }
                line.bench(
                    format,
                    "GET",
                    ROUTE,
                    StatusCode::OK,
                    Duration::from_micros(420),
                    black_box(&id),
                    &mut lines,
                )
            })
        });
    }

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let directory = Directory::new(clock.now());
    // 60,000 a minute is the most the flag allows; 100,000 keys in turn keep every bucket
    // far from empty, so every check is an allowed request.
    let limiter = RateLimiter::new(60_000, Arc::clone(&clock)).expect("limits on");
    let keys: Vec<RateKey> = (0..100_000)
        .map(|_| RateKey::Bot("bot", BotId::new_random()))
        .collect();
    let mut next = 0;
    c.bench_function("limit: the token's bot", |b| {
        b.iter(|| directory.authenticate(black_box(b"bl_0123456789abcdef0123456789abcdef")))
    });
    // What a profile token's lookup costs beside a bot token's (issue 36): the same SHA-256 of
    // a token of the same length and one map read (the rate limit tells the kinds apart by the
    // prefix first, so each kind pays one lookup).
    c.bench_function("limit: the token's profile", |b| {
        b.iter(|| {
            directory.authenticate_profile(black_box(
                b"usr_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            ))
        })
    });
    c.bench_function("limit: the token's bot, a token of today's length", |b| {
        b.iter(|| {
            directory.authenticate(black_box(
                b"blt_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            ))
        })
    });
    c.bench_function("limit: the bucket", |b| {
        b.iter(|| {
            next = (next + 1) % keys.len();
            limiter.check(black_box(keys[next]))
        })
    });
    let decision = limiter.check(keys[0]);
    c.bench_function("limit: the three headers", |b| {
        b.iter(|| limits::headers(black_box(&decision)))
    });
}

criterion_group!(benches, layer);
criterion_main!(benches);
