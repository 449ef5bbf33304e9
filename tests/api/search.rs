//! `GET /bots`: filters, sort keys, pagination, query validation and reading one's own writes.

use chrono::{Duration, TimeZone, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use botlist::domain::time::Timestamp;

use crate::helpers::{assert_error, spawn_app, TestApp, TestBot};

const SORT_KEYS: &[&str] = &[
    "votes",
    "newest",
    "monthly_votes",
    "recently_updated",
    "invites",
];

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// One answer of `GET /bots`, its envelope checked.
struct Page {
    results: Vec<Value>,
    limit: u64,
    offset: u64,
    count: u64,
    total: u64,
}

impl Page {
    fn ids(&self) -> Vec<String> {
        self.results
            .iter()
            .map(|bot| bot["id"].as_str().expect("a bot id").to_owned())
            .collect()
    }

    fn bot(&self, id: &str) -> &Value {
        self.results
            .iter()
            .find(|bot| bot["id"] == id)
            .unwrap_or_else(|| panic!("{id} is in the results"))
    }
}

/// `GET /bots?{query}` (the query string as sent, already encoded): 200 and a well-formed envelope.
async fn search(app: &TestApp, query: &str) -> Page {
    let response = app.get(&format!("/bots?{query}")).await;
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, StatusCode::OK, "GET /bots?{query}: {body}");
    let mut keys: Vec<&str> = body
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["count", "limit", "offset", "results", "total"],
        "{body}"
    );
    let number = |field: &str| {
        body[field]
            .as_u64()
            .unwrap_or_else(|| panic!("`{field}` is a number: {body}"))
    };
    let page = Page {
        results: body["results"]
            .as_array()
            .expect("results is an array")
            .clone(),
        limit: number("limit"),
        offset: number("offset"),
        count: number("count"),
        total: number("total"),
    };
    assert_eq!(
        page.count,
        page.results.len() as u64,
        "count is the number of results: {query}"
    );
    assert!(page.count <= page.limit, "at most limit results: {query}");
    page
}

async fn search_ids(app: &TestApp, query: &str) -> Vec<String> {
    search(app, query).await.ids()
}

/// `GET /bots?{query}` is refused with 400 `bad_request`; returns the message.
async fn refused(app: &TestApp, query: &str) -> String {
    let response = app.get(&format!("/bots?{query}")).await;
    assert_eq!(
        response.status(),
        StatusCode::BAD_REQUEST,
        "GET /bots?{query} is refused"
    );
    assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await
}

/// The message names the parameter as a word of its own (`page`, not `pages` or `pager`).
fn assert_names(message: &str, parameter: &str) {
    let is_word_char = |c: char| c.is_alphanumeric() || c == '_';
    let named = message.match_indices(parameter).any(|(at, _)| {
        let before = message[..at].chars().next_back();
        let after = message[at + parameter.len()..].chars().next();
        !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char)
    });
    assert!(named, "the message names `{parameter}`: {message}");
}

/// Query-string encoding of one value.
fn enc(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

fn ids(bots: &[&TestBot]) -> Vec<String> {
    bots.iter().map(|bot| bot.id.clone()).collect()
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort_unstable();
    ids
}

/// The results hold exactly these bots, in any order.
fn assert_same_bots(actual: Vec<String>, expected: &[&TestBot], what: &str) {
    assert_eq!(sorted(actual), sorted(ids(expected)), "{what}");
}

/// Moves the manual clock on, so that the next write has a later timestamp.
fn tick(app: &TestApp) {
    app.clock.advance(Duration::seconds(1));
}

async fn named(app: &TestApp, platform_id: u64, name: &str, short_description: &str) -> TestBot {
    app.create_bot(
        platform_id,
        json!({ "name": name, "short_description": short_description }),
    )
    .await
}

/// `count` votes from users `first_user..`, all accepted.
async fn give_votes(app: &TestApp, bot: &TestBot, count: u64, first_user: u64) {
    for user in first_user..first_user + count {
        app.vote_ok(&bot.id, user).await;
    }
}

async fn patch_bot(app: &TestApp, bot: &TestBot, patch: Value) {
    let response = app
        .admin(
            Method::PATCH,
            &format!("/admin/bots/{}", bot.id),
            Some(&patch),
        )
        .await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "{}",
        response.text().await.unwrap_or_default()
    );
}

async fn delist(app: &TestApp, bot: &TestBot) {
    let response = app
        .admin(Method::DELETE, &format!("/admin/bots/{}", bot.id), None)
        .await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
}

/// `n` plain bots with platform ids `first..first + n`, all created at the same instant.
async fn plain_bots(app: &TestApp, first: u64, n: u64) -> Vec<TestBot> {
    let mut bots = Vec::new();
    for platform_id in first..first + n {
        bots.push(app.create_bot(platform_id, json!({})).await);
    }
    bots
}

// ---------------------------------------------------------------------------------------------
// q / query
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn q_matches_a_case_insensitive_substring_of_the_name_or_of_the_short_description() {
    let app = spawn_app().await;
    let by_name = named(&app, 1, "Music Master", "Plays songs").await;
    let by_description = named(&app, 2, "Moderator", "Keeps MUSIC channels tidy").await;
    let _other = named(&app, 3, "Other", "Nothing to see").await;

    let page = search(&app, "q=mUsIc").await;
    assert_same_bots(
        page.ids(),
        &[&by_name, &by_description],
        "either field, any case",
    );
    assert_eq!(page.total, 2);
    assert_same_bots(
        search_ids(&app, "q=ster").await,
        &[&by_name],
        "inside the name",
    );
    assert_same_bots(
        search_ids(&app, "q=TIDY").await,
        &[&by_description],
        "inside the description",
    );
    assert_same_bots(
        search_ids(&app, &format!("q={}", enc("annels ti"))).await,
        &[&by_description],
        "with a space",
    );

    // Either field on its own: text running from the name into the description is not a match.
    let page = search(&app, &format!("q={}", enc("master plays"))).await;
    assert_eq!((page.total, page.count), (0, 0));
    assert_eq!(search(&app, "q=zzz").await.total, 0);
}

