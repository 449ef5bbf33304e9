//! CONTRACT section 14's events over HTTP: `review.create` and the listing's decisions go
//! through the webhook delivery to the bots that chose them with `webhook_events`; a bot that
//! chose nothing is sent votes only, as before.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::expiry::Stream;
use crate::helpers::{
    assert_error, json_receiver as receiver, spawn_app_with, test_settings, TestApp,
};

async fn app() -> TestApp {
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.allow_private_webhooks = true;
    spawn_app_with(settings).await
}

/// Waits until `count` bodies arrived; their types, sorted.
async fn types_after(received: &Arc<Mutex<Vec<Value>>>, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = received.lock().expect("lock").clone();
        if got.len() >= count {
            let mut types: Vec<String> = got
                .iter()
                .map(|body| body["type"].as_str().unwrap_or("?").to_owned())
                .collect();
            types.sort();
            return types;
        }
        assert!(Instant::now() < deadline, "only {got:?}");
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
}

fn of_type(received: &Arc<Mutex<Vec<Value>>>, kind: &str) -> Value {
    let got = received.lock().expect("lock");
    got.iter()
        .find(|body| body["type"] == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} in {got:?}"))
}

async fn token(app: &TestApp, profile: &str, scopes: &[&str]) -> String {
    let response = app
        .admin(
            Method::POST,
            &format!("/admin/users/{profile}/tokens"),
            Some(&json!({ "scopes": scopes, "label": "test" })),
        )
        .await;
    let issued: Value = response.json().await.expect("json");
    issued["token"].as_str().expect("a token").to_owned()
}

async fn reviewer(app: &TestApp, name: &str) -> String {
    let created = app.create_profile(json!({ "username": name })).await;
    token(app, created["id"].as_str().expect("id"), &["reviews"]).await
}

