//! The demo directory: deterministic, so the README's examples work as written.
//!
//! The same seed gives the same ids, tokens, names and votes on every machine; only vote times
//! are placed relative to the moment the server starts, so that some votes are always active.

use std::sync::Arc;

use chrono::Duration;

use crate::domain::bot::{BotState, NewBot, ServerCount};
use crate::domain::ids::{BotId, ProfileId, Snowflake, Token};
use crate::domain::people::{ProfileToken, Scope};
use crate::domain::profile::{NewProfile, Profile, Social};
use crate::domain::stats::StatsUpdate;
use crate::domain::text::{HttpUrl, SocialType, TokenLabel, VoterName};
use crate::domain::time::Timestamp;
use crate::domain::votes::{Voter, VoterTable};
use crate::domain::weekend::WeekendRule;
use crate::persist::state::{SavedState, StoredBot};

/// The admin token `serve --demo` uses when none is configured. Public, like everything in the
/// demo: never run a demo directory where it matters.
pub const DEMO_ADMIN_TOKEN: &str = "demo-admin-token";

pub struct DemoSize {
    pub seed: u64,
    pub bots: usize,
    pub profiles: usize,
    pub voters: u64,
    pub votes: usize,
}

impl Default for DemoSize {
    fn default() -> Self {
        Self {
            seed: 0x0B07_1157,
            bots: 5_000,
            profiles: 1_500,
            voters: 25_000,
            votes: 250_000,
        }
    }
}

/// What the README's examples need.
pub struct DemoInfo {
    pub bot_id: BotId,
    pub bot_platform_id: Snowflake,
    pub bot_token: Token,
    /// A user whose vote for the demo bot is active for 12 hours after start.
    pub recent_voter: Snowflake,
    pub profile_id: ProfileId,
    /// A profile with a linked platform id and a token of the `vote` and `bots` scopes (no
    /// expiry), drawn like the bot's token: the README votes and submits with it.
    pub token_profile_id: ProfileId,
    pub profile_token: Token,
    /// A moderator (`mod`) with a `staff` token (no expiry): the moderator's guide in
    /// docs/API.md works the queue with it.
    pub moderator_id: ProfileId,
    pub moderator_token: Token,
    /// A listing waiting in the moderation queue, submitted by the token profile.
    pub pending_bot_id: BotId,
}

pub struct Demo {
    pub state: SavedState,
    pub info: DemoInfo,
    pub accepted_votes: usize,
}

/// SplitMix64: tiny, fast, and the same on every platform and every crate version.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    fn bytes16(&mut self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.next().to_le_bytes());
        out[8..].copy_from_slice(&self.next().to_le_bytes());
        out
    }

    fn bytes32(&mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out[..16].copy_from_slice(&self.bytes16());
        out[16..].copy_from_slice(&self.bytes16());
        out
    }
}

const ADJECTIVES: &[&str] = &[
    "Groovy", "Swift", "Mighty", "Cozy", "Lunar", "Pixel", "Turbo", "Silent", "Cosmic", "Rusty",
    "Happy", "Shadow", "Crystal", "Neon", "Atomic", "Golden", "Tiny", "Wild", "Clever", "Frosty",
];
const NOUNS: &[&str] = &[
    "Melody",
    "Guardian",
    "Otter",
    "Moderator",
    "Dragon",
    "Quiz",
    "Butler",
    "Radio",
    "Ranger",
    "Wizard",
    "Panda",
    "Sentinel",
    "Jukebox",
    "Helper",
    "Falcon",
    "Bard",
    "Scribe",
    "Golem",
    "Kitsune",
    "Robot",
];
const TAGS: &[&str] = &[
    "music",
    "moderation",
    "fun",
    "games",
    "economy",
    "utility",
    "social",
    "anime",
    "memes",
    "leveling",
    "logging",
    "roleplay",
    "fortnite",
    "minecraft",
    "crypto",
    "stream",
    "ai",
    "translation",
    "giveaway",
    "tickets",
    "welcome",
    "reaction-roles",
    "polls",
    "nsfw-filter",
];
const LANGUAGES: &[&str] = &[
    "en", "en", "en", "en", "en", "de", "fr", "es", "pt", "ja", "ru", "tr", "pl", "it", "nl", "ko",
];
const BLURBS: &[&str] = &[
    "plays music from every source with crisp audio",
    "keeps your server tidy with automod and logs",
    "runs trivia nights, quizzes and mini games",
    "tracks levels and rewards your most active members",
    "translates messages between dozens of languages",
    "hosts giveaways and polls with a single command",
    "welcomes new members and hands out roles",
    "brings an economy with shops, jobs and daily rewards",
];

