//! `q` of 4 bytes or more with a space or punctuation (` and `, `wizard `): answered as a scan
//! would answer it, read a slice at a time with the server yielding between slices, and paid
//! for by the client a rate-limit request a slice (docs/API.md, "Needles with a space or
//! punctuation"; `index::needles`).

use std::collections::BTreeSet;

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use botlist::domain::text::fold_case;
use botlist::index::needles::PAID_READ;

use crate::helpers::{assert_error, spawn_app_with, test_settings, TestApp};

const NAMES: &[&str] = &[
    "Wizard Bot",
    "wizard",
    "The WIZARD ",
    "Groovy Wizard 12",
    "Sand Andy",
];
const DESCRIPTIONS: &[&str] = &[
    "Cats and dogs",
    "music and more, and games",
    "A wizard bot for you",
    "no conjunction here",
    "Land, and sea.",
    "wizard-and dashes",
    "ANDROID AND IOS",
    "brand new",
];

async fn get(app: &TestApp, query: &str) -> Value {
    let response = app.get(&format!("/bots?{query}")).await;
    let status = response.status();
    if status != StatusCode::OK {
        let headers = format!("{:?}", response.headers());
        panic!(
            "{query}: {status} {headers} {}",
            response.text().await.unwrap_or_default()
        );
    }
    response.json().await.expect("json")
}

fn ids(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|bot| bot["id"].as_str().expect("id").to_owned())
        .collect()
}

#[actix_web::test]
async fn spaced_needles_answer_as_a_scan_of_the_directory_would() {
    let app = spawn_app_with(test_settings()).await;
    let mut n = 0u64;
    for name in NAMES {
        for description in DESCRIPTIONS {
            n += 1;
            app.create_bot(
                n,
                json!({"name": name, "short_description": description, "username": format!("b{n}")}),
            )
            .await;
        }
    }
    // Every bot in the default order (all without votes: by listing id).
    let all = get(&app, "limit=100").await;
    let bots = all["results"].as_array().expect("results").clone();
    assert_eq!(bots.len() as u64, n);
    for needle in [
        " and ",
        "wizard ",
        "WiZaRd ",
        " and",
        "d, ",
        ", and ",
        "and games",
    ] {
        let folded = fold_case(needle);
        let expected: Vec<String> = bots
            .iter()
            .filter(|bot| {
                ["name", "short_description"]
                    .iter()
                    .any(|field| fold_case(bot[*field].as_str().unwrap_or("")).contains(&folded))
            })
            .map(|bot| bot["id"].as_str().expect("id").to_owned())
            .collect();
        assert!(!expected.is_empty(), "`{needle}` matches a bot");
        let q: String = form_urlencoded::byte_serialize(needle.as_bytes()).collect();
        // First search (read), then again (remembered), then ranked by relevance.
        for _ in 0..2 {
            let page = get(&app, &format!("q={q}&limit=100")).await;
            assert_eq!(page["total"], expected.len() as u64, "total of `{needle}`");
            assert_eq!(ids(&page), expected, "results of `{needle}`");
        }
        let ranked = get(&app, &format!("q={q}&limit=100&sort=relevance")).await;
        assert_eq!(
            ranked["total"],
            expected.len() as u64,
            "relevance total of `{needle}`"
        );
        let ranked: BTreeSet<String> = ids(&ranked).into_iter().collect();
        assert_eq!(
            ranked,
            expected.iter().cloned().collect(),
            "relevance of `{needle}`"
        );
    }
}

/// More than [`PAID_READ`] bots hold ` and `: its reading is two requests' worth.
#[actix_web::test]
async fn a_reading_is_paid_a_request_a_slice_refused_when_the_bucket_cannot_hold_it() {
    let mut settings = test_settings();
    settings.rate_limit = 2;
    let app = spawn_app_with(settings).await;
    let bots = PAID_READ + 100;
    for batch in (1..=bots).collect::<Vec<u64>>().chunks(64) {
        join_all(batch.iter().map(|n| {
            app.create_bot(
                *n,
                json!({"short_description": "Cats, and dogs.", "username": format!("b{n}")}),
            )
        }))
        .await;
    }
    // Two needles of `match=words` with punctuation, each two slices: four requests' worth,
    // more than the bucket (2) ever holds.
    let response = app.get("/bots?q=cats,+dogs.&match=words").await;
    let message = assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    assert!(message.starts_with("q: "), "{message}");
    assert!(message.contains("match=words"), "{message}");
    // Two slices: the request and one more, the whole bucket; the exact total.
    app.clock.advance(chrono::Duration::seconds(60));
    let page = get(&app, "q=%20and%20&limit=0").await;
    assert_eq!(page["total"], bots);
    // One request back in 30 s: the request itself is let in, its second slice is not.
    app.clock.advance(chrono::Duration::seconds(30));
    let response = app.get("/bots?q=and%20&limit=0").await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry = response.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body,
        json!({"retry_after": retry.parse::<u64>().expect("seconds")})
    );
    // Once paid for, the same answer as a search of a needle read before.
    app.clock.advance(chrono::Duration::seconds(60));
    assert_eq!(get(&app, "q=and%20&limit=0").await["total"], bots);
    // Remembered: one request, like any search (the bucket gives one back every 30 s).
    for needle in ["%20and%20", "and%20"] {
        app.clock.advance(chrono::Duration::seconds(30));
        assert_eq!(
            get(&app, &format!("q={needle}&limit=0")).await["total"],
            bots
        );
    }
}
