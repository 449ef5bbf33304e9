//! Property: any sequence of token issues, revocations, time passing and votes, applied live
//! (the real server over HTTP, on a data directory) and replayed from its journal, ends in the
//! same state; and no revoked or expired token ever authorises, live or replayed.

use std::collections::BTreeMap;

use botlist::domain::ids::{ProfileId, TokenHash};
use botlist::persist::recovery::recover;
use proptest::prelude::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, test_settings};

#[derive(Clone, Debug)]
enum Op {
    /// Issue a token to profile `profile`, with the `vote` scope or not, expiring after
    /// `expires` minutes or never.
    Issue {
        profile: u8,
        vote: bool,
        expires: Option<u16>,
    },
    /// Revoke the `nth` token issued (modulo), whether or not it is revoked already.
    Revoke(u8),
    /// Let minutes pass on the clock.
    Wait(u16),
    /// Vote for bot `bot` with the `nth` token issued (modulo).
    Vote { nth: u8, bot: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..2, any::<bool>(), prop::option::of(1u16..600))
            .prop_map(|(profile, vote, expires)| Op::Issue { profile, vote, expires }),
        2 => any::<u8>().prop_map(Op::Revoke),
        2 => (1u16..900).prop_map(Op::Wait),
        5 => (any::<u8>(), 0u8..2).prop_map(|(nth, bot)| Op::Vote { nth, bot }),
    ]
}

/// A token as the test knows it.
struct Issued {
    id: String,
    profile: usize,
    secret: String,
    vote: bool,
    /// Minutes since the start at which it stops working.
    ends: Option<u64>,
    revoked: bool,
}

impl Issued {
    fn live(&self, minute: u64) -> bool {
        !self.revoked && self.ends.is_none_or(|end| minute < end)
    }
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = test_settings();
    settings.rate_limit = 0;
    settings.data_dir = Some(dir.path().to_owned());
    let app = spawn_app_with(settings).await;
    let mut profiles = Vec::new();
    for (i, platform) in [(0, "9001"), (1, "9002")] {
        let created = app
            .create_profile(json!({ "username": format!("p{i}"), "platform_id": platform }))
            .await;
        profiles.push(created["id"].as_str().expect("id").to_owned());
    }
    let bots = [
        app.create_bot(71, json!({})).await,
        app.create_bot(72, json!({})).await,
    ];
    let mut issued: Vec<Issued> = Vec::new();
    let mut minute = 0u64;
    for op in ops {
        match op {
            Op::Issue {
                profile,
                vote,
                expires,
            } => {
                let scopes = if vote {
                    json!(["vote"])
                } else {
                    json!(["bots"])
                };
                let mut body = json!({ "scopes": scopes, "label": "prop" });
                if let Some(minutes) = expires {
                    body["expires_in"] = json!(u64::from(minutes) * 60);
                }
                let profile = usize::from(profile);
                let response = app
                    .admin(
                        Method::POST,
                        &format!("/admin/users/{}/tokens", profiles[profile]),
                        Some(&body),
                    )
                    .await;
                prop_assert_eq!(response.status(), StatusCode::CREATED);
                let answer: Value = response.json().await.expect("json");
                issued.push(Issued {
                    id: answer["id"].as_str().expect("id").to_owned(),
                    profile,
                    secret: answer["token"].as_str().expect("token").to_owned(),
                    vote,
                    ends: expires.map(|m| minute + u64::from(m)),
                    revoked: false,
                });
            }
            Op::Revoke(nth) if !issued.is_empty() => {
                let count = issued.len();
                let token = &mut issued[usize::from(nth) % count];
                let response = app
                    .admin(
                        Method::DELETE,
                        &format!(
                            "/admin/users/{}/tokens/{}",
                            profiles[token.profile], token.id
                        ),
                        None,
                    )
                    .await;
                let expected = if token.revoked {
                    StatusCode::NOT_FOUND
                } else {
                    StatusCode::NO_CONTENT
                };
                prop_assert_eq!(response.status(), expected);
                token.revoked = true;
            }
            Op::Revoke(_) => {}
            Op::Wait(minutes) => {
                minute += u64::from(minutes);
                app.clock.advance(chrono::Duration::minutes(minutes.into()));
            }
            Op::Vote { nth, bot } if !issued.is_empty() => {
                let token = &issued[usize::from(nth) % issued.len()];
                let response = app
                    .request(
                        Method::POST,
                        &format!("/bots/{}/votes", bots[usize::from(bot)].id),
                        Some(&token.secret),
                    )
                    .send()
                    .await
                    .expect("sent");
                let status = response.status();
                if !token.live(minute) {
                    prop_assert_eq!(status, StatusCode::UNAUTHORIZED, "a dead token authorised");
                } else if !token.vote {
                    prop_assert_eq!(status, StatusCode::FORBIDDEN);
                } else {
                    prop_assert!(
                        status == StatusCode::CREATED || status == StatusCode::CONFLICT,
                        "{}",
                        status
                    );
                }
            }
            Op::Vote { .. } => {}
        }
    }

    // The live state, as the admin API and the public routes show it.
    let mut live_tokens: BTreeMap<String, Value> = BTreeMap::new();
    for id in &profiles {
        let listed: Value = app
            .admin(Method::GET, &format!("/admin/users/{id}/tokens"), None)
            .await
            .json()
            .await
            .expect("json");
        live_tokens.insert(id.clone(), listed["tokens"].clone());
    }
    let mut live_counts = Vec::new();
    for bot in &bots {
        let shown: Value = app
            .get(&format!("/bots/{}", bot.id))
            .await
            .json()
            .await
            .expect("json");
        live_counts.push(shown["vote_count"].as_u64().expect("a count"));
    }

    // The same, replayed from the journal.
    let recovered = recover(dir.path(), false).expect("recovers");
    prop_assert!(recovered.warnings.is_empty(), "{:?}", recovered.warnings);
    let now = botlist::domain::time::Timestamp::from_millis(
        crate::helpers::start_time().millis() + (minute as i64) * 60_000,
    );
    for (id, listed) in &live_tokens {
        let profile_id = ProfileId::parse(id).expect("a profile id");
        let profile = recovered
            .state
            .profiles
            .iter()
            .find(|p| p.id == profile_id)
            .expect("the profile is replayed");
        let replayed: Vec<Value> = profile
            .tokens
            .iter()
            .map(|t| {
                json!({
                    "id": t.id.to_string(),
                    "scopes": t.scopes,
                    "label": t.label.as_str(),
                    "created_at": t.created_at,
                    "expires_at": t.expires_at,
                })
            })
            .collect();
        prop_assert_eq!(listed, &Value::Array(replayed));
        // No revoked or expired token authorises after replay either.
        for token in issued.iter().filter(|t| &profiles[t.profile] == id) {
            let hash = TokenHash::of(&token.secret);
            let authorises = profile
                .tokens
                .iter()
                .any(|t| t.hash.matches(&hash) && t.grant(profile.id).live_at(now));
            prop_assert_eq!(authorises, token.live(minute));
        }
    }
    for (bot, live) in bots.iter().zip(live_counts) {
        let stored = recovered
            .state
            .bots
            .iter()
            .find(|b| b.state.listing.id.to_string() == bot.id)
            .expect("the bot is replayed");
        prop_assert_eq!(stored.state.votes.total, live);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn tokens_and_votes_live_and_replayed_agree(ops in prop::collection::vec(op(), 1..30)) {
        actix_web::rt::System::new().block_on(run(ops))?;
    }
}
