//! The application's own request families, summed over its access log's shards when scraped.

use std::borrow::Cow;

use super::access_log::{AccessLog, Latencies};
use super::exporter::LATENCY_BUCKETS;

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
                "route=\"{}\",method=\"{method}\",status=\"{status}\",surface=\"{}\"",
                label_value(route),
                self.surface_of(route).label()
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

impl AccessLog {
    /// Says under which base path each API surface is served, for the `surface` label; the
    /// first call wins (the router's paths do not change while it serves).
    pub fn set_surfaces(&self, surfaces: Vec<(String, Surface)>) {
        let _ = self.surfaces.set(surfaces);
    }

    /// The surface a route pattern is on: the one with the longest base path the pattern is
    /// under (`/api/v1/...` is under `/api` too), else none.
    fn surface_of(&self, route: &str) -> Surface {
        let Some(surfaces) = self.surfaces.get() else {
            return Surface::None;
        };
        surfaces
            .iter()
            .filter(|(base, _)| {
                route
                    .strip_prefix(base.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
            .max_by_key(|(base, _)| base.len())
            .map_or(Surface::None, |(_, surface)| *surface)
    }
}

/// The API surfaces requests are counted by (the `surface` label): one row each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// `{base}` (`--base-path`): SPEC.md's API.
    Base,
    /// `--classic-base-path`: the classic client libraries' routes and shapes.
    Classic,
    /// `{base}/projects`: the project API of the 2026 client libraries (Bearer, problem details).
    Project,
    /// Outside every surface: health, metrics, the reference, unmatched paths.
    None,
}

impl Surface {
    pub fn label(self) -> &'static str {
        match self {
            Surface::Base => "base",
            Surface::Classic => "classic",
            Surface::Project => "project",
            Surface::None => "none",
        }
    }
}

const REQUESTS: &str = "botlist_http_requests_total";
const REQUESTS_HELP: &str =
    "HTTP requests answered, by route pattern, method, status and API surface.";
const DURATION: &str = "botlist_http_request_duration_seconds";
const DURATION_HELP: &str =
    "Time to answer a request, by route pattern, method, status and API surface.";

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
#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    use actix_web::http::header::HeaderValue;
    use actix_web::http::StatusCode;

    use crate::telemetry::AnsweredRequest;

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
            "botlist_http_request_duration_seconds_bucket{{route=\"/a\",method=\"GET\",status=\"200\",surface=\"none\",le=\"{le}\"}} "
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
            "botlist_http_requests_total{route=\"/a\",method=\"GET\",status=\"200\",surface=\"none\"} 3\n"
        ));
        assert!(text.contains(
            "botlist_http_request_duration_seconds_sum{route=\"/a\",method=\"GET\",status=\"200\",surface=\"none\"} 9.00035"
        ));
        assert!(text.contains(
            "botlist_http_requests_total{route=\"/weird\\\"\\\\\",method=\"GET\",status=\"404\",surface=\"none\"} 1\n"
        ), "{text}");
        assert_eq!(text.matches("# TYPE ").count(), 2);
    }
}