#[actix_web::test]
async fn q_lowercases_unicode_letters_not_only_ascii() {
    let app = spawn_app().await;
    let ecole = named(&app, 1, "ÉCOLE Helper", "Homework").await;
    let uber = named(&app, 2, "Tracker", "Über fast rides").await;
    let _ascii = named(&app, 3, "Ecole plain", "Ueber").await;

    assert_same_bots(
        search_ids(&app, &format!("q={}", enc("école"))).await,
        &[&ecole],
        "upper in name, lower in q",
    );
    assert_same_bots(
        search_ids(&app, &format!("q={}", enc("ÜBER"))).await,
        &[&uber],
        "lower in text, upper in q",
    );
    assert_same_bots(
        search_ids(&app, &format!("q={}", enc("ÉcOlE h"))).await,
        &[&ecole],
        "mixed case",
    );
}

/// Sigma has two lowercase forms: `σ`, and `ς` at the end of a word; both are `Σ` in capitals.
/// A case-insensitive search treats all three as one letter wherever they stand: `str::to_lowercase`
/// on each side picks the final form by position (so `Σ` would miss `ΟΔΟΣ`, lowercased `οδος`), and
/// letter-by-letter lowercasing keeps `ς` apart from `σ` (so `ΚΌΣΜΟΣ` would miss `Κόσμος`).
#[actix_web::test]
async fn q_is_case_insensitive_for_every_form_of_greek_sigma() {
    let app = spawn_app().await;
    let odos = named(&app, 1, "ΟΔΟΣ", "Greek roads").await;
    let asa = named(&app, 2, "ΑΣΑ", "Another Greek bot").await;
    let kosmos = named(&app, 3, "Κ\u{3CC}σμος", "The world").await;

    let cases: [(&str, &[&TestBot], &str); 9] = [
        ("ΟΔΟΣ", &[&odos], "the whole name"),
        ("ΑΣ", &[&asa], "`ΑΣ` starts `ΑΣΑ`"),
        ("Σ", &[&odos, &asa, &kosmos], "a capital sigma"),
        ("σ", &[&odos, &asa, &kosmos], "a small sigma"),
        ("ς", &[&odos, &asa, &kosmos], "a final sigma"),
        ("οδοσ", &[&odos], "`ΟΔΟΣ` in small letters"),
        (
            "οδος",
            &[&odos],
            "`ΟΔΟΣ` in small letters, written with a final sigma",
        ),
        ("Κ\u{38C}ΣΜΟΣ", &[&kosmos], "`Κόσμος` in capitals"),
        (
            "κ\u{3CC}σμοσ",
            &[&kosmos],
            "`Κόσμος` in small letters, no final sigma",
        ),
    ];
    // Every case is tried before failing, so one run shows all the misses.
    let mut misses = Vec::new();
    for (q, expected, why) in cases {
        let found = sorted(search_ids(&app, &format!("q={}", enc(q))).await);
        if found != sorted(ids(expected)) {
            misses.push(format!(
                "q={q} ({why}): found {} of {}",
                found.len(),
                expected.len()
            ));
        }
    }
    assert!(misses.is_empty(), "{misses:#?}");
}

#[actix_web::test]
async fn query_is_an_alias_of_q_and_q_wins_when_both_are_sent() {
    let app = spawn_app().await;
    let apple = named(&app, 1, "Apple", "Fruit one").await;
    let banana = named(&app, 2, "Banana", "Fruit two").await;

    assert_same_bots(
        search_ids(&app, "query=APPLE").await,
        &[&apple],
        "the alias filters",
    );
    assert_same_bots(
        search_ids(&app, "q=banana&query=apple").await,
        &[&banana],
        "q first",
    );
    assert_same_bots(
        search_ids(&app, "query=apple&q=banana").await,
        &[&banana],
        "q second",
    );
}

#[actix_web::test]
async fn an_empty_q_is_no_filter() {
    let app = spawn_app().await;
    let bots = plain_bots(&app, 1, 3).await;
    let all: Vec<&TestBot> = bots.iter().collect();
    for query in ["q=", "query=", "q=&sort=votes"] {
        let page = search(&app, query).await;
        assert_eq!(page.total, 3, "{query}");
        assert_same_bots(page.ids(), &all, query);
    }
}

#[actix_web::test]
async fn q_may_be_256_characters_and_not_257_counting_characters_not_bytes() {
    let app = spawn_app().await;
    let long = app
        .create_bot(1, json!({ "short_description": "é".repeat(280) }))
        .await;
    let _short = app.create_bot(2, json!({})).await;

    // 256 two-byte characters: 512 bytes, still within the limit, and it matches.
    let at_limit = enc(&"É".repeat(256));
    assert_same_bots(
        search_ids(&app, &format!("q={at_limit}")).await,
        &[&long],
        "256 characters",
    );
    assert_same_bots(
        search_ids(&app, &format!("query={at_limit}")).await,
        &[&long],
        "256 characters, alias",
    );

    let over = enc(&"é".repeat(257));
    assert_names(&refused(&app, &format!("q={over}")).await, "q");
    assert_names(&refused(&app, &format!("query={over}")).await, "query");
    assert_names(&refused(&app, &format!("q={}", "a".repeat(257))).await, "q");
}

// ---------------------------------------------------------------------------------------------
// category / tags
// ---------------------------------------------------------------------------------------------

struct Tagged {
    music: TestBot,
    moderation: TestBot,
    games: TestBot,
    untagged: TestBot,
}

