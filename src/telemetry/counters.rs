//! The instrumentation points of the domain, the journal, snapshots and webhooks: one call each.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use actix_web::dev::ServiceRequest;
use actix_web::HttpMessage;
use metrics::{counter, gauge, histogram};

use super::request::RateKeyKind;
use crate::domain::webhook::{Delivery, DeliveryState};
use crate::domain::Rejection;

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

/// Where an accepted vote came from: `admin` (the operator's ingest) or `profile` (the voter's
/// own token), as `botlist_votes_by_source_total`.
pub fn vote_source(source: &'static str) {
    counter!("botlist_votes_by_source_total", "source" => source).increment(1);
}

/// A review change acknowledged: `change` is create, edit, reply, delete (by its author) or
/// remove (by staff).
pub fn review_changed(change: &'static str) {
    counter!("botlist_reviews_total", "change" => change).increment(1);
}

/// A webhook event of `kind` queued for delivery by this node (its delivery is journaled with
/// or after the change it tells of, and sent once that is durable).
pub fn event_queued(kind: &'static str) {
    counter!("botlist_webhook_events_queued_total", "kind" => kind).increment(1);
}

/// A catching-up vote stream rendered `votes` of history in one poll of its connection.
pub fn stream_replay_poll(votes: usize) {
    histogram!("botlist_stream_replay_votes_per_poll").record(votes as f64);
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

/// The kinds of storage failure the journal counts (`botlist_journal_failures_total{kind}`).
pub const JOURNAL_FAILURE_KINDS: [&str; 5] = ["enospc", "read_only", "io", "permission", "other"];

/// The journal failed (the first failure of a run: it refuses every write after it).
pub fn journal_failed(kind: &'static str) {
    counter!("botlist_journal_failures_total", "kind" => kind).increment(1);
    journal_healthy(false);
    journal_disk_writable(false);
}

/// 1 while the journal takes writes, 0 once it failed.
pub fn journal_healthy(healthy: bool) {
    gauge!("botlist_journal_healthy").set(if healthy { 1.0 } else { 0.0 });
}

/// 1 while the journal takes writes, or after it failed, while its last probe of the disk
/// wrote and synced; 0 while the disk refuses the probe.
pub fn journal_disk_writable(writable: bool) {
    gauge!("botlist_journal_disk_writable").set(if writable { 1.0 } else { 0.0 });
}

/// The allocator gave its free memory back after a burst of connections, in `took`.
pub fn memory_given_back(took: std::time::Duration) {
    counter!("botlist_memory_given_back_total").increment(1);
    histogram!("botlist_memory_give_back_duration_seconds").record(took.as_secs_f64());
}

/// Bytes left on the data directory's file system, as of the scrape.
pub fn data_dir_available(bytes: u64) {
    gauge!("botlist_data_dir_available_bytes").set(bytes as f64);
}

/// 1 when `GET /readyz` would answer 200, else 0.
pub fn set_ready(ready: bool) {
    gauge!("botlist_ready").set(if ready { 1.0 } else { 0.0 });
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

/// Listings waiting for staff (CONTRACT section 14).
pub fn moderation_queue(length: usize) {
    gauge!("botlist_moderation_queue_length").set(length as f64);
}

/// A decision on a listing's status (`approved`, `denied`, `delisted`, or `pending` when an
/// owner's edit sends a denied listing back), whoever made it.
pub fn moderation_decision(to: &'static str) {
    counter!("botlist_moderation_decisions_total", "decision" => to).increment(1);
}

/// Votes whose window's end was announced (`vote.expired`), by the writer, as it journals them.
pub fn votes_expired(count: usize) {
    counter!("botlist_vote_expired_events_total").increment(count as u64);
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
            // Sent: a receiver answered 2xx (counted as the answer comes, never before).
            counter!("botlist_webhook_events_sent_total", "kind" => event).increment(1);
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

fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
