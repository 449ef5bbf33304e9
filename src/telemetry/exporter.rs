//! The process-wide Prometheus recorder behind the `metrics` facade, its families described
//! and registered at zero, and the text exposition a scrape reads.

use std::sync::OnceLock;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::access_log::AccessLog;

/// Seconds, for request and search latency.
pub(super) const LATENCY_BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];
/// Votes, for what a catching-up stream renders in one poll (at most its page, 256 by default).
const REPLAY_BUCKETS: [f64; 9] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0,
];
/// Seconds, for snapshots of large directories.
const SNAPSHOT_BUCKETS: [f64; 10] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0];

pub(super) struct Exporter {
    pub(super) handle: PrometheusHandle,
}

static EXPORTER: OnceLock<Option<Exporter>> = OnceLock::new();

/// Installs the process-wide recorder once (later calls, as from a second app in one test
/// process, share it). `None` if another recorder was installed first. The `metrics` facade
/// has one recorder per process; the thread that keeps it is each application's
/// ([`Threads::start`](super::Threads::start)).
pub(super) fn exporter() -> Option<&'static Exporter> {
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
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("botlist_stream_replay_votes_per_poll".into()),
                        &REPLAY_BUCKETS,
                    )
                })
                .ok()?;
            let handle = builder.install_recorder().ok()?;
            // The process's gauges are described here and set at each scrape
            // (`super::process`).
            metrics_process::Collector::default().describe();
            describe_all();
            register_all();
            gauge!("botlist_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
            Some(Exporter { handle })
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
    describe_counter!(
        "botlist_votes_by_source_total",
        "Votes recorded, by where they came from: source=admin (the admin API's ingest) or source=profile (the voter's own token)."
    );
    describe_counter!("botlist_stats_posts_total", "Server-count posts stored.");
    describe_counter!(
        "botlist_reviews_total",
        "Review changes stored, by change: create, edit, reply, delete (by its author) or remove (by staff)."
    );
    describe_counter!(
        "botlist_webhook_events_queued_total",
        "Webhook events queued for delivery by this node, by kind (vote.create, review.create, listing.approved, listing.denied, listing.delisted, vote.expired, webhook.test)."
    );
    describe_counter!(
        "botlist_webhook_events_sent_total",
        "Webhook events delivered, by kind: a receiver answered 2xx (a retried delivery counts once, when it succeeds)."
    );
    describe_counter!(
        "botlist_audit_entries_written_total",
        "Audit log entries written by this node's journal, each with its change."
    );
    describe_gauge!(
        "botlist_audit_entries",
        "Entries the audit log holds (written, replayed or followed)."
    );
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
    describe_counter!(
        "botlist_journal_failures_total",
        "Journal failures by kind (enospc, read_only, io, permission, other), whatever call failed: write, fsync, making room, rotation, head. Writes are refused after the first."
    );
    describe_gauge!(
        "botlist_journal_healthy",
        "1 while the journal takes writes; 0 once it failed (GET /readyz answers 503 with the reason)."
    );
    describe_gauge!(
        "botlist_journal_disk_writable",
        "1 while the journal takes writes, or, after it failed, while its last probe of the disk (a 4 KiB write and its fsync, every second) succeeded: the disk is back and a restart takes writes again; 0 while the disk refuses the probe."
    );
    describe_counter!(
        "botlist_memory_given_back_total",
        "Times the allocator gave its free memory back to the system, each after a burst of connections ended (the connections open fell to half their peak, by 256 or more)."
    );
    describe_histogram!(
        "botlist_memory_give_back_duration_seconds",
        Unit::Seconds,
        "Time of one giving back (malloc_trim, on a thread of its own)."
    );
    describe_gauge!(
        "botlist_data_dir_available_bytes",
        Unit::Bytes,
        "Bytes left on the data directory's file system (as of the scrape; absent without a data directory)."
    );
    describe_gauge!(
        "botlist_ready",
        "1 when GET /readyz answers 200, else 0 (as of the last scrape)."
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
    describe_counter!(
        "botlist_vote_expired_events_total",
        "vote.expired events produced: votes whose 12-hour window's end was announced (journaled by the writer), for bots that chose the event."
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
    describe_histogram!(
        "botlist_stream_replay_votes_per_poll",
        "Votes of history a vote stream rendered in one poll of its connection while catching up from a Last-Event-ID (at most its page: the rest follows at the next poll)."
    );
    describe_gauge!("botlist_bots_listed", "Bots currently listed.");
    describe_gauge!("botlist_profiles_listed", "User profiles currently held.");
    describe_gauge!(
        "botlist_moderation_queue_length",
        "Listings waiting for staff (status pending)."
    );
    describe_counter!(
        "botlist_moderation_decisions_total",
        "Decisions on a listing's status, by the status decided (approved, denied, delisted; pending when an owner's edit sends a denied listing back), by the operator, staff or an owner."
    );
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
    for change in ["create", "edit", "reply", "delete", "remove"] {
        counter!("botlist_reviews_total", "change" => change).absolute(0);
    }
    for source in ["admin", "profile"] {
        counter!("botlist_votes_by_source_total", "source" => source).absolute(0);
    }
    for kind in crate::domain::webhook::Event::ALL {
        for family in [
            "botlist_webhook_events_queued_total",
            "botlist_webhook_events_sent_total",
        ] {
            counter!(family, "kind" => kind.name()).absolute(0);
        }
    }
    for decision in crate::domain::listing::ListingStatus::ALL {
        counter!("botlist_moderation_decisions_total", "decision" => decision.name()).absolute(0);
    }
    gauge!("botlist_moderation_queue_length").set(0.0);
    for kind in ["bot", "bots_ip", "users_ip", "profile"] {
        counter!("botlist_rate_limit_refusals_total", "kind" => kind).absolute(0);
    }
    for outcome in ["delivered", "failed"] {
        counter!("botlist_webhook_deliveries_total", "outcome" => outcome).absolute(0);
    }
    for kind in super::counters::JOURNAL_FAILURE_KINDS {
        counter!("botlist_journal_failures_total", "kind" => kind).absolute(0);
    }
    for name in [
        "botlist_stats_posts_total",
        "botlist_journal_written_bytes_total",
        "botlist_journal_fsync_failures_total",
        "botlist_webhook_retries_total",
        "botlist_audit_entries_written_total",
        "botlist_vote_expired_events_total",
        "botlist_memory_given_back_total",
    ] {
        counter!(name).absolute(0);
    }
    for name in [
        "botlist_journal_fsync_duration_seconds",
        "botlist_snapshot_duration_seconds",
        "botlist_search_duration_seconds",
        "botlist_stream_replay_votes_per_poll",
        "botlist_memory_give_back_duration_seconds",
    ] {
        let _ = histogram!(name);
    }
    for name in [
        "botlist_http_requests_in_flight",
        "botlist_snapshot_size_bytes",
        "botlist_snapshot_last_success_timestamp_seconds",
        "botlist_webhook_queue_depth",
        "botlist_profiles_listed",
        "botlist_ready",
        "botlist_audit_entries",
    ] {
        let _ = gauge!(name);
    }
    // A journal is healthy until it fails (the in-memory one never does).
    gauge!("botlist_journal_healthy").set(1.0);
    gauge!("botlist_journal_disk_writable").set(1.0);
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
    let cpu = super::process::collect();
    let mut text = exporter.handle.render();
    text.push_str(&cpu);
    text.push_str(&requests);
    text
}