async fn tagged_bots(app: &TestApp) -> Tagged {
    Tagged {
        music: app.create_bot(1, json!({ "tags": ["music", "fun"] })).await,
        moderation: app.create_bot(2, json!({ "tags": ["moderation"] })).await,
        games: app.create_bot(3, json!({ "tags": ["fun", "games"] })).await,
        untagged: app.create_bot(4, json!({})).await,
    }
}

#[actix_web::test]
async fn category_keeps_bots_whose_tags_overlap_the_list() {
    let app = spawn_app().await;
    let t = tagged_bots(&app).await;

    assert_same_bots(
        search_ids(&app, "category=moderation").await,
        &[&t.moderation],
        "one tag",
    );
    assert_same_bots(
        search_ids(&app, "category=fun").await,
        &[&t.music, &t.games],
        "a shared tag",
    );
    assert_same_bots(
        search_ids(&app, "category=music,games").await,
        &[&t.music, &t.games],
        "any of the list",
    );
    assert_same_bots(
        search_ids(&app, "category=moderation,music,unknown").await,
        &[&t.moderation, &t.music],
        "an unknown slug matches nothing but does not spoil the rest",
    );
    let page = search(&app, "category=nothing-here").await;
    assert_eq!((page.total, page.count), (0, 0));
    assert!(!search_ids(&app, "category=music,moderation,fun,games")
        .await
        .contains(&t.untagged.id));
}

#[actix_web::test]
async fn category_entries_are_trimmed_lowercased_and_empty_ones_dropped() {
    let app = spawn_app().await;
    let t = tagged_bots(&app).await;

    let messy = enc(" MUSIC , ,,Moderation ,");
    assert_same_bots(
        search_ids(&app, &format!("category={messy}")).await,
        &[&t.music, &t.moderation],
        "category",
    );
    assert_same_bots(
        search_ids(&app, &format!("tags={messy}")).await,
        &[&t.music, &t.moderation],
        "tags",
    );

    // Nothing left after dropping the empty entries: no filter at all.
    let page = search(&app, &format!("category={}", enc(" , ,,"))).await;
    assert_eq!(page.total, 4);
    assert_same_bots(
        page.ids(),
        &[&t.music, &t.moderation, &t.games, &t.untagged],
        "no filter",
    );
}

#[actix_web::test]
async fn tags_is_an_alias_of_category_and_category_wins_when_both_are_sent() {
    let app = spawn_app().await;
    let t = tagged_bots(&app).await;

    assert_same_bots(
        search_ids(&app, "tags=games").await,
        &[&t.games],
        "the alias filters",
    );
    assert_same_bots(
        search_ids(&app, "category=moderation&tags=games").await,
        &[&t.moderation],
        "category first",
    );
    assert_same_bots(
        search_ids(&app, "tags=games&category=moderation").await,
        &[&t.moderation],
        "category second",
    );
}

// ---------------------------------------------------------------------------------------------
// language / langs
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn language_filters_on_the_primary_language_code() {
    let app = spawn_app().await;
    let english = app.create_bot(1, json!({ "language_code": "en" })).await;
    let german = app.create_bot(2, json!({ "language_code": "de" })).await;
    let silent = app.create_bot(3, json!({})).await;

    assert_same_bots(
        search_ids(&app, "language=en").await,
        &[&english],
        "one code",
    );
    assert_same_bots(
        search_ids(&app, &format!("language={}", enc(" EN ,, De"))).await,
        &[&english, &german],
        "a list",
    );
    assert_same_bots(search_ids(&app, "langs=de").await, &[&german], "the alias");
    assert_same_bots(
        search_ids(&app, "language=en&langs=de").await,
        &[&english],
        "language beats langs",
    );
    assert_same_bots(
        search_ids(&app, "langs=de&language=en").await,
        &[&english],
        "in either order",
    );
    assert_eq!(search(&app, "language=fr").await.total, 0);

    // Whatever the list, a bot without a language never matches it.
    for query in ["language=en,de,fr,es,ja", "langs=en,de", "language=xx"] {
        assert!(
            !search_ids(&app, query).await.contains(&silent.id),
            "{query}"
        );
    }
    assert_eq!(
        search(&app, "language=").await.total,
        3,
        "an empty list is no filter"
    );
}

// ---------------------------------------------------------------------------------------------
// invites
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn invites_buckets_split_at_100_1000_and_10000_and_never_posted_counts_as_zero() {
    let app = spawn_app().await;
    let never = app.create_bot(1, json!({})).await;
    let mut posted = Vec::new();
    for (platform_id, servers) in [
        (2, 0),
        (3, 99),
        (4, 100),
        (5, 999),
        (6, 1000),
        (7, 9999),
        (8, 10000),
        (9, (1u64 << 53) - 1),
    ] {
        let bot = app.create_bot(platform_id, json!({})).await;
        app.post_stats(&bot, servers).await;
        posted.push(bot);
    }
    let [zero, n99, n100, n999, n1000, n9999, n10000, huge] = &posted[..] else {
        unreachable!()
    };

    assert_same_bots(
        search_ids(&app, "invites=lt100").await,
        &[&never, zero, n99],
        "lt100",
    );
    assert_same_bots(
        search_ids(&app, "invites=100-1000").await,
        &[n100, n999],
        "100-1000",
    );
    assert_same_bots(
        search_ids(&app, "invites=1000-10000").await,
        &[n1000, n9999],
        "1000-10000",
    );
    assert_same_bots(
        search_ids(&app, "invites=gt10000").await,
        &[n10000, huge],
        "gt10000",
    );
}

// ---------------------------------------------------------------------------------------------
// votes
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn votes_keeps_bots_with_at_least_that_many_votes() {
    let app = spawn_app().await;
    let none = app.create_bot(1, json!({})).await;
    let one = app.create_bot(2, json!({})).await;
    let three = app.create_bot(3, json!({})).await;
    give_votes(&app, &one, 1, 100).await;
    give_votes(&app, &three, 3, 200).await;

    assert_same_bots(
        search_ids(&app, "votes=0").await,
        &[&none, &one, &three],
        "votes=0",
    );
    assert_same_bots(
        search_ids(&app, "votes=1").await,
        &[&one, &three],
        "votes=1",
    );
    assert_same_bots(
        search_ids(&app, "votes=3").await,
        &[&three],
        "votes=3: at least, not more than",
    );
    assert_eq!(search(&app, "votes=4").await.total, 0);
}

