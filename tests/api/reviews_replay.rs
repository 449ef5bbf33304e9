//! Property: any sequence of review operations (reviews written, edited and deleted by their
//! authors and by others, owners' replies and strangers' attempts, staff's removals by every
//! role, a moderator losing and regaining `mod`, snapshots) answers as the rules say and keeps
//! the invariants: at most one review per profile per bot, the average and count equal to the
//! reviews present, a removed or deleted review gone, and one audit entry per staff removal.
//! They hold live after every operation, and after a restart from the journal (the last
//! snapshot set aside) and from the snapshot the stop wrote.

use std::collections::BTreeMap;

use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{test_settings, TestApp};
use crate::weekend::{serve_until_stopped, snapshots};

/// Reviewers 0 to 3; bots 0 and 1.
const REVIEWERS: u8 = 4;
const BOTS: u8 = 2;

#[derive(Clone, Debug)]
enum Op {
    Write {
        bot: u8,
        who: u8,
        rating: u8,
    },
    /// `who` edits (or deletes) the review of `author` (its own when they are the same).
    Edit {
        bot: u8,
        who: u8,
        author: u8,
        rating: u8,
    },
    Delete {
        bot: u8,
        who: u8,
        author: u8,
    },
    /// The owner (`owner` true) or a profile that is not one replies to `author`'s review.
    Reply {
        bot: u8,
        author: u8,
        owner: bool,
    },
    /// `who`: 0 the moderator, 1 the admin profile, 2 a plain profile with a `staff` token, 3
    /// the review's author.
    Remove {
        bot: u8,
        author: u8,
        who: u8,
    },
    SetMod(bool),
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    let bot = 0..BOTS;
    let who = 0..REVIEWERS;
    prop_oneof![
        5 => (bot.clone(), who.clone(), 1u8..=5).prop_map(|(bot, who, rating)| Op::Write { bot, who, rating }),
        2 => (bot.clone(), who.clone(), who.clone(), 1u8..=5)
            .prop_map(|(bot, who, author, rating)| Op::Edit { bot, who, author, rating }),
        2 => (bot.clone(), who.clone(), who.clone()).prop_map(|(bot, who, author)| Op::Delete { bot, who, author }),
        2 => (bot.clone(), who.clone(), any::<bool>()).prop_map(|(bot, author, owner)| Op::Reply { bot, author, owner }),
        3 => (bot, who, 0u8..4).prop_map(|(bot, author, who)| Op::Remove { bot, author, who }),
        1 => any::<bool>().prop_map(Op::SetMod),
        1 => Just(Op::Snapshot),
    ]
}

/// A review as the model has it.
#[derive(Clone, Debug, PartialEq)]
struct Kept {
    id: String,
    rating: u8,
    replied: bool,
}

/// The model: each bot's reviews by author (so at most one per profile per bot by its shape).
type Model = BTreeMap<(u8, u8), Kept>;

struct World {
    bots: Vec<String>,
    owner_token: String,
    stranger_token: String,
    reviewers: Vec<String>,
    moderator: String,
    staff: [String; 3],
}

async fn world(app: &TestApp) -> World {
    let (owner, owner_token) = app
        .profile_with_token(json!({ "username": "owner" }), &["bots"])
        .await;
    let (_, stranger_token) = app
        .profile_with_token(json!({ "username": "stranger" }), &["bots"])
        .await;
    let mut bots = Vec::new();
    for n in 0..BOTS {
        let bot = app
            .create_bot(900 + u64::from(n), json!({ "owner_ids": [owner] }))
            .await;
        bots.push(bot.id);
    }
    let mut reviewers = Vec::new();
    for n in 0..REVIEWERS {
        let name = format!("reviewer{n}");
        reviewers.push(
            app.profile_with_token(json!({ "username": name }), &["reviews"])
                .await
                .1,
        );
    }
    let (moderator, mod_token) = app
        .profile_with_token(json!({ "username": "moderator", "mod": true }), &["staff"])
        .await;
    let (_, admin_token) = app
        .profile_with_token(json!({ "username": "boss", "admin": true }), &["staff"])
        .await;
    let (_, plain_token) = app
        .profile_with_token(json!({ "username": "plain" }), &["staff"])
        .await;
    World {
        bots,
        owner_token,
        stranger_token,
        reviewers,
        moderator,
        staff: [mod_token, admin_token, plain_token],
    }
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let request = app.request(method, path, Some(token));
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    request.send().await.expect("sent")
}

