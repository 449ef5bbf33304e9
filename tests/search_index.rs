//! The search index against its oracle: random directories and random sequences of writes
//! (votes, stats posts, edits, listings, delistings, month rollovers), interleaved with random
//! searches, each compared page and total with a plain scan of the same state.

use std::sync::Arc;

use botlist::domain::bot::{BotPatch, BotState, BotView, NewBot, ServerCount};
use botlist::domain::ids::{BotId, Snowflake};
use botlist::domain::search::Search;
use botlist::domain::stats::StatsUpdate;
use botlist::domain::text::VoterName;
use botlist::domain::time::Timestamp;
use botlist::domain::votes::Voter;
use botlist::index::SearchIndex;
use chrono::Duration;
use proptest::prelude::*;
use serde_json::json;

#[path = "support/record.rs"]
mod record;

/// Few letters, so texts collide and needles hit; some fold to more or fewer bytes, and the
/// sigmas exercise the final-sigma rule.
const LETTERS: &[&str] = &["a", "b", "A", "σ", "ς", "Σ", "İ", "ẞ", "ß", "é", "1", " "];
const TAGS: &[&str] = &["music", "fun", "games", "ai"];
const LANGUAGES: &[&str] = &["en", "de", "fr"];

fn text(parts: &[usize]) -> String {
    let body: String = parts.iter().map(|i| LETTERS[*i % LETTERS.len()]).collect();
    // Never blank, and never with spaces at either end.
    format!("x{body}x")
}

#[derive(Clone, Debug)]
struct Listing {
    name: Vec<usize>,
    description: Vec<usize>,
    tags: Vec<usize>,
    language: Option<usize>,
    featured: bool,
}

fn listing() -> impl Strategy<Value = Listing> {
    (
        prop::collection::vec(0usize..12, 0..6),
        prop::collection::vec(0usize..12, 0..8),
        prop::collection::vec(0usize..4, 0..3),
        prop::option::of(0usize..3),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(name, description, tags, language, featured)| Listing {
            name,
            description,
            tags,
            language,
            featured,
        })
}

impl Listing {
    fn fields(&self) -> serde_json::Value {
        let mut tags: Vec<&str> = self.tags.iter().map(|t| TAGS[*t]).collect();
        tags.dedup();
        json!({
            "name": text(&self.name),
            "short_description": text(&self.description),
            "tags": tags,
            "language_code": self.language.map(|l| LANGUAGES[l]),
            "featured": self.featured,
        })
    }
}

#[derive(Clone, Debug)]
enum Op {
    List(Listing),
    Vote {
        bot: usize,
        user: u64,
    },
    /// A whole count, or one shard's count (the shards sum).
    Stats {
        bot: usize,
        count: u64,
        shard: Option<u32>,
    },
    Edit {
        bot: usize,
        listing: Listing,
    },
    Delist {
        bot: usize,
    },
    /// Minutes; large steps cross months.
    Advance(i64),
    Search(String),
    /// Type-ahead: a needle and a limit.
    Suggest(String, usize),
}

