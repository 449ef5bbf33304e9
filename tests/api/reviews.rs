//! CONTRACT section 14's reviews over HTTP: one per profile per bot, edited and deleted by its
//! author, one owner reply, removal by staff with a reason, the public list with its average,
//! both orders and the cursor, and every refusal with the error envelope.

use chrono::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app_with, test_settings, TestApp};

async fn app() -> TestApp {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    spawn_app_with(settings).await
}

async fn profile(app: &TestApp, body: Value) -> String {
    let created = app.create_profile(body).await;
    created["id"].as_str().expect("an id").to_owned()
}

async fn token(app: &TestApp, profile: &str, scopes: &[&str]) -> String {
    let response = app
        .admin(
            Method::POST,
            &format!("/admin/users/{profile}/tokens"),
            Some(&json!({ "scopes": scopes, "label": "test" })),
        )
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let issued: Value = response.json().await.expect("json");
    issued["token"].as_str().expect("a token").to_owned()
}

/// A profile named `name` and its token of `scopes`.
async fn person(app: &TestApp, name: &str, scopes: &[&str]) -> (String, String) {
    let id = profile(app, json!({ "username": name })).await;
    let token = token(app, &id, scopes).await;
    (id, token)
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> reqwest::Response {
    let request = app.request(method, path, token);
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    request.send().await.expect("sent")
}

async fn review(app: &TestApp, bot: &str, token: &str, rating: u8, content: &str) -> Value {
    let response = send(
        app,
        Method::POST,
        &format!("/bots/{bot}/reviews"),
        Some(token),
        Some(json!({ "rating": rating, "content": content })),
    )
    .await;
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        response.text().await.unwrap_or_default()
    );
    response.json().await.expect("json")
}

async fn list(app: &TestApp, bot: &str, query: &str) -> Value {
    let response = app.get(&format!("/bots/{bot}/reviews{query}")).await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("json")
}

#[actix_web::test]
async fn a_review_is_written_listed_edited_and_deleted_by_its_author() {
    let app = app().await;
    let bot = app.create_bot(1, json!({})).await;
    let empty = list(&app, &bot.id, "").await;
    assert_eq!(
        empty,
        json!({ "rating": null, "count": 0, "results": [], "next_cursor": null })
    );
    let (author, token) = person(&app, "ann", &["reviews"]).await;
    let written = review(&app, &bot.id, &token, 4, "Works well").await;
    assert_eq!(written["rating"], 4);
    assert_eq!(written["content"], "Works well");
    assert_eq!(written["author_id"], author.as_str());
    assert_eq!(written["reply"], Value::Null);
    let id = written["id"].as_str().expect("id").to_owned();

    // A second review by the same profile is 409, and names the first.
    let again = send(
        &app,
        Method::POST,
        &format!("/bots/{}/reviews", bot.id),
        Some(&token),
        Some(json!({ "rating": 5 })),
    )
    .await;
    let message = assert_error(again, StatusCode::CONFLICT, "conflict").await;
    assert!(message.contains(&id), "{message}");

    app.clock.advance(Duration::seconds(60));
    let edited = send(
        &app,
        Method::PATCH,
        &format!("/bots/{}/reviews/{id}", bot.id),
        Some(&token),
        Some(json!({ "rating": 2 })),
    )
    .await;
    assert_eq!(edited.status(), StatusCode::OK);
    let edited: Value = edited.json().await.expect("json");
    assert_eq!(
        (edited["rating"].clone(), edited["content"].clone()),
        (json!(2), json!("Works well"))
    );
    assert_ne!(edited["updated_at"], edited["created_at"]);
    let listed = list(&app, &bot.id, "").await;
    assert_eq!(
        (listed["rating"].clone(), listed["count"].clone()),
        (json!(2.0), json!(1))
    );
    // The Bot resource keeps its fields: review figures live on these routes only.
    let shown: Value = app
        .get(&format!("/bots/{}", bot.id))
        .await
        .json()
        .await
        .expect("json");
    assert!(shown.get("rating").is_none() && shown.get("reviews").is_none());

    let deleted = send(
        &app,
        Method::DELETE,
        &format!("/bots/{}/reviews/{id}", bot.id),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(list(&app, &bot.id, "").await["count"], 0);
    // Deleted, the profile may review again.
    review(&app, &bot.id, &token, 5, "").await;
}

#[actix_web::test]
async fn averages_both_orders_and_the_cursor() {
    let app = app().await;
    let bot = app.create_bot(1, json!({})).await;
    let mut ids = Vec::new();
    for (n, rating) in [3u8, 5, 1, 5, 4].into_iter().enumerate() {
        let (_, token) = person(&app, &format!("p{n}"), &["reviews"]).await;
        let written = review(&app, &bot.id, &token, rating, &format!("review {n}")).await;
        ids.push(written["id"].as_str().expect("id").to_owned());
        app.clock.advance(Duration::seconds(10));
    }
    let walk = |sort: &'static str| {
        let app = &app;
        let bot = bot.id.clone();
        async move {
            let mut seen = Vec::new();
            let mut query = format!("?sort={sort}&limit=2");
            loop {
                let page = list(app, &bot, &query).await;
                assert_eq!(page["count"], 5);
                assert_eq!(page["rating"], 3.6);
                assert!(page["results"].as_array().expect("results").len() <= 2);
                for result in page["results"].as_array().expect("results") {
                    seen.push(result["content"].as_str().expect("content").to_owned());
                }
                match page["next_cursor"].as_str() {
                    Some(cursor) => query = format!("?sort={sort}&limit=2&cursor={cursor}"),
                    None => break,
                }
            }
            seen
        }
    };
    assert_eq!(
        walk("newest").await,
        ["review 4", "review 3", "review 2", "review 1", "review 0"]
    );
    // Highest first; among equal ratings, newest first.
    assert_eq!(
        walk("rating").await,
        ["review 3", "review 1", "review 4", "review 0", "review 2"]
    );
}

