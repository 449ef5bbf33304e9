//! Rate limits: a GCRA bucket per key, burst N, one request back every 60/N seconds. A limit
//! is a property of the routes declared with it ([`Limit`], `Route::limited`): the router makes
//! the routes of each limit a scope of their own, wrapped in [`Limited`], and the OpenAPI
//! document describes them from the same declarations. The client address is also what
//! failed admin authentications are counted by.

use std::net::IpAddr;
use std::sync::Arc;

use actix_web::body::BoxBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue, RETRY_AFTER};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use dashmap::DashMap;
use serde::Serialize;
use utoipa::ToSchema;

use super::around::{Around, Wrap};
use crate::api::{http::reply, AppState};
use crate::domain::ids::{BotId, ProfileId};
use crate::domain::time::Clock;

/// Keys kept before idle ones are evicted early; at about 80 bytes a key, some 20 MB.
pub const MAX_KEYS: usize = 250_000;

/// A rate limit, declared with the routes it covers (`Route::limited`): whom its buckets are
/// for, and the kind each key is counted under in metrics and the log, which also keeps the
/// buckets of two limits apart. Every route of one limit shares its buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Every `/bots` route: the token's bot (`bot`), else the client address (`bots_ip`).
    PerBot,
    /// A bucket per client address, counted as the kind given (`users_ip` for `/users`).
    PerAddress(&'static str),
    /// A bucket per token's bot, else per client address, each counted as the kind given.
    PerToken {
        token: &'static str,
        address: &'static str,
    },
}

impl Limit {
    /// The kind of a key by a valid token's bot, when this limit counts by token.
    pub fn token_kind(self) -> Option<&'static str> {
        match self {
            Self::PerBot => Some("bot"),
            Self::PerAddress(_) => None,
            Self::PerToken { token, .. } => Some(token),
        }
    }

    /// The kind of a key by the client address.
    pub fn address_kind(self) -> &'static str {
        match self {
            Self::PerBot => "bots_ip",
            Self::PerAddress(address) | Self::PerToken { address, .. } => address,
        }
    }

    /// Every kind this limit's keys are counted under.
    pub fn kinds(self) -> impl Iterator<Item = &'static str> {
        self.token_kind().into_iter().chain([self.address_kind()])
    }

    /// Whom a bucket is for, as the OpenAPI document says it.
    pub fn keyed_by(self) -> &'static str {
        match self.token_kind() {
            Some(_) => "key (the token's bot, else the client address)",
            None => "client address",
        }
    }
}

/// Which bucket a request draws from: its limit's kind, and whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateKey {
    /// A valid token's bot.
    Bot(&'static str, BotId),
    /// A valid profile token's profile (CONTRACT section 13), on a limit that counts by token:
    /// every token of one profile draws from one bucket.
    Profile(&'static str, ProfileId),
    /// The client address (IPv6 by its /64).
    Address(&'static str, IpAddr),
}

impl RateKey {
    /// The key's kind, for logs and metrics: never the token or the address itself.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Bot(kind, _) | Self::Profile(kind, _) | Self::Address(kind, _) => kind,
        }
    }
}

/// The answer for one request.
#[derive(Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the bucket is full again.
    pub reset: u64,
    /// Seconds until a request would be allowed (refused requests only), at least 1.
    pub retry_after: u64,
}

/// GCRA: each key stores the theoretical arrival time (TAT) of its next request. A key whose
/// TAT has passed is a full bucket, the same as no entry, so such keys can always be dropped.
pub struct RateLimiter {
    limit: u32,
    /// Milliseconds one request costs: 60 s / limit.
    interval: i64,
    clock: Arc<dyn Clock>,
    tats: DashMap<RateKey, i64>,
    max_keys: usize,
}

impl RateLimiter {
    /// `None` when `limit` is 0: limits are off.
    pub fn new(limit: u32, clock: Arc<dyn Clock>) -> Option<Self> {
        Self::with_max_keys(limit, clock, MAX_KEYS)
    }

    pub fn with_max_keys(limit: u32, clock: Arc<dyn Clock>, max_keys: usize) -> Option<Self> {
        (limit > 0).then(|| Self {
            limit,
            // A millisecond is the finest step; the flag allows at most 60,000 a minute.
            interval: (60_000 / i64::from(limit)).max(1),
            clock,
            tats: DashMap::new(),
            max_keys,
        })
    }

    fn burst(&self) -> i64 {
        self.interval * i64::from(self.limit)
    }

    pub fn check(&self, key: RateKey) -> Decision {
        self.take(key, 1)
    }