#[actix_web::test]
async fn filters_combine_with_and() {
    let app = spawn_app().await;
    let both = app
        .create_bot(
            1,
            json!({ "tags": ["music"], "language_code": "en", "name": "Jukebox" }),
        )
        .await;
    let _wrong_language = app
        .create_bot(
            2,
            json!({ "tags": ["music"], "language_code": "de", "name": "Jukebox DE" }),
        )
        .await;
    let _wrong_tag = app
        .create_bot(
            3,
            json!({ "tags": ["games"], "language_code": "en", "name": "Jukebox Games" }),
        )
        .await;
    let _wrong_name = app
        .create_bot(4, json!({ "tags": ["music"], "language_code": "en" }))
        .await;
    give_votes(&app, &both, 1, 100).await;

    let page = search(
        &app,
        "q=jukebox&category=music&language=en&invites=lt100&votes=1",
    )
    .await;
    assert_eq!(page.total, 1);
    assert_eq!(page.ids(), ids(&[&both]));
}

// ---------------------------------------------------------------------------------------------
// sort
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn the_default_sort_is_votes_descending() {
    let app = spawn_app().await;
    let one = app.create_bot(1, json!({})).await;
    tick(&app);
    let three = app.create_bot(2, json!({})).await;
    tick(&app);
    let two = app.create_bot(3, json!({})).await;
    give_votes(&app, &one, 1, 100).await;
    give_votes(&app, &three, 3, 200).await;
    give_votes(&app, &two, 2, 300).await;

    let expected = ids(&[&three, &two, &one]);
    assert_eq!(search_ids(&app, "").await, expected, "no sort parameter");
    assert_eq!(search_ids(&app, "sort=").await, expected, "an empty sort");
    assert_eq!(search_ids(&app, "sort=votes").await, expected, "sort=votes");
    let votes: Vec<Value> = search(&app, "")
        .await
        .results
        .iter()
        .map(|bot| bot["vote_count"].clone())
        .collect();
    assert_eq!(votes, [json!(3), json!(2), json!(1)]);
}

#[actix_web::test]
async fn sort_newest_orders_by_creation_time_descending() {
    let app = spawn_app().await;
    let first = app.create_bot(1, json!({})).await;
    tick(&app);
    let second = app.create_bot(2, json!({})).await;
    tick(&app);
    let third = app.create_bot(3, json!({})).await;
    give_votes(&app, &first, 2, 100).await;
    // A later edit or stats post does not make a bot newer.
    tick(&app);
    app.post_stats(&first, 10).await;
    patch_bot(&app, &second, json!({ "name": "Renamed" })).await;

    assert_eq!(
        search_ids(&app, "sort=newest").await,
        ids(&[&third, &second, &first])
    );
}

#[actix_web::test]
async fn sort_monthly_votes_counts_only_the_current_month() {
    let app = spawn_app().await;
    let old_favourite = app.create_bot(1, json!({})).await;
    let steady = app.create_bot(2, json!({})).await;
    let rising = app.create_bot(3, json!({})).await;
    give_votes(&app, &old_favourite, 5, 100).await;

    let december = Utc
        .with_ymd_and_hms(2026, 12, 1, 0, 0, 0)
        .single()
        .expect("a date");
    app.clock.set(Timestamp::from_datetime(december));
    give_votes(&app, &steady, 1, 200).await;
    give_votes(&app, &rising, 2, 300).await;

    assert_eq!(
        search_ids(&app, "sort=monthly_votes").await,
        ids(&[&rising, &steady, &old_favourite])
    );
    assert_eq!(
        search_ids(&app, "sort=votes").await,
        ids(&[&old_favourite, &rising, &steady])
    );
    let page = search(&app, "sort=monthly_votes").await;
    assert_eq!(page.bot(&old_favourite.id)["monthly_vote_count"], 0);
    assert_eq!(page.bot(&rising.id)["monthly_vote_count"], 2);
}

#[actix_web::test]
async fn sort_recently_updated_follows_the_last_listing_edit_or_stats_post() {
    let app = spawn_app().await;
    let a = app.create_bot(1, json!({})).await;
    tick(&app);
    let b = app.create_bot(2, json!({})).await;
    tick(&app);
    let c = app.create_bot(3, json!({})).await;
    assert_eq!(
        search_ids(&app, "sort=recently_updated").await,
        ids(&[&c, &b, &a]),
        "never updated: created"
    );

    tick(&app);
    app.post_stats(&a, 7).await;
    assert_eq!(
        search_ids(&app, "sort=recently_updated").await,
        ids(&[&a, &c, &b]),
        "a stats post"
    );

    tick(&app);
    patch_bot(&app, &b, json!({ "short_description": "Edited" })).await;
    assert_eq!(
        search_ids(&app, "sort=recently_updated").await,
        ids(&[&b, &a, &c]),
        "a listing edit"
    );

    // A vote is neither an edit of the listing nor a stats post.
    tick(&app);
    app.vote_ok(&c.id, 900).await;
    assert_eq!(
        search_ids(&app, "sort=recently_updated").await,
        ids(&[&b, &a, &c]),
        "a vote"
    );
}

