//! The expiry timer's figures for docs/PERFORMANCE.md (`vote.expired`, issue 37): memory and
//! time per vote at N active votes (default 5 million) spread over B bots, for the queue as
//! built (each bot's check window is its queue of window ends, one timer entry per bot) and,
//! beside it, for the alternative it was chosen over (one heap entry per vote).
//!
//! `cargo run --release --example expiry_figures -- 5000000 100000`

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use botlist::domain::ids::{BotId, Snowflake};
use botlist::domain::time::Timestamp;
use botlist::domain::votes::CheckWindow;
use botlist::webhooks::expiry::ExpiryTimer;
use chrono::Duration;

const TWELVE_HOURS_MS: i64 = 12 * 3600 * 1000;

fn main() {
    let mut args = std::env::args().skip(1);
    let votes: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000_000);
    let bots: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    println!("{votes} active votes over {bots} bots, cast evenly over 12 hours");
    let start = Timestamp::from_millis(1_790_000_000_000);
    let ids: Vec<BotId> = (0..bots).map(|_| BotId::new_random()).collect();
    let at = |vote: usize| {
        Timestamp::from_millis(start.millis() + (vote as i64 * TWELVE_HOURS_MS) / votes as i64)
    };

    // As built: each bot's window (its queue), armed when its next end is new to the timer.
    let mut windows: Vec<CheckWindow> = (0..bots).map(|_| CheckWindow::default()).collect();
    for window in &mut windows {
        window.announce_from(Some(start));
    }
    let mut armed: Vec<Option<Timestamp>> = vec![None; bots];
    let mut timer = ExpiryTimer::default();
    let began = Instant::now();
    for vote in 0..votes {
        let bot = vote % bots;
        windows[bot].record(Snowflake::from_u64(vote as u64 + 1), at(vote));
        // What the actor does after a vote: arm unless armed for an earlier end already.
        if let Some(end) = windows[bot].next_end() {
            if armed[bot].is_none_or(|was| was > end) {
                armed[bot] = Some(end);
                timer.arm(ids[bot], end);
            }
        }
    }
    let insert = began.elapsed();
    let window_bytes: usize = windows.iter().map(CheckWindow::heap_bytes).sum();
    let mark_bytes = bots * std::mem::size_of::<Option<Timestamp>>();
    let timer_bytes = timer.heap_bytes();
    println!(
        "as built: insert {:.1} ns per vote (the window's push and the arming); \
         the check window {:.1} MB ({:.1} B per vote, there before this feature); \
         added: the marks {:.2} MB and the timer {:.2} MB ({:.2} B per vote)",
        insert.as_nanos() as f64 / votes as f64,
        window_bytes as f64 / 1e6,
        window_bytes as f64 / votes as f64,
        mark_bytes as f64 / 1e6,
        timer_bytes as f64 / 1e6,
        (mark_bytes + timer_bytes) as f64 / votes as f64,
    );

    // Every end comes, one tick of the dispatcher's loop (25 ms) at a time: the timer wakes
    // each bot whose end has come, the bot takes what is due, moves its mark and arms its next
    // end. Each tick is timed (CPU of the loop's thread, the actors' share included here).
    let index: std::collections::HashMap<BotId, usize> =
        ids.iter().enumerate().map(|(n, id)| (*id, n)).collect();
    // A tick with nothing due, every bot armed: what the loop pays between ends.
    let armed_bots = timer.armed();
    let began = Instant::now();
    let mut woken = 0usize;
    for _ in 0..1_000_000 {
        woken += timer.take_due(start).len();
    }
    assert_eq!(woken, 0);
    let idle_tick = began.elapsed().as_nanos() as f64 / 1e6;
    let began = Instant::now();
    let mut announced = 0usize;
    let mut wakes = 0usize;
    let mut now = start.plus(Duration::hours(12));
    let end = start.plus(Duration::hours(24));
    let mut ticks: Vec<u64> = Vec::with_capacity(12 * 3600 * 40 + 1);
    let mut idle: Vec<u64> = Vec::new();
    while now <= end {
        let tick = Instant::now();
        let due = timer.take_due(now);
        let woke = !due.is_empty();
        for bot in due {
            wakes += 1;
            let n = index[&bot];
            let window = &mut windows[n];
            announced += window.due(now).count();
            window.announced_through(now);
            armed[n] = window.next_end();
            if let Some(next) = armed[n] {
                timer.arm(bot, next);
            }
        }
        let took = tick.elapsed().as_nanos() as u64;
        ticks.push(took);
        if !woke {
            idle.push(took);
        }
        now = now.plus(Duration::milliseconds(25));
    }
    let pop = began.elapsed();
    assert_eq!(announced, votes, "every vote announced once");
    println!(
        "as built: pop {:.1} ns per vote announced ({wakes} wakes of a bot, {:.1} ms in all)",
        pop.as_nanos() as f64 / votes as f64,
        pop.as_secs_f64() * 1e3,
    );
    let mean = ticks.iter().sum::<u64>() as f64 / ticks.len() as f64;
    ticks.sort_unstable();
    let quantile = |q: f64| ticks[((ticks.len() - 1) as f64 * q) as usize];
    println!(
        "per tick of 25 ms ({} ticks over 12 hours, {} with nothing due): mean {:.0} ns, \
         p50 {} ns, p99 {} ns, max {} ns; a tick with nothing due ({} armed bots): {:.0} ns; \
         the loop's share of one core for the timer: {:.4} %",
        ticks.len(),
        idle.len(),
        mean,
        quantile(0.5),
        quantile(0.99),
        ticks[ticks.len() - 1],
        armed_bots,
        idle_tick,
        mean / 25e6 * 100.0,
    );

    // The alternative: one heap of every vote's end.
    let mut heap: BinaryHeap<Reverse<(Timestamp, BotId, Snowflake)>> = BinaryHeap::new();
    let began = Instant::now();
    for vote in 0..votes {
        let end = at(vote).plus(Duration::hours(12));
        heap.push(Reverse((
            end,
            ids[vote % bots],
            Snowflake::from_u64(vote as u64),
        )));
    }
    let insert = began.elapsed();
    let heap_bytes = heap.capacity() * std::mem::size_of::<(Timestamp, BotId, Snowflake)>();
    let began = Instant::now();
    let mut popped = 0usize;
    while heap.pop().is_some() {
        popped += 1;
    }
    let pop = began.elapsed();
    assert_eq!(popped, votes);
    println!(
        "one heap entry per vote: insert {:.1} ns, pop {:.1} ns per vote; {:.1} MB ({:.1} B per vote) on top of the check window",
        insert.as_nanos() as f64 / votes as f64,
        pop.as_nanos() as f64 / votes as f64,
        heap_bytes as f64 / 1e6,
        heap_bytes as f64 / votes as f64,
    );
}
