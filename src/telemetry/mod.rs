//! Logs and metrics: the per-request line, request ids, and the Prometheus families.
//!
//! Metrics go through the `metrics` facade into one process-wide Prometheus recorder, so an
//! instrumentation point anywhere is one call with no handle to pass around; all but the
//! per-request families, which each application counts in its own access log, beside the
//! request's line ([`AccessLog::answered`]): every request pays for them, and the facade's
//! counters and histograms are shared by all the workers. Every label is
//! bounded: routes are patterns (unmatched paths share `unmatched`), methods are the known nine
//! or `other`, outcomes and key kinds are fixed words.
//!
//! One file per concern: `logging` (the subscriber), `request` (a request's id and what the
//! middleware observes), `access_log` (the answered requests' queue and counts, by shard),
//! `access_line` (the line's bytes), `threads` (the access-log writer and the metrics upkeep),
//! `exporter` (the process's recorder and the scrape), `request_families` (the requests'
//! own families in the scrape), `process` (the `process_*` families) and `counters` (every
//! other instrumentation point).

mod access_line;
mod access_log;
mod counters;
mod exporter;
mod logging;
mod process;
mod request;
mod request_families;
mod threads;

pub use access_line::AccessLine;
pub use access_log::{AccessLines, AccessLog, AnsweredRequest, RouteName};
pub use counters::{
    count_vote, data_dir_available, event_queued, journal_disk_writable, journal_failed,
    journal_healthy, journal_written, profiles_listed, rate_key, review_changed, set_ready,
    snapshot_written, stats_posted, stream_replay_poll, timed_fsync, vote_source, webhook_outcome,
    webhook_queue,
};
pub use counters::{memory_given_back, moderation_decision, moderation_queue, votes_expired};
pub use exporter::{install_metrics, render};
pub use logging::{init_logs, log_line, LogFormat};
pub use request::{
    request_id, route_pattern, Observation, RateKeyKind, RoutePattern, MAX_REQUEST_ID, REQUEST_ID,
};
pub use request_families::Surface;
pub use threads::Threads;