#[actix_web::test]
async fn sort_invites_orders_by_server_count_with_never_posted_as_zero() {
    let app = spawn_app().await;
    let fifty = app.create_bot(1, json!({})).await;
    let never = app.create_bot(2, json!({})).await;
    let five_thousand = app.create_bot(3, json!({})).await;
    let zero = app.create_bot(4, json!({})).await;
    app.post_stats(&fifty, 50).await;
    app.post_stats(&five_thousand, 5000).await;
    app.post_stats(&zero, 0).await;
    give_votes(&app, &never, 3, 100).await;

    let page = search(&app, "sort=invites").await;
    let ids = page.ids();
    assert_eq!(ids[..2], [five_thousand.id.clone(), fifty.id.clone()]);
    // Never posted and posted 0 tie at 0: listing id ascending.
    assert_eq!(
        ids[2..].to_vec(),
        sorted(vec![never.id.clone(), zero.id.clone()])
    );
    assert!(
        page.bot(&never.id).get("server_count").is_none(),
        "left out until posted"
    );
}

/// Four bots whose order differs under every sort key, two of them featured.
struct Mixed {
    /// featured, created t0, 1 vote, 5 servers posted at t6
    a: TestBot,
    /// created t1, 3 votes, 500 servers posted at t5
    b: TestBot,
    /// featured, created t2, 2 votes, 50 servers posted at t4
    c: TestBot,
    /// created t3, no votes, never posted
    d: TestBot,
}

async fn mixed_bots(app: &TestApp) -> Mixed {
    let a = app.create_bot(1, json!({ "featured": true })).await;
    tick(app);
    let b = app.create_bot(2, json!({})).await;
    tick(app);
    let c = app.create_bot(3, json!({ "featured": true })).await;
    tick(app);
    let d = app.create_bot(4, json!({})).await;
    tick(app);
    app.post_stats(&c, 50).await;
    tick(app);
    app.post_stats(&b, 500).await;
    tick(app);
    app.post_stats(&a, 5).await;
    give_votes(app, &a, 1, 100).await;
    give_votes(app, &b, 3, 200).await;
    give_votes(app, &c, 2, 300).await;
    Mixed { a, b, c, d }
}

#[actix_web::test]
async fn featured_bots_come_first_under_every_sort_each_block_in_sort_order() {
    let app = spawn_app().await;
    let Mixed { a, b, c, d } = mixed_bots(&app).await;

    let expected = [
        ("", ids(&[&c, &a, &b, &d])),
        ("sort=votes", ids(&[&c, &a, &b, &d])),
        ("sort=monthly_votes", ids(&[&c, &a, &b, &d])),
        ("sort=newest", ids(&[&c, &a, &d, &b])),
        ("sort=recently_updated", ids(&[&a, &c, &b, &d])),
        ("sort=invites", ids(&[&c, &a, &b, &d])),
    ];
    for (query, order) in expected {
        let page = search(&app, query).await;
        assert_eq!(page.ids(), order, "{query}");
        let featured: Vec<bool> = page
            .results
            .iter()
            .map(|bot| bot["featured"].as_bool().expect("bool"))
            .collect();
        assert_eq!(featured, [true, true, false, false], "{query}");
    }
}

#[actix_web::test]
async fn ties_are_broken_by_listing_id_ascending_under_every_sort() {
    let app = spawn_app().await;
    // All created at the same instant, no votes, no stats: every sort key ties.
    let plain = plain_bots(&app, 1, 5).await;
    let mut featured = Vec::new();
    for platform_id in 10..13 {
        featured.push(
            app.create_bot(platform_id, json!({ "featured": true }))
                .await,
        );
    }
    let mut expected = sorted(featured.iter().map(|bot| bot.id.clone()).collect());
    expected.extend(sorted(plain.iter().map(|bot| bot.id.clone()).collect()));

    for sort in SORT_KEYS {
        assert_eq!(
            search_ids(&app, &format!("sort={sort}")).await,
            expected,
            "sort={sort}"
        );
    }
}

#[actix_web::test]
async fn results_are_the_public_bot_records() {
    let app = spawn_app().await;
    let bot = app.create_bot(1, json!({ "tags": ["music"], "language_code": "en", "webhook_url": "https://hooks.example/x", "webhook_secret": "s3cret" })).await;
    app.post_stats(&bot, 12).await;
    app.vote_ok(&bot.id, 100).await;

    let page = search(&app, "").await;
    let record: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(page.results, [record]);
    let text = page.results[0].to_string();
    assert!(
        !text.contains("hooks.example") && !text.contains("s3cret"),
        "no owner-only fields: {text}"
    );
}

// ---------------------------------------------------------------------------------------------
// Pagination
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn limit_defaults_to_24_and_is_clamped_to_100() {
    let app = spawn_app().await;
    let bots = plain_bots(&app, 1, 105).await;
    let all = sorted(bots.iter().map(|bot| bot.id.clone()).collect());

    let page = search(&app, "").await;
    assert_eq!(
        (page.limit, page.offset, page.count, page.total),
        (24, 0, 24, 105),
        "the default"
    );
    assert_eq!(page.ids(), all[..24]);

    let page = search(&app, "limit=100").await;
    assert_eq!((page.limit, page.count, page.total), (100, 100, 105));
    assert_eq!(page.ids(), all[..100]);

    for limit in ["101", "1000", "99999999999999999999999999"] {
        let page = search(&app, &format!("limit={limit}")).await;
        assert_eq!(
            (page.limit, page.count, page.total),
            (100, 100, 105),
            "limit={limit}"
        );
    }

    // The clamped limit is the one pages are computed with.
    let page = search(&app, "limit=500&page=2").await;
    assert_eq!((page.limit, page.offset, page.count), (100, 100, 5));
    assert_eq!(page.ids(), all[100..]);
}

#[actix_web::test]
async fn limit_zero_returns_no_results_but_the_true_total() {
    let app = spawn_app().await;
    let bots = plain_bots(&app, 1, 4).await;
    app.vote_ok(&bots[0].id, 100).await;

    let page = search(&app, "limit=0").await;
    assert_eq!(
        (page.limit, page.offset, page.count, page.total),
        (0, 0, 0, 4)
    );
    assert!(page.results.is_empty());
    let page = search(&app, "limit=0&votes=1").await;
    assert_eq!(
        (page.count, page.total),
        (0, 1),
        "the total of the filtered set"
    );
    let page = search(&app, "limit=0&offset=2").await;
    assert_eq!((page.offset, page.count, page.total), (2, 0, 4));
}

