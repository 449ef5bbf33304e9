//! Delivering vote webhooks: a schedule of due attempts on the injected clock, bounded
//! concurrency per receiver and overall, and outcomes reported back to the bot's actor, which
//! owns the delivery and journals every change to it.

pub mod guard;
pub mod sign;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::actors::bot::{DeliveryOutcome, PrepareAttempt};
use crate::actors::directory::Directory;
use crate::domain::ids::BotId;
use crate::domain::time::{Clock, Timestamp};
use crate::domain::webhook::{Attempt, Event, WebhookFormat};

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
}

/// What the bot says to send.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub target: Target,
    pub event: Event,
    pub body: String,
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

pub struct Dispatcher {
    clock: Arc<dyn Clock>,
    directory: Arc<Directory>,
    client: reqwest::Client,
    allow_private: bool,
    schedule: Mutex<(u64, BinaryHeap<Reverse<Scheduled>>)>,
    overall: Arc<Semaphore>,
    receivers: DashMap<String, Arc<Semaphore>>,
}

impl Dispatcher {
    pub fn new(
        clock: Arc<dyn Clock>,
        directory: Arc<Directory>,
        timeout: Duration,
        allow_private: bool,
    ) -> Result<Arc<Self>, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(guard::resolver(allow_private))
            .build()?;
        Ok(Arc::new(Self {
            clock,
            directory,
            client,
            allow_private,
            schedule: Mutex::new((0, BinaryHeap::new())),
            overall: Arc::new(Semaphore::new(OVERALL)),
            receivers: DashMap::new(),
        }))
    }

    /// Queues an attempt for when `job.due` has come on the clock.
    pub fn schedule(&self, job: Job) {
        let mut schedule = self.schedule.lock().unwrap_or_else(|p| p.into_inner());
        schedule.0 += 1;
        let order = schedule.0;
        schedule.1.push(Reverse(Scheduled {
            due: job.due.millis(),
            order,
            job,
        }));
        crate::telemetry::webhook_queue(schedule.1.len());
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
                for job in dispatcher.take_due() {
                    actix_web::rt::spawn(Arc::clone(&dispatcher).deliver(job));
                }
            }
        });
    }

    /// At most as many due jobs as there are free slots overall: the rest wait in the schedule,
    /// not as tasks.
    fn take_due(&self) -> Vec<Job> {
        let now = self.clock.now().millis();
        let room = self.overall.available_permits();
        let mut schedule = self.schedule.lock().unwrap_or_else(|p| p.into_inner());
        let mut due = Vec::new();
        while due.len() < room && schedule.1.peek().is_some_and(|next| next.0.due <= now) {
            if let Some(Reverse(next)) = schedule.1.pop() {
                due.push(next.job);
            }
        }
        crate::telemetry::webhook_queue(schedule.1.len());
        due
    }

    async fn deliver(self: Arc<Self>, job: Job) {
        let Some(bot) = self.directory.get(job.bot) else {
            return; // delisted
        };
        let ask = PrepareAttempt {
            delivery: job.delivery,
            token: job.token,
        };
        let Ok(Some(prepared)) = bot.addr.send(ask).await else {
            return;
        };
        let slot = Arc::clone(
            self.receivers
                .entry(receiver_key(&prepared.target.url))
                .or_insert_with(|| Arc::new(Semaphore::new(PER_RECEIVER)))
                .value(),
        );
        // A busy receiver's attempts wait in the schedule, not as tasks holding slots.
        let permits = (
            slot.try_acquire_owned(),
            Arc::clone(&self.overall).try_acquire_owned(),
        );
        let (Ok(_receiver), Ok(_overall)) = permits else {
            // Still due: looked at again on the next tick (real time, whatever the clock says).
            self.schedule(job);
            return;
        };
        let attempt = self.attempt(&job, &prepared).await;
        bot.addr.do_send(DeliveryOutcome {
            delivery: job.delivery,
            token: job.token,
            attempt,
        });
    }

    async fn attempt(&self, job: &Job, prepared: &Prepared) -> Attempt {
        if let Err(refused) = self.check_literal_target(&prepared.target.url) {
            return Attempt::Refused(refused);
        }
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
        match (prepared.target.format, &prepared.target.secret) {
            (WebhookFormat::Signed, Some(secret)) => {
                let t = self.clock.now().millis().div_euclid(1000);
                request = request.header(
                    "X-Botlist-Signature",
                    sign::signature_header(secret, t, &prepared.body),
                );
            }
            (WebhookFormat::Legacy, Some(secret)) => match HeaderValue::from_str(secret) {
                Ok(value) => request = request.header(AUTHORIZATION, value),
                Err(_) => return Attempt::Refused("the secret cannot be sent as a header".into()),
            },
            (_, None) => {}
        }
        match request.body(prepared.body.clone()).send().await {
            Ok(response) if response.status().is_success() => {
                Attempt::Delivered(response.status().as_u16())
            }
            Ok(response) => Attempt::Status {
                status: response.status().as_u16(),
                retry_after: response
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse().ok()),
            },
            Err(error) => Attempt::Unreachable(describe(&error)),
        }
    }

    /// An IP literal never goes through the resolver, so it is checked here.
    fn check_literal_target(&self, url: &str) -> Result<(), String> {
        if self.allow_private {
            return Ok(());
        }
        let parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        let ip = match parsed.host() {
            Some(url::Host::Ipv4(v4)) => std::net::IpAddr::V4(v4),
            Some(url::Host::Ipv6(v6)) => std::net::IpAddr::V6(v6),
            Some(url::Host::Domain(name)) if name.eq_ignore_ascii_case("localhost") => {
                return Err("refused: localhost".into())
            }
            _ => return Ok(()),
        };
        if guard::is_forbidden(ip) {
            return Err(format!("refused: {ip} is not a public address"));
        }
        Ok(())
    }
}

fn receiver_key(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}:{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port_or_known_default().unwrap_or(0)
        ),
        Err(_) => url.to_owned(),
    }
}

/// A short reason, with the cause that says the most.
fn describe(error: &reqwest::Error) -> String {
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else if error.is_redirect() {
        "redirect"
    } else {
        "request failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        cause = inner.to_string();
        source = inner.source();
    }
    if cause.is_empty() {
        what.to_string()
    } else {
        format!("{what}: {cause}")
    }
}