/// The path of `author`'s review on `bot`: its id when the model has one, else an id no review
/// has (so the answer is 404).
fn review_path(world: &World, model: &Model, bot: u8, author: u8) -> String {
    let id = model
        .get(&(bot, author))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), |kept| kept.id.clone());
    format!("/bots/{}/reviews/{id}", world.bots[usize::from(bot)])
}

/// Applies one operation live and to the model; whether it was a staff removal that succeeded.
async fn step(
    app: &TestApp,
    world: &World,
    model: &mut Model,
    is_mod: &mut bool,
    op: Op,
) -> Result<bool, TestCaseError> {
    let mut removed = false;
    match op {
        Op::Write { bot, who, rating } => {
            let path = format!("/bots/{}/reviews", world.bots[usize::from(bot)]);
            let body = json!({ "rating": rating, "content": "prop" });
            let response = send(
                app,
                Method::POST,
                &path,
                &world.reviewers[usize::from(who)],
                Some(body),
            )
            .await;
            match model.entry((bot, who)) {
                std::collections::btree_map::Entry::Occupied(_) => {
                    prop_assert_eq!(response.status(), StatusCode::CONFLICT);
                }
                std::collections::btree_map::Entry::Vacant(slot) => {
                    prop_assert_eq!(response.status(), StatusCode::CREATED);
                    let written: Value = response.json().await.expect("json");
                    let id = written["id"].as_str().expect("id").to_owned();
                    slot.insert(Kept {
                        id,
                        rating,
                        replied: false,
                    });
                }
            }
        }
        Op::Edit {
            bot,
            who,
            author,
            rating,
        } => {
            let path = review_path(world, model, bot, author);
            let token = &world.reviewers[usize::from(who)];
            let response = send(
                app,
                Method::PATCH,
                &path,
                token,
                Some(json!({ "rating": rating })),
            )
            .await;
            let expected = match model.get_mut(&(bot, author)) {
                None => StatusCode::NOT_FOUND,
                Some(_) if who != author => StatusCode::FORBIDDEN,
                Some(kept) => {
                    kept.rating = rating;
                    StatusCode::OK
                }
            };
            prop_assert_eq!(response.status(), expected);
        }
        Op::Delete { bot, who, author } => {
            let path = review_path(world, model, bot, author);
            let token = &world.reviewers[usize::from(who)];
            let response = send(app, Method::DELETE, &path, token, None).await;
            let expected = match model.get(&(bot, author)) {
                None => StatusCode::NOT_FOUND,
                Some(_) if who != author => StatusCode::FORBIDDEN,
                Some(_) => {
                    model.remove(&(bot, author));
                    StatusCode::NO_CONTENT
                }
            };
            prop_assert_eq!(response.status(), expected);
        }
        Op::Reply { bot, author, owner } => {
            let path = format!("{}/reply", review_path(world, model, bot, author));
            let token = if owner {
                &world.owner_token
            } else {
                &world.stranger_token
            };
            let body = json!({ "content": "thanks" });
            let response = send(app, Method::PUT, &path, token, Some(body)).await;
            let expected = match model.get_mut(&(bot, author)) {
                _ if !owner => StatusCode::FORBIDDEN,
                None => StatusCode::NOT_FOUND,
                Some(kept) => {
                    kept.replied = true;
                    StatusCode::OK
                }
            };
            prop_assert_eq!(response.status(), expected);
        }
        Op::Remove { bot, author, who } => {
            let path = format!("{}/remove", review_path(world, model, bot, author));
            let token = match who {
                3 => &world.reviewers[usize::from(author)],
                staff => &world.staff[usize::from(staff)],
            };
            let body = json!({ "reason": "prop" });
            let response = send(app, Method::POST, &path, token, Some(body)).await;
            let may = match who {
                0 => *is_mod,
                1 => true,
                _ => false,
            };
            let expected = match model.get(&(bot, author)) {
                _ if !may => StatusCode::FORBIDDEN,
                None => StatusCode::NOT_FOUND,
                Some(_) => {
                    model.remove(&(bot, author));
                    removed = true;
                    StatusCode::NO_CONTENT
                }
            };
            prop_assert_eq!(response.status(), expected, "removal by {}", who);
        }
        Op::SetMod(on) => {
            let path = format!("/admin/users/{}", world.moderator);
            let response = app
                .admin(Method::PATCH, &path, Some(&json!({ "mod": on })))
                .await;
            prop_assert_eq!(response.status(), StatusCode::OK);
            *is_mod = on;
        }
        Op::Snapshot => {
            let response = app.admin(Method::POST, "/admin/snapshot", None).await;
            prop_assert_eq!(response.status(), StatusCode::OK);
        }
    }
    Ok(removed)
}