#[actix_web::test]
async fn offset_skips_and_page_sets_offset_to_page_minus_one_times_limit() {
    let app = spawn_app().await;
    let bots = plain_bots(&app, 1, 7).await;
    let all = sorted(bots.iter().map(|bot| bot.id.clone()).collect());

    let page = search(&app, "offset=2&limit=3").await;
    assert_eq!(
        (page.limit, page.offset, page.count, page.total),
        (3, 2, 3, 7)
    );
    assert_eq!(page.ids(), all[2..5]);

    let page = search(&app, "page=3&limit=2").await;
    assert_eq!(
        (page.limit, page.offset, page.count, page.total),
        (2, 4, 2, 7)
    );
    assert_eq!(page.ids(), all[4..6]);

    let page = search(&app, "page=1&limit=2").await;
    assert_eq!((page.offset, page.ids()), (0, all[..2].to_vec()));

    let page = search(&app, "page=4&limit=2").await;
    assert_eq!((page.offset, page.count), (6, 1), "a short last page");
    assert_eq!(page.ids(), all[6..]);

    let page = search(&app, "page=2").await;
    assert_eq!(
        (page.limit, page.offset, page.count, page.total),
        (24, 24, 0, 7),
        "page with the default limit"
    );

    let page = search(&app, "offset=50").await;
    assert_eq!(
        (page.offset, page.count, page.total),
        (50, 0, 7),
        "past the end"
    );
    let page = search(&app, "offset=7&limit=5").await;
    assert_eq!(
        (page.offset, page.count, page.total),
        (7, 0, 7),
        "exactly at the end"
    );
}

#[actix_web::test]
async fn offset_wins_over_page() {
    let app = spawn_app().await;
    let bots = plain_bots(&app, 1, 7).await;
    let all = sorted(bots.iter().map(|bot| bot.id.clone()).collect());

    for query in [
        "offset=1&page=3&limit=2",
        "page=3&offset=1&limit=2",
        "limit=2&page=3&offset=1",
    ] {
        let page = search(&app, query).await;
        assert_eq!((page.limit, page.offset), (2, 1), "{query}");
        assert_eq!(page.ids(), all[1..3], "{query}");
    }
    let page = search(&app, "offset=0&page=2&limit=2").await;
    assert_eq!(
        (page.offset, page.ids()),
        (0, all[..2].to_vec()),
        "offset=0 is still an offset"
    );
}

/// Walks every page with `offset` and with `page`; both must give back the full list exactly.
async fn assert_pages_tile_the_list(app: &TestApp, sort: &str, limit: u64) {
    let full = search(app, &format!("sort={sort}&limit=100")).await;
    let mut by_offset = Vec::new();
    let mut by_page = Vec::new();
    let mut page_number = 1;
    while (by_page.len() as u64) < full.total {
        let page = search(
            app,
            &format!("sort={sort}&limit={limit}&page={page_number}"),
        )
        .await;
        assert_eq!(page.total, full.total);
        assert_eq!(page.offset, (page_number - 1) * limit);
        assert!(
            page.count > 0,
            "no empty page before the end ({sort}, limit {limit})"
        );
        by_page.extend(page.ids());
        page_number += 1;
    }
    while (by_offset.len() as u64) < full.total {
        let page = search(
            app,
            &format!("sort={sort}&limit={limit}&offset={}", by_offset.len()),
        )
        .await;
        assert!(page.count > 0);
        by_offset.extend(page.ids());
    }
    assert_eq!(
        by_page,
        full.ids(),
        "pages by number, sort={sort}, limit={limit}"
    );
    assert_eq!(
        by_offset,
        full.ids(),
        "pages by offset, sort={sort}, limit={limit}"
    );
    let distinct: std::collections::HashSet<&String> = by_page.iter().collect();
    assert_eq!(distinct.len() as u64, full.total, "no bot twice");
}

#[actix_web::test]
async fn pages_put_together_are_the_whole_list_without_overlap_or_gap() {
    let app = spawn_app().await;
    let bots = plain_bots(&app, 1, 11).await;
    // Many ties, and featured bots inside the ties.
    for (i, votes) in [0, 1, 0, 2, 1, 0, 0, 1, 0, 2, 0].into_iter().enumerate() {
        give_votes(&app, &bots[i], votes, 100 * (i as u64 + 1)).await;
    }
    for featured in [&bots[2], &bots[3], &bots[8]] {
        patch_bot(&app, featured, json!({ "featured": true })).await;
    }

    assert_pages_tile_the_list(&app, "votes", 3).await;
    assert_pages_tile_the_list(&app, "newest", 4).await;
}

// ---------------------------------------------------------------------------------------------
// Invalid queries
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn malformed_numbers_are_refused_naming_the_parameter() {
    let app = spawn_app().await;
    app.create_bot(1, json!({})).await;
    for parameter in ["limit", "offset", "page", "votes"] {
        for value in ["abc", "-1", "1.5", "%2B5", "1e3", "%205", "0x10", "5a"] {
            let message = refused(&app, &format!("{parameter}={value}")).await;
            assert_names(&message, parameter);
        }
    }
}

