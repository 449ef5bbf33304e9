//! Property: any sequence of lifecycle operations (submissions, owners' edits, staff's and the
//! operator's decisions, claims, certification, featuring, a moderator losing and regaining
//! `mod`, time passing), by any role, answers as the state machine's table says, keeps a
//! listing public exactly while it is approved, and replays from the journal to the same
//! statuses, flags and claims.

use botlist::domain::bot::ListingStatus;
use botlist::persist::recovery::recover;
use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, test_settings, TestApp};

const ACTIONS: [&str; 8] = [
    "claim",
    "approve",
    "deny",
    "delist",
    "certify",
    "uncertify",
    "feature",
    "unfeature",
];

#[derive(Clone, Debug)]
enum Op {
    Submit,
    /// `who`: 0 the moderator, 1 the admin profile, 2 a plain profile, 3 the admin token.
    Act {
        bot: u8,
        who: u8,
        action: u8,
    },
    /// The owner edits the listing.
    Edit(u8),
    /// The operator takes `mod` from the moderator, or gives it back.
    SetMod(bool),
    Wait(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Submit),
        8 => (any::<u8>(), 0u8..4, 0u8..8).prop_map(|(bot, who, action)| Op::Act { bot, who, action }),
        2 => any::<u8>().prop_map(Op::Edit),
        1 => any::<bool>().prop_map(Op::SetMod),
        1 => (1u16..600).prop_map(Op::Wait),
    ]
}

/// A listing as the test's model has it.
#[derive(Clone, Debug)]
struct Model {
    id: String,
    status: ListingStatus,
    certified: bool,
    featured: bool,
    claimed: bool,
}

/// The status `action` asks for, if it is a decision.
fn decision(action: &str) -> Option<ListingStatus> {
    match action {
        "approve" => Some(ListingStatus::Approved),
        "deny" => Some(ListingStatus::Denied),
        "delist" => Some(ListingStatus::Delisted),
        _ => None,
    }
}

/// What the model expects of a staff member's (or the operator's) action, and applies it.
fn apply(listing: &mut Model, action: &str) -> StatusCode {
    if let Some(to) = decision(action) {
        let allowed = matches!(
            (listing.status, to),
            (ListingStatus::Pending, ListingStatus::Approved)
                | (ListingStatus::Pending, ListingStatus::Denied)
                | (ListingStatus::Approved, ListingStatus::Delisted)
                | (ListingStatus::Delisted, ListingStatus::Approved)
        );
        if !allowed {
            return StatusCode::CONFLICT;
        }
        listing.status = to;
        listing.claimed = false;
        return StatusCode::OK;
    }
    match action {
        "claim" if listing.status != ListingStatus::Pending => return StatusCode::CONFLICT,
        "claim" => listing.claimed = true,
        "certify" => listing.certified = true,
        "uncertify" => listing.certified = false,
        "feature" => listing.featured = true,
        _ => listing.featured = false,
    }
    StatusCode::OK
}

