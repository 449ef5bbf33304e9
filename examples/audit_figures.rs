//! The audit log's figures for docs/PERFORMANCE.md: memory per entry and the time of a page
//! at N entries (default 10 million), for each kind of read the routes make.
//!
//! `cargo run --release --example audit_figures -- 10000000`

use std::time::Instant;

use botlist::domain::audit::{ActorFilter, AuditAction, AuditEntries, AuditFilter};
use botlist::domain::time::Timestamp;
use uuid::Uuid;

#[path = "support/audit_mix.rs"]
mod audit_mix;

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000_000);
    // 100,000 bots and 20,000 profiles (the mix: examples/support/audit_mix.rs).
    let bots: Vec<Uuid> = (0..100_000u128).map(|n| Uuid::from_u128(n + 1)).collect();
    let people: Vec<Uuid> = (0..20_000u128)
        .map(|n| Uuid::from_u128((1 << 64) + n))
        .collect();
    let before = rss_kib();
    let started = Instant::now();
    let mut log = AuditEntries::default();
    for n in 0..count {
        let entry = audit_mix::entry(n, &bots, &people, Timestamp::from_millis(n as i64));
        log.push(n as u64 + 1, &entry);
    }
    let filled = started.elapsed();
    let after = rss_kib();
    println!("entries: {count}");
    println!(
        "filled in {:.2} s ({:.0} ns per entry)",
        filled.as_secs_f64(),
        filled.as_nanos() as f64 / count as f64
    );
    println!(
        "resident growth: {} MiB, {:.1} bytes per entry; the log's own count: {:.1} bytes per entry",
        (after - before) / 1024,
        (after - before) as f64 * 1024.0 / count as f64,
        log.bytes() as f64 / count as f64
    );
    let reads: [(&str, AuditFilter); 6] = [
        ("newest page, no filter", AuditFilter::default()),
        (
            "one bot's entries (target index)",
            AuditFilter {
                target: Some(bots[4242]),
                ..Default::default()
            },
        ),
        (
            "one profile's entries (actor index)",
            AuditFilter {
                actor: Some(ActorFilter::Id(people[17])),
                ..Default::default()
            },
        ),
        (
            "by action, common (action index)",
            AuditFilter {
                action: Some(AuditAction::BotOwners),
                ..Default::default()
            },
        ),
        (
            "by action, absent (action index)",
            AuditFilter {
                action: Some(AuditAction::ProfileDelete),
                ..Default::default()
            },
        ),
        (
            "the admin's entries (admin index)",
            AuditFilter {
                actor: Some(ActorFilter::Admin),
                ..Default::default()
            },
        ),
    ];
    for (name, filter) in reads {
        let runs = 20;
        let started = Instant::now();
        let (mut shown, mut examined) = (0, 0);
        for _ in 0..runs {
            let page = log.page(&filter, None, 50);
            shown += page.entries.len();
            examined += page.examined;
        }
        let each = started.elapsed() / runs;
        println!(
            "{name}: {:.3} ms per page of 50 ({} shown, {} examined)",
            each.as_secs_f64() * 1000.0,
            shown / runs as usize,
            examined / runs as usize
        );
    }
    // What a snapshot's part costs: one chunk of 65,536 entries, encoded as snapshots do.
    let chunk: Vec<_> = (0..65_536.min(count))
        .filter_map(|n| log.entry(n))
        .collect();
    let started = Instant::now();
    let encoded = rmp_serde::to_vec(&chunk).expect("encodes");
    let took = started.elapsed();
    println!(
        "snapshot part: {:.1} bytes per entry, encoded at {:.0} ns per entry",
        encoded.len() as f64 / chunk.len() as f64,
        took.as_nanos() as f64 / chunk.len() as f64
    );
    // A page deep in the log, through the cursor.
    let started = Instant::now();
    let page = log.page(&AuditFilter::default(), Some(count as u64 / 2), 50);
    println!(
        "a page at the log's middle (cursor): {:.3} ms ({} shown)",
        started.elapsed().as_secs_f64() * 1000.0,
        page.entries.len()
    );
}

/// This process's resident memory, in KiB (Linux).
fn rss_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}
