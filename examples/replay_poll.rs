//! The CPU of one poll of a vote stream replaying a bot's history from `Last-Event-ID: 0`, at
//! 235,000 votes (the bot of issue 39): the work a poll does (one page read from the history
//! and rendered as the stream sends it), timed in the thread's CPU for every page of the
//! replay, against the whole backlog read and rendered at once.
//!
//!   cargo run --release --example replay_poll       (or without --release: label debug)
//!   VOTES=1000000 cargo run --release --example replay_poll
//!
//! It leaves out what the connection adds per poll (actix-http's copy into its write buffer
//! and the `write`), which the live feed pays for the same bytes.

use std::time::Duration;

use actix_web::web::BytesMut;
use botlist::api::history::vote_event;
use botlist::config::HistorySettings;
use botlist::domain::ids::Snowflake;
use botlist::domain::text::VoterName;
use botlist::domain::time::Timestamp;
use botlist::domain::votes::history::{VoteHistory, VoterTable};
use botlist::domain::votes::Voter;

fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write into, and the clock id is a constant Linux knows.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Votes `from..to` read and rendered as one chunk, as the stream does for a page: its bytes.
fn render(history: &VoteHistory, table: &VoterTable, from: u64, to: u64, limit: usize) -> usize {
    let mut out = BytesMut::new();
    for entry in history.range(table, from, to, limit) {
        vote_event(&entry, &mut out);
    }
    out.len()
}

fn main() {
    let votes: u64 = std::env::var("VOTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(235_000);
    let page = HistorySettings::default().replay_page;
    let start = Timestamp::from_millis(1_790_000_000_000);
    let table = VoterTable::new();
    let mut history = VoteHistory::default();
    for n in 0..votes {
        let voter = Voter {
            id: Snowflake::from_u64(300_000_000_000_000_000 + n % 50_000),
            username: VoterName::parse(format!("voter{}", n % 50_000)).expect("valid"),
            avatar: Some(
                botlist::domain::text::HttpUrl::parse(format!(
                    "https://cdn.example/avatars/{}.png",
                    n % 50_000
                ))
                .expect("valid"),
            ),
        };
        history.append(
            &table,
            &voter,
            start.plus(chrono::Duration::seconds(n as i64)),
        );
    }
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };

    // Before issue 39's bound: the request's whole replay (what one poll would cost if the
    // stream rendered its backlog in one go).
    let mut whole = Duration::MAX;
    let mut bytes = 0;
    for _ in 0..3 {
        let started = thread_cpu();
        bytes = render(&history, &table, 0, votes, usize::MAX);
        whole = whole.min(thread_cpu() - started);
    }

    // Now: one page a poll. The largest and the mean over every page of the replay.
    let (mut largest, mut total, mut polls) = (Duration::ZERO, Duration::ZERO, 0u32);
    let mut from = 0;
    while from < votes {
        let started = thread_cpu();
        render(&history, &table, from, votes, page);
        let spent = thread_cpu() - started;
        largest = largest.max(spent);
        total += spent;
        polls += 1;
        from += page as u64;
    }
    println!("{build} build, {votes} votes, {bytes} bytes of events, page of {page} votes");
    println!(
        "whole backlog rendered at once: {:.1} ms of CPU",
        whole.as_secs_f64() * 1e3
    );
    println!(
        "one page a poll: {polls} polls, largest {:.3} ms, mean {:.3} ms, all together {:.1} ms",
        largest.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3 / f64::from(polls),
        total.as_secs_f64() * 1e3,
    );
    println!("per vote: {:.0} ns", total.as_nanos() as f64 / votes as f64);
}