/// A filtered page may end at offset + limit = 10,000 and not past it (its cost grows with its
/// depth); without a filter, or with `limit=0` (only the total), any depth is answered.
#[actix_web::test]
async fn a_filtered_page_past_the_window_is_refused_with_the_reason() {
    let app = spawn_app().await;
    plain_bots(&app, 1, 2).await;
    for query in [
        "q=a&offset=9901&limit=100",
        "category=music&page=101&limit=100",
        "q=a&sort=relevance&offset=10000",
        "q=a+b&match=words&offset=10000",
        "language=de&invites=lt100&votes=1&offset=20000",
    ] {
        let message = refused(&app, query).await;
        assert!(
            message.contains("`offset` + `limit` must be at most 10000")
                && message.contains("filter"),
            "{query}: {message}"
        );
    }
    let page = search(&app, "q=a&offset=9900&limit=100").await;
    assert_eq!(page.count, 0, "at the window: answered");
    let page = search(&app, "offset=500000&limit=100").await;
    assert_eq!((page.count, page.total), (0, 2), "no filter: any depth");
    let page = search(&app, "q=bot&offset=500000&limit=0").await;
    assert_eq!(page.count, 0, "only the total");
}

#[actix_web::test]
async fn page_zero_is_refused() {
    let app = spawn_app().await;
    assert_names(&refused(&app, "page=0").await, "page");
    assert_names(&refused(&app, "page=0&limit=10").await, "page");
}

/// "A non-integer number, a negative number ...: 400" holds for `page` even when `offset`
/// decides the offset.
#[actix_web::test]
async fn a_page_that_loses_to_offset_must_still_be_valid() {
    let app = spawn_app().await;
    assert_names(&refused(&app, "offset=0&page=abc").await, "page");
    assert_names(&refused(&app, "offset=0&page=-1").await, "page");
    assert_names(&refused(&app, "offset=0&page=0").await, "page");
}

#[actix_web::test]
async fn unknown_sort_and_invites_values_are_refused() {
    let app = spawn_app().await;
    for value in ["best", "vote", "oldest", "votes%20", "name"] {
        assert_names(&refused(&app, &format!("sort={value}")).await, "sort");
    }
    for value in ["many", "lt1000", "100", "10000-100000", "gt100"] {
        assert_names(&refused(&app, &format!("invites={value}")).await, "invites");
    }
}

#[actix_web::test]
async fn a_parameter_given_twice_is_refused_even_with_the_same_value() {
    let app = spawn_app().await;
    let twice = [
        ("q", "a", "b"),
        ("query", "a", "a"),
        ("category", "music", "games"),
        ("tags", "music", "music"),
        ("language", "en", "de"),
        ("langs", "en", "en"),
        ("invites", "lt100", "gt10000"),
        ("votes", "1", "1"),
        ("sort", "votes", "newest"),
        ("limit", "10", "10"),
        ("offset", "0", "5"),
        ("page", "1", "2"),
    ];
    for (parameter, first, second) in twice {
        for query in [
            format!("{parameter}={first}&{parameter}={second}"),
            format!("{parameter}={first}&unknown=1&{parameter}={second}"),
        ] {
            assert_names(&refused(&app, &query).await, parameter);
        }
    }
}

#[actix_web::test]
async fn unknown_parameters_are_ignored() {
    let app = spawn_app().await;
    let bots = plain_bots(&app, 1, 3).await;
    let all = sorted(bots.iter().map(|bot| bot.id.clone()).collect());
    for query in [
        "foo=bar",
        "foo=1&foo=2",
        "Sort=nonsense&LIMIT=-1",
        "search=zzz&filter=x&q2=y",
        "callback=x&_=123",
    ] {
        let page = search(&app, query).await;
        assert_eq!((page.limit, page.offset, page.total), (24, 0, 3), "{query}");
        assert_eq!(page.ids(), all, "{query}");
    }
}

// ---------------------------------------------------------------------------------------------
// Reading one's own writes
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_vote_is_seen_by_the_very_next_search() {
    let app = spawn_app().await;
    let leader = app.create_bot(1, json!({})).await;
    let chaser = app.create_bot(2, json!({})).await;
    give_votes(&app, &leader, 2, 100).await;

    for votes in 1..=3u64 {
        app.vote_ok(&chaser.id, 200 + votes).await;
        let page = search(&app, &format!("votes={votes}&sort=votes")).await;
        assert_eq!(
            page.bot(&chaser.id)["vote_count"],
            votes,
            "after vote {votes}"
        );
        assert_eq!(
            page.bot(&chaser.id)["monthly_vote_count"],
            votes,
            "after vote {votes}"
        );
        let expected_first = match votes {
            1 => leader.id.clone(),
            2 => leader.id.clone().min(chaser.id.clone()),
            _ => chaser.id.clone(),
        };
        assert_eq!(
            page.ids()[0],
            expected_first,
            "after vote {votes}: a tie goes to the lower id"
        );
    }
    let page = search(&app, "votes=3").await;
    assert_eq!((page.total, page.ids()), (1, ids(&[&chaser])));
    assert_eq!(
        search_ids(&app, "sort=monthly_votes").await,
        ids(&[&chaser, &leader])
    );
}

#[actix_web::test]
async fn a_stats_post_is_seen_by_the_very_next_search() {
    let app = spawn_app().await;
    let bot = app.create_bot(1, json!({})).await;
    let other = app.create_bot(2, json!({})).await;
    app.post_stats(&other, 500).await;
    assert_eq!(search(&app, "invites=100-1000").await.ids(), ids(&[&other]));

    app.post_stats(&bot, 150).await;
    let page = search(&app, "invites=100-1000").await;
    assert_eq!(page.total, 2);
    assert_eq!(page.bot(&bot.id)["server_count"], 150);
    assert_eq!(search_ids(&app, "sort=invites").await, ids(&[&other, &bot]));

    app.post_stats(&bot, 20000).await;
    assert_eq!(search_ids(&app, "invites=100-1000").await, ids(&[&other]));
    assert_eq!(search_ids(&app, "invites=gt10000").await, ids(&[&bot]));
    assert_eq!(search_ids(&app, "sort=invites").await, ids(&[&bot, &other]));

    app.post_stats(&bot, 0).await;
    assert_eq!(search_ids(&app, "invites=lt100").await, ids(&[&bot]));
}

