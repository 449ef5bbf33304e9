//! Delivering vote webhooks: a schedule of due attempts on the injected clock, a gate per
//! receiver that holds its deliveries back while it is failing, bounded concurrency per receiver
//! and overall, and outcomes reported back to the delivery's owner (the bot's actor, through
//! [`Owners`]), whose [`outbox::Outbox`] says what changes and the actor journals it. The wire
//! formats of the bodies sent are in [`wire`].

pub mod expiry;
pub mod guard;
pub mod outbox;
pub mod wire;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use reqwest::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use rustc_hash::FxHashMap;
use uuid::Uuid;

use crate::domain::ids::BotId;
use crate::domain::time::{Clock, Timestamp};
use crate::domain::webhook::{backoff_seconds, Attempt, Event, Signing, WebhookFormat};
use crate::persist::journal::Journal;

/// Attempts in flight over all receivers.
const OVERALL: usize = 64;
/// Attempts in flight to one receiver (scheme, host and port): a slow or dead receiver holds at
/// most this many, whatever its backlog.
const PER_RECEIVER: usize = 4;
/// How often the schedule is looked at.
const TICK: Duration = Duration::from_millis(25);

/// Where and how to send, as the bot's settings were when the attempt was scheduled.
#[derive(Clone, Debug)]
pub struct Target {
    pub url: String,
    pub secret: Option<String>,
    pub format: WebhookFormat,
}

/// One attempt to make when `due` comes: only which delivery, since what to send is asked of
/// the bot then, as its settings are at that moment.
#[derive(Clone, Debug)]
pub struct Job {
    pub bot: BotId,
    pub delivery: Uuid,
    /// Which scheduled attempt this is; the bot ignores any but its latest.
    pub token: u64,
    pub due: Timestamp,
    /// The receiver (scheme, host and port) the bot's URL named when the attempt was scheduled:
    /// the gate it waits at.
    pub receiver: Arc<str>,
    /// When the delivery's tries would have run out: past it, waiting at a failing receiver's
    /// gate gives it up.
    pub give_up_at: Option<Timestamp>,
    /// Asked for by an operator (a redelivery, a test event): goes through a failing
    /// receiver's gate, as a probe of its own.
    pub forced: bool,
    /// The journal number of the record that made this attempt due: the attempt waits until
    /// that record is durable, so no receiver hears of a change that could still be lost.
    pub after: u64,
}

/// What the bot says to send.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub target: Target,
    pub event: Event,
    pub body: String,
}

/// A future that runs on the dispatcher's arbiter.
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// The owners of the deliveries (each bot's actor, holding its [`outbox::Outbox`]): what the
/// dispatcher asks what to send, and tells what came of it. Implemented by the actors'
/// directory, so this module knows nothing of actors.
pub trait Owners: Send + Sync + 'static {
    /// What to send for this attempt, as the bot's settings are now; `None` when the attempt is
    /// stale (redelivered, given up), the bot delisted, or there is nowhere to send.
    fn prepare(&self, job: &Job) -> LocalFuture<Option<Prepared>>;
    /// What the attempt came to; the owner records and journals it and schedules the next.
    fn report(&self, job: &Job, attempt: Attempt);
    /// The bot's next voter's window has ended: its owner announces what is due
    /// (`vote.expired`) and arms the expiry timer again.
    fn expire(&self, bot: BotId);
}