    /// The requests a minute a key may make: what its bucket holds when full.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Takes `requests` requests' worth from a key's bucket at once, allowed only when the
    /// bucket holds them all now: a search that reads for as long as that many requests do
    /// (`api::resources::needle_cost`). More than [`RateLimiter::limit`] is never allowed.
    pub fn take(&self, key: RateKey, requests: u32) -> Decision {
        let now = self.clock.now().millis();
        let mut fresh = false;
        let decision = {
            let mut tat = self.tats.entry(key).or_insert_with(|| {
                fresh = true;
                now
            });
            let start = (*tat).max(now);
            let after = start + self.interval * i64::from(requests);
            let allowed = after - now <= self.burst();
            if allowed {
                *tat = after;
            }
            let debt = if allowed { after - now } else { start - now };
            Decision {
                allowed,
                limit: self.limit,
                remaining: ((self.burst() - debt) / self.interval).max(0) as u32,
                reset: ceil_seconds(debt),
                retry_after: ceil_seconds(after - self.burst() - now).max(1),
            }
        };
        // Only a new key can take the map past its cap; counting the keys takes every
        // shard's lock, so it is done only then.
        if fresh && self.tats.len() > self.max_keys {
            self.evict(now);
        }
        decision
    }

    /// Drops every full bucket; then, if still too many, the most idle ones (they come back
    /// with a full bucket, the most generous error possible). Amortised: after a sweep at most
    /// half the cap is kept, so the next one is at least half the cap of new keys away.
    fn evict(&self, now: i64) {
        let mut horizon = now;
        while self.tats.len() > self.max_keys / 2 {
            self.tats.retain(|_, tat| *tat > horizon);
            horizon += self.burst() / 8;
            if horizon > now + self.burst() {
                break;
            }
        }
    }

    /// Drops full buckets; run from time to time so idle keys do not stay.
    pub fn sweep(&self) {
        let now = self.clock.now().millis();
        self.tats.retain(|_, tat| *tat > now);
    }

    pub fn keys(&self) -> usize {
        self.tats.len()
    }
}

fn ceil_seconds(millis: i64) -> u64 {
    (millis.max(0) as u64).div_ceil(1000)
}

/// The body of a 429, which is not the error envelope.
#[derive(Serialize, ToSchema)]
pub struct RetryAfter {
    /// Whole seconds to wait, the same as the Retry-After header
    pub retry_after: u64,
}

/// Where the client address comes from: the TCP peer, or, behind trusted proxies, the
/// X-Forwarded-For entry the outermost of them appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAddress {
    Peer,
    /// The Nth X-Forwarded-For entry from the right (1: the rightmost). Each proxy appends the
    /// address it saw, so the entries a client writes itself are always further left.
    ForwardedFor {
        trusted_proxies: usize,
    },
}

impl ClientAddress {
    pub fn new(trust_forwarded_for: bool, trusted_proxies: usize) -> Self {
        if trust_forwarded_for {
            Self::ForwardedFor {
                trusted_proxies: trusted_proxies.max(1),
            }
        } else {
            Self::Peer
        }
    }
}

/// Where this request's client address comes from: as the operator said, or (cluster mode) the
/// address the node that forwarded it with the cluster token saw, which it sends as the one
/// X-Forwarded-For entry, so that the request is limited once, here.
fn client_source(state: &crate::api::AppState, request: &ServiceRequest) -> ClientAddress {
    ClientAddress::of(state.client_address, request)
}

impl ClientAddress {
    /// The source for this request: `configured`, unless another node forwarded it with the
    /// cluster token (then the one X-Forwarded-For entry that node wrote).
    pub fn of(configured: Self, request: &ServiceRequest) -> Self {
        if super::cluster::forwarded_by_a_node(request) {
            Self::ForwardedFor { trusted_proxies: 1 }
        } else {
            configured
        }
    }
}

/// The client address a limit is keyed by (see [`ClientAddress`]); the TCP peer when the
/// header is missing or its entry is not an address. With fewer entries than trusted proxies,
/// the leftmost is taken: the request passed fewer proxies, and that entry is the one the
/// outermost of them wrote. IPv6 clients are keyed by their /64, which is what one subscriber
/// usually gets.
pub fn client_ip(request: &HttpRequest, source: ClientAddress) -> IpAddr {
    let forwarded = match source {
        ClientAddress::Peer => None,
        ClientAddress::ForwardedFor { trusted_proxies } => forwarded_for(request, trusted_proxies),
    };
    let ip = forwarded
        .or_else(|| request.peer_addr().map(|a| a.ip()))
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::from(segments)
            }
        },
        v4 => v4,
    }
}

/// The Nth X-Forwarded-For entry from the right, over every header line of that name (a later
/// line continues the list).
fn forwarded_for(request: &HttpRequest, nth_from_right: usize) -> Option<IpAddr> {
    let mut entries: Vec<&str> = Vec::new();
    for value in request.headers().get_all("x-forwarded-for") {
        entries.extend(value.to_str().ok()?.split(','));
    }
    let at = entries.len().saturating_sub(nth_from_right);
    entries.get(at)?.trim().parse().ok()
}