fn query() -> impl Strategy<Value = String> {
    // Up to 6 letters: needles past a gram's 3 bytes, with and without a space, go through the
    // words (`index/words.rs`) or the trigrams' verification.
    let q = prop::option::of(prop::collection::vec(0usize..12, 1..7).prop_map(|parts| {
        let needle: String = parts.iter().map(|i| LETTERS[*i % LETTERS.len()]).collect();
        needle
    }));
    let sort = prop::sample::select(vec![
        "votes",
        "newest",
        "monthly_votes",
        "recently_updated",
        "invites",
        "relevance",
    ]);
    (
        (
            q,
            prop::option::of(prop::sample::subsequence(TAGS.to_vec(), 1..3)),
            prop::option::of(prop::sample::select(LANGUAGES.to_vec())),
            prop::option::of(prop::sample::select(vec![
                "lt100",
                "100-1000",
                "1000-10000",
                "gt10000",
            ])),
            prop::option::of(0u64..4),
            sort,
            0u64..6,
            0u64..8,
        ),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |((q, tags, language, invites, votes, sort, limit, offset), words)| {
                let mut params = vec![
                    format!("sort={sort}"),
                    format!("limit={limit}"),
                    format!("offset={offset}"),
                ];
                if words {
                    params.push("match=words".into());
                }
                if let Some(q) = q {
                    let encoded: String = form_urlencoded::byte_serialize(q.as_bytes()).collect();
                    params.push(format!("q={encoded}"));
                }
                if let Some(tags) = tags {
                    params.push(format!("category={}", tags.join(",")));
                }
                if let Some(language) = language {
                    params.push(format!("language={language}"));
                }
                if let Some(invites) = invites {
                    params.push(format!("invites={invites}"));
                }
                if let Some(votes) = votes {
                    params.push(format!("votes={votes}"));
                }
                params.join("&")
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => listing().prop_map(Op::List),
        6 => (0usize..64, 0u64..12).prop_map(|(bot, user)| Op::Vote { bot, user }),
        2 => (0usize..64, prop_oneof![0u64..200, 0u64..20_000], prop::option::of(0u32..3))
            .prop_map(|(bot, count, shard)| Op::Stats { bot, count, shard }),
        1 => (0usize..64, listing()).prop_map(|(bot, listing)| Op::Edit { bot, listing }),
        1 => (0usize..64).prop_map(|bot| Op::Delist { bot }),
        2 => prop_oneof![1i64..600, 10_000i64..50_000].prop_map(Op::Advance),
        6 => query().prop_map(Op::Search),
        3 => (prop::collection::vec(0usize..12, 1..6), 1usize..21).prop_map(|(parts, limit)| {
            Op::Suggest(parts.iter().map(|i| LETTERS[*i % LETTERS.len()]).collect(), limit)
        }),
    ]
}

struct Model {
    bots: Vec<BotState>,
    index: SearchIndex,
    now: Timestamp,
    next_id: u64,
}

impl Model {
    fn new(now: Timestamp) -> Self {
        Self {
            bots: Vec::new(),
            index: SearchIndex::new(now.month()),
            now,
            next_id: 0,
        }
    }

    fn views(&self) -> Vec<Arc<BotView>> {
        self.bots.iter().map(|b| Arc::new(b.view())).collect()
    }

    fn publish(&mut self, bot: usize) {
        let view = Arc::new(self.bots[bot].view());
        self.index.update(view);
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::List(listing) => {
                self.next_id += 1;
                let mut fields = listing.fields();
                fields["platform_id"] = json!((1000 + self.next_id).to_string());
                fields["username"] = json!("bot");
                let new: NewBot = serde_json::from_value(fields).expect("a valid bot");
                // Ids in a scrambled order, so listing order and id order differ.
                let mut bytes = [0u8; 16];
                bytes[..8].copy_from_slice(
                    &self
                        .next_id
                        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                        .to_be_bytes(),
                );
                bytes[8..].copy_from_slice(&self.next_id.to_be_bytes());
                let id = BotId::from_random_bytes(bytes);
                let state = BotState::create(id, new, self.now);
                self.index.insert(Arc::new(state.view()));
                self.bots.push(state);
            }
            Op::Vote { bot, user } => {
                if let Some(bot) = self.pick(*bot) {
                    let voter = Voter {
                        id: Snowflake::from_u64(*user + 1),
                        username: VoterName::parse(format!("u{user}")).expect("valid"),
                        avatar: None,
                    };
                    if self.bots[bot].votes.vote(voter, self.now).is_ok() {
                        self.publish(bot);
                    }
                }
            }
            Op::Stats { bot, count, shard } => {
                if let Some(bot) = self.pick(*bot) {
                    let count = ServerCount::new(*count).expect("in range");
                    let update = match shard {
                        None => StatsUpdate::Whole(count),
                        Some(shard) => StatsUpdate::OneShard {
                            shard: *shard,
                            count,
                            shard_count: None,
                        },
                    };
                    self.bots[bot].post_stats(&update, self.now);
                    self.publish(bot);
                }
            }
            Op::Edit { bot, listing } => {
                if let Some(bot) = self.pick(*bot) {
                    let patch: BotPatch =
                        serde_json::from_value(listing.fields()).expect("a valid patch");
                    record::apply_edit(&mut self.bots[bot], patch, self.now);
                    self.publish(bot);
                }
            }
            Op::Delist { bot } => {
                if let Some(bot) = self.pick(*bot) {
                    let gone = self.bots.swap_remove(bot);
                    self.index.remove(gone.listing.id);
                }
            }
            Op::Advance(minutes) => self.now = self.now.plus(Duration::minutes(*minutes)),
            Op::Search(query) => self.check(query),
            Op::Suggest(q, limit) => {
                let q = botlist::domain::text::fold_case(q);
                let found = self.index.suggest(&q, *limit);
                let expected = botlist::domain::search::suggest_scan(self.views(), &q, *limit);
                let ids = |bots: &[Arc<BotView>]| -> Vec<BotId> {
                    bots.iter().map(|b| b.listing.id).collect()
                };
                assert_eq!(ids(&found), ids(&expected), "suggest `{q}` limit {limit}");
            }
        }
    }

    fn pick(&self, bot: usize) -> Option<usize> {
        (!self.bots.is_empty()).then(|| bot % self.bots.len())
    }

    /// As the server does: the needles only a reading answers are read a few candidates at a
    /// time (here `slice`) before the page is asked for.
    fn check_sliced(&mut self, query: &str, slice: u64) {
        let search = Search::parse(query).expect("a valid query");
        let mut slices = 0;
        while !self.index.read_slice_of(&search, slice).0 {
            slices += 1;
            assert!(slices < 10_000, "the reading of `{query}` ends");
        }
        assert_eq!(
            self.index.left_to_read(&search),
            0,
            "`{query}` read in full"
        );
        self.check(query);
    }

    /// As the directory does: the first search of a new month rolls the monthly order.
    fn check(&mut self, query: &str) {
        let search = Search::parse(query).expect("a valid query");
        if self.index.month() != self.now.month() {
            self.index.roll_month(self.now.month());
        }
        let found = self.index.search(&search);
        let expected = search.run(self.views(), self.now);
        assert_eq!(found.total, expected.total, "total of `{query}`");
        let ids =
            |bots: &[Arc<BotView>]| -> Vec<BotId> { bots.iter().map(|b| b.listing.id).collect() };
        assert_eq!(ids(&found.bots), ids(&expected.bots), "page of `{query}`");
        assert_eq!(self.index.len(), self.bots.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_index_answers_as_a_scan_would(
        initial in prop::collection::vec(listing(), 0..30),
        ops in prop::collection::vec(op(), 1..120),
        start in 0i64..(60 * 24 * 60),
    ) {
        // Start within two months of a month's end, so rollovers come often.
        let now = Timestamp::from_millis(1_790_000_000_000).plus(Duration::minutes(start));
        let mut model = Model::new(now);
        // A recovered directory is indexed in one pass: it must answer as one built bot by bot.
        for listing in initial {
            model.apply(&Op::List(listing));
        }
        model.index = SearchIndex::build(now.month(), model.views());
        for op in &ops {
            model.apply(op);
        }
        model.check("limit=100&sort=monthly_votes");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The index remembers the candidates of recent filtered searches and their rankings: a
    /// few searches asked again and again, between random writes (and twice in a row, when a
    /// ranking is kept), must still answer as a scan would.
    #[test]
    fn remembered_searches_follow_every_write(
        initial in prop::collection::vec(listing(), 0..30),
        pool in prop::collection::vec(query(), 1..4),
        ops in prop::collection::vec((op(), 0usize..4, 0u8..3), 1..150),
        start in 0i64..(60 * 24 * 60),
    ) {
        let now = Timestamp::from_millis(1_790_000_000_000).plus(Duration::minutes(start));
        let mut model = Model::new(now);
        for listing in initial {
            model.apply(&Op::List(listing));
        }
        for (op, pick, asks) in &ops {
            model.apply(op);
            for _ in 0..*asks {
                model.check(&pool[pick % pool.len()]);
            }
        }
    }
}

/// A needle with a space or punctuation of 4 bytes or more (` and `) is read a slice at a time,
/// the server yielding between two slices, and writes land between them (`index::needles`).
/// Needles of letters and spaces, read 1 to 3 candidates a slice, one slice after each random
/// write, and sometimes read to the end and searched: every answer must be a scan's.
fn spaced_query() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(0usize..12, 2..6),
        prop::sample::select(vec![
            "",
            "&sort=relevance",
            "&match=words",
            "&category=music",
        ]),
    )
        .prop_map(|(parts, rest)| {
            let needle: String = std::iter::once(" ")
                .chain(parts.iter().map(|i| LETTERS[*i % LETTERS.len()]))
                .collect();
            let encoded: String = form_urlencoded::byte_serialize(needle.as_bytes()).collect();
            format!("q={encoded}&limit=100{rest}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_reading_in_slices_follows_every_write(
        initial in prop::collection::vec(listing(), 0..40),
        pool in prop::collection::vec(spaced_query(), 1..4),
        ops in prop::collection::vec((op(), 0usize..4, prop::bool::weighted(0.2)), 1..150),
        slice in 1u64..4,
        start in 0i64..(60 * 24 * 60),
    ) {
        let now = Timestamp::from_millis(1_790_000_000_000).plus(Duration::minutes(start));
        let mut model = Model::new(now);
        for listing in initial {
            model.apply(&Op::List(listing));
        }
        for (op, pick, finish) in &ops {
            model.apply(op);
            let query = &pool[pick % pool.len()];
            let search = Search::parse(query).expect("a valid query");
            model.index.read_slice_of(&search, slice);
            if *finish {
                model.check_sliced(query, slice);
            }
        }
        for query in &pool {
            model.check_sliced(query, slice);
        }
    }
}

/// Walking an order and ranking the candidates must agree wherever the crossover falls: a big
/// directory with a filter of every size, each page checked against the scan.
#[test]
fn walking_and_ranking_agree_across_the_crossover() {
    let now = Timestamp::from_millis(1_790_000_000_000);
    let mut model = Model::new(now);
    for i in 0..600usize {
        let listing = Listing {
            name: vec![i % 12, (i / 12) % 12],
            description: vec![(i / 7) % 12],
            tags: (0..(i % 3)).map(|t| (i + t) % 4).collect(),
            language: (i % 5 != 0).then_some(i % 3),
            featured: i % 31 == 0,
        };
        model.apply(&Op::List(listing));
        model.apply(&Op::Stats {
            bot: i,
            count: (i as u64 * 7_919) % 20_000,
            shard: None,
        });
    }
    for query in [
        "category=music",
        "category=music,fun&sort=invites&offset=40&limit=5",
        "language=de&invites=100-1000&sort=newest",
        "q=a&sort=invites&offset=100&limit=100",
        "q=%CE%A3&limit=3",
        "invites=gt10000&offset=3&limit=2&sort=recently_updated",
        "offset=590&limit=20",
        "votes=1",
    ] {
        model.check(query);
    }
}

/// A long needle searched alone is remembered; every listing, edit and delisting after it must
/// keep the remembered answer exact.
#[test]
fn a_remembered_needle_follows_every_write() {
    let now = Timestamp::from_millis(1_790_000_000_000);
    let mut model = Model::new(now);
    let with = |on: bool| Listing {
        name: if on { vec![0, 1, 0, 1] } else { vec![1, 1] },
        description: vec![],
        tags: vec![],
        language: None,
        featured: false,
    };
    for i in 0..12 {
        model.apply(&Op::List(with(i % 3 == 0)));
    }
    let needle = "q=abab&limit=50";
    model.check(needle);
    model.apply(&Op::Edit {
        bot: 1,
        listing: with(true),
    });
    model.check(needle);
    model.apply(&Op::Edit {
        bot: 0,
        listing: with(false),
    });
    model.check(needle);
    model.apply(&Op::List(with(true)));
    model.check(needle);
    model.apply(&Op::Delist { bot: 3 });
    model.check(needle);
    model.apply(&Op::List(with(false)));
    model.check(needle);
}

/// Type-ahead of a long `q` whose trigrams many names hold but whose whole no name starts
/// with: the walk of the votes order expects to fill the page in a few places and finds
/// nothing. It must give up at about what ranking the candidates costs (here under 1,000 of
/// the 2,001 places; at 1,000,000 bots `wizard wizard` walked the whole order, 40 ms), then
/// answer as the scan does.
#[test]
fn a_type_ahead_walk_that_finds_nothing_stops_at_the_cost_of_ranking() {
    let now = Timestamp::from_millis(1_790_000_000_000);
    let mut model = Model::new(now);
    let listing = |name: &[usize], description: &[usize]| Listing {
        name: name.to_vec(),
        description: description.to_vec(),
        tags: vec![],
        language: None,
        featured: false,
    };
    // "xaaax", described "xaa bbx": a candidate of `xaa bb` by its trigrams, not a match.
    let decoy = listing(&[0, 0, 0], &[0, 0, 11, 1, 1]);
    // "xbbbx": not a candidate.
    let other = listing(&[1, 1, 1], &[1]);
    for i in 0..2_000 {
        model.apply(&Op::List(if i % 10 == 0 {
            decoy.clone()
        } else {
            other.clone()
        }));
    }
    let (found, work) = model.index.suggest_counted("xaa bb", 20);
    assert!(found.is_empty());
    assert!(work.visited < 1_000, "{work:?}");
    // One name that does start with it ("xaa bbx"), at the end of the order or not.
    model.apply(&Op::List(listing(&[0, 0, 11, 1, 1], &[1])));
    let (found, work) = model.index.suggest_counted("xaa bb", 20);
    let expected = botlist::domain::search::suggest_scan(model.views(), "xaa bb", 20);
    let ids = |bots: &[Arc<BotView>]| -> Vec<BotId> { bots.iter().map(|b| b.listing.id).collect() };
    assert_eq!(ids(&found), ids(&expected));
    assert_eq!(found.len(), 1);
    assert!(work.visited < 1_000, "{work:?}");
}

/// A category only the oldest bots carry, sorted by `newest`: its candidates are gathered at
/// the order's far end, where a walk expecting them spread would read nearly every place
/// (about 30 ms at 1,000,000 bots). The walk must stop at what ranking them costs and rank
/// them, answering as the scan does.
#[test]
fn a_walk_for_candidates_gathered_at_the_far_end_stops_at_the_cost_of_ranking() {
    let now = Timestamp::from_millis(1_790_000_000_000);
    let mut model = Model::new(now);
    for i in 0..2_000usize {
        model.apply(&Op::List(Listing {
            name: vec![i % 12],
            description: vec![],
            // Tag 0 is the music category: the first 100 bots listed, the oldest.
            tags: vec![usize::from(i >= 100)],
            language: None,
            featured: false,
        }));
        model.apply(&Op::Advance(1));
    }
    for query in [
        "category=music&sort=newest&limit=1",
        "category=music&sort=newest&offset=3&limit=2",
    ] {
        model.check(query);
        model.index.forget_remembered();
        let search = Search::parse(query).expect("a valid query");
        let work = model.index.search(&search).work;
        assert!(work.visited < 500, "`{query}`: {work:?}");
    }
}

/// Ranking a set of a few thousand candidates gives the page the walk gives, in every order,
/// among ties (most bots have no votes and share a rank in `sort=votes`) and featured bots, at
/// shallow and deep pages.
#[test]
fn ranking_many_candidates_agrees_with_the_walk_among_ties() {
    use botlist::index::way::Way;
    let now = Timestamp::from_millis(1_790_000_000_000);
    let mut model = Model::new(now);
    for i in 0..3_000usize {
        let listing = Listing {
            name: vec![i % 12],
            description: vec![],
            tags: vec![usize::from(i % 5 == 0)],
            language: None,
            featured: i % 97 == 0,
        };
        model.apply(&Op::List(listing));
        if i % 3 == 0 {
            model.apply(&Op::Stats {
                bot: i,
                count: (i as u64 * 7_919) % 500,
                shard: None,
            });
        }
        if i % 10 == 0 {
            model.apply(&Op::Vote { bot: i, user: 1 });
        }
        model.apply(&Op::Advance(1));
    }
    // Tag 0 (`music`) is on 4 bots in 5: 2,400 candidates.
    for sort in ["newest", "votes", "invites", "recently_updated"] {
        for (offset, limit) in [(0, 1), (0, 24), (50, 100), (200, 100), (299, 1), (400, 100)] {
            let query = format!("category=music&sort={sort}&offset={offset}&limit={limit}");
            let search = Search::parse(&query).expect("a valid query");
            model.index.forget_remembered();
            let ranked = model.index.page_by(&search, Way::Rank).expect("a page");
            let walked = model.index.page_by(&search, Way::Walk).expect("a page");
            assert_eq!(ranked.0, walked.0, "{query}");
            assert_eq!(ranked.0.len(), limit, "{query}");
            model.check(&query);
        }
    }
}
