//! A data directory for the moderation figures (benches/moderation.sh, issue 37): the demo's
//! directory at N bots (default 100,000), every listing `pending` (the moderation queue holds
//! them all), and an audit log of M entries (default 10,000,000) about those bots and
//! profiles, written as one snapshot. Filling through the API would take hours at 10 million
//! entries; the snapshot holds what a server that had made them would hold.
//!
//! `cargo run --release --example moderation_fill -- DIR [BOTS] [ENTRIES]`
//!
//! Prints the demo moderator's token (for `GET /staff/queue` and `/staff/audit`), the demo
//! profile's token and the pending bot it owns (for `GET /bots/:id/audit`), and a profile that
//! acted (for `?actor=`).

use std::time::Instant;

use botlist::demo::{self, DemoSize};
use botlist::domain::bot::ListingStatus;
use botlist::domain::time::{Clock, SystemClock, Timestamp};
use botlist::persist::snapshot;

#[path = "support/audit_mix.rs"]
mod audit_mix;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(
        args.next()
            .expect("usage: moderation_fill DIR [BOTS] [ENTRIES]"),
    );
    let bots: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let count: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000_000);
    std::fs::create_dir_all(&dir).expect("the directory");
    let started = Instant::now();
    let now = SystemClock.now();
    let size = DemoSize {
        seed: 0x0B07_1157,
        bots,
        profiles: (bots / 3).max(2),
        voters: 20_000,
        votes: bots * 2,
    };
    let mut generated = demo::build(now, &size);
    let state = &mut generated.state;
    for bot in &mut state.bots {
        std::sync::Arc::make_mut(&mut bot.state.listing).status = ListingStatus::Pending;
    }
    let bot_ids: Vec<uuid::Uuid> = state
        .bots
        .iter()
        .map(|b| uuid::Uuid::from_u128(b.state.listing.id.as_u128()))
        .collect();
    let people: Vec<uuid::Uuid> = state
        .profiles
        .iter()
        .map(|p| uuid::Uuid::from_u128(p.id.as_u128()))
        .collect();
    // The mix of examples/audit_figures.rs, a millisecond apart up to now.
    let first = now.millis() - count as i64;
    for n in 0..count {
        let at = Timestamp::from_millis(first + n as i64);
        let entry = audit_mix::entry(n, &bot_ids, &people, at);
        state.audit.push(n as u64 + 1, &entry);
    }
    state.seq = count as u64;
    state.registry_seq = count as u64;
    let built = started.elapsed();
    let written = snapshot::write(&dir, state).expect("the snapshot is written");
    println!(
        "wrote {} ({} bytes): {} bots, all pending, {} audit entries; built in {:.1} s, written in {:.1} s",
        written.path.display(),
        written.bytes,
        state.bots.len(),
        state.audit.len(),
        built.as_secs_f64(),
        (started.elapsed() - built).as_secs_f64()
    );
    println!(
        "moderator token: {}",
        generated.info.moderator_token.as_str()
    );
    println!("owner token: {}", generated.info.profile_token.as_str());
    println!("owned bot: {}", generated.info.pending_bot_id);
    println!("acting profile: {}", people[17]);
}