fn url(text: String) -> HttpUrl {
    HttpUrl::parse(text).expect("demo URLs are valid")
}

fn json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("demo records are valid")
}

pub fn build(now: Timestamp, size: &DemoSize) -> Demo {
    build_weighted(now, size, &WeekendRule::default())
}

/// The demo as `serve --demo` loads it: each vote counts what the weekend rule gives it at its
/// time (`--weekend-multiplier`), in the totals and the growth history, as a live vote would.
pub fn build_weighted(now: Timestamp, size: &DemoSize, weekend: &WeekendRule) -> Demo {
    let mut rng = Rng(size.seed);
    let mut profiles = profiles(&mut rng, now, size.profiles);
    let mut bots: Vec<(BotState, Token)> = (0..size.bots)
        .map(|i| bot(&mut rng, now, i, &profiles, size.seed))
        .collect();
    // Every bot's votes are numbered in the state's voter table (see `SavedState::voters`).
    let voters = Arc::new(VoterTable::new());
    for (state, _) in &mut bots {
        state
            .votes
            .attach(&voters)
            .expect("a new bot has no voters to move");
    }

    let (accepted, recent_id) = cast_votes(&mut rng, now, size, weekend, &mut bots);
    // Drawn after everything else, so the rest of the demo is what it was before it.
    let (token_profile_id, profile_token) = demo_profile_token(&mut rng, now, &mut profiles);
    // Drawn after that, for the same reason: the moderator and the queued listing.
    let (moderator_id, moderator_token) =
        demo_moderator(&mut rng, now, &mut profiles, token_profile_id);
    let pending_bot_id = queue_demo_listing(
        &mut rng,
        now,
        size,
        (&mut bots, &voters),
        &profiles,
        token_profile_id,
    );
    // Drawn last of all, for the same reason: a few reviews, so the public list shows some.
    demo_reviews(&mut rng, now, &mut bots, &profiles);
    for (state, _) in &mut bots {
        state.votes.window.expire(now);
        // What a snapshot's reader does to every bot: the lookups and the check window that
        // readers see are rebuilt from the state, so a fresh demo reads exactly as it does
        // after a restart (before, its checks read an empty window until the first restart).
        state.restore();
    }

    let info = DemoInfo {
        bot_id: bots[0].0.listing.id,
        bot_platform_id: bots[0].0.listing.platform_id,
        bot_token: bots[0].1.clone(),
        recent_voter: recent_id,
        profile_id: profiles[0].id,
        token_profile_id,
        profile_token,
        moderator_id,
        moderator_token,
        pending_bot_id,
    };
    // In id order, as a running server writes its snapshots.
    bots.sort_unstable_by_key(|(state, _)| state.listing.id);
    profiles.sort_unstable_by_key(|p| p.id);
    Demo {
        state: SavedState {
            profiles,
            bots: bots
                .into_iter()
                .map(|(state, token)| StoredBot {
                    state,
                    token: token.hash(),
                })
                .collect(),
            ..SavedState::default()
        },
        info,
        accepted_votes: accepted,
    }
}

/// Makes the first profile that is not the token profile a moderator with a `staff` token.
fn demo_moderator(
    rng: &mut Rng,
    now: Timestamp,
    profiles: &mut [Profile],
    not: ProfileId,
) -> (ProfileId, Token) {
    let token = Token::profile_from_entropy(rng.bytes32());
    let profile = profiles
        .iter_mut()
        .rev()
        .find(|profile| profile.id != not)
        .expect("the demo has more than one profile");
    profile.moderator = true;
    profile.tokens.push(ProfileToken {
        id: uuid::Uuid::from_bytes(rng.bytes16()),
        hash: token.hash(),
        scopes: vec![Scope::Staff],
        label: TokenLabel::parse("demo moderator".into()).expect("a valid label"),
        created_at: now,
        expires_at: None,
    });
    (profile.id, token)
}