/// Public for `benches/layer.rs`.
#[doc(hidden)]
pub fn headers(decision: &Decision) -> [(HeaderName, HeaderValue); 3] {
    [
        (
            HeaderName::from_static("x-ratelimit-limit"),
            decision.limit.into(),
        ),
        (
            HeaderName::from_static("x-ratelimit-remaining"),
            decision.remaining.into(),
        ),
        (
            HeaderName::from_static("x-ratelimit-reset"),
            decision.reset.into(),
        ),
    ]
}

/// The kind a profile's bucket is counted under, on every limit that counts by token.
pub const PROFILE_KIND: &str = "profile";

/// The profile of a live profile token the request carries (only a `usr_` value is looked up,
/// so a bot's or a client's request pays nothing for it).
fn profile_key(state: &AppState, request: &ServiceRequest) -> Option<ProfileId> {
    let sent = request
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)?
        .as_bytes();
    if !sent.starts_with(crate::domain::ids::Token::PROFILE_PREFIX.as_bytes()) {
        return None;
    }
    state
        .directory
        .authenticate_profile(sent)
        .filter(|grant| grant.live_at(state.clock.now()))
        .map(|grant| grant.profile)
}

/// A 429 for a refused decision: the project API's problem details, else `{"retry_after": N}`,
/// with `Retry-After` and the limit's headers.
pub fn refused(decision: &Decision, path: &str) -> HttpResponse {
    let mut response = if super::problem::is_project_path(path) {
        // The project API's errors are problem details, its rate limit's too.
        super::problem::render(
            &super::error::Code::TooManyRequests
                .with(format!(
                    "rate limited; retry in {} seconds",
                    decision.retry_after
                ))
                .retry_after(decision.retry_after),
        )
    } else {
        reply::json(
            StatusCode::TOO_MANY_REQUESTS,
            &RetryAfter {
                retry_after: decision.retry_after,
            },
        )
    };
    let response_headers = response.headers_mut();
    response_headers.insert(RETRY_AFTER, decision.retry_after.into());
    for (name, value) in headers(decision) {
        response_headers.insert(name, value);
    }
    response
}

/// A scope's rate limit ([`super::around`]): the routes of one [`Limit`].
pub struct Limited(Limit);

impl Limited {
    pub fn wrap(limit: Limit) -> Wrap<Self> {
        Wrap::new(Self(limit))
    }

    /// The key a request is counted under: the bot whose token it carries when the limit
    /// counts by token and the token is valid, else the client's address.
    fn key(&self, state: &AppState, request: &ServiceRequest) -> RateKey {
        if let Some(kind) = self.0.token_kind() {
            // A profile token is told by its prefix before any hashing, so it costs one lookup
            // (its own), as a bot token does, and a bot token pays only the prefix comparison.
            if let Some(profile) = profile_key(state, request) {
                return RateKey::Profile(PROFILE_KIND, profile);
            }
            let token_bot = request
                .headers()
                .get(actix_web::http::header::AUTHORIZATION)
                // The project API's clients send `Bearer <token>`: the same bot's bucket.
                .map(|token| {
                    let token = token.as_bytes();
                    token.strip_prefix(b"Bearer ".as_slice()).unwrap_or(token)
                })
                .and_then(|token| state.directory.authenticate(token));
            if let Some(bot) = token_bot {
                return RateKey::Bot(kind, bot);
            }
        }
        RateKey::Address(
            self.0.address_kind(),
            client_ip(request.request(), client_source(state, request)),
        )
    }
}

impl Around for Limited {
    /// The decision, whose headers the answer carries; `None` with `--rate-limit 0`.
    type Carry = Option<Decision>;

    fn before(&self, request: &mut ServiceRequest) -> Result<Option<Decision>, Box<HttpResponse>> {
        let Some(state) = request.app_data::<web::Data<AppState>>() else {
            return Ok(None);
        };
        let Some(limiter) = &state.limiter else {
            return Ok(None);
        };
        let key = self.key(state, request);
        let decision = limiter.check(key);
        // For a handler whose request costs more than one (`needle_cost`).
        actix_web::HttpMessage::extensions_mut(request).insert(key);
        crate::telemetry::rate_key(request, key.kind(), decision.allowed);
        if decision.allowed {
            return Ok(Some(decision));
        }
        // A refused request does no other work: no handler, no body read.
        Err(Box::new(refused(&decision, request.path())))
    }

    fn after(
        &self,
        decision: Option<Decision>,
        mut response: ServiceResponse<BoxBody>,
    ) -> ServiceResponse<BoxBody> {
        if let Some(decision) = decision {
            for (name, value) in headers(&decision) {
                // A handler that took more from the bucket (`needle_cost`) set its own.
                if !response.headers().contains_key(&name) {
                    response.headers_mut().insert(name, value);
                }
            }
        }
        response
    }
}

