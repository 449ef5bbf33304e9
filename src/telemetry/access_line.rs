//! The access line formatted by our own code, byte for byte what tracing-subscriber writes.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use actix_web::http::header::HeaderValue;
use actix_web::http::StatusCode;

use super::access_log::{AccessRecord, IdBytes, RouteName};
use super::logging::{log_time, LogFormat};

/// Writes access lines as tracing-subscriber's formatter would for [`log_line`](super::log_line)'s event, byte
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
    pub(super) fn write(
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
/// [`log_line`](super::log_line)'s `latency_ms` (both the shortest decimal that reads back the same value).
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
#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::logging::EventTime;

    /// What tracing-subscriber writes for [`log_line`](super::log_line)'s event, configured as [`init_logs`](super::init_logs)
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
}
