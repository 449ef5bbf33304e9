//! `sort=relevance`, `match=words` on `GET /bots`, and `GET /bots/suggest`.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, TestApp};

async fn names(app: &TestApp, path: &str) -> Vec<String> {
    let response = app.get(path).await;
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    let body: Value = response.json().await.expect("json");
    body["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|b| b["name"].as_str().expect("a name").to_owned())
        .collect()
}

async fn bot(app: &TestApp, platform_id: u64, name: &str, description: &str, votes: u64) -> String {
    let created = app
        .create_bot(
            platform_id,
            json!({ "name": name, "short_description": description }),
        )
        .await;
    for user in 0..votes {
        app.vote_ok(&created.id, platform_id * 100 + user).await;
    }
    created.id
}

#[actix_web::test]
async fn relevance_ranks_by_where_q_matched_then_votes_with_featured_first() {
    let app = spawn_app().await;
    bot(&app, 1, "Music", "plays songs", 0).await;
    bot(&app, 2, "Musicbox", "plays songs", 1).await;
    bot(&app, 3, "Groovy Music", "plays songs", 2).await;
    bot(&app, 4, "Supermusic", "plays songs", 3).await;
    bot(&app, 5, "Radio", "all the music you want", 4).await;
    bot(&app, 6, "Musical", "music too", 5).await;
    bot(&app, 7, "Weather", "forecasts", 9).await;
    assert_eq!(
        names(&app, "/bots?q=music&sort=relevance").await,
        [
            "Music",
            "Musical",
            "Musicbox",
            "Groovy Music",
            "Supermusic",
            "Radio"
        ]
    );
    // The default sort is unchanged: votes.
    assert_eq!(
        names(&app, "/bots?q=music").await,
        [
            "Musical",
            "Radio",
            "Supermusic",
            "Groovy Music",
            "Musicbox",
            "Music"
        ]
    );
    // Without q, relevance is votes.
    assert_eq!(
        names(&app, "/bots?sort=relevance&limit=3").await,
        names(&app, "/bots?sort=votes&limit=3").await
    );
    // Featured first still.
    let radio = app
        .get("/bots?q=radio")
        .await
        .json::<Value>()
        .await
        .expect("json");
    let radio_id = radio["results"][0]["id"].as_str().expect("id").to_owned();
    let patched = app
        .admin(
            reqwest::Method::PATCH,
            &format!("/admin/bots/{radio_id}"),
            Some(&json!({ "featured": true })),
        )
        .await;
    assert_eq!(patched.status(), StatusCode::OK);
    assert_eq!(
        names(&app, "/bots?q=music&sort=relevance&limit=2").await,
        ["Radio", "Music"]
    );
    // Paging cuts the same order.
    assert_eq!(
        names(&app, "/bots?q=music&sort=relevance&limit=2&offset=2").await,
        ["Musical", "Musicbox"]
    );
}

#[actix_web::test]
async fn match_words_finds_every_word_in_any_order_in_name_or_description() {
    let app = spawn_app().await;
    bot(&app, 1, "Bot for music", "plays songs", 0).await;
    bot(&app, 2, "Music", "the best bot", 1).await;
    bot(&app, 3, "Musicbot", "plays", 2).await;
    bot(&app, 4, "Music", "plays songs", 3).await;
    assert_eq!(
        names(&app, "/bots?q=music+bot&match=words").await,
        ["Musicbot", "Music", "Bot for music"]
    );
    // Substring (the default, and match=substring) keeps its meaning.
    assert_eq!(names(&app, "/bots?q=music+bot").await, Vec::<String>::new());
    assert_eq!(
        names(&app, "/bots?q=music+bot&match=substring").await,
        Vec::<String>::new()
    );
    // Case-folded like q, any spacing.
    assert_eq!(
        names(&app, "/bots?q=%20BOT%20%20%20MUSIC%20&match=words").await,
        ["Musicbot", "Music", "Bot for music"]
    );
    // A word found nowhere: nothing.
    assert_eq!(
        names(&app, "/bots?q=music+zebra&match=words").await,
        Vec::<String>::new()
    );
    let body: Value = app
        .get("/bots?q=music+bot&match=words&sort=relevance")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(body["total"], 3);
}

#[actix_web::test]
async fn suggest_gives_name_word_starts_by_votes_with_id_name_username_avatar() {
    let app = spawn_app().await;
    bot(&app, 1, "Music Bot", "x", 1).await;
    bot(&app, 2, "Groovy Musician", "x", 3).await;
    bot(&app, 3, "Supermusic", "music in the description only", 5).await;
    bot(&app, 4, "The-Music-Box", "x", 2).await;
    let response = app.get("/bots/suggest?q=MUS").await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("json");
    let results = body["results"].as_array().expect("results");
    let shown: Vec<&str> = results
        .iter()
        .map(|r| r["name"].as_str().expect("name"))
        .collect();
    assert_eq!(shown, ["Groovy Musician", "The-Music-Box", "Music Bot"]);
    for result in results {
        let keys: Vec<&str> = result
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["avatar", "id", "name", "username"]);
    }
    assert_eq!(
        names(&app, "/bots/suggest?q=musicia").await,
        ["Groovy Musician"]
    );
    assert_eq!(
        names(&app, "/bots/suggest?q=mus&limit=1").await,
        ["Groovy Musician"]
    );
    assert_eq!(
        names(&app, "/bots/suggest?q=zebra").await,
        Vec::<String>::new()
    );
    // `suggest` is never read as a bot id.
    assert_eq!(
        app.get("/bots/suggest").await.status(),
        StatusCode::BAD_REQUEST
    );
}

#[actix_web::test]
async fn bad_options_are_400_naming_the_parameter() {
    let app = spawn_app().await;
    for (path, name) in [
        ("/bots?q=a&match=all", "`match`"),
        ("/bots?q=a&match=words&match=words", "`match`"),
        ("/bots?sort=relevant", "`sort`"),
        ("/bots/suggest", "`q`"),
        ("/bots/suggest?q=", "`q`"),
        ("/bots/suggest?q=%20%20", "`q`"),
        ("/bots/suggest?q=a&limit=0", "`limit`"),
        ("/bots/suggest?q=a&limit=21", "`limit`"),
        ("/bots/suggest?q=a&limit=x", "`limit`"),
        ("/bots/suggest?q=a&limit=%2B5", "`limit`"),
        ("/bots/suggest?q=a&q=b", "`q`"),
        ("/bots/suggest?q=%zz", "`q`"),
    ] {
        let message =
            assert_error(app.get(path).await, StatusCode::BAD_REQUEST, "bad_request").await;
        assert!(message.contains(name), "{path}: {message}");
    }
    let long = "a".repeat(257);
    let message = assert_error(
        app.get(&format!("/bots/suggest?q={long}")).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert!(message.contains("`q`"), "{message}");
}