#[actix_web::test]
async fn every_refusal_has_its_envelope() {
    let app = app().await;
    let bot = app.create_bot(1, json!({})).await;
    let path = format!("/bots/{}/reviews", bot.id);
    let (_, token) = person(&app, "ann", &["reviews"]).await;
    let (_, voter) = person(&app, "ben", &["vote"]).await;

    for body in [
        json!({ "rating": 0 }),
        json!({ "rating": 6 }),
        json!({ "rating": 4.5 }),
        json!({ "rating": "5" }),
        json!({ "content": "no rating" }),
        json!({ "rating": 5, "content": "x".repeat(2001) }),
        json!({ "rating": 5, "content": "evil \u{202E}txet" }),
        json!({ "rating": 5, "content": "bell \u{7}" }),
        json!({ "rating": 5, "stars": 5 }),
    ] {
        let response = send(&app, Method::POST, &path, Some(&token), Some(body.clone())).await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    // 2000 characters (not bytes) are allowed.
    let long = review(&app, &bot.id, &token, 5, &"é".repeat(2000)).await;
    let id = long["id"].as_str().expect("id").to_owned();

    let no_token = send(
        &app,
        Method::POST,
        &path,
        None,
        Some(json!({ "rating": 5 })),
    )
    .await;
    assert_error(no_token, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let bot_token = send(
        &app,
        Method::POST,
        &path,
        Some(&bot.token),
        Some(json!({ "rating": 5 })),
    )
    .await;
    assert_error(bot_token, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let no_scope = send(
        &app,
        Method::POST,
        &path,
        Some(&voter),
        Some(json!({ "rating": 5 })),
    )
    .await;
    let message = assert_error(no_scope, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(message.contains("reviews"), "{message}");
    let unknown_bot = send(
        &app,
        Method::POST,
        "/bots/999/reviews",
        Some(&token),
        Some(json!({ "rating": 5 })),
    )
    .await;
    assert_error(unknown_bot, StatusCode::NOT_FOUND, "not_found").await;

    // Another profile may not edit or delete it; an unknown review is 404.
    let (_, other) = person(&app, "cat", &["reviews"]).await;
    let review_path = format!("{path}/{id}");
    let edit = send(
        &app,
        Method::PATCH,
        &review_path,
        Some(&other),
        Some(json!({ "rating": 1 })),
    )
    .await;
    assert_error(edit, StatusCode::FORBIDDEN, "forbidden").await;
    let delete = send(&app, Method::DELETE, &review_path, Some(&other), None).await;
    assert_error(delete, StatusCode::FORBIDDEN, "forbidden").await;
    for missing in [
        format!("{path}/{}", uuid::Uuid::new_v4()),
        format!("{path}/not-a-uuid"),
    ] {
        let edit = send(
            &app,
            Method::PATCH,
            &missing,
            Some(&token),
            Some(json!({ "rating": 1 })),
        )
        .await;
        assert_error(edit, StatusCode::NOT_FOUND, "not_found").await;
        let delete = send(&app, Method::DELETE, &missing, Some(&token), None).await;
        assert_error(delete, StatusCode::NOT_FOUND, "not_found").await;
    }
    let bad_edit = send(
        &app,
        Method::PATCH,
        &review_path,
        Some(&token),
        Some(json!({ "rating": 9 })),
    )
    .await;
    assert_error(bad_edit, StatusCode::BAD_REQUEST, "bad_request").await;

    for query in [
        "?sort=best",
        "?limit=0",
        "?limit=101",
        "?limit=x",
        "?cursor=zzz",
        "?sort=newest&sort=rating",
    ] {
        let response = app.get(&format!("{path}{query}")).await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    // A cursor of one order is refused by the other.
    let (_, third) = person(&app, "dan", &["reviews"]).await;
    review(&app, &bot.id, &third, 1, "meh").await;
    let page = list(&app, &bot.id, "?limit=1").await;
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let crossed = app
        .get(&format!("{path}?sort=rating&cursor={cursor}"))
        .await;
    assert_error(crossed, StatusCode::BAD_REQUEST, "bad_request").await;
}

#[actix_web::test]
async fn owners_reply_once_and_staff_remove_with_a_reason() {
    let app = app().await;
    let owner = profile(&app, json!({ "username": "owner" })).await;
    let owner_token = token(&app, &owner, &["bots"]).await;
    let bot = app.create_bot(1, json!({ "owner_ids": [owner] })).await;
    let (_, author) = person(&app, "ann", &["reviews"]).await;
    let written = review(&app, &bot.id, &author, 3, "ok").await;
    let id = written["id"].as_str().expect("id").to_owned();
    let reply_path = format!("/bots/{}/reviews/{id}/reply", bot.id);

    let replied = send(
        &app,
        Method::PUT,
        &reply_path,
        Some(&owner_token),
        Some(json!({ "content": "thanks" })),
    )
    .await;
    assert_eq!(replied.status(), StatusCode::OK);
    let replied: Value = replied.json().await.expect("json");
    assert_eq!(replied["reply"]["content"], "thanks");
    assert_eq!(replied["reply"]["author_id"], owner.as_str());
    // One reply per review: a second PUT replaces it.
    send(
        &app,
        Method::PUT,
        &reply_path,
        Some(&owner_token),
        Some(json!({ "content": "fixed now" })),
    )
    .await;
    let listed = list(&app, &bot.id, "").await;
    assert_eq!(listed["results"][0]["reply"]["content"], "fixed now");

    let (_, stranger) = person(&app, "eve", &["bots"]).await;
    let not_owner = send(
        &app,
        Method::PUT,
        &reply_path,
        Some(&stranger),
        Some(json!({ "content": "hi" })),
    )
    .await;
    assert_error(not_owner, StatusCode::FORBIDDEN, "forbidden").await;
    let empty = send(
        &app,
        Method::PUT,
        &reply_path,
        Some(&owner_token),
        Some(json!({ "content": "" })),
    )
    .await;
    assert_error(empty, StatusCode::BAD_REQUEST, "bad_request").await;
    let missing = format!("/bots/{}/reviews/{}/reply", bot.id, uuid::Uuid::new_v4());
    let missing = send(
        &app,
        Method::PUT,
        &missing,
        Some(&owner_token),
        Some(json!({ "content": "hi" })),
    )
    .await;
    assert_error(missing, StatusCode::NOT_FOUND, "not_found").await;
}

/// Staff's removal takes the staff guard (401 without a live profile token, the admin token and
/// a bot's included; 403 without the `staff` scope; 403 for a profile that is neither `mod` nor
/// `admin`, read now), needs a reason, and leaves exactly one audit entry, shown to staff and to
/// the bot's owners.
#[actix_web::test]
async fn staff_remove_a_review_through_the_staff_guard_with_one_audit_entry() {
    let app = app().await;
    let owner = profile(&app, json!({ "username": "owner" })).await;
    let owner_token = token(&app, &owner, &["bots", "staff", "reviews"]).await;
    let bot = app.create_bot(1, json!({ "owner_ids": [owner] })).await;
    let moderator = profile(&app, json!({ "username": "mod", "mod": true })).await;
    let mod_staff = token(&app, &moderator, &["staff"]).await;
    let mod_reviews = token(&app, &moderator, &["reviews"]).await;
    let admin = profile(&app, json!({ "username": "boss", "admin": true })).await;
    let admin_staff = token(&app, &admin, &["staff"]).await;
    let (_, plain_staff) = person(&app, "joe", &["staff"]).await;
    let (_, author) = person(&app, "ann", &["reviews"]).await;
    let (_, second) = person(&app, "fay", &["reviews"]).await;
    let first = review(&app, &bot.id, &author, 3, "ok").await;
    let other = review(&app, &bot.id, &second, 1, "bad").await;
    let path_of = |review: &Value| {
        format!(
            "/bots/{}/reviews/{}/remove",
            bot.id,
            review["id"].as_str().expect("id")
        )
    };
    let remove_path = path_of(&first);
    let reason = json!({ "reason": "spam" });
    let entries = |query: String, token: String| {
        let app = &app;
        async move {
            let response = send(app, Method::GET, &query, Some(&token), None).await;
            assert_eq!(response.status(), StatusCode::OK, "{query}");
            let page: Value = response.json().await.expect("json");
            page["results"].as_array().expect("results").clone()
        }
    };
    let removals = format!("/staff/audit?action=bot.review.remove&target={}", bot.id);
    let bot_audit = format!("/bots/{}/audit?action=bot.review.remove", bot.id);

    for (who, token, status, code) in [
        ("no token", None, StatusCode::UNAUTHORIZED, "unauthorized"),
        (
            "an unknown token",
            Some("usr_unknown"),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            "the admin token",
            Some(crate::helpers::ADMIN),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            "a bot's token",
            Some(bot.token.as_str()),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            "a mod without the staff scope",
            Some(mod_reviews.as_str()),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            "a plain profile",
            Some(plain_staff.as_str()),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            "an owner",
            Some(owner_token.as_str()),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            "the review's author",
            Some(author.as_str()),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
    ] {
        let response = send(
            &app,
            Method::POST,
            &remove_path,
            token,
            Some(reason.clone()),
        )
        .await;
        let message = assert_error(response, status, code).await;
        if who == "a mod without the staff scope" {
            assert!(message.contains("`staff`"), "{who}: {message}");
        }
    }
    // The guard comes first: a stranger learns nothing of the bot or the review.
    let nowhere = format!(
        "/bots/{}/reviews/{}/remove",
        uuid::Uuid::new_v4(),
        uuid::Uuid::new_v4()
    );
    let response = send(
        &app,
        Method::POST,
        &nowhere,
        Some(&plain_staff),
        Some(reason.clone()),
    )
    .await;
    assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
    let no_reason = send(
        &app,
        Method::POST,
        &remove_path,
        Some(&mod_staff),
        Some(json!({})),
    )
    .await;
    assert_error(no_reason, StatusCode::BAD_REQUEST, "bad_request").await;
    let long = json!({ "reason": "x".repeat(501) });
    let too_long = send(
        &app,
        Method::POST,
        &remove_path,
        Some(&mod_staff),
        Some(long),
    )
    .await;
    assert_error(too_long, StatusCode::BAD_REQUEST, "bad_request").await;
    assert_eq!(
        list(&app, &bot.id, "").await["count"],
        2,
        "nothing refused removed anything"
    );
    assert!(entries(removals.clone(), admin_staff.clone())
        .await
        .is_empty());

    // A moderator removes one.
    let removed = send(
        &app,
        Method::POST,
        &remove_path,
        Some(&mod_staff),
        Some(reason.clone()),
    )
    .await;
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    let listed = list(&app, &bot.id, "").await;
    assert_eq!(listed["count"], 1);
    assert_eq!(listed["rating"], 1.0);
    assert_eq!(listed["results"][0]["id"], other["id"]);
    let gone = send(
        &app,
        Method::POST,
        &remove_path,
        Some(&mod_staff),
        Some(reason.clone()),
    )
    .await;
    assert_error(gone, StatusCode::NOT_FOUND, "not_found").await;
    // Exactly one entry, the same on both reads.
    for (read, token) in [(&removals, &mod_staff), (&bot_audit, &owner_token)] {
        let found = entries(read.clone(), token.clone()).await;
        assert_eq!(found.len(), 1, "{read}: {found:?}");
        let entry = &found[0];
        assert_eq!(
            entry["actor"],
            json!({ "kind": "profile", "id": moderator })
        );
        assert_eq!(entry["target"], json!({ "kind": "bot", "id": bot.id }));
        assert_eq!(entry["reason"], "spam");
        assert_eq!(entry["changes"], json!(["reviews"]));
    }

    // An admin profile removes too; then, with `admin` taken away, it may not (read now).
    let removed = send(
        &app,
        Method::POST,
        &path_of(&other),
        Some(&admin_staff),
        Some(reason.clone()),
    )
    .await;
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    assert_eq!(list(&app, &bot.id, "").await["count"], 0);
    assert_eq!(
        entries(removals.clone(), admin_staff.clone()).await.len(),
        2
    );
    let third = review(&app, &bot.id, &author, 4, "back").await;
    let demoted = app.patch_user(&admin, json!({ "admin": false })).await;
    assert_eq!(demoted.status(), StatusCode::OK);
    let refused = send(
        &app,
        Method::POST,
        &path_of(&third),
        Some(&admin_staff),
        Some(reason),
    )
    .await;
    assert_error(refused, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(list(&app, &bot.id, "").await["count"], 1);
    assert_eq!(entries(removals, mod_staff).await.len(), 2);
}

#[actix_web::test]
async fn a_listing_that_is_not_approved_has_no_reviews() {
    let app = app().await;
    let (_, owner) = person(&app, "owner", &["bots", "reviews"]).await;
    let submitted = send(
        &app,
        Method::POST,
        "/bots",
        Some(&owner),
        Some(json!({
            "platform_id": "77",
            "name": "Pending",
            "username": "pending",
            "short_description": "Waiting",
        })),
    )
    .await;
    assert_eq!(submitted.status(), StatusCode::CREATED);
    let submitted: Value = submitted.json().await.expect("json");
    let id = submitted["bot"]["id"].as_str().expect("id");
    let path = format!("/bots/{id}/reviews");
    assert_error(app.get(&path).await, StatusCode::NOT_FOUND, "not_found").await;
    let write = send(
        &app,
        Method::POST,
        &path,
        Some(&owner),
        Some(json!({ "rating": 5 })),
    )
    .await;
    assert_error(write, StatusCode::NOT_FOUND, "not_found").await;
}

#[actix_web::test]
async fn an_owner_may_not_review_their_own_bot() {
    let app = app().await;
    let (owner, owner_token) = person(&app, "owner", &["bots", "reviews"]).await;
    let (co_owner, co_token) = person(&app, "co", &["reviews"]).await;
    let bot = app
        .create_bot(1, json!({ "owner_ids": [owner, co_owner] }))
        .await;
    for token in [&owner_token, &co_token] {
        let response = send(
            &app,
            Method::POST,
            &format!("/bots/{}/reviews", bot.id),
            Some(token),
            Some(json!({ "rating": 5, "content": "the best" })),
        )
        .await;
        let message = assert_error(response, StatusCode::FORBIDDEN, "forbidden").await;
        assert!(message.contains("owner"), "{message}");
    }
    assert_eq!(list(&app, &bot.id, "").await["count"], 0);
    // Another bot of nobody's: the same profile reviews it.
    let other = app.create_bot(2, json!({})).await;
    review(&app, &other.id, &owner_token, 4, "fine").await;
}

#[actix_web::test]
async fn staff_remove_a_review_of_a_listing_that_is_not_approved() {
    let app = app().await;
    let moderator = profile(&app, json!({ "username": "moderator", "mod": true })).await;
    let staff = token(&app, &moderator, &["staff"]).await;
    let bot = app.create_bot(1, json!({})).await;
    let (_, author) = person(&app, "ann", &["reviews"]).await;
    let written = review(&app, &bot.id, &author, 1, "abusive words").await;
    let path = format!("/bots/{}", bot.id);
    let delisted = app
        .admin(
            Method::PATCH,
            &format!("/admin{path}"),
            Some(&json!({ "status": "delisted", "reason": "spam" })),
        )
        .await;
    assert_eq!(delisted.status(), StatusCode::OK);
    let removed = send(
        &app,
        Method::POST,
        &format!(
            "{path}/reviews/{}/remove",
            written["id"].as_str().expect("id")
        ),
        Some(&staff),
        Some(json!({ "reason": "abuse" })),
    )
    .await;
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    let approved = app
        .admin(
            Method::PATCH,
            &format!("/admin{path}"),
            Some(&json!({ "status": "approved" })),
        )
        .await;
    assert_eq!(approved.status(), StatusCode::OK);
    let page = list(&app, &bot.id, "").await;
    assert_eq!(page["count"], 0, "{page}");
    // A review id the listing does not have is still 404.
    let missing = send(
        &app,
        Method::POST,
        &format!("{path}/reviews/00000000-0000-4000-8000-000000000000/remove"),
        Some(&staff),
        Some(json!({ "reason": "abuse" })),
    )
    .await;
    assert_error(missing, StatusCode::NOT_FOUND, "not_found").await;
}
