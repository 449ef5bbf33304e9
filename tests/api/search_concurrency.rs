//! Searches while writers change sort keys: no page shows a bot twice, and every answer is
//! consistent with one moment of the directory (its total, its filter and its order agree with
//! the values it shows).

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, test_settings, TestApp, TestBot};

const TAGGED: u64 = 40;

/// The order a page must be in, judged by the values the page itself shows.
fn in_order(page: &[Value], key: &str) -> bool {
    let rank = |bot: &Value| {
        (
            !bot["featured"].as_bool().unwrap_or(false),
            std::cmp::Reverse(bot[key].as_u64().unwrap_or(0)),
            bot["id"].as_str().unwrap_or("").to_owned(),
        )
    };
    page.windows(2).all(|pair| rank(&pair[0]) <= rank(&pair[1]))
}

async fn read_pages(app: &TestApp, sort: &str, key: &str) {
    for round in 0..12u64 {
        let limit = 3 + round % 5;
        let mut offset = 0;
        while offset < TAGGED {
            let query = format!("category=music&sort={sort}&limit={limit}&offset={offset}");
            let page: Value = app
                .get(&format!("/bots?{query}"))
                .await
                .json()
                .await
                .expect("json");
            assert_eq!(page["total"], TAGGED, "{query}: {page}");
            let results = page["results"].as_array().expect("results");
            let ids: HashSet<&str> = results.iter().filter_map(|b| b["id"].as_str()).collect();
            assert_eq!(ids.len(), results.len(), "{query}: a bot twice in {page}");
            assert!(
                results.iter().all(|b| b["tags"]
                    .as_array()
                    .is_some_and(|t| t.contains(&json!("music")))),
                "{query}: {page}"
            );
            assert!(in_order(results, key), "{query}: out of order: {page}");
            offset += limit;
        }
    }
}

async fn write(app: &TestApp, bots: &[TestBot], seed: u64) {
    for i in 0..60u64 {
        let n = seed * 1_000 + i;
        let bot = &bots[((n * 7_919) % bots.len() as u64) as usize];
        if i % 2 == 0 {
            app.post_stats(bot, (n * 104_729) % 50_000).await;
        } else {
            app.vote_ok(&bot.id, n + 1).await;
        }
    }
}

#[actix_web::test]
async fn readers_paging_a_filter_while_writers_change_sort_keys_see_consistent_pages() {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.workers = 2;
    settings.actor_threads = 2;
    let app = spawn_app_with(settings).await;
    let mut tagged = Vec::new();
    for i in 0..TAGGED {
        let fields = json!({ "tags": ["music"], "featured": i % 9 == 0 });
        tagged.push(app.create_bot(1_000 + i, fields).await);
    }
    for i in 0..10 {
        app.create_bot(2_000 + i, json!({ "tags": ["fun"] })).await;
    }
    tokio::join!(
        write(&app, &tagged, 1),
        write(&app, &tagged, 2),
        read_pages(&app, "invites", "server_count"),
        read_pages(&app, "votes", "vote_count"),
        read_pages(&app, "monthly_votes", "monthly_vote_count"),
    );
}
