//! Property tests of the two rules clients lean on most: vote deduplication and pagination.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::Duration;
use proptest::prelude::*;
use serde_json::json;

use botlist::domain::bot::{BotState, BotView, NewBot, ServerCount};
use botlist::domain::ids::{BotId, Snowflake};
use botlist::domain::search::Search;
use botlist::domain::text::VoterName;
use botlist::domain::time::Timestamp;
use botlist::domain::votes::history::PageQuery;
use botlist::domain::votes::{VoteBook, Voter, RECENT_VOTERS};

fn start() -> Timestamp {
    Timestamp::from_millis(1_790_000_000_000)
}

fn voter(user: u16) -> Voter {
    Voter {
        id: Snowflake::from_u64(user.into()),
        username: VoterName::parse(format!("u{user}")).expect("valid"),
        avatar: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Votes as (user, minutes since the previous vote); users from a pool larger than the ring.
    #[test]
    fn the_voters_list_is_the_last_1000_distinct_voters_newest_first(
        votes in prop::collection::vec((0u16..1400, 0u32..200), 1..2600),
        probes in prop::collection::vec(0u16..1400, 20),
    ) {
        let mut book = VoteBook::new(start());
        let mut now = start();
        // The reference: every accepted vote, in order.
        let mut accepted: Vec<(u16, Timestamp)> = Vec::new();
        let mut last_vote: HashMap<u16, Timestamp> = HashMap::new();
        for (user, minutes) in votes {
            now = now.plus(Duration::minutes(minutes.into()));
            let before = (book.total, book.recent_voters().map(|(v, t)| (v.id, t)).collect::<Vec<_>>());
            let active = last_vote.get(&user).is_some_and(|&t| now.millis() - t.millis() < 12 * 3_600_000);
            match book.vote(voter(user), now) {
                Ok(counts) => {
                    prop_assert!(!active, "a vote within 12 hours was accepted");
                    accepted.push((user, now));
                    last_vote.insert(user, now);
                    prop_assert_eq!(counts.vote_count, accepted.len() as u64);
                }
                Err(_) => {
                    prop_assert!(active, "a vote after 12 hours was refused");
                    let after = (book.total, book.recent_voters().map(|(v, t)| (v.id, t)).collect::<Vec<_>>());
                    prop_assert_eq!(before, after, "a refused vote changed something");
                }
            }
        }
        prop_assert_eq!(book.total, accepted.len() as u64);

        let listed: Vec<(u64, Timestamp)> = book.recent_voters().map(|(v, t)| (v.id.get(), t)).collect();
        prop_assert!(listed.len() <= RECENT_VOTERS);
        let distinct: HashSet<u64> = listed.iter().map(|(u, _)| *u).collect();
        prop_assert_eq!(distinct.len(), listed.len(), "a voter is listed twice");
        prop_assert!(listed.windows(2).all(|w| w[0].1 >= w[1].1), "not newest first");
        let mut expected: Vec<(u64, Timestamp)> = Vec::new();
        let mut seen = HashSet::new();
        for &(user, at) in accepted.iter().rev() {
            if seen.insert(user) {
                expected.push((user.into(), at));
            }
        }
        expected.truncate(RECENT_VOTERS);
        prop_assert_eq!(listed, expected);

        for user in probes {
            let reference = last_vote.get(&user).is_some_and(|&t| now.millis() - t.millis() < 12 * 3_600_000);
            prop_assert_eq!(book.has_voted(Snowflake::from_u64(user.into()), now), reference);
        }
    }
}

#[derive(Clone, Debug)]
struct GenBot {
    featured: bool,
    votes: u8,
    monthly: u8,
    servers: Option<u32>,
    created_minutes: u16,
    updated_minutes: u16,
    tag: u8,
    language: Option<u8>,
    name: u8,
}

fn gen_bot() -> impl Strategy<Value = GenBot> {
    (
        any::<bool>(),
        0u8..6,
        0u8..4,
        prop::option::of(0u32..20_000),
        0u16..50,
        0u16..50,
        0u8..4,
        prop::option::of(0u8..3),
        0u8..5,
    )
        .prop_map(
            |(
                featured,
                votes,
                monthly,
                servers,
                created_minutes,
                updated_minutes,
                tag,
                language,
                name,
            )| GenBot {
                featured,
                votes,
                monthly,
                servers,
                created_minutes,
                updated_minutes,
                tag,
                language,
                name,
            },
        )
}

const TAGS: [&str; 4] = ["music", "fun", "games", "utility"];
const LANGS: [&str; 3] = ["en", "de", "fr"];
const NAMES: [&str; 5] = ["Alpha", "Beta", "Gamma", "Alphabet", "Delta"];

fn view(i: usize, bot: &GenBot) -> Arc<BotView> {
    let created = start().plus(Duration::minutes(bot.created_minutes.into()));
    let new: NewBot = serde_json::from_value(json!({
        "platform_id": (i + 1).to_string(),
        "name": NAMES[bot.name as usize],
        "username": "b",
        "short_description": "a bot",
        "tags": [TAGS[bot.tag as usize]],
        "language_code": bot.language.map(|l| LANGS[l as usize]),
        "featured": bot.featured,
    }))
    .expect("valid");
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&(i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
    let mut state = BotState::create(BotId::from_random_bytes(bytes), new, created);
    state.votes.total = bot.votes.into();
    for _ in 0..bot.monthly {
        state.votes.monthly.add_one(start());
    }
    state.updated_at = start().plus(Duration::minutes(bot.updated_minutes.into()));
    if let Some(servers) = bot.servers {
        state.server_count = ServerCount::new(servers.into());
    }
    Arc::new(state.view())
}

fn query() -> impl Strategy<Value = String> {
    let sort = prop::sample::select(vec![
        "",
        "votes",
        "newest",
        "monthly_votes",
        "recently_updated",
        "invites",
    ]);
    let filter = prop::sample::select(vec![
        "",
        "q=alpha",
        "category=music,fun",
        "language=en",
        "invites=lt100",
        "invites=1000-10000",
        "votes=2",
        "q=zzz",
    ]);
    (sort, filter, 0u64..130)
        .prop_map(|(sort, filter, limit)| format!("sort={sort}&{filter}&limit={limit}"))
}

fn key(bot: &BotView, sort: &str) -> i128 {
    match sort {
        "newest" => bot.listing.created_at.millis().into(),
        "monthly_votes" => bot.monthly.at(start()).into(),
        "recently_updated" => bot.updated_at.millis().into(),
        "invites" => bot.servers().into(),
        _ => bot.vote_count.into(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn pages_put_together_are_the_whole_ordered_result(bots in prop::collection::vec(gen_bot(), 0..80), query in query()) {
        let views: Vec<Arc<BotView>> = bots.iter().enumerate().map(|(i, b)| view(i, b)).collect();
        let search = Search::parse(&query).expect("a valid query");
        let requested: u64 = query.rsplit("limit=").next().and_then(|l| l.parse().ok()).expect("limit");
        prop_assert_eq!(search.limit, requested.min(100), "limit is clamped to 100");
        let sort = query.split('&').next().and_then(|s| s.strip_prefix("sort=")).unwrap_or("");

        let everything = Search { limit: u64::MAX, offset: 0, ..search.clone() }.run(views.clone(), start());
        let full: Vec<BotId> = everything.bots.iter().map(|b| b.listing.id).collect();
        // Featured first, the key never increasing within each block, ties by id ascending.
        for pair in everything.bots.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            prop_assert!(a.listing.featured >= b.listing.featured, "featured first");
            if a.listing.featured == b.listing.featured {
                let (ka, kb) = (key(a, sort), key(b, sort));
                prop_assert!(ka > kb || (ka == kb && a.listing.id < b.listing.id), "order within a block");
            }
        }

        if search.limit == 0 {
            let page = search.run(views.clone(), start());
            prop_assert!(page.bots.is_empty());
            prop_assert_eq!(page.total, full.len() as u64);
            return Ok(());
        }
        let mut joined = Vec::new();
        let mut offset = 0;
        loop {
            let page = Search { offset, ..search.clone() }.run(views.clone(), start());
            prop_assert_eq!(page.total, full.len() as u64, "total is the same on every page");
            prop_assert!(page.bots.len() as u64 <= search.limit);
            if page.bots.is_empty() {
                break;
            }
            joined.extend(page.bots.iter().map(|b| b.listing.id));
            offset += search.limit;
        }
        prop_assert_eq!(joined, full, "pages overlap or leave a gap");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// For random votes (refused ones among them), history is exactly the accepted votes: in
    /// order, numbered from 0; a page walk of any size gives them newest first, each once;
    /// and a snapshot of the book gives the same history back.
    #[test]
    fn history_is_the_list_of_accepted_votes(
        votes in prop::collection::vec((0u16..300, 0u32..300), 1..800),
        limit in 1usize..60,
    ) {
        let mut book = VoteBook::new(start());
        let mut now = start();
        let mut accepted: Vec<(u64, Timestamp)> = Vec::new();
        for (user, minutes) in votes {
            now = now.plus(Duration::minutes(minutes.into()));
            if book.vote(voter(user), now).is_ok() {
                accepted.push((user.into(), now));
            }
        }
        let all: Vec<(u64, u64, Timestamp)> = book
            .history_range(0, u64::MAX, usize::MAX)
            .into_iter()
            .map(|e| (e.position, e.voter.id.get(), e.voted_at))
            .collect();
        let expected: Vec<(u64, u64, Timestamp)> = accepted
            .iter()
            .enumerate()
            .map(|(i, &(user, at))| (i as u64, user, at))
            .collect();
        prop_assert_eq!(&all, &expected);

        let mut walked = Vec::new();
        let mut before = None;
        loop {
            let page = book.history_page(&PageQuery { before, limit, ..PageQuery::default() });
            prop_assert!(page.entries.len() <= limit);
            walked.extend(page.entries.iter().map(|e| (e.position, e.voter.id.get(), e.voted_at)));
            if !page.more {
                break;
            }
            before = page.entries.last().map(|e| e.position);
        }
        walked.reverse();
        prop_assert_eq!(&walked, &expected);

        let bytes = rmp_serde::to_vec(&book).expect("encodes");
        let back: VoteBook = rmp_serde::from_slice(&bytes).expect("decodes");
        let again: Vec<(u64, u64, Timestamp)> = back
            .history_range(0, u64::MAX, usize::MAX)
            .into_iter()
            .map(|e| (e.position, e.voter.id.get(), e.voted_at))
            .collect();
        prop_assert_eq!(again, expected);
    }
}
