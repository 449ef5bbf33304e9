//! `GET /bots/:id/badge/{servers|votes|monthly_votes}.svg`.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{assert_error, spawn_app, TestApp};

async fn badge(app: &TestApp, path: &str) -> (reqwest::header::HeaderMap, String) {
    let response = app.get(path).await;
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    let headers = response.headers().clone();
    (headers, response.text().await.expect("a body"))
}

/// The texts of the badge's visible `<text>` elements (the shadows are `aria-hidden`), after
/// checking that the whole is well-formed XML with an `<svg>` root as wide as it says.
fn texts(svg: &str) -> Vec<String> {
    let document = roxmltree::Document::parse(svg).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    assert_eq!(root.attribute("height"), Some("20"));
    root.descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("aria-hidden").is_none())
        .map(|n| n.text().unwrap_or_default().to_owned())
        .collect()
}

/// Renames the bot through the admin API: the name is the badge's title.
async fn rename(app: &TestApp, bot: &str, name: &str) {
    let renamed = app
        .admin(
            reqwest::Method::PATCH,
            &format!("/admin/bots/{bot}"),
            Some(&json!({ "name": name })),
        )
        .await;
    assert_eq!(renamed.status(), StatusCode::OK);
}

fn width(svg: &str) -> u64 {
    let document = roxmltree::Document::parse(svg).expect("well-formed XML");
    document
        .root_element()
        .attribute("width")
        .and_then(|w| w.parse().ok())
        .expect("a whole width")
}

fn title(svg: &str) -> String {
    let document = roxmltree::Document::parse(svg).expect("well-formed XML");
    document
        .descendants()
        .find(|n| n.has_tag_name("title"))
        .and_then(|n| n.text())
        .unwrap_or_default()
        .to_owned()
}

#[actix_web::test]
async fn each_kind_shows_its_count_current_as_soon_as_a_write_is_acknowledged() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let (headers, svg) = badge(&app, &format!("/bots/{}/badge/servers.svg", bot.id)).await;
    assert_eq!(headers["content-type"], "image/svg+xml");
    assert_eq!(headers["cache-control"], "public, max-age=60");
    assert_eq!(texts(&svg), ["servers", "n/a"]);

    app.post_stats(&bot, 12_345).await;
    let (_, svg) = badge(&app, &format!("/bots/{}/badge/servers.svg", bot.id)).await;
    assert_eq!(texts(&svg), ["servers", "12.3k"]);
    // By snowflake too.
    let (_, svg) = badge(&app, "/bots/42/badge/servers.svg").await;
    assert_eq!(texts(&svg), ["servers", "12.3k"]);

    let (_, svg) = badge(&app, &format!("/bots/{}/badge/votes.svg", bot.id)).await;
    assert_eq!(texts(&svg), ["votes", "0"]);
    app.vote_ok(&bot.id, 7).await;
    let (_, svg) = badge(&app, &format!("/bots/{}/badge/votes.svg", bot.id)).await;
    assert_eq!(texts(&svg), ["votes", "1"]);
    let (_, svg) = badge(&app, &format!("/bots/{}/badge/monthly_votes.svg", bot.id)).await;
    assert_eq!(texts(&svg), ["monthly votes", "1"]);
    // A new month reads 0 with no write.
    app.clock.advance(chrono::Duration::days(31));
    let (_, svg) = badge(&app, &format!("/bots/{}/badge/monthly_votes.svg", bot.id)).await;
    assert_eq!(texts(&svg), ["monthly votes", "0"]);
}

