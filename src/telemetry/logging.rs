//! The log subscriber on standard error, and the access line as tracing-subscriber writes it
//! (the access-log thread writes the same bytes itself when it can, `AccessLine`).

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use actix_web::http::StatusCode;

use super::access_log::{AccessLines, ACCESS_LINES};

/// How logs are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event; coloured only when standard error is a terminal.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The filter's directives for what `RUST_LOG` asks (`info` without it):
/// - actix-http logs malformed requests from clients at ERROR before any of our code runs;
///   they are the client's mistake, not the operator's problem, so they stay off;
/// - actix-server's INFO lines name the listening address as its workers start, which is
///   before the state has loaded (the bots live on the workers): only our own `listening on`
///   line may say the service is ready, so its lines below WARN stay off.
///
/// Either is logged again when `RUST_LOG` names it.
fn directives(wanted: &str) -> String {
    let mut directives = wanted.to_owned();
    if !wanted.contains("actix_http") {
        directives.push_str(",actix_http::h1=off");
    }
    if !wanted.contains("actix_server") {
        directives.push_str(",actix_server=warn");
    }
    directives
}

/// Installs the log subscriber on standard error. `RUST_LOG` overrides the default filter.
pub fn init_logs(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let wanted = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    let directives = directives(&wanted);
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
pub(super) static ACCESS_LEVELS: OnceLock<[bool; 3]> = OnceLock::new();

/// The format of the access lines, when `AccessLine::write` writes them rather than
/// tracing-subscriber: set once by [`init_logs`], with the process's one subscriber, and only
/// when that subscriber writes the lines without colour.
pub(super) static ACCESS_FORMAT: OnceLock<LogFormat> = OnceLock::new();

thread_local! {
    /// When the event being written happened, if not now: set by the access-log thread while it
    /// writes the lines of requests answered earlier.
    pub(super) static EVENT_TIME: std::cell::Cell<Option<SystemTime>> = const { std::cell::Cell::new(None) };
}

/// The log's timestamps, as tracing-subscriber's default writes them (RFC 3339, microseconds,
/// UTC), of the moment the event happened: an access line is written after its request.
pub(super) struct EventTime;

impl tracing_subscriber::fmt::time::FormatTime for EventTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        w.write_str(&log_time(EVENT_TIME.get().unwrap_or_else(SystemTime::now)))
    }
}

/// `%Y-%m-%dT%H:%M:%S%.6fZ` without parsing that format for every line: the access-log
/// thread writes one per request (issue 25's profile found the parsing a tenth of its time).
pub(super) fn log_time(at: SystemTime) -> String {
    let at: chrono::DateTime<chrono::Utc> = at.into();
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The target of the per-request lines.
pub(super) const ACCESS_TARGET: &str = "botlist::access";

/// Standard error, except for the access lines: one per request, they are formatted and written
/// by the access-log thread every [`ACCESS_FLUSH`](super::access_log::ACCESS_FLUSH) (or when [`ACCESS_BUFFER`](super::access_log::ACCESS_BUFFER) bytes wait), so a
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
    use std::time::UNIX_EPOCH;

    /// Nothing actix-server logs below WARN (its "listening on" as the workers start, before
    /// the state is loaded) reaches the log unless asked for by name.
    #[test]
    fn only_our_line_says_listening_on() {
        assert_eq!(
            directives("info"),
            "info,actix_http::h1=off,actix_server=warn"
        );
        assert_eq!(
            directives("actix_server=info"),
            "actix_server=info,actix_http::h1=off"
        );
        assert_eq!(
            directives("debug,actix_http=debug"),
            "debug,actix_http=debug,actix_server=warn"
        );
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
