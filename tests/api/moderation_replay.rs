//! Property (issue 37): any sequence of lifecycle operations by any role (an owner's submissions,
//! edits and removals; staff's claims, decisions, certification, featuring and vote bans, by a
//! moderator, an admin profile, a profile that is not staff and an owner's token without the
//! `staff` scope; reviews written, edited, deleted, replied to and removed by staff; the admin
//! API's creations, edits, decisions and removals; a moderator losing and regaining `mod`;
//! snapshots), applied to the real server over HTTP, answers as the lifecycle's table says and
//! keeps its invariants:
//!
//! - a listing is in the public reads (`GET /bots/{id}` and the search `GET /bots`) exactly
//!   while it is `approved`, after every operation;
//! - every change answered 2xx leaves exactly one audit entry, with its actor, action, target,
//!   changed field names and reason, and every entry is one of those changes: a refused
//!   operation (wrong role, wrong status, missing listing) and the directory's own data
//!   (reviews by their authors, owners' replies) leave none;
//! - after a restart that replays the journal (the stop's snapshot set aside), and after one
//!   from that snapshot, the audit log, the statuses and flags, and the public reads (listings,
//!   search and reviews) are what they were live.

use std::collections::{BTreeMap, BTreeSet};

use botlist::domain::bot::ListingStatus;
use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{start_time, test_settings, TestApp, ADMIN};
use crate::weekend::{serve_until_stopped, snapshots};

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

/// Who writes reviews: reviewer 0, reviewer 1, the owner (refused: not on their own bot).
const REVIEWERS: u8 = 3;

#[derive(Clone, Debug)]
enum Op {
    /// The owner submits a listing (`POST /bots`): pending.
    Submit,
    /// The operator lists one for the owner (`POST /admin/bots`): approved.
    AdminCreate,
    OwnerEdit(u8),
    OwnerRemove(u8),
    AdminEdit(u8),
    /// The operator's decision through `PATCH /admin/bots/{id}` (`status` 0..4).
    AdminDecide {
        bot: u8,
        status: u8,
    },
    AdminDelete(u8),
    Staff {
        bot: u8,
        who: u8,
        action: u8,
    },
    /// A vote ban on reviewer `target` set (`on`) or lifted, by staff role `who`.
    VoteBan {
        target: u8,
        who: u8,
        on: bool,
    },
    WriteReview {
        bot: u8,
        who: u8,
        rating: u8,
    },
    /// `who` edits (or deletes) `author`'s review.
    EditReview {
        bot: u8,
        who: u8,
        author: u8,
    },
    DeleteReview {
        bot: u8,
        who: u8,
        author: u8,
    },
    /// The owner replies to `author`'s review.
    Reply {
        bot: u8,
        author: u8,
    },
    /// Staff role `who` removes `author`'s review.
    RemoveReview {
        bot: u8,
        author: u8,
        who: u8,
    },
    SetMod(bool),
    Snapshot,
}

/// Who acts on a staff route: 0 the moderator, 1 the admin profile, 2 a plain profile with a
/// `staff` token, 3 the owner's token (no `staff` scope); the staff more often than the others.
fn staff_role() -> impl Strategy<Value = u8> {
    prop_oneof![3 => Just(0u8), 3 => Just(1u8), 1 => Just(2u8), 1 => Just(3u8)]
}

fn op() -> impl Strategy<Value = Op> {
    let bot = any::<u8>();
    prop_oneof![
        3 => Just(Op::Submit),
        1 => Just(Op::AdminCreate),
        2 => bot.prop_map(Op::OwnerEdit),
        1 => bot.prop_map(Op::OwnerRemove),
        1 => bot.prop_map(Op::AdminEdit),
        1 => (bot, 0u8..4).prop_map(|(bot, status)| Op::AdminDecide { bot, status }),
        1 => bot.prop_map(Op::AdminDelete),
        10 => (bot, staff_role(), 0u8..8)
            .prop_map(|(bot, who, action)| Op::Staff { bot, who, action }),
        1 => (0u8..2, staff_role(), any::<bool>())
            .prop_map(|(target, who, on)| Op::VoteBan { target, who, on }),
        3 => (bot, 0..REVIEWERS, 1u8..=5)
            .prop_map(|(bot, who, rating)| Op::WriteReview { bot, who, rating }),
        1 => (bot, 0..REVIEWERS, 0..REVIEWERS)
            .prop_map(|(bot, who, author)| Op::EditReview { bot, who, author }),
        1 => (bot, 0..REVIEWERS, 0..REVIEWERS)
            .prop_map(|(bot, who, author)| Op::DeleteReview { bot, who, author }),
        1 => (bot, 0..REVIEWERS).prop_map(|(bot, author)| Op::Reply { bot, author }),
        2 => (bot, 0..REVIEWERS, staff_role())
            .prop_map(|(bot, author, who)| Op::RemoveReview { bot, author, who }),
        1 => any::<bool>().prop_map(Op::SetMod),
        1 => Just(Op::Snapshot),
    ]
}