async fn post_review(app: &TestApp, bot: &str, token: &str) {
    let response = app
        .request(Method::POST, &format!("/bots/{bot}/reviews"), Some(token))
        .json(&json!({ "rating": 4, "content": "nice" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::CREATED);
}

/// A review, a delisting and an approval: an event of each kind a listed bot may choose
/// beyond votes (`listing.denied` needs a pending listing).
async fn review_delist_and_approve(app: &TestApp, bot: &str) {
    post_review(app, bot, &reviewer(app, "ann").await).await;
    decide(app, bot, json!({ "status": "delisted", "reason": "spam" })).await;
    decide(app, bot, json!({ "status": "approved" })).await;
}

async fn decide(app: &TestApp, bot: &str, body: Value) {
    let response = app
        .admin(Method::PATCH, &format!("/admin/bots/{bot}"), Some(&body))
        .await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "{}",
        response.text().await.unwrap_or_default()
    );
}

#[actix_web::test]
async fn a_bot_that_chose_nothing_is_sent_votes_only() {
    let app = app().await;
    let (url, received) = receiver().await;
    let bot = app.create_bot(1, json!({ "webhook_url": url })).await;
    review_delist_and_approve(&app, &bot.id).await;
    app.vote_ok(&bot.id, 7).await;
    assert_eq!(types_after(&received, 1).await, ["vote.create"]);
    // Nothing else comes: the review and the decisions were queued before the vote.
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(received.lock().expect("lock").len(), 1);
}

#[actix_web::test]
async fn chosen_events_are_delivered_with_their_bodies() {
    let app = app().await;
    let (url, received) = receiver().await;
    let owner = app.create_profile(json!({ "username": "owner" })).await;
    let owner_id = owner["id"].as_str().expect("id").to_owned();
    let owner_token = token(&app, &owner_id, &["bots"]).await;
    let submitted = app
        .request(Method::POST, "/bots", Some(&owner_token))
        .json(&json!({
            "platform_id": "55",
            "name": "Eventful",
            "username": "eventful",
            "short_description": "Chooses its events",
            "webhook_url": url,
            "webhook_events": ["review.create", "listing.approved", "listing.denied", "listing.delisted"],
        }))
        .send()
        .await
        .expect("sent");
    assert_eq!(submitted.status(), StatusCode::CREATED);
    let submitted: Value = submitted.json().await.expect("json");
    let id = submitted["bot"]["id"].as_str().expect("id").to_owned();

    decide(
        &app,
        &id,
        json!({ "status": "denied", "reason": "needs a description" }),
    )
    .await;
    let edited = app
        .request(Method::PATCH, &format!("/bots/{id}"), Some(&owner_token))
        .json(&json!({ "short_description": "Now described" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(edited.status(), StatusCode::OK);
    let managed: Value = edited.json().await.expect("json");
    assert_eq!(
        managed["webhook"]["events"],
        json!([
            "review.create",
            "listing.approved",
            "listing.denied",
            "listing.delisted"
        ])
    );
    decide(&app, &id, json!({ "status": "approved" })).await;
    post_review(&app, &id, &reviewer(&app, "ann").await).await;
    app.vote_ok(&id, 9).await;
    // Delivered before the delisting: a delisted bot is sent its decisions only.
    types_after(&received, 3).await;
    decide(
        &app,
        &id,
        json!({ "status": "delisted", "reason": "abandoned" }),
    )
    .await;

    assert_eq!(
        types_after(&received, 4).await,
        [
            "listing.approved",
            "listing.delisted",
            "listing.denied",
            "review.create"
        ]
    );
    let denied = of_type(&received, "listing.denied");
    assert_eq!(denied["data"]["status"], "denied");
    assert_eq!(denied["data"]["reason"], "needs a description");
    assert_eq!(denied["data"]["bot"]["platform_id"], "55");
    assert_eq!(
        of_type(&received, "listing.approved")["data"]["reason"],
        Value::Null
    );
    let review = of_type(&received, "review.create");
    assert_eq!(review["data"]["review"]["rating"], 4);
    assert_eq!(review["data"]["review"]["content"], "nice");
    assert!(review["id"].is_string() && review["created_at"].is_string());
    // The vote was not chosen: never sent.
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(received.lock().expect("lock").len(), 4);
}

#[actix_web::test]
async fn webhook_events_is_validated_and_set_by_the_admin() {
    let app = app().await;
    let bot = app.create_bot(1, json!({})).await;
    for bad in [json!(["vote.nope"]), json!("vote.create"), json!(null)] {
        let response = app
            .admin(
                Method::PATCH,
                &format!("/admin/bots/{}", bot.id),
                Some(&json!({ "webhook_events": bad })),
            )
            .await;
        assert_error(response, StatusCode::BAD_REQUEST, "bad_request").await;
    }
    decide(
        &app,
        &bot.id,
        json!({ "webhook_events": ["vote.create", "review.create"] }),
    )
    .await;
}

/// The decisions of the staff routes are sent from the record every decision journals (the
/// listing's edit with its decision), like the operator's: deny, approve and delist each send
/// their event once; a claim, a certification, an owner's edit back to review and a staff
/// removal of a review send none.
#[actix_web::test]
async fn the_staff_routes_decisions_are_sent_and_nothing_else_of_theirs() {
    let app = app().await;
    let (url, received) = receiver().await;
    let owner = app.create_profile(json!({ "username": "owner" })).await;
    let owner_token = token(&app, owner["id"].as_str().expect("id"), &["bots"]).await;
    let moderator = app
        .create_profile(json!({ "username": "moderator", "mod": true }))
        .await;
    let staff = token(&app, moderator["id"].as_str().expect("id"), &["staff"]).await;
    let submitted = app
        .request(Method::POST, "/bots", Some(&owner_token))
        .json(&json!({
            "platform_id": "56",
            "name": "Moderated",
            "username": "moderated",
            "short_description": "Waits for staff",
            "webhook_url": url,
            "webhook_events": ["listing.approved", "listing.denied", "listing.delisted"],
        }))
        .send()
        .await
        .expect("sent");
    assert_eq!(submitted.status(), StatusCode::CREATED);
    let submitted: Value = submitted.json().await.expect("json");
    let id = submitted["bot"]["id"].as_str().expect("id").to_owned();
    let act = |action: &'static str, body: Option<Value>| {
        let (app, staff, id) = (&app, &staff, &id);
        async move {
            let request = app.request(
                Method::POST,
                &format!("/staff/bots/{id}/{action}"),
                Some(staff),
            );
            let request = match body {
                Some(body) => request.json(&body),
                None => request,
            };
            let response = request.send().await.expect("sent");
            assert_eq!(response.status(), StatusCode::OK, "{action}");
        }
    };

    act("claim", None).await;
    act("deny", Some(json!({ "reason": "needs a description" }))).await;
    assert_eq!(types_after(&received, 1).await, ["listing.denied"]);
    let edited = app
        .request(Method::PATCH, &format!("/bots/{id}"), Some(&owner_token))
        .json(&json!({ "short_description": "Now described" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(edited.status(), StatusCode::OK);
    act("approve", None).await;
    act("certify", None).await;
    let author = reviewer(&app, "ann").await;
    post_review(&app, &id, &author).await;
    let listed: Value = app
        .get(&format!("/bots/{id}/reviews"))
        .await
        .json()
        .await
        .expect("json");
    let review = listed["results"][0]["id"].as_str().expect("a review");
    let removed = app
        .request(
            Method::POST,
            &format!("/bots/{id}/reviews/{review}/remove"),
            Some(&staff),
        )
        .json(&json!({ "reason": "spam" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        types_after(&received, 2).await,
        ["listing.approved", "listing.denied"]
    );
    act("delist", Some(json!({ "reason": "abandoned" }))).await;
    assert_eq!(
        types_after(&received, 3).await,
        ["listing.approved", "listing.delisted", "listing.denied"]
    );
    let delisted = of_type(&received, "listing.delisted");
    assert_eq!(delisted["data"]["reason"], "abandoned");
    assert_eq!(delisted["data"]["status"], "delisted");
    // Each once: nothing more comes.
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(received.lock().expect("lock").len(), 3);
}

/// The operator reads the delivery log of a listing in any status (issue 37 review): a delisted
/// bot's log shows its last delivery, `listing.delisted`; a pending listing's log is read too.
/// A test event still needs a listed bot.
#[actix_web::test]
async fn the_operator_reads_the_delivery_log_of_a_listing_in_any_status() {
    let app = app().await;
    let (url, received) = receiver().await;
    let bot = app
        .create_bot(
            91,
            json!({ "webhook_url": url, "webhook_events": ["vote.create", "listing.delisted"] }),
        )
        .await;
    decide(
        &app,
        &bot.id,
        json!({ "status": "delisted", "reason": "spam" }),
    )
    .await;
    assert_eq!(types_after(&received, 1).await, ["listing.delisted"]);
    assert_eq!(
        app.get(&format!("/bots/{}", bot.id)).await.status(),
        StatusCode::NOT_FOUND
    );
    let log = format!("/admin/bots/{}/webhook/deliveries", bot.id);
    let response = app.admin(Method::GET, &log, None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let deliveries: Value = response.json().await.expect("json");
    let events: Vec<&str> = deliveries
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|d| d["event"].as_str())
        .collect();
    assert_eq!(events, ["listing.delisted"]);
    let test = app
        .admin(
            Method::POST,
            &format!("/admin/bots/{}/webhook/test", bot.id),
            None,
        )
        .await;
    assert_error(test, StatusCode::NOT_FOUND, "not_found").await;

    // A pending listing, by its UUID.
    let owner = app.create_profile(json!({ "username": "keeper" })).await;
    let owner_token = token(&app, owner["id"].as_str().expect("id"), &["bots"]).await;
    let submitted: Value = app
        .request(Method::POST, "/bots", Some(&owner_token))
        .json(&json!({
            "platform_id": "92", "name": "Waiting", "username": "waiting",
            "short_description": "Pending review",
        }))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let pending = submitted["bot"]["id"].as_str().expect("id");
    let response = app
        .admin(
            Method::GET,
            &format!("/admin/bots/{pending}/webhook/deliveries"),
            None,
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.json::<Value>().await.expect("json"), json!([]));
}

/// The next stream event's name and parsed data, with no `id:` line (only votes have one).
async fn next_on(stream: &mut Stream) -> (String, Value) {
    let (name, data) = stream.next_event().await;
    (name, serde_json::from_str(&data).expect("JSON"))
}

#[actix_web::test]
async fn chosen_events_reach_the_vote_stream_in_order_with_the_votes() {
    let app = app().await;
    // No webhook_url: the stream is its own reader of the chosen kinds. (A pending or denied
    // listing's token is refused, so no stream is open to see `listing.denied`.)
    let bot = app
        .create_bot(
            56,
            json!({ "webhook_events": ["vote.create", "review.create", "listing.approved", "listing.denied", "listing.delisted"] }),
        )
        .await;
    let mut stream = Stream::open(&app, &bot).await;

    post_review(&app, &bot.id, &reviewer(&app, "ann").await).await;
    let (name, data) = next_on(&mut stream).await;
    assert_eq!(name, "review.create");
    assert_eq!(data["review"]["rating"], 4);
    assert_eq!(data["review"]["content"], "nice");
    assert_eq!(data["bot"]["id"], bot.id.as_str());
    assert_eq!(data["bot"]["platform_id"], "56");

    decide(
        &app,
        &bot.id,
        json!({ "status": "delisted", "reason": "spam" }),
    )
    .await;
    let (name, data) = next_on(&mut stream).await;
    assert_eq!(name, "listing.delisted");
    assert_eq!(data["status"], "delisted");
    assert_eq!(data["reason"], "spam");

    decide(&app, &bot.id, json!({ "status": "approved" })).await;
    let mut stream = Stream::open(&app, &bot).await;
    app.vote_ok(&bot.id, 7).await;
    assert_eq!(stream.next_event().await.0, "vote");
    // After the vote, in order.
    decide(
        &app,
        &bot.id,
        json!({ "status": "delisted", "reason": "again" }),
    )
    .await;
    let (name, data) = next_on(&mut stream).await;
    assert_eq!(name, "listing.delisted");
    assert_eq!(data["reason"], "again");
}

#[actix_web::test]
async fn listing_approved_reaches_the_vote_stream_of_a_bot_that_chose_it() {
    let app = app().await;
    let bot = app
        .create_bot(
            58,
            json!({ "webhook_events": ["vote.create", "listing.approved"] }),
        )
        .await;
    let mut stream = Stream::open(&app, &bot).await;
    // Not chosen: the delisting is not on the stream; the approval that follows is.
    decide(
        &app,
        &bot.id,
        json!({ "status": "delisted", "reason": "spam" }),
    )
    .await;
    decide(&app, &bot.id, json!({ "status": "approved" })).await;
    let (name, data) = next_on(&mut stream).await;
    assert_eq!(name, "listing.approved");
    assert_eq!(data["status"], "approved");
    assert_eq!(data["reason"], Value::Null);
    assert_eq!(data["bot"]["id"], bot.id.as_str());
}

#[actix_web::test]
async fn a_bot_that_chose_nothing_sees_none_of_them_on_its_vote_stream() {
    let app = app().await;
    let bot = app.create_bot(57, json!({})).await;
    let mut stream = Stream::open(&app, &bot).await;
    review_delist_and_approve(&app, &bot.id).await;
    // The first thing the stream is sent is the vote that came after them all.
    app.vote_ok(&bot.id, 7).await;
    assert_eq!(stream.next_event().await.0, "vote");
}
