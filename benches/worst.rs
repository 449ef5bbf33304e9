//! The worst case of every `GET /bots` and `GET /bots/suggest` parameter, alone and together:
//! a grid over the parameter space at each size, every search timed as a first search (the
//! index's remembered needles and filter sets forgotten before it) in the thread's CPU time,
//! with the work it counted. Prints the worst combinations found and the table of
//! docs/PERFORMANCE.md ("The cost of one request").
//!
//!   cargo bench --bench worst                          (100,000 and 1,000,000 bots)
//!   BOTLIST_BENCH_SIZES=20000 cargo bench --bench worst
//!   BOTLIST_BENCH_ONLY='q=wizard&sort=relevance' cargo bench --bench worst
//!       (one listed case, searched 200 times as a first search: for `perf record`)
//!   BOTLIST_BENCH_WAYS=1 BOTLIST_BENCH_SIZES=1000000 cargo bench --bench worst
//!       (what one step of a walk and one ranked document cost: `index/way.rs`)
//!   BOTLIST_BENCH_GATHERED=1 BOTLIST_BENCH_SIZES=1000000 cargo bench --bench worst
//!   BOTLIST_BENCH_GATHERED=1 BOTLIST_BENCH_SHARES=45 BOTLIST_BENCH_SIZES=1000000 cargo bench --bench worst
//!       (a filter only the oldest bots match, paged from the newest: a set gathered at the
//!       far end of its order, which the generated directory never holds)
//!
//! Each search is done as the server does it: a needle that only a reading of texts answers is
//! read a slice at a time, yielding between slices (`index::needles`); the CPU and work shown
//! are the dearest step's, what a request costs "before it yields".
//!
//! The bound is 5 ms of CPU for any request at 1,000,000 bots (issue 39); the work counts are
//! what `tests/search_work.rs` holds each listed case to.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use botlist::demo::{self, DemoSize};
use botlist::domain::bot::BotView;
use botlist::domain::search::{Search, Work};
use botlist::domain::time::Timestamp;
use botlist::index::way::{self, Way};
use botlist::index::SearchIndex;
use criterion::black_box;