/// A listing as the model has it; `status` None once it is removed.
#[derive(Clone, Debug)]
struct Listing {
    id: String,
    status: Option<ListingStatus>,
    certified: bool,
    featured: bool,
    /// The reason of the last decision (kept when an owner's edit resubmits a denied listing),
    /// which a decision's entry names among its changes only when it differs.
    reason: Option<&'static str>,
    /// Review ids by reviewer.
    reviews: BTreeMap<u8, String>,
}

impl Listing {
    fn public(&self) -> bool {
        self.status == Some(ListingStatus::Approved)
    }
}

/// The entry a change answered 2xx must leave.
struct Expected {
    action: &'static str,
    actor: Option<String>,
    target: String,
    changes: Vec<&'static str>,
    reason: Option<&'static str>,
}

impl Expected {
    fn new(action: &'static str, actor: Option<&str>, target: &str) -> Self {
        Self {
            action,
            actor: actor.map(str::to_owned),
            target: target.to_owned(),
            changes: Vec::new(),
            reason: None,
        }
    }

    fn changes(mut self, changes: &[&'static str]) -> Self {
        self.changes = changes.to_vec();
        self
    }

    fn reason(mut self, reason: Option<&'static str>) -> Self {
        self.reason = reason;
        self
    }
}

/// The people of the test: their profile ids and tokens.
struct World {
    owner: String,
    owner_token: String,
    /// The moderator, the admin profile, the plain profile: ids and `staff` tokens.
    staff: [(String, String); 3],
    /// Reviewers 0 and 1 (ids and `reviews` tokens).
    reviewers: [(String, String); 2],
}

impl World {
    /// The token and profile id of staff role `who` (3: the owner's token, without `staff`).
    fn staff_role(&self, who: u8) -> (&str, &str) {
        match who {
            3 => (&self.owner_token, &self.owner),
            n => {
                let (id, token) = &self.staff[usize::from(n)];
                (token, id)
            }
        }
    }