#[actix_web::test]
async fn label_color_and_style_change_the_badge_and_the_width_follows_the_text() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let path = format!("/bots/{}/badge/votes.svg", bot.id);
    let (_, plain) = badge(&app, &path).await;
    assert!(plain.contains(r##"fill="#007ec6""##), "blue by default");
    assert!(plain.contains(r#"rx="3""#), "flat: rounded");

    let (_, long) = badge(&app, &format!("{path}?label=votes+on+botlist")).await;
    assert_eq!(texts(&long), ["votes on botlist", "0"]);
    assert!(
        width(&long) > width(&plain) + 50,
        "{} vs {}",
        width(&long),
        width(&plain)
    );

    let (_, green) = badge(&app, &format!("{path}?color=green")).await;
    assert!(green.contains(r##"fill="#97ca00""##));
    let (_, hex) = badge(&app, &format!("{path}?color=FF0")).await;
    assert!(hex.contains(r##"fill="#ff0""##));
    // Dark text on a light colour.
    assert!(hex.contains(r##"fill="#333""##));
    let (_, hex6) = badge(&app, &format!("{path}?color=4c1abc")).await;
    assert!(hex6.contains(r##"fill="#4c1abc""##));

    let (_, square) = badge(&app, &format!("{path}?style=flat-square")).await;
    assert!(!square.contains("rx="), "square corners");
    assert!(square.contains(r#"shape-rendering="crispEdges""#));
    assert_eq!(texts(&square), ["votes", "0"]);

    let (_, bare) = badge(&app, &format!("{path}?label=")).await;
    assert_eq!(texts(&bare), ["0"]);
    assert!(width(&bare) < width(&plain));
    // Unknown parameters are ignored, as on GET /bots.
    let (_, same) = badge(&app, &format!("{path}?utm_source=readme")).await;
    assert_eq!(same, plain);
}

#[actix_web::test]
async fn the_svg_stays_valid_xml_whatever_the_texts_hold() {
    let app = spawn_app().await;
    let bot = app
        .create_bot(
            42,
            json!({ "name": "<b>\"Tom\" & 'Jerry'</b> ]]> <!--", "username": "tom" }),
        )
        .await;
    let label = "a<b>&c\"d'e ]]> <!-- ünï 中文";
    let query = format!(
        "label={}",
        label
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect::<String>()
    );
    let (_, svg) = badge(&app, &format!("/bots/{}/badge/servers.svg?{query}", bot.id)).await;
    assert_eq!(texts(&svg), [label, "n/a"]);
    assert_eq!(
        title(&svg),
        format!("<b>\"Tom\" & 'Jerry'</b> ]]> <!-- \u{b7} {label}: n/a")
    );
}

#[actix_web::test]
async fn an_etag_answers_304_until_the_count_changes() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let path = format!("/bots/{}/badge/servers.svg", bot.id);
    let (headers, _) = badge(&app, &path).await;
    let etag = headers["etag"].to_str().expect("ascii").to_owned();
    assert!(etag.starts_with('"'), "strong: {etag}");
    let again = app.revalidate(&path, &etag).await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()["cache-control"], "public, max-age=60");
    assert_eq!(again.headers()["etag"].to_str().ok(), Some(etag.as_str()));
    assert!(again.bytes().await.expect("a body").is_empty());

    app.post_stats(&bot, 5).await;
    let changed = app.revalidate(&path, &etag).await;
    assert_eq!(changed.status(), StatusCode::OK);
    assert_ne!(changed.headers()["etag"].to_str().ok(), Some(etag.as_str()));
    // The validator is made of what the drawing is made of, the bot's name (its title)
    // among them: a rename changes it too.
    let etag = changed.headers()["etag"]
        .to_str()
        .expect("ascii")
        .to_owned();
    rename(&app, &bot.id, "Renamed Bot").await;
    let after = app.revalidate(&path, &etag).await;
    assert_eq!(after.status(), StatusCode::OK);
    assert!(after.text().await.expect("a body").contains("Renamed Bot"));
    // HEAD answers the headers of the GET.
    let head = app
        .client
        .head(format!("{}{path}", app.base))
        .send()
        .await
        .expect("sent");
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(head.headers()["content-type"], "image/svg+xml");
}

#[actix_web::test]
async fn bad_options_are_400_naming_the_parameter_and_unknown_bots_or_kinds_404() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let path = format!("/bots/{}/badge/votes.svg", bot.id);
    for (query, name) in [
        ("color=%23fff", "`color`"),
        ("color=12345", "`color`"),
        ("color=bluish", "`color`"),
        ("color=", "`color`"),
        ("style=plastic", "`style`"),
        ("style=", "`style`"),
        ("label=%00", "`label`"),
        ("label=a%0Ab", "`label`"),
        ("color=red&color=blue", "`color`"),
        ("label=%zz", "`label`"),
    ] {
        let message = assert_error(
            app.get(&format!("{path}?{query}")).await,
            StatusCode::BAD_REQUEST,
            "bad_request",
        )
        .await;
        assert!(message.contains(name), "{query}: {message}");
    }
    let long = "x".repeat(65);
    let message = assert_error(
        app.get(&format!("{path}?label={long}")).await,
        StatusCode::BAD_REQUEST,
        "bad_request",
    )
    .await;
    assert!(message.contains("`label`"), "{message}");
    assert_error(
        app.get("/bots/999/badge/votes.svg").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    let message = assert_error(
        app.get(&format!("/bots/{}/badge/stars.svg", bot.id)).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    assert!(message.contains("servers.svg"), "{message}");
    assert_error(
        app.get(&format!("/bots/{}/badge/votes.png", bot.id)).await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
}

/// A badge is drawn once and kept for its URL while what it shows stays the same: asked twice
/// it is the same bytes; another label, another kind or a changed count is drawn anew.
#[actix_web::test]
async fn a_kept_badge_answers_only_its_own_url_and_only_until_what_it_shows_changes() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let plain = format!("/bots/{}/badge/votes.svg", bot.id);
    let labelled = format!("{plain}?label=ballots&color=red");
    for _ in 0..2 {
        assert_eq!(texts(&badge(&app, &plain).await.1), ["votes", "0"]);
        assert_eq!(texts(&badge(&app, &labelled).await.1), ["ballots", "0"]);
        let (_, svg) = badge(&app, &format!("/bots/{}/badge/servers.svg", bot.id)).await;
        assert_eq!(texts(&svg), ["servers", "n/a"]);
    }
    app.vote_ok(&bot.id, 7).await;
    for _ in 0..2 {
        assert_eq!(texts(&badge(&app, &plain).await.1), ["votes", "1"]);
        let (_, svg) = badge(&app, &labelled).await;
        assert_eq!(texts(&svg), ["ballots", "1"]);
        assert!(svg.contains("#e05d44"), "red: {svg}");
    }
    rename(&app, &bot.id, "Renamed Bot").await;
    assert_eq!(
        title(&badge(&app, &plain).await.1),
        "Renamed Bot · votes: 1"
    );
}

/// A kept badge is told from the count it was drawn at, but its ETag is made of the value as
/// shown: a count that shows alike (12.3k) is the same drawing under the same tag, so a
/// client's copy stays valid; one that shows otherwise is drawn anew.
#[actix_web::test]
async fn counts_that_show_alike_keep_the_tag_and_the_drawing() {
    let app = spawn_app().await;
    let bot = app.create_bot(42, json!({})).await;
    let path = format!("/bots/{}/badge/servers.svg", bot.id);
    app.post_stats(&bot, 12_345).await;
    let (headers, svg) = badge(&app, &path).await;
    let etag = headers["etag"].to_str().expect("ascii").to_owned();
    app.post_stats(&bot, 12_346).await;
    let (headers, again) = badge(&app, &path).await;
    assert_eq!(headers["etag"].to_str().ok(), Some(etag.as_str()));
    assert_eq!(again, svg);
    assert_eq!(
        app.revalidate(&path, &etag).await.status(),
        StatusCode::NOT_MODIFIED
    );
    app.post_stats(&bot, 12_400).await;
    let (headers, svg) = badge(&app, &path).await;
    assert_eq!(texts(&svg), ["servers", "12.4k"]);
    assert_ne!(headers["etag"].to_str().ok(), Some(etag.as_str()));
}
