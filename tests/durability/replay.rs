//! Property: any sequence of operations, journaled, then a snapshot and a restart, gives back the
//! state that was acknowledged, whether or not journal records follow the snapshot.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::Duration;
use proptest::prelude::*;
use serde_json::json;

use botlist::domain::bot::{BotPatch, BotState, NewBot, ServerCount};
use botlist::domain::ids::{BotId, ProfileId, Snowflake, Token};
use botlist::domain::profile::{NewProfile, Profile};
use botlist::domain::text::VoterName;
use botlist::domain::time::Timestamp;
use botlist::domain::votes::Voter;
use botlist::persist::journal::{FsyncMode, Journal};
use botlist::persist::recovery::recover;
use botlist::persist::snapshot;
use botlist::persist::state::{ApplyRecord, Record, SavedState, StoredBot};

#[derive(Clone, Debug)]
enum Op {
    List(u8),
    Vote { bot: u8, user: u8, minutes: u16 },
    Stats { bot: u8, count: u32 },
    Feature { bot: u8, on: bool },
    Delist(u8),
    Rotate(u8),
    NewProfile(u8),
    DeleteProfile(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => any::<u8>().prop_map(|b| Op::List(b % 4)),
        6 => (any::<u8>(), any::<u8>(), 0u16..1500).prop_map(|(b, u, m)| Op::Vote { bot: b % 4, user: u % 12, minutes: m }),
        2 => (any::<u8>(), any::<u32>()).prop_map(|(b, c)| Op::Stats { bot: b % 4, count: c }),
        1 => (any::<u8>(), any::<bool>()).prop_map(|(b, on)| Op::Feature { bot: b % 4, on }),
        1 => any::<u8>().prop_map(|b| Op::Delist(b % 4)),
        1 => any::<u8>().prop_map(|b| Op::Rotate(b % 4)),
        1 => any::<u8>().prop_map(|p| Op::NewProfile(p % 3)),
        1 => any::<u8>().prop_map(|p| Op::DeleteProfile(p % 3)),
    ]
}

/// The service as its actors would hold it, journaling what they would journal.
struct Model {
    journal: Journal,
    runtime: tokio::runtime::Runtime,
    now: Timestamp,
    registry_seq: u64,
    generation: u8,
    bots: BTreeMap<u8, StoredBot>,
    profiles: BTreeMap<u8, Profile>,
}

impl Model {
    fn commit(&mut self, record: &Record) -> u64 {
        let (seq, durable) = self.journal.submit(record);
        self.runtime.block_on(durable.wait()).expect("durable");
        seq
    }

    fn commit_bot(&mut self, slot: u8, record: &Record) {
        let seq = self.commit(record);
        if let Some(stored) = self.bots.get_mut(&slot) {
            stored.state.last_seq = seq;
        }
    }

    fn new(dir: &Path) -> Self {
        Model {
            journal: Journal::open(dir, 1, FsyncMode::Never).expect("journal opens"),
            runtime: tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime"),
            now: Timestamp::from_millis(1_790_000_000_000),
            registry_seq: 0,
            generation: 0,
            bots: BTreeMap::new(),
            profiles: BTreeMap::new(),
        }
    }

    fn commit_registry(&mut self, record: &Record) {
        self.registry_seq = self.commit(record);
    }