/// Why the dispatcher could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the webhook HTTP client could not be built")]
pub struct ClientError(#[from] reqwest::Error);

/// Why an attempt got no answer.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("timed out")]
    Timeout(#[source] reqwest::Error),
    #[error("could not connect")]
    Connect(#[source] reqwest::Error),
    #[error("redirect")]
    Redirect(#[source] reqwest::Error),
    #[error("request failed")]
    Request(#[source] reqwest::Error),
}

impl From<reqwest::Error> for SendError {
    fn from(error: reqwest::Error) -> Self {
        // The client's error names the whole URL; logs and the delivery record name the host.
        let error = error.without_url();
        if error.is_timeout() {
            Self::Timeout(error)
        } else if error.is_connect() {
            Self::Connect(error)
        } else if error.is_redirect() {
            Self::Redirect(error)
        } else {
            Self::Request(error)
        }
    }
}

/// Why an attempt was refused before anything was sent.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("not a URL: {0}")]
    NotAUrl(#[from] url::ParseError),
    #[error("refused: localhost")]
    Localhost,
    #[error("refused: {0} is not a public address")]
    NotPublic(std::net::IpAddr),
    #[error("the secret cannot be sent as a header")]
    SecretNotAHeader(#[source] reqwest::header::InvalidHeaderValue),
    /// A delivery is never sent without the signature its format's receivers need: its secret
    /// (one stored before the rule was checked on every surface, e.g. a `standard` secret that
    /// is not `whsec_` and base64) cannot make it, so nothing is sent and the delivery is given
    /// up with this reason in its log, until the secret is set anew.
    #[error("not sent: {0}")]
    SecretNotUsable(String),
}

struct Scheduled {
    due: i64,
    order: u64,
    job: Job,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.order) == (other.due, other.order)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.order).cmp(&(other.due, other.order))
    }
}

/// A receiver that failed (no answer, 408, 429 or 5xx) and has not answered since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Failing {
    /// Failed probes in a row, the first failure included.
    failures: u32,
    /// When the next probe may go (clock milliseconds).
    next_probe: i64,
}

/// One receiver's due attempts and what it did last. While it is failing, one attempt at a time
/// (the probe) goes out once its backoff has passed; the other due attempts wait here without
/// being prepared, sent or journaled, and all go once a probe is answered.
#[derive(Default)]
struct Gate {
    in_flight: usize,
    failing: Option<Failing>,
    /// Due attempts in the order they came due.
    waiting: BTreeMap<u64, Job>,
    /// The same, by when their tries run out.
    deadlines: BTreeSet<(i64, u64)>,
    /// The same, by delivery: one waiting attempt per delivery.
    index: FxHashMap<Uuid, u64>,
    /// Operators' attempts, which do not wait for a probe.
    forced: VecDeque<Job>,
}

impl Gate {
    /// Keeps a due attempt; one that replaces an attempt of the same delivery already waiting
    /// (a redelivery) drops it. Returns how many attempts wait here now, less before.
    fn hold(&mut self, order: u64, job: Job) -> isize {
        let replaced = self.forget(job.delivery).is_some();
        if job.forced {
            self.forced.push_back(job);
        } else {
            if let Some(at) = job.give_up_at {
                self.deadlines.insert((at.millis(), order));
            }
            self.index.insert(job.delivery, order);
            self.waiting.insert(order, job);
        }
        1 - isize::from(replaced)
    }

    /// Drops the waiting attempt of this delivery, if there is one.
    fn forget(&mut self, delivery: Uuid) -> Option<Job> {
        let order = *self.index.get(&delivery)?;
        self.take(order)
    }

    fn held(&self) -> usize {
        self.waiting.len() + self.forced.len()
    }

    fn take(&mut self, order: u64) -> Option<Job> {
        let job = self.waiting.remove(&order)?;
        self.index.remove(&job.delivery);
        if let Some(at) = job.give_up_at {
            self.deadlines.remove(&(at.millis(), order));
        }
        Some(job)
    }

    /// The waiting attempts whose tries have run out, while the receiver is failing.
    fn expired(&mut self, now: i64) -> Vec<Job> {
        let mut gone = Vec::new();
        if self.failing.is_none() {
            return gone;
        }
        while let Some(&(at, order)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            if let Some(job) = self.waiting.remove(&order) {
                self.index.remove(&job.delivery);
                gone.push(job);
            }
        }
        gone
    }

    /// The next attempt to send now, if any may go; `true` with it when it is a probe.
    fn admit(&mut self, now: i64) -> Option<(Job, bool)> {
        if self.in_flight >= PER_RECEIVER {
            return None;
        }
        if let Some(job) = self.forced.pop_front() {
            return Some((job, true));
        }
        let probe = match self.failing {
            None => false,
            Some(failing) if self.in_flight == 0 && now >= failing.next_probe => true,
            Some(_) => return None,
        };
        let (&order, _) = self.waiting.first_key_value()?;
        self.take(order).map(|job| (job, probe))
    }

    /// What an attempt said of the receiver: answered (open the gate) or failing.
    fn answered(&mut self, attempt: Option<&Attempt>, probe: bool, now: i64) {
        self.in_flight = self.in_flight.saturating_sub(1);
        let Some(attempt) = attempt else {
            return; // nothing was sent: says nothing of the receiver
        };
        let Some(retry_after) = receiver_failure(attempt) else {
            self.failing = None;
            return;
        };
        let failures = match self.failing {
            Some(failing) if probe => failing.failures.saturating_add(1),
            Some(failing) => failing.failures,
            None => 1,
        };
        let wait = backoff_seconds(failures)
            .max(retry_after.map_or(0, |s| s.min(3600) as i64))
            .saturating_mul(1000);
        let next_probe = now.saturating_add(wait);
        self.failing = Some(Failing {
            failures,
            next_probe: self
                .failing
                .map_or(next_probe, |f| f.next_probe.max(next_probe)),
        });
    }

    fn is_idle(&self) -> bool {
        self.in_flight == 0 && self.failing.is_none() && self.held() == 0
    }
}

/// `Some(Retry-After)` when the attempt says the receiver is failing: no answer, 408, 429, 5xx.
fn receiver_failure(attempt: &Attempt) -> Option<Option<u64>> {
    match attempt {
        Attempt::Unreachable(_) => Some(None),
        Attempt::Status {
            status,
            retry_after,
        } if *status == 408 || *status == 429 || *status >= 500 => Some(*retry_after),
        _ => None,
    }
}

#[derive(Default)]
struct Queue {
    order: u64,
    /// Attempts whose record is not durable yet, by the record's number.
    not_durable: BinaryHeap<Reverse<Scheduled>>,
    /// Attempts not yet due, their record durable.
    schedule: BinaryHeap<Reverse<Scheduled>>,
    gates: HashMap<Arc<str>, Gate>,
    in_flight: usize,
    held: usize,
    /// Deliveries given up by their owner since the last tick, whose waiting attempts the loop
    /// drops: a vote past the open limit costs its bot's actor a push here, not a search.
    forgotten: Vec<Uuid>,
}

impl Queue {
    fn depth(&self) -> usize {
        self.not_durable.len() + self.schedule.len() + self.held
    }
}

pub struct Dispatcher {
    clock: Arc<dyn Clock>,
    /// What is durable: the one rule that nothing is sent before its record is on disk (or, in
    /// a cluster, acknowledged by the stream) is kept here, for every kind of delivery.
    journal: Journal,
    owners: Arc<dyn Owners>,
    client: reqwest::Client,
    allow_private: bool,
    queue: Mutex<Queue>,
    /// Each bot's next end of a voter's window to announce (`expiry.rs`), looked at each tick.
    expiry: Mutex<expiry::ExpiryTimer>,
}

impl Dispatcher {
    pub fn new(
        clock: Arc<dyn Clock>,
        journal: Journal,
        owners: Arc<impl Owners>,
        timeout: Duration,
        allow_private: bool,
    ) -> Result<Arc<Self>, ClientError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(guard::resolver(allow_private))
            .build()?;
        Ok(Arc::new(Self {
            clock,
            journal,
            owners,
            client,
            allow_private,
            queue: Mutex::new(Queue::default()),
            expiry: Mutex::new(expiry::ExpiryTimer::default()),
        }))
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues an attempt for when `job.due` has come on the clock and its record is durable.
    /// Called for every vote of a bot with a webhook: the queue's gauge is set by the loop,
    /// every tick, not here.
    pub fn schedule(&self, job: Job) {
        let durable = self.journal.durable_seq();
        let mut queue = self.queue();
        queue.order += 1;
        let order = queue.order;
        if job.after > durable {
            // Ordered by the record's number, so the loop releases them as the journal advances.
            queue.not_durable.push(Reverse(Scheduled {
                due: i64::try_from(job.after).unwrap_or(i64::MAX),
                order,
                job,
            }));
        } else {
            queue.schedule.push(Reverse(Scheduled {
                due: job.due.millis(),
                order,
                job,
            }));
        }
    }

    /// Wakes `bot`'s owner ([`Owners::expire`]) once `end` has come on the clock.
    pub fn arm_expiry(&self, bot: BotId, end: Timestamp) {
        self.expiry_timer().arm(bot, end);
    }

    fn expiry_timer(&self) -> MutexGuard<'_, expiry::ExpiryTimer> {
        self.expiry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the loop that sends what has come due; runs on the calling arbiter.
    pub fn start(self: &Arc<Self>, mut stop: crate::shutdown::Shutdown) {
        let dispatcher = Arc::clone(self);
        actix_web::rt::spawn(async move {
            let mut ticks = actix_web::rt::time::interval(TICK);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    () = stop.requested() => return,
                }
                let now = dispatcher.clock.now();
                let ended = dispatcher.expiry_timer().take_due(now);
                for bot in ended {
                    dispatcher.owners.expire(bot);
                }
                let (send, expired) = dispatcher.take_due();
                for job in expired {
                    dispatcher.owners.report(&job, Attempt::Expired);
                }
                for (job, probe) in send {
                    // Each attempt in flight holds the stop signal: a stop waits for it to end.
                    let held = stop.clone();
                    let deliver = Arc::clone(&dispatcher).deliver(job, probe);
                    actix_web::rt::spawn(async move {
                        deliver.await;
                        drop(held);
                    });
                }
            }
        });
    }

    /// Moves what has come due to its receiver's gate, and takes from the gates what may go
    /// now (at most as many as there are free slots) and what waited past its tries.
    fn take_due(&self) -> (Vec<(Job, bool)>, Vec<Job>) {
        let now = self.clock.now().millis();
        let durable = self.journal.durable_seq();
        let mut guard = self.queue();
        let queue = &mut *guard;
        // A journal that failed never becomes durable past its failure: those attempts stay here.
        while queue
            .not_durable
            .peek()
            .is_some_and(|next| next.0.job.after <= durable)
        {
            if let Some(Reverse(next)) = queue.not_durable.pop() {
                queue.schedule.push(Reverse(Scheduled {
                    due: next.job.due.millis(),
                    order: next.order,
                    job: next.job,
                }));
            }
        }
        while queue.schedule.peek().is_some_and(|next| next.0.due <= now) {
            if let Some(Reverse(next)) = queue.schedule.pop() {
                let gate = queue
                    .gates
                    .entry(Arc::clone(&next.job.receiver))
                    .or_default();
                let added = gate.hold(next.order, next.job);
                queue.held = queue.held.saturating_add_signed(added);
            }
        }
        for delivery in std::mem::take(&mut queue.forgotten) {
            for gate in queue.gates.values_mut() {
                if gate.forget(delivery).is_some() {
                    queue.held -= 1;
                }
            }
        }
        let (mut send, mut expired) = (Vec::new(), Vec::new());
        for gate in queue.gates.values_mut() {
            let gone = gate.expired(now);
            queue.held -= gone.len();
            expired.extend(gone);
            while queue.in_flight < OVERALL {
                let Some(admitted) = gate.admit(now) else {
                    break;
                };
                gate.in_flight += 1;
                queue.in_flight += 1;
                queue.held -= 1;
                send.push(admitted);
            }
        }
        queue.gates.retain(|_, gate| !gate.is_idle());
        crate::telemetry::webhook_queue(queue.depth());
        (send, expired)
    }

    /// Drops the waiting attempts of deliveries given up by their owner (a full outbox), at the
    /// loop's next tick, so a dead receiver's queue holds at most the open deliveries (and those
    /// given up in the last tick). An attempt that goes meanwhile finds itself stale at its
    /// owner and sends nothing.
    pub fn forget(&self, deliveries: &[Uuid]) {
        self.queue().forgotten.extend_from_slice(deliveries);
    }

    /// Tells the gate what the attempt said of its receiver, then the owner.
    fn answered(&self, job: &Job, attempt: Option<&Attempt>, probe: bool) {
        let now = self.clock.now().millis();
        let mut queue = self.queue();
        queue.in_flight = queue.in_flight.saturating_sub(1);
        let gate = queue.gates.entry(Arc::clone(&job.receiver)).or_default();
        gate.answered(attempt, probe, now);
    }

    async fn deliver(self: Arc<Self>, job: Job, probe: bool) {
        let attempt = match self.owners.prepare(&job).await {
            Some(prepared) => Some(self.attempt(&job, &prepared).await),
            None => None,
        };
        self.answered(&job, attempt.as_ref(), probe);
        if let Some(attempt) = attempt {
            self.owners.report(&job, attempt);
        }
    }

    async fn attempt(&self, job: &Job, prepared: &Prepared) -> Attempt {
        match self.send(job, prepared).await {
            Ok(attempt) => attempt,
            // The receiver's host only: a path or query often holds the receiver's own secret.
            Err(Failure::Refused(refused)) => {
                let host = receiver_host(&prepared.target.url);
                tracing::debug!(delivery = %job.delivery, %host, error = %chain(&refused), "webhook target refused");
                Attempt::Refused(refused.to_string())
            }
            Err(Failure::Unanswered(error)) => {
                let host = receiver_host(&prepared.target.url);
                tracing::debug!(delivery = %job.delivery, %host, error = %chain(&error), "webhook receiver did not answer");
                Attempt::Unreachable(describe(&error))
            }
        }
    }

    async fn send(&self, job: &Job, prepared: &Prepared) -> Result<Attempt, Failure> {
        self.check_literal_target(&prepared.target.url)?;
        let mut request = self
            .client
            .post(&prepared.target.url)
            .header(CONTENT_TYPE, "application/json")
            .header(
                USER_AGENT,
                concat!("botlist-webhooks/", env!("CARGO_PKG_VERSION")),
            )
            .header("X-Botlist-Event", prepared.event.name())
            .header("X-Botlist-Delivery", job.delivery.to_string());
        // Signed at send time, every attempt afresh: receivers refuse an old signature.
        let signing = Signing {
            secret: prepared.target.secret.as_deref(),
            delivery: job.delivery,
            unix_seconds: self.clock.now().millis().div_euclid(1000),
            body: &prepared.body,
        };
        for (name, value) in format_headers(prepared.target.format, signing)? {
            request = request.header(name, value);
        }
        let response = request
            .body(prepared.body.clone())
            .send()
            .await
            .map_err(SendError::from)?;
        let status = response.status();
        if status.is_success() {
            return Ok(Attempt::Delivered(status.as_u16()));
        }
        Ok(Attempt::Status {
            status: status.as_u16(),
            retry_after: response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok()),
        })
    }

    /// An IP literal never goes through the resolver, so it is checked here.
    fn check_literal_target(&self, url: &str) -> Result<(), Refusal> {
        if self.allow_private {
            return Ok(());
        }
        let parsed = url::Url::parse(url)?;
        let ip = match parsed.host() {
            Some(url::Host::Ipv4(v4)) => std::net::IpAddr::V4(v4),
            Some(url::Host::Ipv6(v6)) => std::net::IpAddr::V6(v6),
            Some(url::Host::Domain(name)) if name.eq_ignore_ascii_case("localhost") => {
                return Err(Refusal::Localhost)
            }
            _ => return Ok(()),
        };
        if guard::is_forbidden(ip) {
            return Err(Refusal::NotPublic(ip));
        }
        Ok(())
    }
}