/// One more listing, without votes, `pending` and owned by the token profile: the queue's.
fn queue_demo_listing(
    rng: &mut Rng,
    now: Timestamp,
    size: &DemoSize,
    (bots, voters): (&mut Vec<(BotState, Token)>, &Arc<VoterTable>),
    profiles: &[Profile],
    owner: ProfileId,
) -> BotId {
    let (mut state, token) = bot(rng, now, size.bots, profiles, size.seed);
    state
        .votes
        .attach(voters)
        .expect("a new bot has no voters to move");
    let listing = Arc::make_mut(&mut state.listing);
    listing.status = crate::domain::bot::ListingStatus::Pending;
    listing.owner_ids = vec![owner];
    let id = listing.id;
    bots.push((state, token));
    id
}

/// What the demo's reviewers say, by rating (1 to 5).
const REVIEW_TEXTS: [&str; 5] = [
    "Went offline for a day and nobody answered in the support server.",
    "Does what it says, but the commands are hard to remember.",
    "Fine for a small server. The prefix clashes with another bot of ours.",
    "Reliable, and the dashboard is easy to use.",
    "Our server's favourite bot: fast, and setting it up took a minute.",
];

/// A few reviews on the first three bots (five, three and two, each by a different profile, in
/// the last month), and the first owner's reply to the newest review of the demo bot.
fn demo_reviews(
    rng: &mut Rng,
    now: Timestamp,
    bots: &mut [(BotState, Token)],
    profiles: &[Profile],
) {
    use crate::domain::reviews::{Rating, Review, ReviewReply};
    use crate::domain::text::{ReplyContent, ReviewContent};
    for (index, count) in [(0, 5), (1, 3), (2, 2)] {
        let state = &mut bots[index].0;
        for k in 0..count {
            // Different profiles on one bot: one review per profile per bot.
            let author = profiles[(index * 101 + k * 37) % profiles.len()].id;
            let rating = 2 + rng.below(4) as usize;
            let created_at = now.minus(Duration::minutes(
                (k as i64 + 1) * 60 * 24 * 5 + rng.below(60 * 24) as i64,
            ));
            state.reviews.save(Review {
                id: uuid::Uuid::from_bytes(rng.bytes16()),
                author,
                rating: Rating::try_from(rating as i64).expect("1 to 5"),
                content: ReviewContent::parse(REVIEW_TEXTS[rating - 1].into()).expect("valid text"),
                created_at,
                updated_at: created_at,
                reply: None,
            });
        }
    }
    let demo_bot = &mut bots[0].0;
    let (Some(owner), Some(newest)) = (
        demo_bot.listing.owner_ids.first().copied(),
        demo_bot
            .reviews
            .page(crate::domain::reviews::ReviewSort::Newest, None, 1)
            .0
            .first()
            .map(|review| (*review).clone()),
    ) else {
        return;
    };
    demo_bot.reviews.save(Review {
        reply: Some(ReviewReply {
            author: owner,
            content: ReplyContent::parse(
                "Thank you for the review! Version 2 is on its way.".into(),
            )
            .expect("valid text"),
            at: now.minus(Duration::hours(3)),
        }),
        ..newest
    });
}

/// Gives the first profile with a linked platform id a token that votes and submits bots.
fn demo_profile_token(
    rng: &mut Rng,
    now: Timestamp,
    profiles: &mut [Profile],
) -> (ProfileId, Token) {
    let token = Token::profile_from_entropy(rng.bytes32());
    let profile = profiles
        .iter_mut()
        .find(|profile| profile.platform_id.is_some())
        .expect("the demo links most profiles");
    profile.tokens.push(ProfileToken {
        id: uuid::Uuid::from_bytes(rng.bytes16()),
        hash: token.hash(),
        scopes: vec![Scope::Vote, Scope::Bots],
        label: TokenLabel::parse("demo".into()).expect("a valid label"),
        created_at: now,
        expires_at: None,
    });
    (profile.id, token)
}

