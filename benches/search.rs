//! The search index at 10k, 100k and 1M bots: every scenario of the directory-at-scale work, the
//! cost of one vote's and one edit's index update, and the index's memory.
//!
//!   cargo bench --bench search                 (all sizes; the 1M directory takes a while)
//!   BOTLIST_BENCH_SIZES=100000 cargo bench --bench search
//!
//! Before criterion's own estimates it prints a table of p50 and p99 per scenario, timed one
//! search at a time, with the number of matches, so the figures can be read at a glance. The
//! table counts the thread's CPU time, not the wall clock: on a shared machine a search that is
//! preempted would otherwise be charged for another process's work.

use std::sync::Arc;
use std::time::{Duration, Instant};

use botlist::demo::{self, DemoSize};
use botlist::domain::bot::{BotPatch, BotView};
use botlist::domain::ids::Snowflake;
use botlist::domain::search::Search;
use botlist::domain::text::VoterName;
use botlist::domain::time::Timestamp;
use botlist::domain::votes::Voter;
use botlist::index::SearchIndex;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};

#[path = "../tests/support/record.rs"]
mod record;

struct Directory {
    bots: usize,
    index: SearchIndex,
    states: Vec<botlist::domain::bot::BotState>,
    now: Timestamp,
}

fn sizes() -> Vec<usize> {
    std::env::var("BOTLIST_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000])
}

fn resident_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn build(bots: usize) -> Directory {
    let now = Timestamp::from_millis(1_795_000_000_000);
    let started = Instant::now();
    let generated = demo::build(
        now,
        &DemoSize {
            bots,
            profiles: 1_000,
            voters: (bots as u64) / 2 + 100,
            votes: bots * 2,
            ..DemoSize::default()
        },
    );
    let mut states: Vec<_> = generated.state.bots.into_iter().map(|b| b.state).collect();
    let views: Vec<Arc<BotView>> = states
        .iter_mut()
        .map(|s| {
            s.restore();
            Arc::new(s.view())
        })
        .collect();
    let made = started.elapsed();
    let before = resident_bytes();
    let started = Instant::now();
    let index = SearchIndex::build(now.month(), views.clone());
    let built = started.elapsed();
    drop(index);
    let started = thread_cpu();
    let mut index = SearchIndex::new(now.month());
    for view in views {
        index.insert(view);
    }
    let indexed = thread_cpu() - started;
    let memory = index.memory();
    println!(
        "\n== {bots} bots: generated in {:.1} s; index built at once in {:.2} s (wall clock, \
         every core), or a bot at a time in {:.2} s of CPU ({:.1} us per bot); \
         index memory: {:.1} MB by RSS, {:.1} MB counted (documents {:.1}, filters {:.1}, \
         grams {:.1} in {} distinct grams, orders {:.1})",
        made.as_secs_f64(),
        built.as_secs_f64(),
        indexed.as_secs_f64(),
        indexed.as_secs_f64() * 1e6 / bots as f64,
        resident_bytes().saturating_sub(before) as f64 / 1e6,
        memory.total() as f64 / 1e6,
        memory.documents as f64 / 1e6,
        memory.filters as f64 / 1e6,
        memory.grams as f64 / 1e6,
        memory.distinct_grams,
        memory.orders as f64 / 1e6,
    );
    Directory {
        bots,
        index,
        states,
        now,
    }
}

fn scenarios(bots: usize) -> Vec<(&'static str, String)> {
    let rare = format!(" {} ", bots * 7 / 9);
    vec![
        ("default page", String::new()),
        ("q, 1 char, common", "q=e".into()),
        ("q, 1 char, rare", "q=x".into()),
        ("q, 2 chars, common", "q=er".into()),
        ("q, 2 chars, rare", "q=kx".into()),
        ("q, 3 chars, common", "q=ard".into()),
        ("q, 3 chars, rare", "q=zar".into()),
        ("q, 6 chars, common", "q=wizard".into()),
        ("q, 6+ chars, rare", format!("q={rare}")),
        ("q, 6+ chars, none", "q=zzzzzz".into()),
        (
            "q + category + sort=newest",
            "q=wizard&category=music&sort=newest".into(),
        ),
        ("language + invites", "language=de&invites=100-1000".into()),
        ("votes=N", "votes=5".into()),
        ("offset=5000", "offset=5000".into()),
        ("page=200&limit=100", "page=200&limit=100".into()),
        ("sort=votes", "sort=votes".into()),
        ("sort=newest", "sort=newest".into()),
        ("sort=monthly_votes", "sort=monthly_votes".into()),
        ("sort=recently_updated", "sort=recently_updated".into()),
        ("sort=invites", "sort=invites".into()),
        ("q, 1 char, sort=relevance", "q=e&sort=relevance".into()),
        ("q, 3 chars, sort=relevance", "q=ard&sort=relevance".into()),
        (
            "q, 6 chars, sort=relevance",
            "q=wizard&sort=relevance".into(),
        ),
        (
            "q, 6+ chars rare, relevance",
            format!("q={rare}&sort=relevance"),
        ),
        ("match=words, 2 words", "q=music+wizard&match=words".into()),
        ("match=words, 2 short words", "q=er+ar&match=words".into()),
        (
            "match=words + relevance",
            "q=wizard+bot&match=words&sort=relevance".into(),
        ),
    ]
}

/// Type-ahead needles (already folded) and their limit.
fn suggestions() -> Vec<(&'static str, &'static str, usize)> {
    vec![
        ("suggest, 1 char", "w", 10),
        ("suggest, 1 char, limit 20", "b", 20),
        ("suggest, 2 chars", "wi", 10),
        ("suggest, 3 chars", "wiz", 10),
        ("suggest, 6 chars", "wizard", 10),
        ("suggest, 4 chars, rare", "zyxw", 10),
        ("suggest, 2 chars, none", "qq", 10),
    ]
}

fn suggest_table(dir: &Directory) {
    let runs = if dir.bots >= 1_000_000 { 300 } else { 1000 };
    for (name, q, limit) in suggestions() {
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let started = thread_cpu();
                black_box(dir.index.suggest(q, limit));
                thread_cpu() - started
            })
            .collect();
        times.sort_unstable();
        let found = dir.index.suggest(q, limit).len();
        println!(
            "{name:<30} {:>8.3}ms {:>8.3}ms {found:>9}",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
        );
    }
}