/// The headers `format` signs an attempt with, or the refusal to send it at all: never without
/// the signature its receivers need.
fn format_headers(
    format: WebhookFormat,
    signing: Signing<'_>,
) -> Result<Vec<(&'static str, HeaderValue)>, Refusal> {
    let headers = format.headers(signing).map_err(Refusal::SecretNotUsable)?;
    headers
        .into_iter()
        .map(|(name, value)| {
            // Only a secret sent as it is (`legacy`) can fail to be a header's value.
            let value = HeaderValue::from_str(&value).map_err(Refusal::SecretNotAHeader)?;
            Ok((name, value))
        })
        .collect()
}

/// Why an attempt came to nothing.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Unanswered(#[from] SendError),
}

/// The receiver (scheme, host and port) a URL names: the key of its gate.
pub fn receiver_key(url: &str) -> Arc<str> {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}:{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port_or_known_default().unwrap_or(0)
        )
        .into(),
        Err(_) => url.into(),
    }
}

/// The host a URL names, for logs: never its path, query or credentials.
fn receiver_host(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "(not a URL)".into())
}

/// A short reason for the delivery log: what went wrong, with the innermost cause under the
/// client's error, which says the most ("Connection refused").
fn describe(error: &SendError) -> String {
    use std::error::Error;
    let mut cause = None;
    let mut source = error.source().and_then(|client| client.source());
    while let Some(inner) = source {
        cause = Some(inner.to_string());
        source = inner.source();
    }
    match cause {
        Some(cause) => format!("{error}: {cause}"),
        None => error.to_string(),
    }
}