    fn apply(&mut self, op: &Op) {
        self.now = self.now.plus(Duration::seconds(7));
        match *op {
            Op::List(slot) if !self.bots.contains_key(&slot) => {
                self.generation = self.generation.wrapping_add(1);
                let new: NewBot = serde_json::from_value(json!({
                    "platform_id": (1000 + slot as u64).to_string(),
                    "name": format!("Bot {slot}"), "username": "bot", "short_description": "d",
                }))
                .expect("valid");
                let mut bytes = [slot; 16];
                bytes[0] = self.generation;
                let mut state = BotState::create(BotId::from_random_bytes(bytes), new, self.now);
                let token = Token::from_entropy([slot; 32]).hash();
                let seq = self.commit(&Record::BotListed {
                    state: Box::new(state.clone()),
                    token,
                });
                self.registry_seq = seq;
                state.last_seq = seq;
                self.bots.insert(slot, StoredBot { state, token });
            }
            Op::Vote { bot, user, minutes } => {
                self.now = self.now.plus(Duration::minutes(minutes.into()));
                let at = self.now;
                let voter = Voter {
                    id: Snowflake::from_u64(user.into()),
                    username: VoterName::parse(format!("u{user}")).expect("valid"),
                    avatar: None,
                };
                let Some(stored) = self.bots.get_mut(&bot) else {
                    return;
                };
                let record = Record::Voted {
                    bot: stored.state.listing.id,
                    voter,
                    at,
                    // Some votes weigh more (a weekend multiplier): replay keeps their weight.
                    weight: 1 + u32::from(minutes % 3),
                };
                // A vote within 12 hours of the last is refused: no record.
                if stored.state.apply_record(&record).is_ok() {
                    self.commit_bot(bot, &record);
                }
            }
            Op::Stats { bot, count } => {
                let at = self.now;
                let Some(stored) = self.bots.get_mut(&bot) else {
                    return;
                };
                let count = ServerCount::new(count.into()).expect("in range");
                let id = stored.state.listing.id;
                let record = Record::StatsPosted { bot: id, count, at };
                stored.state.apply_record(&record).expect("applies");
                self.commit_bot(bot, &record);
            }
            Op::Feature { bot, on } => {
                let at = self.now;
                let Some(stored) = self.bots.get_mut(&bot) else {
                    return;
                };
                let patch = BotPatch {
                    featured: Some(on),
                    ..BotPatch::default()
                };
                let (listing, webhook) = stored.state.edited(patch);
                let record = Record::BotEdited {
                    bot: stored.state.listing.id,
                    listing: listing.into(),
                    webhook,
                    at,
                    decision: None,
                };
                stored.state.apply_record(&record).expect("applies");
                self.commit_bot(bot, &record);
            }
            Op::Delist(slot) => {
                if let Some(stored) = self.bots.remove(&slot) {
                    self.commit_registry(&Record::BotDelisted(stored.state.listing.id));
                }
            }
            Op::Rotate(slot) => {
                if let Some(id) = self.bots.get(&slot).map(|b| b.state.listing.id) {
                    let token = Token::generate().hash();
                    self.commit_registry(&Record::TokenRotated { bot: id, token });
                    self.bots.get_mut(&slot).expect("listed").token = token;
                }
            }
            Op::NewProfile(slot) if !self.profiles.contains_key(&slot) => {
                let new: NewProfile =
                    serde_json::from_value(json!({ "username": format!("user{slot}") }))
                        .expect("valid");
                let profile =
                    Profile::create(ProfileId::from_random_bytes([slot; 16]), new, self.now);
                self.commit_registry(&Record::ProfileSaved(profile.clone()));
                self.profiles.insert(slot, profile);
            }
            Op::DeleteProfile(slot) => {
                if let Some(profile) = self.profiles.remove(&slot) {
                    self.commit_registry(&Record::ProfileDeleted(profile.id));
                }
            }
            Op::List(_) | Op::NewProfile(_) => {}
        }
    }

    fn state(&self) -> SavedState {
        let mut bots: Vec<StoredBot> = self.bots.values().cloned().collect();
        bots.sort_by_key(|b| b.state.listing.id);
        let mut profiles: Vec<Profile> = self.profiles.values().cloned().collect();
        profiles.sort_by_key(|p| p.id);
        SavedState {
            seq: self.journal.last_seq(),
            registry_seq: self.registry_seq,
            profiles,
            bots,
            audit: Default::default(),
        }
    }
}

fn comparable(state: &SavedState) -> serde_json::Value {
    let mut value = serde_json::to_value(state).expect("serializes");
    // The sequence numbers say how the state was reached, not what it is.
    value["seq"] = json!(null);
    value["registry_seq"] = json!(null);
    value
}

fn run(ops: &[Op], snapshot_at: usize, dir: &Path) {
    let mut model = Model::new(dir);
    let mut snapshot_state = None;
    for (i, op) in ops.iter().enumerate() {
        if i == snapshot_at {
            snapshot_state = Some(model.state());
            model.journal.request_rotation();
        }
        model.apply(op);
    }
    let snapshot_state = snapshot_state.unwrap_or_else(|| model.state());
    snapshot::write(dir, &snapshot_state).expect("snapshot written");
    let expected = model.state();
    drop(model);

    let recovered = recover(dir, false).expect("recovers");
    assert!(recovered.warnings.is_empty(), "{:?}", recovered.warnings);
    assert_eq!(comparable(&recovered.state), comparable(&expected));
    assert_eq!(recovered.next_seq, expected.seq + 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn snapshot_and_replay_give_back_the_state(ops in prop::collection::vec(op(), 0..60), cut in 0usize..70) {
        let dir = tempfile::tempdir().expect("temp dir");
        run(&ops, cut.min(ops.len()), dir.path());
    }
}

#[test]
fn a_snapshot_with_bots_ahead_of_its_sequence_number_replays_without_doubling() {
    // Live snapshots read each bot after noting the sequence number; records a bot already holds
    // are skipped on replay.
    let dir = tempfile::tempdir().expect("temp dir");
    let ops: Vec<Op> = (0..40u8)
        .map(|i| match i % 4 {
            0 => Op::List(i % 3),
            1 | 2 => Op::Vote {
                bot: i % 3,
                user: i,
                minutes: 1,
            },
            _ => Op::Stats {
                bot: i % 3,
                count: i.into(),
            },
        })
        .collect();
    let mut model = Model::new(dir.path());
    for op in &ops[..20] {
        model.apply(op);
    }
    let noted = model.state();
    for op in &ops[20..] {
        model.apply(op);
    }
    let ahead = SavedState {
        bots: model
            .state()
            .bots
            .into_iter()
            .filter(|b| {
                noted
                    .bots
                    .iter()
                    .any(|n| n.state.listing.id == b.state.listing.id)
            })
            .collect(),
        ..noted
    };
    snapshot::write(dir.path(), &ahead).expect("written");
    let expected = model.state();
    drop(model);
    let recovered = recover(dir.path(), false).expect("recovers");
    assert_eq!(comparable(&recovered.state), comparable(&expected));
}
