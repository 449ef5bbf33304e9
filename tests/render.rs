//! A bot's public JSON as rendered once per listing (`domain::render`) is byte-for-byte what the
//! plain serializer writes, over random bots: any text a listing may hold (quotes, backslashes,
//! control characters in descriptions, every plane of Unicode), every optional field set or not,
//! any counts, any creation time, read in the month of its monthly count or another, and after
//! an edit.

use std::sync::Arc;

use botlist::domain::bot::{BotPatch, BotState, NewBot, ServerCount};
use botlist::domain::ids::BotId;
use botlist::domain::time::Timestamp;
use proptest::prelude::*;
use serde_json::{json, Value};

#[path = "support/record.rs"]
mod record;

/// Text a single-line field may hold, with the characters that need escaping well represented.
fn line(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('"'),
            Just('\\'),
            Just('/'),
            Just('\u{7f}'),
            Just('\u{2028}'),
            Just('é'),
            Just('😀'),
            Just('ẞ'),
            prop::char::range(' ', '~'),
            any::<char>(),
        ],
        1..max,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// Multi-line text: line breaks, tabs and every control character besides.
fn lines(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('\n'),
            Just('\t'),
            Just('\r'),
            prop::char::range('\u{0}', '\u{1f}'),
            Just('"'),
            Just('\\'),
            any::<char>(),
        ],
        0..max,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn url() -> impl Strategy<Value = String> {
    "https?://[a-z0-9.-]{1,20}(/[a-zA-Z0-9_%?&=.~-]{0,30})?".prop_map(|s| s)
}

fn tag() -> impl Strategy<Value = String> {
    "[a-z0-9-]{1,32}".prop_map(|s| s)
}

#[derive(Debug, Clone)]
struct Counts {
    votes: u64,
    monthly: u8,
    servers: Option<u64>,
    /// Whether the page is read in the month of the monthly count.
    same_month: bool,
}

fn counts() -> impl Strategy<Value = Counts> {
    (
        prop_oneof![Just(0u64), any::<u64>(), 0u64..1000],
        0u8..5,
        prop::option::of(prop_oneof![Just(0u64), 0..=ServerCount::MAX]),
        any::<bool>(),
    )
        .prop_map(|(votes, monthly, servers, same_month)| Counts {
            votes,
            monthly,
            servers,
            same_month,
        })
}

fn fields() -> impl Strategy<Value = Value> {
    (
        (line(65), line(65), lines(300), prop::option::of(lines(400))),
        (
            prop::option::of(url()),
            prop::option::of(url()),
            prop::option::of(url()),
        ),
        (
            prop::collection::vec(tag(), 0..5),
            prop::option::of("[a-z]{2}"),
            prop::option::of(line(33)),
        ),
        (any::<bool>(), any::<bool>(), 1u64..u64::MAX),
    )
        .prop_map(
            |(
                (name, username, short, long),
                (avatar, invite, website),
                (tags, language, prefix),
                (certified, featured, platform),
            )| {
                json!({
                    "platform_id": platform.to_string(),
                    "name": name,
                    "username": username,
                    "short_description": short,
                    "long_description": long,
                    "avatar": avatar,
                    "invite_url": invite,
                    "website_url": website,
                    "github_url": null,
                    "tags": tags,
                    "language_code": language,
                    "prefix": prefix,
                    "certified": certified,
                    "featured": featured,
                })
            },
        )
}

fn created() -> impl Strategy<Value = Timestamp> {
    // From 1970 to the year 9999, and the milliseconds that have no fraction to print.
    prop_oneof![
        (0i64..253_402_300_799_999).prop_map(Timestamp::from_millis),
        (0i64..253_402_300_799).prop_map(|s| Timestamp::from_millis(s * 1000)),
    ]
}

fn state(fields: &Value, at: Timestamp, counts: &Counts) -> Option<BotState> {
    // Values the API would refuse are not bots: a few random texts are blank or too long.
    let new: NewBot = serde_json::from_value(fields.clone()).ok()?;
    let mut state = BotState::create(BotId::from_random_bytes([7; 16]), new, at);
    state.votes.total = counts.votes;
    for _ in 0..counts.monthly {
        state.votes.monthly.add_one(at);
    }
    state.server_count = counts.servers.and_then(ServerCount::new);
    Some(state)
}

fn read_at(at: Timestamp, counts: &Counts) -> Timestamp {
    if counts.same_month {
        at
    } else {
        at.plus(chrono::Duration::days(40))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_rendered_bot_is_what_the_serializer_writes(
        fields in fields(),
        at in created(),
        counts in counts(),
    ) {
        let Some(state) = state(&fields, at, &counts) else {
            return Ok(());
        };
        let view = Arc::new(state.view());
        let now = read_at(at, &counts);
        let plain = serde_json::to_vec(&view.public(now)).expect("serializes");
        let rendered = view.public_json(now);
        prop_assert_eq!(String::from_utf8_lossy(&rendered), String::from_utf8_lossy(&plain));
        prop_assert_eq!(rendered, plain);
    }

    #[test]
    fn an_edited_listing_renders_its_new_self(
        fields in fields(),
        edit in fields(),
        at in created(),
        counts in counts(),
    ) {
        let Some(mut state) = state(&fields, at, &counts) else {
            return Ok(());
        };
        let before = Arc::new(state.view());
        let _ = before.public_json(at);
        let Ok(patch) = serde_json::from_value::<BotPatch>(edit) else {
            return Ok(());
        };
        record::apply_edit(&mut state, patch, at);
        let after = Arc::new(state.view());
        let plain = serde_json::to_vec(&after.public(at)).expect("serializes");
        prop_assert_eq!(after.public_json(at), plain);
        // The validator changes exactly when the bytes do.
        prop_assert_eq!(
            before.public_etag(at) == after.public_etag(at),
            before.public_json(at) == after.public_json(at)
        );
    }
}

#[test]
fn the_validator_follows_each_count() {
    let fields = json!({
        "platform_id": "1234567890",
        "name": "Tag \"Probe\"",
        "username": "probe",
        "short_description": "a bot",
    });
    let at = Timestamp::from_millis(1_790_000_000_000);
    let base = Counts {
        votes: 3,
        monthly: 2,
        servers: Some(10),
        same_month: true,
    };
    let tag = |counts: &Counts| {
        let view = state(&fields, at, counts).expect("valid").view();
        (
            view.public_etag(read_at(at, counts)),
            view.public_json(read_at(at, counts)),
        )
    };
    let (first, body) = tag(&base);
    assert!(
        first.starts_with('"') && first.ends_with('"') && first.len() > 20,
        "{first}"
    );
    for other in [
        Counts {
            votes: 4,
            ..base.clone()
        },
        Counts {
            monthly: 1,
            ..base.clone()
        },
        Counts {
            servers: None,
            ..base.clone()
        },
        Counts {
            servers: Some(11),
            ..base.clone()
        },
        Counts {
            same_month: false,
            ..base.clone()
        },
    ] {
        let (tag, other_body) = tag(&other);
        assert_ne!(body, other_body, "{other:?}");
        assert_ne!(tag, first, "{other:?}");
    }
    assert_eq!(tag(&base).0, first, "stable");
}