fn sizes() -> Vec<usize> {
    std::env::var("BOTLIST_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 1_000_000])
}

fn build(bots: usize) -> SearchIndex {
    build_with(bots, |_| {})
}

/// [`build`], with the generated views changed before they are indexed.
fn build_with(bots: usize, change: impl FnOnce(&mut Vec<Arc<BotView>>)) -> SearchIndex {
    let now = Timestamp::from_millis(1_795_000_000_000);
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
    let views: Vec<Arc<BotView>> = generated
        .state
        .bots
        .into_iter()
        .map(|b| {
            let mut state = b.state;
            state.restore();
            Arc::new(state.view())
        })
        .collect();
    let mut views = views;
    change(&mut views);
    let started = std::time::Instant::now();
    let index = SearchIndex::build(now.month(), views);
    println!(
        "index of {bots} bots built at once in {:.3} s (wall clock)",
        started.elapsed().as_secs_f64()
    );
    index
}

fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write into, and the clock id is a constant Linux knows.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The cases docs/PERFORMANCE.md lists by name (and `tests/search_work.rs` bounds).
fn listed() -> Vec<(&'static str, String)> {
    let all_tags = "music,moderation,fun,games,economy,utility,social,anime,memes,leveling,\
                    logging,roleplay,fortnite,minecraft,crypto,stream,ai,translation,giveaway,\
                    tickets,welcome,reaction-roles,polls,nsfw-filter";
    vec![
        ("/bots", "q=e&sort=relevance".into()),
        ("/bots", "q=ard&sort=relevance".into()),
        ("/bots", "q=wizard&sort=relevance".into()),
        ("/bots", "q=%2C&sort=relevance".into()),
        ("/bots", "q=e&sort=relevance&offset=5000&limit=100".into()),
        ("/bots", "q=e&match=words&sort=relevance&limit=100".into()),
        ("/bots", "q=groovy+wizard&match=words&sort=relevance".into()),
        (
            "/bots",
            format!("q=e&match=words&category={all_tags}&sort=relevance&limit=100"),
        ),
        (
            "/bots",
            format!("category={all_tags}&offset=5000&limit=100"),
        ),
        ("/bots", "q=wizard".into()),
        ("/bots", "q=groovy+wiz".into()),
        (
            "/bots",
            "category=music&sort=newest&offset=5000&limit=100".into(),
        ),
        (
            "/bots",
            "language=de&invites=100-1000&offset=5000&limit=100".into(),
        ),
        ("/bots", "votes=100".into()),
        ("/bots", "offset=900000&limit=100".into()),
        ("suggest", "w".into()),
        ("suggest", "wizard".into()),
        ("/bots", "votes=65".into()),
        ("/bots", "votes=100&sort=newest&limit=100".into()),
        ("/bots", "votes=1000&category=music&sort=relevance".into()),
        ("/bots", "q=a+b".into()),
        ("/bots", "q=e.".into()),
        ("/bots", "q=-".into()),
        ("/bots", "q=a&match=words".into()),
        ("/bots", "q=+and+".into()),
        ("/bots", "q=+and+&sort=relevance".into()),
        ("/bots", "q=wizard+&sort=relevance".into()),
    ]
}

/// The grid: each parameter at its extremes, and in combination.
fn grid() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let qs = [
        "",
        "e",
        "x",
        ",",
        "er",
        "ard",
        "wizard",
        "groovy+wizard",
        "e+a",
        "zzzzzz",
        // Needles with a space or punctuation (issue 39): short ones are grams; long ones are
        // verified once. ` and ` is in six of the eight descriptions the generator writes.
        "e.",
        "-",
        "+and+",
        "wizard+",
        "s%2C+jobs",
    ];
    let categories = ["", "music", "music,fun,games,ai,memes,polls,crypto,stream"];
    let sorts = ["votes", "newest", "relevance"];
    let pages = ["", "offset=5000", "offset=100000", "offset=999900"];
    for q in qs {
        for words in [false, true] {
            if words && (q.is_empty() || q == ",") {
                continue;
            }
            for category in categories {
                for sort in sorts {
                    for page in pages {
                        for limit in ["", "limit=100"] {
                            let mut params = vec![];
                            if !q.is_empty() {
                                params.push(format!("q={q}"));
                            }
                            if words {
                                params.push("match=words".into());
                            }
                            if !category.is_empty() {
                                params.push(format!("category={category}"));
                            }
                            params.push(format!("sort={sort}"));
                            if !page.is_empty() {
                                params.push(page.into());
                            }
                            if !limit.is_empty() {
                                params.push(limit.into());
                            }
                            out.push(("/bots", params.join("&")));
                        }
                    }
                }
            }
        }
    }
    for extra in [
        "language=de",
        "invites=100-1000",
        "votes=5",
        "votes=65",
        "votes=100",
        "votes=1000",
        "votes=100000",
        "language=de&invites=100-1000&votes=3",
    ] {
        for page in ["", "&offset=5000&limit=100", "&offset=100000&limit=100"] {
            out.push(("/bots", format!("{extra}{page}")));
            out.push(("/bots", format!("q=e&{extra}&sort=relevance{page}")));
        }
    }
    for q in [
        "w",
        "b",
        "wi",
        "wiz",
        "wizard",
        "wizar",
        "groovy",
        "groov",
        "zyxw",
        "e",
        "1",
        "wizard wizard",
        "groovy 1",
        "rusty wizard 9",
    ] {
        out.push(("suggest", q.into()));
    }
    out
}

/// One first search (everything remembered forgotten), done as the server does it, and the
/// CPU time and work of its dearest step: a needle that only a reading answers is read a slice
/// at a time, the server yielding between two slices (`index::needles`), then the page is
/// found. The least of three.
fn measure(index: &SearchIndex, route: &str, params: &str) -> (Duration, Work) {
    let (cpu, work, _, _) = measure_steps(index, route, params);
    (cpu, work)
}

/// [`measure`], with the number of steps and the CPU time of them all (least of three).
fn measure_steps(
    index: &SearchIndex,
    route: &str,
    params: &str,
) -> (Duration, Work, u32, Duration) {
    let mut best = (Duration::MAX, Work::default(), 0, Duration::MAX);
    for _ in 0..3 {
        index.forget_remembered();
        let (mut dearest, mut work, mut steps, mut all) =
            (Duration::ZERO, Work::default(), 0, Duration::ZERO);
        let mut step = |cpu: Duration, w: Work| {
            steps += 1;
            all += cpu;
            if cpu > dearest {
                (dearest, work) = (cpu, w);
            }
        };
        if route == "suggest" {
            let started = thread_cpu();
            let w = black_box(index.suggest_counted(params, 20)).1;
            step(thread_cpu() - started, w);
        } else {
            let search = Search::parse(params).expect("a valid query");
            let started = thread_cpu();
            let mut reading = black_box(index.left_to_read(&search)) > 0;
            let mut since = started;
            while reading {
                let (done, w) = black_box(index.read_slice(&search));
                let now = thread_cpu();
                step(now - since, w);
                since = now;
                reading = !done;
            }
            let w = black_box(index.search(&search)).work;
            step(thread_cpu() - since, w);
        }
        if dearest < best.0 {
            best = (dearest, work, steps, all);
        }
    }
    best
}