#[actix_web::test]
async fn an_admin_edit_is_seen_by_the_very_next_search() {
    let app = spawn_app().await;
    let bot = named(&app, 1, "Old Name", "Old words").await;
    let other = app
        .create_bot(2, json!({ "tags": ["music"], "language_code": "en" }))
        .await;
    app.vote_ok(&other.id, 100).await;

    patch_bot(
        &app,
        &bot,
        json!({ "name": "Fresh Name", "short_description": "New words" }),
    )
    .await;
    assert_eq!(search_ids(&app, "q=fresh").await, ids(&[&bot]));
    assert_eq!(search_ids(&app, "q=new%20words").await, ids(&[&bot]));
    assert_eq!(
        search(&app, "q=old").await.total,
        0,
        "the old text no longer matches"
    );

    patch_bot(
        &app,
        &bot,
        json!({ "tags": ["games"], "language_code": "de" }),
    )
    .await;
    assert_eq!(search_ids(&app, "category=games").await, ids(&[&bot]));
    assert_eq!(search_ids(&app, "language=de").await, ids(&[&bot]));

    patch_bot(&app, &bot, json!({ "language_code": null, "tags": [] })).await;
    assert_eq!(
        search(&app, "language=de").await.total,
        0,
        "a cleared language never matches"
    );
    assert_eq!(search(&app, "category=games").await.total, 0);

    assert_eq!(search_ids(&app, "").await, ids(&[&other, &bot]));
    patch_bot(&app, &bot, json!({ "featured": true })).await;
    assert_eq!(
        search_ids(&app, "").await,
        ids(&[&bot, &other]),
        "featured first at once"
    );
    patch_bot(&app, &bot, json!({ "featured": false })).await;
    assert_eq!(search_ids(&app, "").await, ids(&[&other, &bot]), "and back");
}

#[actix_web::test]
async fn listing_and_delisting_are_seen_by_the_very_next_search() {
    let app = spawn_app().await;
    let stays = named(&app, 1, "Stays", "Here").await;
    assert_eq!(search(&app, "").await.total, 1);

    let goes = named(&app, 2, "Goes Away", "Soon").await;
    let page = search(&app, "").await;
    assert_eq!(page.total, 2, "a new listing at once");
    assert_same_bots(page.ids(), &[&stays, &goes], "both listed");

    delist(&app, &goes).await;
    let page = search(&app, "").await;
    assert_eq!((page.total, page.ids()), (1, ids(&[&stays])));
    assert_eq!(search(&app, "q=goes").await.total, 0);
    let page = search(&app, "limit=0").await;
    assert_eq!(page.total, 1);
}

/// The same URL, asked again after each kind of change: a page is kept for the index's state
/// it was read from, so every change (a vote, a server count, an edit, a removal, a new month)
/// must show at once, and the old validator must no longer match.
#[actix_web::test]
async fn a_page_asked_again_shows_every_change_made_since_it_was_first_answered() {
    let app = spawn_app().await;
    let last_instant = Utc
        .with_ymd_and_hms(2026, 11, 30, 23, 59, 59)
        .single()
        .expect("date");
    app.clock.set(Timestamp::from_datetime(last_instant));
    let first = named(&app, 1, "First Bot", "one").await;
    let second = named(&app, 2, "Second Bot", "two").await;
    give_votes(&app, &first, 1, 100).await;
    const URL: &str = "/bots?sort=monthly_votes";

    // The validator of the answer as it is now; asked twice, the second from the kept page.
    async fn answer(app: &TestApp) -> (Value, String) {
        let mut seen = Vec::new();
        for _ in 0..2 {
            let response = app.get(URL).await;
            assert_eq!(response.status(), StatusCode::OK);
            let etag = response.headers()["etag"]
                .to_str()
                .expect("ascii")
                .to_string();
            let body: Value = response.json().await.expect("json");
            seen.push((body, etag));
        }
        assert_eq!(seen[0], seen[1], "a page asked again is the same answer");
        seen.remove(0)
    }
    let (before, mut etag) = answer(&app).await;
    assert_eq!(before["results"][0]["id"], first.id);
    assert_eq!(before["results"][0]["monthly_vote_count"], 1);
    assert_eq!(
        app.revalidate(URL, &etag).await.status(),
        StatusCode::NOT_MODIFIED
    );

    fn changed(etag: &mut String, new_etag: String, what: &str) {
        assert_ne!(&new_etag, etag, "{what}: a new validator");
        *etag = new_etag;
    }

    give_votes(&app, &second, 2, 200).await;
    let (body, new_etag) = answer(&app).await;
    assert_eq!(
        body["results"][0]["id"], second.id,
        "a vote reorders the page"
    );
    assert_eq!(body["results"][0]["monthly_vote_count"], 2);
    changed(&mut etag, new_etag, "a vote");

    app.post_stats(&first, 1234).await;
    let (body, new_etag) = answer(&app).await;
    assert_eq!(body["results"][1]["server_count"], 1234);
    changed(&mut etag, new_etag, "a server count");

    patch_bot(&app, &first, json!({ "name": "Renamed Bot" })).await;
    let (body, new_etag) = answer(&app).await;
    assert_eq!(body["results"][1]["name"], "Renamed Bot");
    changed(&mut etag, new_etag, "an edit");

    app.clock.advance(Duration::seconds(1));
    let (body, new_etag) = answer(&app).await;
    assert_eq!(
        (
            &body["results"][0]["monthly_vote_count"],
            &body["results"][1]["monthly_vote_count"]
        ),
        (&json!(0), &json!(0)),
        "a new month with no write"
    );
    changed(&mut etag, new_etag, "a new month");

    delist(&app, &second).await;
    let (body, new_etag) = answer(&app).await;
    assert_eq!(body["total"], 1, "a removal");
    changed(&mut etag, new_etag, "a removal");
}