/// Voter `id` of the demo: the same id, name and avatar address each time, the avatar drawn.
fn voter(id: u64, rng: &mut Rng) -> Voter {
    Voter {
        id: Snowflake::from_u64(300_000_000_000_000_000 + id * 7_919),
        username: VoterName::parse(format!("voter{id}")).expect("valid demo name"),
        avatar: rng.chance(0.7).then(|| {
            url(format!(
                "https://cdn.botlist.example/avatars/{}.png",
                300_000_000_000_000_000 + id * 7_919
            ))
        }),
    }
}

/// Casts the demo's votes: `size.votes` of them accepted, then one a minute before `now`.
/// Gives how many were accepted and who cast the last.
fn cast_votes(
    rng: &mut Rng,
    now: Timestamp,
    size: &DemoSize,
    weekend: &WeekendRule,
    bots: &mut [(BotState, Token)],
) -> (usize, Snowflake) {
    // Votes over the last 45 days, most of them for a few popular bots (index skewed by a cube),
    // applied in time order so the 12-hour rule holds as it would have live.
    let mut votes: Vec<(Timestamp, usize, u64)> = (0..size.votes + size.votes * 3 / 10)
        .map(|_| {
            let bot = ((size.bots as f64) * rng.unit().powi(3)) as usize;
            let at = now.minus(Duration::milliseconds(
                rng.below(45 * 24 * 3_600_000) as i64 + 60_000,
            ));
            (at, bot.min(size.bots - 1), rng.below(size.voters))
        })
        .collect();
    votes.sort_unstable();
    let mut accepted = 0;
    for (at, bot, user) in votes {
        if accepted == size.votes {
            break;
        }
        let v = voter(user, rng);
        if take_vote(&mut bots[bot].0, v, at, weekend) {
            accepted += 1;
        }
    }
    // One vote a minute before start, so the README's check example answers 1.
    let recent_voter = voter(size.voters, rng);
    let recent_id = recent_voter.id;
    if take_vote(
        &mut bots[0].0,
        recent_voter,
        now.minus(Duration::minutes(1)),
        weekend,
    ) {
        accepted += 1;
    }
    (accepted, recent_id)
}

/// A vote as a live one is applied (`ApplyRecord` for `Record::Voted`): counted with the weekend
/// weight of its time, and kept in the growth history at that time.
fn take_vote(state: &mut BotState, voter: Voter, at: Timestamp, weekend: &WeekendRule) -> bool {
    let weight = weekend.weight_at(at);
    let taken = state.votes.vote_weighted(voter, at, weight).is_ok();
    if taken {
        state.growth.vote(at, weight);
    }
    taken
}

fn profiles(rng: &mut Rng, now: Timestamp, count: usize) -> Vec<Profile> {
    (0..count)
        .map(|i| {
            let linked = rng.chance(0.8);
            let new: NewProfile = json(serde_json::json!({
                "username": format!("dev{i:04}"),
                "display_name": rng.chance(0.6).then(|| format!("{} Dev {i}", rng.pick(ADJECTIVES))),
                "avatar": rng.chance(0.5).then(|| format!("https://cdn.botlist.example/profiles/{i}.png")),
                "bio": rng.chance(0.4).then(|| format!("I build bots. {}.", rng.pick(BLURBS))),
                "pronouns": rng.chance(0.3).then(|| rng.pick(&["she/her", "he/him", "they/them"]).to_string()),
                "platform_id": linked.then(|| (200_000_000_000_000_000u64 + i as u64 * 104_729).to_string()),
                "admin": i == 0,
                "mod": i < 5,
            }));
            let mut profile = Profile::create(ProfileId::from_random_bytes(rng.bytes16()), new, now.minus(Duration::days(rng.below(1000) as i64 + 30)));
            if rng.chance(0.4) {
                profile.socials.push(Social {
                    kind: SocialType::parse("github".into()).expect("known type"),
                    url: url(format!("https://github.com/dev{i:04}")),
                });
            }
            profile
        })
        .collect()
}