/// Drops idle keys every few seconds, whatever the traffic.
pub fn spawn_sweeper(limiter: Arc<RateLimiter>, mut stop: crate::shutdown::Shutdown) {
    actix_web::rt::spawn(async move {
        let mut ticks = actix_web::rt::time::interval(std::time::Duration::from_secs(10));
        loop {
            tokio::select! {
                _ = ticks.tick() => limiter.sweep(),
                () = stop.requested() => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::{ManualClock, Timestamp};

    fn limiter(limit: u32, max_keys: usize) -> (RateLimiter, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_790_000_000_000)));
        let limiter = RateLimiter::with_max_keys(limit, clock.clone(), max_keys).expect("on");
        (limiter, clock)
    }

    fn ip(n: u32) -> RateKey {
        RateKey::Address("bots_ip", IpAddr::from(n.to_be_bytes()))
    }

    fn forwarded(values: &[&str], source: ClientAddress) -> IpAddr {
        let mut request = actix_web::test::TestRequest::default()
            .peer_addr("192.0.2.99:4000".parse().expect("an address"));
        for value in values {
            request = request.append_header(("x-forwarded-for", *value));
        }
        client_ip(&request.to_http_request(), source)
    }

    #[test]
    fn the_client_is_the_nth_forwarded_for_entry_from_the_right() {
        let one = ClientAddress::new(true, 1);
        let two = ClientAddress::new(true, 2);
        let ip = |text: &str| text.parse::<IpAddr>().expect("an address");
        assert_eq!(
            forwarded(&["1.1.1.1, 2.2.2.2, 3.3.3.3"], one),
            ip("3.3.3.3")
        );
        assert_eq!(
            forwarded(&["1.1.1.1, 2.2.2.2, 3.3.3.3"], two),
            ip("2.2.2.2")
        );
        assert_eq!(
            forwarded(&["1.1.1.1, 2.2.2.2", "3.3.3.3"], two),
            ip("2.2.2.2"),
            "two lines"
        );
        assert_eq!(
            forwarded(&["3.3.3.3"], two),
            ip("3.3.3.3"),
            "fewer entries: the leftmost"
        );
        assert_eq!(
            forwarded(&["1.1.1.1, nonsense"], one),
            ip("192.0.2.99"),
            "the peer"
        );
        assert_eq!(forwarded(&[], one), ip("192.0.2.99"));
        let untrusted = ClientAddress::new(false, 1);
        assert_eq!(forwarded(&["1.1.1.1"], untrusted), ip("192.0.2.99"));
    }

    #[test]
    fn a_burst_of_60_then_one_a_second() {
        let (limiter, clock) = limiter(60, MAX_KEYS);
        for used in 1..=60u32 {
            let d = limiter.check(ip(1));
            assert!(d.allowed);
            assert_eq!(d.remaining, 60 - used);
        }
        let refused = limiter.check(ip(1));
        assert!(!refused.allowed);
        assert_eq!(
            (refused.remaining, refused.retry_after, refused.reset),
            (0, 1, 60)
        );
        clock.advance(chrono::Duration::milliseconds(999));
        assert!(!limiter.check(ip(1)).allowed);
        clock.advance(chrono::Duration::milliseconds(1));
        let d = limiter.check(ip(1));
        assert!(d.allowed);
        assert_eq!(d.remaining, 0);
        assert!(
            limiter.check(ip(2)).allowed,
            "another key has its own bucket"
        );
        clock.advance(chrono::Duration::seconds(60));
        assert_eq!(limiter.check(ip(1)).remaining, 59, "a full bucket again");
    }

    #[test]
    fn a_million_distinct_keys_do_not_grow_the_limiter_without_bound() {
        let cap = 10_000;
        let (limiter, clock) = limiter(60, cap);
        let mut largest = 0;
        for n in 0..1_000_000u32 {
            if n % 1000 == 0 {
                clock.advance(chrono::Duration::milliseconds(50));
            }
            assert!(
                limiter.check(ip(n)).allowed,
                "a new key always has a full bucket"
            );
            largest = largest.max(limiter.keys());
        }
        assert!(largest <= cap + 1, "{largest} keys held at most");
        clock.advance(chrono::Duration::seconds(61));
        limiter.sweep();
        assert_eq!(limiter.keys(), 0, "idle keys are all dropped");
    }

    #[test]
    fn eviction_keeps_the_busy_keys() {
        let (limiter, _clock) = limiter(60, 100);
        for _ in 0..60 {
            limiter.check(ip(0));
        }
        for n in 1..=200 {
            limiter.check(ip(n));
        }
        assert!(
            !limiter.check(ip(0)).allowed,
            "the exhausted key was not forgiven"
        );
    }
}