async fn staff_token(app: &TestApp, body: Value) -> (String, String) {
    let id = app.create_profile(body).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let scopes = json!({ "scopes": ["staff", "bots"], "label": "prop" });
    let issued: Value = app
        .admin(
            Method::POST,
            &format!("/admin/users/{id}/tokens"),
            Some(&scopes),
        )
        .await
        .json()
        .await
        .expect("json");
    (id, issued["token"].as_str().expect("token").to_owned())
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.data_dir = Some(dir.path().to_owned());
    let app = spawn_app_with(settings).await;
    let (moderator, moderator_token) =
        staff_token(&app, json!({ "username": "moderator", "mod": true })).await;
    let (_, admin_token) = staff_token(&app, json!({ "username": "boss", "admin": true })).await;
    let (_, plain_token) = staff_token(&app, json!({ "username": "plain" })).await;
    let mut is_mod = true;
    let mut listings: Vec<Model> = Vec::new();
    for op in ops {
        match op {
            Op::Submit => {
                let platform_id = 500 + listings.len();
                let body = json!({
                    "platform_id": platform_id.to_string(),
                    "name": format!("Listing {platform_id}"),
                    "username": format!("listing{platform_id}"),
                    "short_description": "A listing",
                });
                let response = app
                    .request(Method::POST, "/bots", Some(&plain_token))
                    .json(&body)
                    .send()
                    .await
                    .expect("sent");
                prop_assert_eq!(response.status(), StatusCode::CREATED);
                let answer: Value = response.json().await.expect("json");
                listings.push(Model {
                    id: answer["bot"]["id"].as_str().expect("id").to_owned(),
                    status: ListingStatus::Pending,
                    certified: false,
                    featured: false,
                    claimed: false,
                });
            }
            Op::Act { bot, who, action } if !listings.is_empty() => {
                let count = listings.len();
                let listing = &mut listings[usize::from(bot) % count];
                let action = ACTIONS[usize::from(action)];
                let reason = json!({ "reason": "prop" });
                let staff_route = format!("/staff/bots/{}/{action}", listing.id);
                let (response, expected) = match who {
                    3 => {
                        // The operator: decisions and flags through `PATCH /admin/bots`.
                        let body = match action {
                            "claim" => None,
                            "certify" | "uncertify" => {
                                Some(json!({ "certified": action == "certify" }))
                            }
                            "feature" | "unfeature" => {
                                Some(json!({ "featured": action == "feature" }))
                            }
                            _ => Some(
                                json!({ "status": decision(action).map(ListingStatus::name), "reason": "prop" }),
                            ),
                        };
                        match body {
                            Some(body) => {
                                let path = format!("/admin/bots/{}", listing.id);
                                let response = app.admin(Method::PATCH, &path, Some(&body)).await;
                                (response, apply(listing, action))
                            }
                            None => {
                                let response = app
                                    .request(Method::POST, &staff_route, Some(botlist_admin()))
                                    .send()
                                    .await
                                    .expect("sent");
                                (response, StatusCode::UNAUTHORIZED)
                            }
                        }
                    }
                    _ => {
                        let token =
                            [&moderator_token, &admin_token, &plain_token][usize::from(who)];
                        let may = match who {
                            0 => is_mod && !action.contains("feature"),
                            1 => true,
                            _ => false,
                        };
                        let response = app
                            .request(Method::POST, &staff_route, Some(token))
                            .json(&reason)
                            .send()
                            .await
                            .expect("sent");
                        let expected = if may {
                            apply(listing, action)
                        } else {
                            StatusCode::FORBIDDEN
                        };
                        (response, expected)
                    }
                };
                prop_assert_eq!(response.status(), expected, "{} by {}", action, who);
            }
            Op::Act { .. } => {}
            Op::Edit(bot) if !listings.is_empty() => {
                let count = listings.len();
                let listing = &mut listings[usize::from(bot) % count];
                let response = app
                    .request(
                        Method::PATCH,
                        &format!("/bots/{}", listing.id),
                        Some(&plain_token),
                    )
                    .json(&json!({ "short_description": "Edited" }))
                    .send()
                    .await
                    .expect("sent");
                prop_assert_eq!(response.status(), StatusCode::OK);
                if listing.status == ListingStatus::Denied {
                    listing.status = ListingStatus::Pending;
                }
            }
            Op::Edit(_) => {}
            Op::SetMod(on) => {
                let response = app.patch_user(&moderator, json!({ "mod": on })).await;
                prop_assert_eq!(response.status(), StatusCode::OK);
                is_mod = on;
            }
            Op::Wait(minutes) => app.clock.advance(chrono::Duration::minutes(minutes.into())),
        }
        // The invariant: public exactly while approved.
        for listing in &listings {
            let public = app.get(&format!("/bots/{}", listing.id)).await.status() == StatusCode::OK;
            prop_assert_eq!(
                public,
                listing.status == ListingStatus::Approved,
                "{:?}",
                listing
            );
        }
    }

    // The queue is the pending listings.
    let queue: Value = app
        .request(Method::GET, "/staff/queue?limit=100", Some(&admin_token))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let queued = queue["results"].as_array().map_or(0, Vec::len);
    let pending = listings
        .iter()
        .filter(|l| l.status == ListingStatus::Pending)
        .count();
    prop_assert_eq!(queued, pending);

    // Replayed from the journal: the same statuses, flags and claims.
    let recovered = recover(dir.path(), false).expect("recovers");
    prop_assert!(recovered.warnings.is_empty(), "{:?}", recovered.warnings);
    for listing in &listings {
        let stored = recovered
            .state
            .bots
            .iter()
            .find(|b| b.state.listing.id.to_string() == listing.id)
            .expect("the listing is replayed");
        let l = &stored.state.listing;
        prop_assert_eq!(l.status, listing.status);
        prop_assert_eq!(l.certified, listing.certified);
        prop_assert_eq!(l.featured, listing.featured);
        prop_assert_eq!(l.claim.is_some(), listing.claimed);
    }
    Ok(())
}

fn botlist_admin() -> &'static str {
    crate::helpers::ADMIN
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10))]

    #[test]
    fn lifecycle_live_and_replayed_agree(ops in prop::collection::vec(op(), 1..30)) {
        actix_web::rt::System::new().block_on(run(ops))?;
    }
}