fn bot(
    rng: &mut Rng,
    now: Timestamp,
    i: usize,
    profiles: &[Profile],
    seed: u64,
) -> (BotState, Token) {
    let name = format!(
        "{} {}{}",
        rng.pick(ADJECTIVES),
        rng.pick(NOUNS),
        if i < 400 {
            String::new()
        } else {
            format!(" {i}")
        }
    );
    let tags: Vec<&str> = (0..1 + rng.below(4)).map(|_| rng.pick(TAGS)).collect();
    let owners: Vec<String> = (0..1 + rng.below(2))
        .map(|_| {
            profiles[rng.below(profiles.len() as u64) as usize]
                .id
                .to_string()
        })
        .collect();
    let platform_id = 700_000_000_000_000_000u64 + i as u64 * 1_031;
    let new: NewBot = json(serde_json::json!({
        "platform_id": platform_id.to_string(),
        "name": name,
        "username": name.to_lowercase().replace(' ', "-"),
        "short_description": format!("{name} {}.", rng.pick(BLURBS)),
        "long_description": rng.chance(0.7).then(|| format!("# {name}\n\n{name} {}.\n\n* fast\n* free", rng.pick(BLURBS))),
        "avatar": rng.chance(0.8).then(|| format!("https://cdn.botlist.example/bots/{platform_id}.png")),
        "tags": tags,
        "language_code": rng.chance(0.9).then(|| rng.pick(LANGUAGES)),
        "prefix": rng.chance(0.6).then(|| rng.pick(&["!", "?", "$", ".", ">>"]).to_string()),
        "invite_url": rng.chance(0.5).then(|| format!("https://discord.com/oauth2/authorize?client_id={platform_id}")),
        "website_url": rng.chance(0.3).then(|| format!("https://bot{i}.botlist.example")),
        "support_server_url": rng.chance(0.3).then(|| format!("https://discord.gg/demo{i}")),
        "github_url": rng.chance(0.2).then(|| format!("https://github.com/demo/bot{i}")),
        "owner_ids": owners,
        "certified": rng.chance(0.05),
        "featured": i.is_multiple_of(97) || rng.chance(0.005),
    }));
    let created = now.minus(Duration::minutes(
        rng.below(3 * 365 * 24 * 60) as i64 + 60 * 24 * 46,
    ));
    let mut state = BotState::create(BotId::from_random_bytes(rng.bytes16()), new, created);
    // Server counts over every invites bucket, log-uniform; one bot in ten never posted.
    if !rng.chance(0.1) {
        let servers = 10f64.powf(rng.unit() * 6.0) as u64 - 1;
        // The last post falls in the last 40 days (so the history has something to show); the
        // draw is the one the demo always made, so every later draw is what it was.
        let posted = now.minus(Duration::minutes(rng.below(60 * 24 * 40) as i64));
        post_growth(&mut state, now, posted, servers, seed ^ i as u64);
    }
    (state, Token::from_entropy(rng.bytes32()))
}