    /// Reviewer `who` (2: the owner).
    fn reviewer(&self, who: u8) -> (&str, &str) {
        match who {
            2 => (&self.owner_token, &self.owner),
            n => {
                let (id, token) = &self.reviewers[usize::from(n)];
                (token, id)
            }
        }
    }
}

async fn world(app: &TestApp) -> World {
    let (owner, owner_token) = app
        .profile_with_token(json!({ "username": "owner" }), &["bots", "reviews"])
        .await;
    let moderator = app
        .profile_with_token(json!({ "username": "moderator", "mod": true }), &["staff"])
        .await;
    let boss = app
        .profile_with_token(json!({ "username": "boss", "admin": true }), &["staff"])
        .await;
    let plain = app
        .profile_with_token(json!({ "username": "plain" }), &["staff"])
        .await;
    let first = app
        .profile_with_token(json!({ "username": "reviewer0" }), &["reviews"])
        .await;
    let second = app
        .profile_with_token(json!({ "username": "reviewer1" }), &["reviews"])
        .await;
    World {
        owner,
        owner_token,
        staff: [moderator, boss, plain],
        reviewers: [first, second],
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

/// The status a decision asks for.
fn decision(action: &str) -> Option<ListingStatus> {
    match action {
        "approve" => Some(ListingStatus::Approved),
        "deny" => Some(ListingStatus::Denied),
        "delist" => Some(ListingStatus::Delisted),
        _ => None,
    }
}

/// What the table answers to a decision or a flag by staff or the operator on a listing that
/// exists, applied to the model.
fn apply(
    listing: &mut Listing,
    status: ListingStatus,
    action: &str,
    reason: Option<&'static str>,
) -> StatusCode {
    if let Some(to) = decision(action) {
        let allowed = matches!(
            (status, to),
            (ListingStatus::Pending, ListingStatus::Approved)
                | (ListingStatus::Pending, ListingStatus::Denied)
                | (ListingStatus::Approved, ListingStatus::Delisted)
                | (ListingStatus::Delisted, ListingStatus::Approved)
        );
        if !allowed {
            return StatusCode::CONFLICT;
        }
        listing.status = Some(to);
        listing.reason = reason;
        return StatusCode::OK;
    }
    match action {
        "claim" if status != ListingStatus::Pending => return StatusCode::CONFLICT,
        "claim" => {}
        "certify" => listing.certified = true,
        "uncertify" => listing.certified = false,
        "feature" => listing.featured = true,
        _ => listing.featured = false,
    }
    StatusCode::OK
}

/// The model's state besides the listings.
struct Model {
    listings: Vec<Listing>,
    is_mod: bool,
    banned: [bool; 2],
    next: u32,
}

impl Model {
    fn pick(&mut self, nth: u8) -> Option<&mut Listing> {
        let count = self.listings.len();
        (count > 0).then(|| &mut self.listings[usize::from(nth) % count])
    }
}

/// What one operation answered and what it must have answered, and the entry it must leave
/// when it succeeded (None: not audited).
struct Outcome {
    label: String,
    got: StatusCode,
    /// None when more than one answer is right (a role refused before or after the listing
    /// is looked up).
    want: Option<StatusCode>,
    entry: Option<Expected>,
}

async fn step(app: &TestApp, world: &World, model: &mut Model, op: Op) -> Option<Outcome> {
    model.next += 1;
    let next = model.next;
    let label = format!("{op:?}");
    let edit = matches!(op, Op::EditReview { .. });
    let owner = Some(world.owner.as_str());
    let outcome = |got, want, entry| {
        Some(Outcome {
            label: label.clone(),
            got,
            want,
            entry,
        })
    };
    match op {
        Op::Submit => {
            let platform_id = 1000 + next;
            let body = json!({
                "platform_id": platform_id.to_string(),
                "name": format!("Listing {platform_id}"),
                "username": format!("listing{platform_id}"),
                "short_description": "A listing of the property test",
            });
            let response = send(app, Method::POST, "/bots", &world.owner_token, Some(body)).await;
            let got = response.status();
            let answer: Value = response.json().await.unwrap_or(Value::Null);
            let id = answer["bot"]["id"].as_str().unwrap_or_default().to_owned();
            model.listings.push(Listing {
                id: id.clone(),
                status: Some(ListingStatus::Pending),
                certified: false,
                featured: false,
                reason: None,
                reviews: BTreeMap::new(),
            });
            let entry = Expected::new("bot.submit", owner, &id).changes(&["name", "owner_ids"]);
            outcome(got, Some(StatusCode::CREATED), Some(entry))
        }
        Op::AdminCreate => {
            let bot = app
                .create_bot(
                    u64::from(1000 + next),
                    json!({ "owner_ids": [world.owner] }),
                )
                .await;
            model.listings.push(Listing {
                id: bot.id.clone(),
                status: Some(ListingStatus::Approved),
                certified: false,
                featured: false,
                reason: None,
                reviews: BTreeMap::new(),
            });
            let entry = Expected::new("bot.create", None, &bot.id).changes(&["name", "owner_ids"]);
            outcome(StatusCode::CREATED, Some(StatusCode::CREATED), Some(entry))
        }
        Op::OwnerEdit(n) => {
            let listing = model.pick(n)?;
            let body = json!({ "short_description": format!("Edited by its owner {next}") });
            let path = format!("/bots/{}", listing.id);
            let got = send(app, Method::PATCH, &path, &world.owner_token, Some(body))
                .await
                .status();
            let mut changes = vec!["short_description"];
            let want = match listing.status {
                None => StatusCode::NOT_FOUND,
                Some(ListingStatus::Denied) => {
                    listing.status = Some(ListingStatus::Pending);
                    changes.push("status");
                    StatusCode::OK
                }
                Some(_) => StatusCode::OK,
            };
            let entry = Expected::new("bot.update", owner, &listing.id).changes(&changes);
            outcome(got, Some(want), Some(entry))
        }
        Op::OwnerRemove(n) => {
            let listing = model.pick(n)?;
            let path = format!("/bots/{}", listing.id);
            let got = send(app, Method::DELETE, &path, &world.owner_token, None)
                .await
                .status();
            let want = match listing.status {
                None => StatusCode::NOT_FOUND,
                Some(ListingStatus::Approved) => {
                    listing.status = None;
                    listing.reviews.clear();
                    StatusCode::NO_CONTENT
                }
                Some(_) => StatusCode::CONFLICT,
            };
            outcome(
                got,
                Some(want),
                Some(Expected::new("bot.delete", owner, &listing.id)),
            )
        }
        Op::AdminEdit(n) => {
            let listing = model.pick(n)?;
            let body = json!({ "name": format!("Renamed {next}") });
            let path = format!("/admin/bots/{}", listing.id);
            let got = app.admin(Method::PATCH, &path, Some(&body)).await.status();
            let want = match listing.status {
                None => StatusCode::NOT_FOUND,
                Some(_) => StatusCode::OK,
            };
            let entry = Expected::new("bot.update", None, &listing.id).changes(&["name"]);
            outcome(got, Some(want), Some(entry))
        }
        Op::AdminDecide { bot, status } => {
            let listing = model.pick(bot)?;
            let to = ListingStatus::ALL[usize::from(status)];
            let body = json!({ "status": to.name(), "reason": "prop" });
            let path = format!("/admin/bots/{}", listing.id);
            let got = app.admin(Method::PATCH, &path, Some(&body)).await.status();
            let changes: &[&str] = if listing.reason == Some("prop") {
                &["status"]
            } else {
                &["status", "reason"]
            };
            let want = match (listing.status, to) {
                (None, _) => StatusCode::NOT_FOUND,
                // Not a decision any actor makes through this route.
                (Some(_), ListingStatus::Pending) => StatusCode::CONFLICT,
                (Some(from), to) => {
                    let action = match to {
                        ListingStatus::Approved => "approve",
                        ListingStatus::Denied => "deny",
                        _ => "delist",
                    };
                    apply(listing, from, action, Some("prop"))
                }
            };
            let entry = Expected::new("bot.update", None, &listing.id)
                .changes(changes)
                .reason(Some("prop"));
            outcome(got, Some(want), Some(entry))
        }
        Op::AdminDelete(n) => {
            let listing = model.pick(n)?;
            let path = format!("/admin/bots/{}", listing.id);
            let got = app.admin(Method::DELETE, &path, None).await.status();
            let want = match listing.status {
                None => StatusCode::NOT_FOUND,
                Some(_) => StatusCode::NO_CONTENT,
            };
            listing.status = None;
            listing.reviews.clear();
            outcome(
                got,
                Some(want),
                Some(Expected::new("bot.delete", None, &listing.id)),
            )
        }
        Op::Staff { bot, who, action } => {
            let is_mod = model.is_mod;
            let listing = model.pick(bot)?;
            let action = ACTIONS[usize::from(action)];
            let (token, actor) = world.staff_role(who);
            let reason = matches!(action, "deny" | "delist").then_some("prop");
            let path = format!("/staff/bots/{}/{action}", listing.id);
            let got = send(
                app,
                Method::POST,
                &path,
                token,
                reason.map(|r| json!({ "reason": r })),
            )
            .await
            .status();
            let may = match who {
                0 => is_mod && !action.contains("feature"),
                1 => true,
                _ => false,
            };
            let want = match listing.status {
                // Refused for the role, or for the listing: the route may look at either
                // first; either way nothing changes.
                None if !may => None,
                None => Some(StatusCode::NOT_FOUND),
                Some(_) if !may => Some(StatusCode::FORBIDDEN),
                Some(status) => Some(apply(listing, status, action, reason)),
            };
            let name = match action {
                "claim" => "bot.claim",
                "approve" => "bot.approve",
                "deny" => "bot.deny",
                "delist" => "bot.delist",
                "certify" => "bot.certify",
                "uncertify" => "bot.uncertify",
                "feature" => "bot.feature",
                _ => "bot.unfeature",
            };
            let entry = Expected::new(name, Some(actor), &listing.id).reason(reason);
            outcome(got, want, Some(entry))
        }
        Op::VoteBan { target, who, on } => {
            let (target_id, _) = &world.reviewers[usize::from(target)];
            let (token, actor) = world.staff_role(who);
            let path = format!("/staff/users/{target_id}/vote-ban");
            let response = if on {
                let body = json!({ "reason": "prop" });
                send(app, Method::POST, &path, token, Some(body)).await
            } else {
                send(app, Method::DELETE, &path, token, None).await
            };
            let may = match who {
                0 => model.is_mod,
                1 => true,
                _ => false,
            };
            let banned = &mut model.banned[usize::from(target)];
            let want = match (may, on) {
                (false, _) => StatusCode::FORBIDDEN,
                (true, true) => {
                    *banned = true;
                    StatusCode::OK
                }
                (true, false) if !*banned => StatusCode::CONFLICT,
                (true, false) => {
                    *banned = false;
                    StatusCode::NO_CONTENT
                }
            };
            let (action, reason) = if on {
                ("profile.vote_ban", Some("prop"))
            } else {
                ("profile.vote_unban", None)
            };
            let entry = Expected::new(action, Some(actor), target_id)
                .changes(&["vote_ban"])
                .reason(reason);
            outcome(response.status(), Some(want), Some(entry))
        }
        Op::WriteReview { bot, who, rating } => {
            let listing = model.pick(bot)?;
            let (token, _) = world.reviewer(who);
            let path = format!("/bots/{}/reviews", listing.id);
            let body = json!({ "rating": rating, "content": "prop" });
            let response = send(app, Method::POST, &path, token, Some(body)).await;
            let got = response.status();
            let public = listing.public();
            let want = match listing.reviews.entry(who) {
                _ if !public => StatusCode::NOT_FOUND,
                _ if who == 2 => StatusCode::FORBIDDEN,
                std::collections::btree_map::Entry::Occupied(_) => StatusCode::CONFLICT,
                std::collections::btree_map::Entry::Vacant(slot) => {
                    let written: Value = response.json().await.unwrap_or(Value::Null);
                    slot.insert(written["id"].as_str().unwrap_or_default().to_owned());
                    StatusCode::CREATED
                }
            };
            outcome(got, Some(want), None)
        }
        Op::EditReview { bot, who, author } | Op::DeleteReview { bot, who, author } => {
            let listing = model.pick(bot)?;
            let (token, _) = world.reviewer(who);
            let path = review_path(listing, author);
            let got = if edit {
                let body = json!({ "rating": 1 + next % 5, "content": "edited" });
                send(app, Method::PATCH, &path, token, Some(body)).await
            } else {
                send(app, Method::DELETE, &path, token, None).await
            }
            .status();
            let want = if !listing.public() || !listing.reviews.contains_key(&author) {
                StatusCode::NOT_FOUND
            } else if who != author {
                StatusCode::FORBIDDEN
            } else if edit {
                StatusCode::OK
            } else {
                listing.reviews.remove(&author);
                StatusCode::NO_CONTENT
            };
            outcome(got, Some(want), None)
        }
        Op::Reply { bot, author } => {
            let listing = model.pick(bot)?;
            let path = format!("{}/reply", review_path(listing, author));
            let body = json!({ "content": format!("thanks {next}") });
            let got = send(app, Method::PUT, &path, &world.owner_token, Some(body))
                .await
                .status();
            let want = if listing.public() && listing.reviews.contains_key(&author) {
                StatusCode::OK
            } else {
                StatusCode::NOT_FOUND
            };
            outcome(got, Some(want), None)
        }
        Op::RemoveReview { bot, author, who } => {
            let is_mod = model.is_mod;
            let listing = model.pick(bot)?;
            let (token, actor) = world.staff_role(who);
            let path = format!("{}/remove", review_path(listing, author));
            let body = json!({ "reason": "prop" });
            let got = send(app, Method::POST, &path, token, Some(body))
                .await
                .status();
            let may = match who {
                0 => is_mod,
                1 => true,
                _ => false,
            };
            // Staff remove a review of a listing in any status (an abusive review of a
            // delisted bot too); its author's and owner's routes need a public listing.
            let want = if !may {
                StatusCode::FORBIDDEN
            } else if listing.status.is_none() || !listing.reviews.contains_key(&author) {
                StatusCode::NOT_FOUND
            } else {
                listing.reviews.remove(&author);
                StatusCode::NO_CONTENT
            };
            let entry = Expected::new("bot.review.remove", Some(actor), &listing.id)
                .changes(&["reviews"])
                .reason(Some("prop"));
            outcome(got, Some(want), Some(entry))
        }
        Op::SetMod(on) => {
            let (moderator, _) = &world.staff[0];
            let path = format!("/admin/users/{moderator}");
            let got = app
                .admin(Method::PATCH, &path, Some(&json!({ "mod": on })))
                .await
                .status();
            // A PATCH that sets what is already there is still answered and audited, with no
            // changed field.
            let changes: &[&str] = if model.is_mod == on { &[] } else { &["mod"] };
            model.is_mod = on;
            let entry = Expected::new("profile.update", None, moderator).changes(changes);
            outcome(got, Some(StatusCode::OK), Some(entry))
        }
        Op::Snapshot => {
            let got = app
                .admin(Method::POST, "/admin/snapshot", None)
                .await
                .status();
            outcome(got, Some(StatusCode::OK), None)
        }
    }
}

/// The path of `author`'s review of `listing`: an id no review has when the model has none.
fn review_path(listing: &Listing, author: u8) -> String {
    let id = listing
        .reviews
        .get(&author)
        .cloned()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    format!("/bots/{}/reviews/{id}", listing.id)
}

/// The whole audit log, newest first, walked with its cursor.
async fn audit_log(app: &TestApp) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut path = "/staff/audit?limit=100".to_string();
    loop {
        let response = app
            .request(Method::GET, &path, Some(ADMIN))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::OK);
        let page: Value = response.json().await.expect("json");
        entries.extend(page["results"].as_array().expect("results").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => path = format!("/staff/audit?limit=100&cursor={next}"),
            None => return entries,
        }
    }
}

/// The entries newer than `seen` (an entry's id is its journal number), oldest first.
async fn entries_since(app: &TestApp, seen: u64) -> Vec<Value> {
    let page: Value = app
        .request(Method::GET, "/staff/audit?limit=5", Some(ADMIN))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let mut newer: Vec<Value> = page["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|entry| entry_id(entry) > seen)
        .cloned()
        .collect();
    newer.reverse();
    newer
}

fn entry_id(entry: &Value) -> u64 {
    entry["id"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .expect("an entry's id is its journal number")
}

fn check_entry(entry: &Value, expected: &Expected, label: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(entry["action"].as_str(), Some(expected.action), "{}", label);
    let kind = if expected.actor.is_some() {
        "profile"
    } else {
        "admin"
    };
    prop_assert_eq!(entry["actor"]["kind"].as_str(), Some(kind), "{}", label);
    prop_assert_eq!(
        entry["actor"]["id"].as_str(),
        expected.actor.as_deref(),
        "{}",
        label
    );
    prop_assert_eq!(
        entry["target"]["id"].as_str(),
        Some(expected.target.as_str()),
        "{}",
        label
    );
    prop_assert_eq!(entry["reason"].as_str(), expected.reason, "{}", label);
    let changes: BTreeSet<&str> = entry["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in &expected.changes {
        prop_assert!(
            changes.contains(name),
            "{}: {} in {:?}",
            label,
            name,
            changes
        );
    }
    Ok(())
}

/// The public reads agree with the statuses: `GET /bots/{id}` answers exactly for the approved
/// listings, and the search holds exactly those.
async fn public_iff_approved(app: &TestApp, model: &Model) -> Result<(), TestCaseError> {
    for listing in &model.listings {
        let status = app.get(&format!("/bots/{}", listing.id)).await.status();
        prop_assert_eq!(
            status == StatusCode::OK,
            listing.public(),
            "{:?}: {}",
            listing,
            status
        );
    }
    let searched: Value = app.get("/bots?limit=100").await.json().await.expect("json");
    let found: BTreeSet<String> = searched["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|bot| bot["id"].as_str().map(str::to_owned))
        .collect();
    let approved: BTreeSet<String> = model
        .listings
        .iter()
        .filter(|l| l.public())
        .map(|l| l.id.clone())
        .collect();
    prop_assert_eq!(found, approved);
    Ok(())
}

/// What a restart must keep: the audit log; each listing as staff see it (status, reason,
/// flags, claim) or its absence; the public reads of it, of its reviews and of the search.
async fn observed(app: &TestApp, world: &World, model: &Model) -> Value {
    let staff_token = &world.staff[1].1;
    let mut listings = Vec::new();
    for listing in &model.listings {
        let staff = app
            .request(
                Method::GET,
                &format!("/staff/bots/{}", listing.id),
                Some(staff_token),
            )
            .send()
            .await
            .expect("sent");
        let staff = (staff.status().as_u16(), staff.json::<Value>().await.ok());
        let public = app.get(&format!("/bots/{}", listing.id)).await;
        let public = (public.status().as_u16(), public.json::<Value>().await.ok());
        let reviews = app
            .get(&format!("/bots/{}/reviews?limit=100", listing.id))
            .await;
        let reviews = (
            reviews.status().as_u16(),
            reviews.json::<Value>().await.ok(),
        );
        listings.push(json!({ "staff": staff, "public": public, "reviews": reviews }));
    }
    let search: Value = app.get("/bots?limit=100").await.json().await.expect("json");
    json!({ "audit": audit_log(app).await, "listings": listings, "search": search })
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.data_dir = Some(dir.path().to_owned());
    let (app, stop, task) = serve_until_stopped(settings.clone(), start_time()).await;
    let world = world(&app).await;
    let mut model = Model {
        listings: Vec::new(),
        is_mod: true,
        banned: [false; 2],
        next: 0,
    };
    // The set-up's entries (profiles and tokens), then one per change answered 2xx.
    let mut expected_entries = audit_log(&app).await.len();
    let mut seen = audit_log(&app).await.first().map_or(0, entry_id);
    // Every case starts with two pending listings and an approved one, so that its
    // operations find listings to act on from the first.
    let start = [Op::Submit, Op::Submit, Op::AdminCreate];
    for op in start.into_iter().chain(ops) {
        let Some(outcome) = step(&app, &world, &mut model, op).await else {
            continue;
        };
        let label = &outcome.label;
        if let Some(want) = outcome.want {
            prop_assert_eq!(outcome.got, want, "{}", label);
        }
        let new = entries_since(&app, seen).await;
        match &outcome.entry {
            Some(expected) if outcome.got.is_success() => {
                prop_assert_eq!(new.len(), 1, "{}: one entry, got {:?}", label, new);
                check_entry(&new[0], expected, label)?;
                expected_entries += 1;
            }
            _ => prop_assert!(new.is_empty(), "{}: no entry, got {:?}", label, new),
        }
        seen = new.last().map_or(seen, entry_id);
        public_iff_approved(&app, &model).await?;
    }
    let live = observed(&app, &world, &model).await;
    prop_assert_eq!(
        live["audit"].as_array().map(Vec::len),
        Some(expected_entries),
        "every entry is one of the changes"
    );
    stop.send(()).expect("the server listens");
    task.await.expect("joined").expect("a clean stop");

    // Replayed from the journal (the stop's snapshot set aside: an earlier one, if any, and
    // the journal after it), then restored from the snapshot the stop wrote.
    let last = snapshots(dir.path())
        .last()
        .expect("the stop writes a snapshot")
        .clone();
    let kept = std::fs::read(&last).expect("read");
    std::fs::remove_file(&last).expect("removed");
    for from_snapshot in [false, true] {
        if from_snapshot {
            std::fs::write(&last, &kept).expect("put back");
        }
        let (app, stop, task) = serve_until_stopped(settings.clone(), start_time()).await;
        let replayed = observed(&app, &world, &model).await;
        prop_assert_eq!(&replayed, &live, "from the snapshot: {}", from_snapshot);
        public_iff_approved(&app, &model).await?;
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
    fn every_role_keeps_the_lifecycle_and_its_audit_live_and_replayed(
        ops in prop::collection::vec(op(), 10..40)
    ) {
        actix_web::rt::System::new().block_on(run(ops))?;
    }
}