/// CPU time of this thread: what a search costs, whatever else the machine is doing.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write into, and the clock id is a constant Linux knows.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

fn table(dir: &Directory) {
    println!(
        "{:<30} {:>10} {:>10} {:>9}",
        "scenario", "p50", "p99", "matches"
    );
    let only = std::env::var("BOTLIST_BENCH_ONLY").unwrap_or_default();
    for (name, query) in scenarios(dir.bots) {
        if !name.contains(&only) {
            continue;
        }
        let search = Search::parse(&query).expect("a valid query");
        let runs = if dir.bots >= 1_000_000 { 60 } else { 300 };
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let started = thread_cpu();
                black_box(dir.index.search(&search));
                thread_cpu() - started
            })
            .collect();
        times.sort_unstable();
        let total = dir.index.search(&search).total;
        println!(
            "{name:<30} {:>8.3}ms {:>8.3}ms {total:>9}",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
        );
    }
}

fn voter(n: u64) -> Voter {
    Voter {
        id: Snowflake::from_u64(900_000_000_000_000_000 + n),
        username: VoterName::parse(format!("bench{n}")).expect("valid"),
        avatar: None,
    }
}

/// A new name and description, different every time, so the grams really change.
fn edit(n: u64) -> BotPatch {
    serde_json::from_value(serde_json::json!({
        "name": format!("Edited Name {n}"),
        "short_description": format!("an edited description number {n} for the benchmark"),
    }))
    .expect("a valid patch")
}

fn bench(c: &mut Criterion) {
    for bots in sizes() {
        let mut dir = build(bots);
        table(&dir);
        suggest_table(&dir);
        let mut group = c.benchmark_group(format!("search/{bots}"));
        group
            .sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        for (name, query) in scenarios(bots) {
            let search = Search::parse(&query).expect("a valid query");
            group.bench_with_input(BenchmarkId::from_parameter(name), &search, |b, s| {
                b.iter(|| dir.index.search(s))
            });
        }
        for (name, q, limit) in suggestions() {
            group.bench_with_input(BenchmarkId::from_parameter(name), &q, |b, q| {
                b.iter(|| dir.index.suggest(q, limit))
            });
        }
        group.finish();

        let mut group = c.benchmark_group(format!("update/{bots}"));
        group
            .sample_size(20)
            .measurement_time(Duration::from_secs(1));
        let mut n = 0u64;
        let now = dir.now;
        let Directory { index, states, .. } = &mut dir;
        // Only the index update is timed: the vote or edit itself is the bot actor's work.
        group.bench_function("one vote", |b| {
            b.iter_batched(
                || {
                    n += 1;
                    let state = &mut states[(n as usize * 7_919) % bots];
                    let _ = state.votes.vote(voter(n), now);
                    Arc::new(state.view())
                },
                |view| index.update(view),
                BatchSize::SmallInput,
            )
        });
        group.bench_function("one listing edit", |b| {
            b.iter_batched(
                || {
                    n += 1;
                    let state = &mut states[(n as usize * 7_919) % bots];
                    record::apply_edit(state, edit(n), now);
                    Arc::new(state.view())
                },
                |view| index.update(view),
                BatchSize::SmallInput,
            )
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