/// The whole chain of causes, for the log.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standard_delivery_with_a_secret_that_is_not_one_is_refused_not_sent_unsigned() {
        let signing = |secret| Signing {
            secret: Some(secret),
            delivery: Uuid::from_u128(1),
            unix_seconds: 1,
            body: "{}",
        };
        for secret in ["plain", "whsec_not base64!", "whsec_c2hvcnQ="] {
            let refused =
                format_headers(WebhookFormat::Standard, signing(secret)).expect_err(secret);
            assert!(matches!(refused, Refusal::SecretNotUsable(_)), "{secret}");
            assert!(refused.to_string().starts_with("not sent: "), "{refused}");
        }
        let signed = format_headers(
            WebhookFormat::Standard,
            signing("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        )
        .expect("a Standard Webhooks secret");
        assert_eq!(signed[0].0, "webhook-signature");
        assert!(signed[0].1.as_bytes().starts_with(b"v1,"), "{signed:?}");
    }

    #[test]
    fn a_v1_or_standard_delivery_without_a_secret_is_refused_not_sent_unsigned() {
        let unsigned = Signing {
            secret: None,
            delivery: Uuid::from_u128(1),
            unix_seconds: 1,
            body: "{}",
        };
        for format in [WebhookFormat::V1, WebhookFormat::Standard] {
            let Err(refused) = format_headers(format, unsigned) else {
                panic!("{} sent unsigned", format.name());
            };
            assert!(matches!(refused, Refusal::SecretNotUsable(_)), "{refused}");
        }
        for format in [WebhookFormat::Signed, WebhookFormat::Legacy] {
            let Ok(sent) = format_headers(format, unsigned) else {
                panic!("{} refused", format.name());
            };
            assert!(sent.is_empty(), "{sent:?}");
        }
    }

    #[test]
    fn a_legacy_secret_that_cannot_be_a_header_is_refused() {
        let signing = Signing {
            secret: Some("line\nbreak"),
            delivery: Uuid::from_u128(1),
            unix_seconds: 1,
            body: "{}",
        };
        let refused = format_headers(WebhookFormat::Legacy, signing).expect_err("not a header");
        assert!(matches!(refused, Refusal::SecretNotAHeader(_)), "{refused}");
    }

    fn job(n: u128, give_up_at: i64) -> Job {
        Job {
            bot: BotId::new_random(),
            delivery: Uuid::from_u128(n),
            token: 1,
            due: Timestamp::from_millis(0),
            receiver: Arc::from("http://r:80"),
            give_up_at: Some(Timestamp::from_millis(give_up_at)),
            forced: false,
            after: 0,
        }
    }

    #[test]
    fn a_failing_receiver_gets_one_probe_per_backoff_and_the_rest_wait() {
        let mut gate = Gate::default();
        for n in 1..=10 {
            gate.hold(n as u64, job(n, 1_000_000));
        }
        let (first, probe) = gate.admit(0).expect("open: sent");
        assert!(!probe);
        gate.in_flight += 1;
        gate.answered(Some(&Attempt::Unreachable("refused".into())), false, 0);
        assert_eq!(
            gate.admit(999).map(|(j, _)| j.delivery),
            None,
            "before the backoff"
        );
        let (probe_job, probe) = gate.admit(1_000).expect("the probe");
        assert!(probe && probe_job.delivery != first.delivery);
        gate.in_flight += 1;
        assert!(gate.admit(5_000).is_none(), "one probe at a time");
        gate.answered(Some(&Attempt::Unreachable("refused".into())), true, 1_000);
        assert_eq!(gate.failing.map(|f| f.next_probe), Some(3_000), "then 2 s");
        assert!(gate.admit(2_999).is_none());
        gate.answered(None, false, 2_000); // a stale attempt says nothing
        assert!(gate.failing.is_some());
        gate.in_flight = 1;
        gate.answered(Some(&Attempt::Delivered(200)), true, 3_000);
        let mut released = 0;
        while gate.admit(3_000).is_some() {
            gate.in_flight += 1;
            released += 1;
        }
        assert_eq!(released, PER_RECEIVER, "open again: 4 at a time");
        assert_eq!(
            gate.expired(10_000_000).len(),
            0,
            "only a failing gate gives up"
        );
    }

    #[test]
    fn waiting_past_the_tries_gives_up_only_those_and_a_redelivery_replaces() {
        let mut gate = Gate {
            failing: Some(Failing {
                failures: 1,
                next_probe: i64::MAX,
            }),
            ..Gate::default()
        };
        gate.hold(1, job(1, 100));
        gate.hold(2, job(2, 200));
        assert_eq!(gate.hold(3, job(1, 300)), 0, "the same delivery waits once");
        let gone: Vec<Uuid> = gate.expired(250).iter().map(|j| j.delivery).collect();
        assert_eq!(gone, [Uuid::from_u128(2)]);
        assert_eq!(gate.held(), 1);
        assert!(gate.forget(Uuid::from_u128(1)).is_some());
        assert_eq!(gate.held(), 0);
    }
}