/// Every bot's public list is the model's: the same reviews (ids, ratings, replies), one per
/// author, with the count and the average of those present; and the audit log holds one
/// `bot.review.remove` entry per staff removal.
async fn holds(
    app: &TestApp,
    world: &World,
    model: &Model,
    removals: usize,
) -> Result<(), TestCaseError> {
    for (n, bot) in world.bots.iter().enumerate() {
        let page: Value = app
            .get(&format!("/bots/{bot}/reviews?limit=100"))
            .await
            .json()
            .await
            .expect("json");
        let mut shown: Vec<(String, u8, bool)> = page["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| {
                (
                    r["id"].as_str().expect("id").to_owned(),
                    r["rating"].as_u64().expect("rating") as u8,
                    !r["reply"].is_null(),
                )
            })
            .collect();
        shown.sort();
        let mut expected: Vec<(String, u8, bool)> = model
            .iter()
            .filter(|((b, _), _)| usize::from(*b) == n)
            .map(|(_, kept)| (kept.id.clone(), kept.rating, kept.replied))
            .collect();
        expected.sort();
        prop_assert_eq!(&shown, &expected);
        prop_assert_eq!(page["count"].as_u64(), Some(expected.len() as u64));
        let authors: std::collections::HashSet<&str> = page["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["author_id"].as_str().expect("author"))
            .collect();
        prop_assert_eq!(authors.len(), expected.len(), "one review per profile");
        if expected.is_empty() {
            prop_assert!(page["rating"].is_null());
        } else {
            let sum: u32 = expected.iter().map(|(_, r, _)| u32::from(*r)).sum();
            let average = f64::from(sum) / expected.len() as f64;
            let got = page["rating"].as_f64().expect("an average");
            prop_assert!((got - average).abs() < 1e-9, "{} against {}", got, average);
        }
    }
    let audit: Value = app
        .request(
            Method::GET,
            "/staff/audit?action=bot.review.remove&limit=100",
            Some(crate::helpers::ADMIN),
        )
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    prop_assert_eq!(audit["results"].as_array().map(Vec::len), Some(removals));
    Ok(())
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.data_dir = Some(dir.path().to_owned());
    let start = crate::helpers::start_time();
    let (app, stop, task) = serve_until_stopped(settings.clone(), start).await;
    let world = world(&app).await;
    let mut model = Model::new();
    let mut is_mod = true;
    let mut removals = 0;
    for op in ops {
        removals += usize::from(step(&app, &world, &mut model, &mut is_mod, op).await?);
        holds(&app, &world, &model, removals).await?;
    }
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");

    // From the journal (the stop's snapshot set aside: an earlier one, if any, and the journal
    // after it), then from the snapshot the stop wrote.
    let all = snapshots(dir.path());
    let last = all.last().expect("the stop writes a snapshot").clone();
    let kept = std::fs::read(&last).expect("read");
    std::fs::remove_file(&last).expect("removed");
    for from_snapshot in [false, true] {
        if from_snapshot {
            std::fs::write(&last, &kept).expect("put back");
        }
        let (app, stop, task) = serve_until_stopped(settings.clone(), start).await;
        holds(&app, &world, &model, removals).await?;
        // The one-per-profile rule reads the restored index: a second review is refused.
        if let Some(((bot, who), _)) = model.iter().next() {
            let path = format!("/bots/{}/reviews", world.bots[usize::from(*bot)]);
            let body = json!({ "rating": 3 });
            let token = &world.reviewers[usize::from(*who)];
            let again = send(&app, Method::POST, &path, token, Some(body)).await;
            prop_assert_eq!(again.status(), StatusCode::CONFLICT);
        }
        stop.send(()).expect("the server listens");
        task.await.expect("joined").expect("a clean stop");
        if !from_snapshot {
            // The restart wrote a snapshot of its own: the next start reads the stop's.
            for newer in snapshots(dir.path()) {
                if newer > last {
                    std::fs::remove_file(newer).expect("removed");
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    #[test]
    fn reviews_live_and_after_restarts_agree(ops in prop::collection::vec(op(), 1..40)) {
        actix_web::rt::System::new().block_on(run(ops))?;
    }
}