/// Days of server counts before the last post: one post a day from 45 days before `now`, rising
/// from a fraction of `servers` to it, then `servers` itself at `last`. Drawn from a stream of
/// the bot's own, so that the rest of the demo is what it was before these posts existed.
fn post_growth(state: &mut BotState, now: Timestamp, last: Timestamp, servers: u64, seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let first = now
        .minus(Duration::days(45))
        .plus(Duration::minutes(rng.below(24 * 60) as i64));
    let days = (last.millis() - first.millis())
        .div_euclid(24 * 3_600_000)
        .max(0);
    let start = 0.4 + 0.5 * rng.unit();
    for day in 0..days {
        let progress = day as f64 / days as f64;
        let jitter = 1.0 + 0.04 * (rng.unit() - 0.5);
        let share = ((start + (1.0 - start) * progress) * jitter).min(1.0);
        let count = ServerCount::new((servers as f64 * share) as u64).expect("in range");
        let at = first.plus(Duration::days(day));
        state.post_stats(&StatsUpdate::Whole(count), at);
    }
    let count = ServerCount::new(servers).expect("in range");
    state.post_stats(&StatsUpdate::Whole(count), last);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::reviews::ReviewSort;
    use std::collections::HashSet;

    #[test]
    fn the_demo_is_deterministic_and_big_enough() {
        let now = Timestamp::from_millis(1_790_000_000_000);
        let a = build(now, &DemoSize::default());
        let b = build(now.plus(Duration::days(3)), &DemoSize::default());
        assert_eq!(a.info.bot_id, b.info.bot_id);
        assert_eq!(a.info.bot_token, b.info.bot_token);
        assert!(a.state.bots.len() >= 5_000);
        assert!(a.accepted_votes >= 200_000, "{}", a.accepted_votes);
        let stored: u64 = a.state.bots.iter().map(|b| b.state.votes.total).sum();
        assert_eq!(
            a.accepted_votes as u64, stored,
            "only accepted votes are counted"
        );
        let voters: HashSet<_> = a
            .state
            .bots
            .iter()
            .flat_map(|b| b.state.votes.recent_voters().map(|(v, _)| v.id))
            .collect();
        assert!(voters.len() >= 20_000, "{}", voters.len());
        assert!(a
            .state
            .bots
            .iter()
            .any(|b| b.state.votes.total > 1_000 && b.state.votes.recent.len() == 1_000));
        let buckets: HashSet<u32> = a
            .state
            .bots
            .iter()
            .map(|b| b.state.view().servers().max(1).ilog10().min(4))
            .collect();
        assert!(
            buckets.len() >= 4,
            "server counts cover every invites bucket"
        );
        assert!(a.state.bots.iter().any(|b| b.state.listing.featured));
        assert!(a.state.bots.iter().any(|b| b.state.listing.certified));
        let demo_bot = a
            .state
            .bots
            .iter()
            .find(|b| b.state.listing.id == a.info.bot_id)
            .expect("the demo's bot is listed");
        assert!(demo_bot.state.votes.has_voted(a.info.recent_voter, now));
        // The moderator's guide: a listing in the queue, a moderator with a staff token.
        let pending = a
            .state
            .bots
            .iter()
            .find(|b| b.state.listing.id == a.info.pending_bot_id)
            .expect("the queued listing is stored");
        assert_eq!(
            pending.state.listing.status,
            crate::domain::bot::ListingStatus::Pending
        );
        assert_eq!(
            pending.state.listing.owner_ids,
            vec![a.info.token_profile_id]
        );
        assert_eq!(a.info.pending_bot_id, b.info.pending_bot_id);
        let moderator = a
            .state
            .profiles
            .iter()
            .find(|p| p.id == a.info.moderator_id)
            .expect("the moderator is stored");
        assert!(moderator.moderator);
        assert!(moderator
            .tokens
            .iter()
            .any(|t| t.hash == a.info.moderator_token.hash() && t.scopes == [Scope::Staff]));
        // A few reviews, one of them replied to by an owner, the same on every build.
        let reviews = |demo: &Demo| {
            demo.state
                .bots
                .iter()
                .find(|b| b.state.listing.id == demo.info.bot_id)
                .map(|b| {
                    b.state
                        .reviews
                        .page(ReviewSort::Newest, None, 100)
                        .0
                        .into_iter()
                        .cloned()
                        .collect::<Vec<_>>()
                })
                .expect("the demo bot")
        };
        let (ra, rb) = (reviews(&a), reviews(&b));
        assert_eq!(ra.len(), 5);
        assert_eq!(
            ra.iter().map(|r| (r.id, r.rating)).collect::<Vec<_>>(),
            rb.iter().map(|r| (r.id, r.rating)).collect::<Vec<_>>()
        );
        assert!(ra[0].reply.is_some() && ra[1..].iter().all(|r| r.reply.is_none()));
        let reviewed = a
            .state
            .bots
            .iter()
            .filter(|b| b.state.reviews.count() > 0)
            .count();
        assert_eq!(reviewed, 3);
        // Its growth history holds every vote (all in the last 45 days) and daily counts.
        use crate::domain::growth::Interval;
        let points = demo_bot.state.growth.points(
            Interval::Day,
            now.minus(Duration::days(46)),
            now.plus(Duration::days(1)),
        );
        let votes: u64 = points.iter().map(|p| p.votes).sum();
        assert_eq!(votes, demo_bot.state.votes.total);
        let counts: HashSet<_> = points.iter().filter_map(|p| p.server_count).collect();
        assert!(counts.len() >= 10, "{counts:?}");
    }
}
