//! A bot's vote history at 5,000,000 votes: the latency of a page (first, deep through a cursor,
//! bounded by `since`/`until`) and the memory of a stored vote.
//!
//!   cargo bench --bench history
//!
//! Prints the bytes per stored vote (the history's own memory over its votes; voters' names and
//! avatars are in the state's voter table, once each) before criterion's estimates.

use std::time::Instant;

use actix_web::web::BytesMut;
use botlist::api::history::vote_event;
use botlist::domain::ids::Snowflake;
use botlist::domain::text::VoterName;
use botlist::domain::time::Timestamp;
use botlist::domain::votes::history::{HistoryEntry, PageQuery, VoteHistory, VoterTable};
use botlist::domain::votes::Voter;
use criterion::{black_box, criterion_group, criterion_main, Criterion};

const VOTES: u64 = 5_000_000;
/// Distinct voters: each votes five times, as the 12-hour rule allows over a few days.
const VOTERS: u64 = 1_000_000;

fn history() -> (VoteHistory, VoterTable) {
    let start = Timestamp::from_millis(1_790_000_000_000);
    let voters: Vec<Voter> = (0..VOTERS)
        .map(|i| Voter {
            id: Snowflake::from_u64(300_000_000_000_000_000 + i),
            username: VoterName::parse(format!("voter{i}")).expect("valid"),
            avatar: None,
        })
        .collect();
    let table = VoterTable::new();
    let mut history = VoteHistory::default();
    let built = Instant::now();
    for n in 0..VOTES {
        // About 20 votes a second: 5M votes over three days.
        history.append(
            &table,
            &voters[(n % VOTERS) as usize],
            start.plus(chrono::Duration::milliseconds(n as i64 * 50)),
        );
    }
    let elapsed = built.elapsed();
    println!(
        "{VOTES} votes appended in {:.2} s ({:.0} ns a vote); history {} bytes = {:.2} bytes per stored vote \
         ({} bytes without slack); voter table {} voters",
        elapsed.as_secs_f64(),
        elapsed.as_nanos() as f64 / VOTES as f64,
        history.heap_bytes(),
        history.heap_bytes() as f64 / VOTES as f64,
        VoteHistory::bytes_per_vote(),
        table.len(),
    );
    (history, table)
}

fn bench(c: &mut Criterion) {
    let (history, table) = history();
    let start = Timestamp::from_millis(1_790_000_000_000);
    let page = |query: PageQuery| history.page(&table, &query);
    let mut group = c.benchmark_group("history page of 100 at 5M votes");
    group.bench_function("newest", |b| {
        b.iter(|| {
            page(black_box(PageQuery {
                limit: 100,
                ..PageQuery::default()
            }))
        })
    });
    group.bench_function("deep, through a cursor at the middle", |b| {
        b.iter(|| {
            page(black_box(PageQuery {
                before: Some(VOTES / 2),
                limit: 100,
                ..PageQuery::default()
            }))
        })
    });
    group.bench_function("since and until a day apart", |b| {
        b.iter(|| {
            page(black_box(PageQuery {
                since: Some(start.plus(chrono::Duration::hours(24))),
                until: Some(start.plus(chrono::Duration::hours(48))),
                limit: 100,
                ..PageQuery::default()
            }))
        })
    });
    group.bench_function("1000, the largest page", |b| {
        b.iter(|| {
            page(black_box(PageQuery {
                limit: 1000,
                ..PageQuery::default()
            }))
        })
    });
    group.finish();
    render(c);
}

/// What every live stream's bytes are made of: one vote event, rendered once for all readers.
fn render(c: &mut Criterion) {
    let entry = HistoryEntry {
        position: 4_812_345,
        voter: std::sync::Arc::new(Voter {
            id: Snowflake::from_u64(312_345_678_901_234_567),
            username: VoterName::parse("voter12345".to_owned()).expect("valid"),
            avatar: None,
        }),
        voted_at: Timestamp::from_millis(1_795_322_151_123),
    };
    let mut out = BytesMut::with_capacity(1 << 16);
    c.bench_function("a vote event, rendered for the stream", |b| {
        b.iter(|| {
            if out.len() > 60_000 {
                out.clear();
            }
            vote_event(black_box(&entry), &mut out);
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
