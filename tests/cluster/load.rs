//! Four clients voting through every node at once, each for its own bot, remembering which
//! votes got a 2xx and when.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::json;

use super::harness::{Node, ADMIN};

pub const FIRST_USER: u64 = 200_000_000_000_000_000;

pub struct Load {
    stop: Arc<AtomicBool>,
    /// When the newest 2xx came, as the clients go.
    last_ack: Arc<Mutex<Option<Instant>>>,
    pub bases: Arc<Mutex<Vec<String>>>,
    threads: Vec<JoinHandle<Vec<(u64, Instant)>>>,
    pub bots: Vec<(String, String)>,
}

pub struct Acked {
    /// Per bot: the users whose vote got a 2xx, with when.
    pub per_bot: Vec<Vec<(u64, Instant)>>,
}

impl Acked {
    /// The first 2xx after `after`.
    pub fn first_after(&self, after: Instant) -> Option<Instant> {
        self.per_bot
            .iter()
            .flatten()
            .map(|(_, at)| *at)
            .filter(|at| *at > after)
            .min()
    }

    /// The longest time without a 2xx from `after` to the last one.
    pub fn longest_gap_after(&self, after: Instant) -> Duration {
        let mut times: Vec<Instant> = self.per_bot.iter().flatten().map(|(_, at)| *at).collect();
        times.push(after);
        times.sort();
        times
            .windows(2)
            .filter(|pair| pair[1] > after)
            .map(|pair| pair[1] - pair[0].max(after))
            .max()
            .unwrap_or_default()
    }

    pub fn total(&self) -> usize {
        self.per_bot.iter().map(Vec::len).sum()
    }
}

impl Load {
    /// Lists one bot per client through `nodes[0]`, then starts the clients.
    pub fn start(nodes: &[Node], clients: usize) -> Load {
        Self::start_paced(nodes, clients, Duration::from_millis(20))
    }

    /// As `start`, each client pausing `pause` between votes (a longer scenario needs a longer
    /// pause: a bot lists at most 900 voters).
    pub fn start_paced(nodes: &[Node], clients: usize, pause: Duration) -> Load {
        let bots: Vec<(String, String)> = (0..clients)
            .map(|i| nodes[i % nodes.len()].create_bot(500 + i as u64))
            .collect();
        let bases = Arc::new(Mutex::new(
            nodes.iter().map(|n| n.base.clone()).collect::<Vec<_>>(),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let last_ack = Arc::new(Mutex::new(None::<Instant>));
        let threads = bots
            .iter()
            .enumerate()
            .map(|(i, (bot, _))| {
                let (bot, bases, stop) = (bot.clone(), Arc::clone(&bases), Arc::clone(&stop));
                let last_ack = Arc::clone(&last_ack);
                std::thread::spawn(move || {
                    let client = Client::builder()
                        .timeout(Duration::from_secs(15))
                        .build()
                        .expect("client");
                    let mut acked = Vec::new();
                    let mut user = FIRST_USER + (i as u64) * 1_000_000;
                    let mut turn = i;
                    while !stop.load(Ordering::Relaxed) && acked.len() < 900 {
                        user += 1;
                        turn += 1;
                        let base = {
                            let bases = bases.lock().unwrap_or_else(|p| p.into_inner());
                            bases[turn % bases.len()].clone()
                        };
                        let body = json!({
                            "user_id": user.to_string(),
                            "username": format!("u{user}"),
                            "avatar": null,
                        });
                        let sent = client
                            .post(format!("{base}/admin/bots/{bot}/votes"))
                            .header("Authorization", ADMIN)
                            .json(&body)
                            .send();
                        match sent {
                            Ok(response) if response.status().is_success() => {
                                let now = Instant::now();
                                acked.push((user, now));
                                let mut last = last_ack.lock().unwrap_or_else(|p| p.into_inner());
                                *last = Some(last.map_or(now, |l: Instant| l.max(now)));
                            }
                            // 503 (no writer, fenced) or a dropped connection: either way.
                            _ => std::thread::sleep(Duration::from_millis(20)),
                        }
                        // At most about 50 votes a second a client: the 900 a bot can list
                        // (voters endpoint) then last the longest scenario (about 20 s).
                        std::thread::sleep(pause);
                    }
                    acked
                })
            })
            .collect();
        Load {
            stop,
            last_ack,
            bases,
            threads,
            bots,
        }
    }

    /// The newest 2xx, if it came after `after`.
    pub fn first_ack_after(&self, after: Instant) -> Option<Instant> {
        let last = *self.last_ack.lock().unwrap_or_else(|p| p.into_inner());
        last.filter(|at| *at > after)
    }

    pub fn set_base(&self, index: usize, base: &str) {
        self.bases.lock().unwrap_or_else(|p| p.into_inner())[index] = base.to_owned();
    }

    pub fn finish(self) -> Acked {
        self.stop.store(true, Ordering::Relaxed);
        Acked {
            per_bot: self
                .threads
                .into_iter()
                .map(|t| t.join().expect("a client thread"))
                .collect(),
        }
    }
}

/// Every acknowledged vote is on every node, and nothing is counted twice.
pub fn assert_all_acked_everywhere(nodes: &[Node], bots: &[(String, String)], acked: &Acked) {
    for node in nodes {
        for ((bot, token), votes) in bots.iter().zip(&acked.per_bot) {
            let (count, voters) = node.votes(bot, token);
            let stored: std::collections::HashSet<u64> = voters.iter().copied().collect();
            assert_eq!(
                stored.len(),
                voters.len(),
                "node {}: a voter listed twice",
                node.name
            );
            assert_eq!(
                count as usize,
                voters.len(),
                "node {}: bot {bot} counts {count} votes for {} voters (a vote stored twice?)",
                node.name,
                voters.len()
            );
            for (user, _) in votes {
                assert!(
                    stored.contains(user),
                    "node {}: the acknowledged vote of {user} for {bot} is missing",
                    node.name
                );
            }
        }
    }
}