/// Searches one case over and over as a first search, so that a profiler sees little else.
fn only(case: &str) {
    for bots in sizes() {
        let index = build(bots);
        let (route, params) = if let Some(prefix) = case.strip_prefix("suggest ") {
            ("suggest", prefix.to_string())
        } else {
            ("/bots", case.to_string())
        };
        let mut cpus = Vec::new();
        let mut work = Work::default();
        for _ in 0..200 {
            let (cpu, w) = measure(&index, route, &params);
            cpus.push(cpu);
            work = w;
        }
        cpus.sort_unstable();
        println!(
            "{bots} bots: {route} {params}: least {:.3} ms, median {:.3} ms, work {} ({} / {} / {})",
            cpus[0].as_secs_f64() * 1e3,
            cpus[cpus.len() / 2].as_secs_f64() * 1e3,
            work.total(),
            work.visited,
            work.read,
            work.postings
        );
    }
}

/// The CPU of one place walked and of one document ranked (`index/way.rs`): filtered pages
/// found both ways, each the least of five after the candidates are remembered, divided by
/// the places visited or the documents read.
fn ways() {
    let filters = [
        "language=de",
        "category=music",
        "category=music,fun,games",
        "category=music,fun,games,ai,memes,polls,crypto,stream",
    ];
    for bots in sizes() {
        let index = build(bots);
        let (mut steps, mut reads) = (Vec::new(), Vec::new());
        println!("\n== {bots} bots: filter, sort, page end: candidates; walk (visited, ns a step); rank (read, ns a document)");
        for filter in filters {
            for sort in ["newest", "votes"] {
                for offset in [0, 900, 4_900, 9_900] {
                    let params = format!("{filter}&sort={sort}&offset={offset}&limit=100");
                    let search = Search::parse(&params).expect("a valid query");
                    let total = index.search(&search).total;
                    let mut per = [0.0f64; 2];
                    let mut counts = [0u64; 2];
                    for (i, way) in [Way::Walk, Way::Rank].into_iter().enumerate() {
                        let mut best = Duration::MAX;
                        for _ in 0..5 {
                            let started = thread_cpu();
                            let Some((page, work)) = black_box(index.page_by(&search, way)) else {
                                break;
                            };
                            best = best.min(thread_cpu() - started);
                            black_box(page);
                            counts[i] = work.visited + work.read;
                        }
                        per[i] = best.as_nanos() as f64 / counts[i].max(1) as f64;
                    }
                    if counts[0] == 0 {
                        continue;
                    }
                    println!(
                        "{params}: {total}; walk {} places, {:.1} ns; rank {} docs, {:.1} ns",
                        counts[0], per[0], counts[1], per[1]
                    );
                    // A walk of a few places is mostly its fixed cost: not a step's.
                    if counts[0] >= 10_000 {
                        steps.push(per[0]);
                    }
                    if counts[1] >= 10_000 {
                        reads.push(per[1]);
                    }
                }
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        println!(
            "{bots} bots: median {:.1} ns a place walked ({} pages), {:.1} ns a document ranked ({} pages); in use: {} and {}",
            median(&mut steps),
            steps.len(),
            median(&mut reads),
            reads.len(),
            way::WALK_STEP_NS,
            way::RANK_READ_NS
        );
    }
}

/// A language only the oldest `gathered` bots speak (every other bot has none), asked newest
/// first at each page end a filter allows: the sort's order holds every candidate at its far
/// end. The CPU and work of each page (first search, least of three).
fn gathered() {
    // `BOTLIST_BENCH_SHARES=45,60`: only those shares (in percent of the directory).
    let shares: Vec<usize> = std::env::var("BOTLIST_BENCH_SHARES")
        .ok()
        .map(|list| {
            list.split(',')
                .filter_map(|s| s.trim().parse().ok())
                .collect()
        })
        .unwrap_or_else(|| vec![1, 10, 30, 45, 60]);
    for bots in sizes() {
        for &share in &shares {
            let gathered = bots * share / 100;
            let index = build_with(bots, |views| {
                views.sort_by_key(|view| (view.listing.created_at, view.listing.id));
                let language = botlist::domain::text::LanguageCode::parse("xx".into())
                    .expect("a language code");
                for (i, view) in views.iter_mut().enumerate() {
                    let mut listing = (*view.listing).clone();
                    listing.language_code = (i < gathered).then(|| language.clone());
                    Arc::make_mut(view).listing = Arc::new(listing);
                }
            });
            for sort in ["newest", "votes"] {
                for offset in [0, 4_900, 9_900] {
                    let params = format!("language=xx&sort={sort}&offset={offset}&limit=100");
                    let (cpu, work) = measure(&index, "/bots", &params);
                    println!(
                        "{bots} bots, {gathered} oldest match: {params}: {:.3} ms, work {} ({} \
                         visited / {} read)",
                        cpu.as_secs_f64() * 1e3,
                        work.total(),
                        work.visited,
                        work.read
                    );
                }
            }
        }
    }
}

fn main() {
    // criterion's harness flags (`--bench`) are not ours.
    if std::env::var_os("BOTLIST_BENCH_WAYS").is_some() {
        return ways();
    }
    if std::env::var_os("BOTLIST_BENCH_GATHERED").is_some() {
        return gathered();
    }
    if let Ok(case) = std::env::var("BOTLIST_BENCH_ONLY") {
        return only(&case);
    }
    // The largest first, so that its worst combinations are known when the others are measured.
    let mut sizes = sizes();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let mut table: BTreeMap<(usize, String), Vec<(Duration, Work)>> = BTreeMap::new();
    let mut worst_of_largest = Vec::new();
    for (n, &bots) in sizes.iter().enumerate() {
        let index = build(bots);
        let memory = index.memory();
        println!(
            "\n== {bots} bots: index {:.1} MB counted, of which the words {:.1} MB ({:.0} bytes a \
             bot)",
            memory.total() as f64 / 1e6,
            memory.words as f64 / 1e6,
            memory.words as f64 / bots as f64
        );
        let mut found: Vec<(Duration, Work, &str, String)> = Vec::new();
        let mut refused = 0;
        for (route, params) in grid() {
            if route != "suggest" && Search::parse(&params).is_err() {
                // Answered 400 before any search (a filtered page past its bound): no work.
                refused += 1;
                continue;
            }
            let (cpu, work) = measure(&index, route, &params);
            found.push((cpu, work, route, params));
        }
        found.sort_by_key(|f| std::cmp::Reverse(f.0));
        println!(
            "\n== {bots} bots: {} combinations, the 15 dearest (first search, least of 3):",
            found.len()
        );
        for (cpu, work, route, params) in found.iter().take(15) {
            println!(
                "{:>9.3} ms {:>9} work  {route} {params}",
                cpu.as_secs_f64() * 1e3,
                work.total()
            );
        }
        let over = found
            .iter()
            .filter(|f| f.0 > Duration::from_millis(5))
            .count();
        println!("over 5 ms: {over}; refused before searching: {refused}");
        if n == 0 {
            worst_of_largest = found.iter().take(5).map(|f| (f.2, f.3.clone())).collect();
        }
        for (i, (route, params)) in listed().into_iter().enumerate() {
            let (cpu, work, steps, all) = measure_steps(&index, route, &params);
            if steps > 1 {
                println!(
                    "{route} {params}: {steps} steps (slices read, then the page), {:.3} ms in all, \
                     the dearest {:.3} ms",
                    all.as_secs_f64() * 1e3,
                    cpu.as_secs_f64() * 1e3
                );
            }
            let m = (cpu, work);
            table
                .entry((i, format!("{route} {params}")))
                .or_default()
                .push(m);
        }
        for (route, params) in &worst_of_largest {
            let m = measure(&index, route, params);
            table
                .entry((usize::MAX, format!("{route} {params}")))
                .or_default()
                .push(m);
        }
    }
    let heads: Vec<String> = sizes.iter().rev().map(|s| format!("CPU at {s}")).collect();
    println!(
        "\n| route and parameters | work at {} (visited / read / postings) | {} |",
        sizes.first().unwrap_or(&0),
        heads.join(" | ")
    );
    println!("|---|---:|{}", "---:|".repeat(sizes.len()));
    for ((_, case), runs) in &table {
        let Some((_, work)) = runs.first() else {
            continue;
        };
        let cpus: Vec<String> = runs
            .iter()
            .rev()
            .map(|(cpu, _)| format!("{:.3} ms", cpu.as_secs_f64() * 1e3))
            .collect();
        println!(
            "| `{case}` | {} ({} / {} / {}) | {} |",
            work.total(),
            work.visited,
            work.read,
            work.postings,
            cpus.join(" | ")
        );
    }
}
