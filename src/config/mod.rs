//! Command line and environment: every flag also reads `BOTLIST_<FLAG>`. The settings of
//! cluster mode and of the vote history are in their own files; start-up, the API and the
//! cluster read them all from here, and this module reads none of them.

mod cluster;
mod history;

pub use cluster::{Blackout, ClusterSettings, MissingMessages, Role};
pub use history::{HistorySettings, STREAM_BUFFER, WRITE_INTERVAL_MS};

use std::fmt;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand};

use crate::persist::journal::{FsyncMode, JournalFault};
use crate::telemetry::LogFormat;

#[derive(Debug, Parser)]
#[command(
    name = "botlist",
    version,
    about = "A self-hostable bot listing service"
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `botlist` with no command serves.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Parsed once at start and taken apart at once: its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API (the default).
    Serve(ServeArgs),
    /// Write a large deterministic directory straight to a snapshot, for benchmarks and tests.
    Generate(GenerateArgs),
    /// Cluster administration (docs/CLUSTER.md).
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Back up a running server's data directory: a snapshot taken now and the journal after
    /// it, verified, into a new directory (docs/BACKUP.md).
    Backup(BackupArgs),
    /// Restore a backup into a new or empty data directory, verified first (docs/BACKUP.md).
    Restore(RestoreArgs),
}

#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// The new directory to write the backup to; it must not exist.
    #[arg(long)]
    pub to: PathBuf,
    /// The running server's data directory, as this command sees it.
    #[arg(long, env = "BOTLIST_DATA_DIR", default_value = "snapshots")]
    pub data_dir: PathBuf,
    /// The running server's API, base path included.
    #[arg(
        long,
        env = "BOTLIST_URL",
        default_value = "http://127.0.0.1:8080/api/v1"
    )]
    pub url: String,
    /// The server's admin token (a flag is visible in `ps`: prefer the variable or the file).
    #[arg(long, env = "BOTLIST_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<Secret>,
    /// A file holding the server's admin token.
    #[arg(long, env = "BOTLIST_ADMIN_TOKEN_FILE")]
    pub admin_token_file: Option<PathBuf>,
    /// Back up a cluster from its NATS servers (nats://HOST:PORT[,...]) instead of one server:
    /// the newest uploaded snapshot and the stream after it. No node, no token, no data
    /// directory is needed.
    #[arg(long, env = "BOTLIST_REPLICATE")]
    pub replicate: Option<String>,
    /// The cluster's prefix of the stream, subject and buckets (with `--replicate`).
    #[arg(long, env = "BOTLIST_CLUSTER_PREFIX", default_value = "botlist")]
    pub cluster_prefix: String,
}

#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// The backup to restore (a directory `botlist backup` wrote).
    #[arg(long)]
    pub from: PathBuf,
    /// The data directory to restore into; it must be missing or empty.
    #[arg(long)]
    pub data_dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Seed a new cluster's empty stream from a single-node data directory.
    Init(ClusterInitArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ClusterInitArgs {
    /// The NATS servers (nats://HOST:PORT[,...]).
    #[arg(long, env = "BOTLIST_REPLICATE")]
    pub replicate: String,
    /// The single-node data directory to seed from (read only; stop its server first).
    #[arg(long)]
    pub from: PathBuf,
    /// The prefix of the stream, subject and buckets.
    #[arg(long, env = "BOTLIST_CLUSTER_PREFIX", default_value = "botlist")]
    pub cluster_prefix: String,
    /// Seconds the writer's lease lives without renewal, for the bucket if this creates it.
    #[arg(long, env = "BOTLIST_LEASE_TTL", default_value_t = 7,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub lease_ttl: u64,
}

#[derive(Debug, Clone, Args)]
pub struct GenerateArgs {
    /// Number of bots.
    #[arg(long, default_value_t = 100_000)]
    pub bots: usize,
    /// Number of votes (accepted votes; the 12-hour rule holds).
    #[arg(long, default_value_t = 5_000_000)]
    pub votes: usize,
    /// Data directory to write the snapshot into; must hold no state yet.
    #[arg(long)]
    pub out: PathBuf,
    /// Seed of the generator: the same seed gives the same directory.
    #[arg(long, default_value_t = 0x0B07_1157)]
    pub seed: u64,
}

impl Cli {
    /// The command to run; plain `botlist` serves.
    pub fn into_command(self) -> Command {
        self.command.unwrap_or(Command::Serve(self.serve))
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address and port to listen on; port 0 picks a free port.
    #[arg(long, env = "BOTLIST_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// Path prefix of every API route.
    #[arg(long, env = "BOTLIST_BASE_PATH", default_value = "/api/v1", value_parser = parse_base_path)]
    pub base_path: String,

    /// Path prefix of the classic surface: the routes and shapes the released client libraries
    /// (topggpy, top.py, @top-gg/sdk 3, dblapi.js) call, over the same data (docs/API.md, "The
    /// classic surface"). Empty (`''` or `/`) serves none; it may not be the base path.
    #[arg(long, env = "BOTLIST_CLASSIC_BASE_PATH", default_value = "/api", value_parser = parse_base_path)]
    pub classic_base_path: String,

    /// Directory for state files.
    #[arg(long, env = "BOTLIST_DATA_DIR", default_value = "snapshots")]
    pub data_dir: PathBuf,

    /// Seconds between snapshots; 0 takes them only on shutdown and on request.
    #[arg(long, env = "BOTLIST_SNAPSHOT_INTERVAL", default_value_t = 60)]
    pub snapshot_interval: u64,

    /// When an acknowledged write is on disk: always (fsync before the answer, shared by
    /// concurrent writes), batch (fsync every 50 ms) or never (left to the OS).
    #[arg(long, env = "BOTLIST_FSYNC", value_enum, default_value = "always")]
    pub fsync: FsyncMode,

    /// A storage fault put into every journal write, for tests of the real binary:
    /// `delay:<ms>`, `fail-from:<seq>`, `fail-while-exists:<kind>:<path>`
    /// (docs/PERSISTENCE.md). Never in production.
    #[arg(long, env = "BOTLIST_INJECT_JOURNAL_FAULT", hide = true)]
    pub inject_journal_fault: Option<JournalFault>,

    /// No lockout after failed admin authentications, for `scripts/schemathesis.sh`, whose
    /// cases without a token lock its one address out. Never in production.
    #[arg(long, env = "BOTLIST_NO_ADMIN_LOCKOUT", hide = true, value_parser = BoolishValueParser::new())]
    pub no_admin_lockout: bool,

    /// Start from the last good state when a file is damaged, moving it aside as *.corrupt.
    #[arg(long, env = "BOTLIST_RECOVER", value_parser = BoolishValueParser::new())]
    pub recover: bool,

    /// Requests per minute per key on `/bots` routes and, separately, on `/users`; 0 turns
    /// limits off.
    #[arg(long, env = "BOTLIST_RATE_LIMIT", default_value_t = 60,
          value_parser = clap::value_parser!(u32).range(0..=60_000))]
    pub rate_limit: u32,

    /// Key rate limits (and count failed admin logins) by the X-Forwarded-For address the
    /// trusted proxies appended (behind trusted proxies only).
    #[arg(long, env = "BOTLIST_TRUST_FORWARDED_FOR", value_parser = BoolishValueParser::new())]
    pub trust_forwarded_for: bool,

    /// Proxies in front of the server that each append to X-Forwarded-For: the client is the
    /// Nth entry from the right (with --trust-forwarded-for).
    #[arg(long, env = "BOTLIST_TRUSTED_PROXIES", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=16))]
    pub trusted_proxies: u32,

    /// Connections served at once, over all workers; more wait in the listen backlog.
    #[arg(long, env = "BOTLIST_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,

    /// Seconds a client has to send a request's headers, and again its body: slow clients are
    /// cut off, never holding a worker.
    #[arg(long, env = "BOTLIST_REQUEST_TIMEOUT", default_value_t = 10)]
    pub request_timeout: u64,

    /// Seconds an idle keep-alive connection stays open.
    #[arg(long, env = "BOTLIST_KEEP_ALIVE", default_value_t = 15)]
    pub keep_alive: u64,

    /// Let webhook URLs point at loopback, private and link-local addresses.
    #[arg(long, env = "BOTLIST_ALLOW_PRIVATE_WEBHOOKS", value_parser = BoolishValueParser::new())]
    pub allow_private_webhooks: bool,

    /// Token of the admin API, at least 16 characters; without one the admin API answers 404.
    /// Prefer the environment variable or --admin-token-file: a flag is visible in `ps`.
    #[arg(long, env = "BOTLIST_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<Secret>,

    /// A file holding the admin token (one line; surrounding whitespace is dropped).
    #[arg(long, env = "BOTLIST_ADMIN_TOKEN_FILE", conflicts_with = "admin_token")]
    pub admin_token_file: Option<PathBuf>,

    /// Serve `/metrics` on this address instead of the API's (which then has no /metrics).
    #[arg(long, env = "BOTLIST_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,

    /// Load the deterministic demo directory when the directory is empty (not with
    /// `--replicate`: the demo's directory is loaded, not journaled).
    #[arg(long, env = "BOTLIST_DEMO", conflicts_with = "replicate", value_parser = BoolishValueParser::new())]
    pub demo: bool,

    /// An origin browsers may call the API from, like https://example.com; repeat for more,
    /// or `*` for any. Without one, responses carry no CORS headers.
    #[arg(long = "cors-origin", env = "BOTLIST_CORS_ORIGIN", value_delimiter = ',', value_parser = parse_origin)]
    pub cors_origins: Vec<String>,

    /// How log lines are written: text (coloured only on a terminal) or json (one object a line).
    #[arg(long, env = "BOTLIST_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,

    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "BOTLIST_WORKERS")]
    pub workers: Option<NonZeroUsize>,

    /// Days a vote stays in a bot's vote history (default: every vote is kept).
    #[arg(long, env = "BOTLIST_VOTE_HISTORY_DAYS",
          value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub vote_history_days: Option<u32>,

    /// Live vote streams open at once on one bot; one more is answered 429.
    #[arg(long, env = "BOTLIST_MAX_STREAMS_PER_BOT", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_streams_per_bot: u32,

    /// Least milliseconds between two writes of votes to one live vote stream (0: every vote
    /// as soon as it is durable): the votes of that time go out in one write.
    #[arg(long, env = "BOTLIST_STREAM_WRITE_INTERVAL_MS", default_value_t = WRITE_INTERVAL_MS,
          value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub stream_write_interval_ms: u32,

    /// Bot actors on this many threads of their own, instead of on the HTTP workers' threads
    /// (the default, and the faster for writes: docs/OPERATIONS.md, "Threads").
    #[arg(long, env = "BOTLIST_ACTOR_THREADS")]
    pub actor_threads: Option<NonZeroUsize>,

    /// What each vote counts from Friday 00:00 to Sunday 23:59:59 UTC (1: no weekend; then
    /// `GET /weekend` always answers false).
    #[arg(long, env = "BOTLIST_WEEKEND_MULTIPLIER", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=crate::domain::weekend::MAX_MULTIPLIER as i64))]
    pub weekend_multiplier: u32,

    /// Cluster mode: the NATS servers (nats://HOST:PORT[,...]) whose JetStream stream holds the
    /// journal. docs/CLUSTER.md.
    #[arg(long, env = "BOTLIST_REPLICATE")]
    pub replicate: Option<String>,

    /// Cluster mode: this node's unique name (default: the bound address).
    #[arg(long, env = "BOTLIST_NODE_ID")]
    pub node_id: Option<String>,

    /// Cluster mode: where other nodes send this node writes, like http://10.0.0.5:8080
    /// (default: from the bound address; refused when that is 0.0.0.0 or [::]).
    #[arg(long, env = "BOTLIST_ADVERTISE_URL")]
    pub advertise_url: Option<String>,

    /// Cluster mode: the prefix of the stream, subject and buckets.
    #[arg(long, env = "BOTLIST_CLUSTER_PREFIX", default_value = "botlist")]
    pub cluster_prefix: String,

    /// Cluster mode: seconds the writer's lease lives without renewal.
    #[arg(long, env = "BOTLIST_LEASE_TTL", default_value_t = 7,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub lease_ttl: u64,

    /// Cluster mode: the secret nodes put on writes they forward to the writer (required).
    #[arg(long, env = "BOTLIST_CLUSTER_TOKEN", hide_env_values = true)]
    pub cluster_token: Option<Secret>,

    /// Cluster mode: a file holding the cluster token (one line), instead of --cluster-token,
    /// which every local user reads in `ps`.
    #[arg(
        long,
        env = "BOTLIST_CLUSTER_TOKEN_FILE",
        conflicts_with = "cluster_token"
    )]
    pub cluster_token_file: Option<PathBuf>,

    /// Cluster mode: auto takes the writer's role when it is free; follower never does.
    #[arg(long, env = "BOTLIST_ROLE", value_enum, default_value = "auto")]
    pub role: Role,

    /// Cluster mode: seconds the writer resends a batch the stream has not acknowledged before
    /// it gives up its role. Longer than two rounds of JetStream's election timeout (4-9 s at
    /// random): an election that needs a second round must not cost the writer its role.
    #[arg(long, env = "BOTLIST_PUBLISH_DEADLINE", default_value_t = 20,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub publish_deadline: u64,

    /// Cluster mode: milliseconds a read with X-Botlist-Min-Seq waits for this node to apply
    /// that record before answering 503 replica_behind.
    #[arg(long, env = "BOTLIST_MIN_SEQ_WAIT_MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub min_seq_wait_ms: u64,

    /// Cluster mode: milliseconds a node may go without knowing it holds everything the stream
    /// holds before its reads answer 503 replica_behind (unless the client sends
    /// X-Botlist-Allow-Stale: true). Longer than a JetStream election, so one alone does not
    /// turn reads away.
    #[arg(long, env = "BOTLIST_MAX_LAG_MS", default_value_t = 8000,
          value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    pub max_lag_ms: u64,

    /// Cluster mode, for tests of the real binary: the stream messages `A-B` are missing from
    /// every copy this node's consumer reads (a nats-server still catching up), so the node
    /// must read them from the stream's leader (docs/CLUSTER.md, "Followers"). Never in
    /// production.
    #[arg(long, env = "BOTLIST_TEST_MISSING_MESSAGES", hide = true)]
    pub test_missing_messages: Option<MissingMessages>,

    /// Cluster mode, for tests of the real binary: `AFTER:FOR` (milliseconds) — from AFTER
    /// after taking the lease, the writer's renewals fail for FOR as if the lease's bucket
    /// were electing a leader, while the key really expires (docs/CLUSTER.md, "Riding out a
    /// NATS election"). Never in production.
    #[arg(long, env = "BOTLIST_TEST_LEASE_BLACKOUT", hide = true)]
    pub test_lease_blackout: Option<Blackout>,

    /// Cluster mode, for tests of the real binary: the node never reads who holds the lease
    /// from its bucket while it follows, so it knows a writer only from the writer's epoch
    /// message in the stream (docs/CLUSTER.md, "How a follower learns the writer"). Never in
    /// production.
    #[arg(long, env = "BOTLIST_TEST_LEASE_UNREAD", hide = true)]
    pub test_lease_unread: bool,

    /// Cluster mode, for tests of the real binary: the stream this node creates allows only
    /// this many consumers, so a test can reach JetStream's consumer limit (10026) for real
    /// (docs/CLUSTER.md, "Followers"). Never in production.
    #[arg(long, env = "BOTLIST_TEST_MAX_CONSUMERS", hide = true)]
    pub test_max_consumers: Option<i32>,
}

/// Where the API reference is served (`GET /docs`): no base path may be it.
pub const DOCS_PATH: &str = "/docs";

/// `/api/v1`, `api/v1/` and `/api/v1` are one prefix; `/` or empty means none.
fn parse_base_path(raw: &str) -> Result<String, String> {
    let trimmed = raw.trim_matches('/');
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    let valid = trimmed.split('/').all(|segment| {
        !segment.is_empty()
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b))
    });
    let base_path = format!("/{trimmed}");
    if base_path == DOCS_PATH {
        // The API's scope would take every path of the reference, which could then not be read.
        return Err(format!(
            "`{raw}` is where the API reference is served: choose another prefix, like /api/v1"
        ));
    }
    if valid {
        Ok(base_path)
    } else {
        Err(format!(
            "`{raw}` is not a path of plain segments like /api/v1"
        ))
    }
}

/// `*`, or `scheme://host[:port]` exactly as a browser sends it in `Origin`.
fn parse_origin(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    if raw == "*" {
        return Ok(raw.to_owned());
    }
    let bad = || format!("`{raw}` is not an origin like https://example.com (or `*`)");
    let url = url::Url::parse(raw).map_err(|_| bad())?;
    let origin = url.origin();
    if !origin.is_tuple() || !matches!(url.scheme(), "http" | "https") {
        return Err(bad());
    }
    let serialized = origin.ascii_serialization();
    if serialized != raw.trim_end_matches('/') {
        return Err(format!(
            "`{raw}` is not an origin: give only scheme, host and port, like {serialized}"
        ));
    }
    Ok(serialized)
}

/// A secret from the command line (the admin token): `Debug` never shows it, so
/// printing settings or an error that holds it leaks nothing.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(redacted)")
    }
}

impl FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self(text.to_owned()))
    }
}

impl From<&str> for Secret {
    fn from(text: &str) -> Self {
        Self(text.to_owned())
    }
}

/// The least length of an admin token: shorter ones are guessed too soon.
pub const MIN_ADMIN_TOKEN_CHARS: usize = 16;

impl ServeArgs {
    /// The admin token of `--admin-token` or of the file `--admin-token-file` names.
    pub fn admin_token(&self) -> Result<Option<Secret>, String> {
        match &self.admin_token_file {
            None => Ok(self.admin_token.clone()),
            Some(path) => {
                read_token_file(path, "--admin-token-file (BOTLIST_ADMIN_TOKEN_FILE)").map(Some)
            }
        }
    }

    /// Cluster mode: the token of `--cluster-token` or of the file `--cluster-token-file`
    /// names; `None` without `--replicate`; an error when cluster mode has neither.
    pub fn cluster_token(&self) -> Result<Option<Secret>, String> {
        if self.replicate.is_none() {
            return Ok(None);
        }
        match (&self.cluster_token, &self.cluster_token_file) {
            (Some(token), _) => Ok(Some(token.clone())),
            (None, Some(path)) => {
                read_token_file(path, "--cluster-token-file (BOTLIST_CLUSTER_TOKEN_FILE)").map(Some)
            }
            (None, None) => Err("--replicate (BOTLIST_REPLICATE) needs the cluster token: \
                 --cluster-token-file (BOTLIST_CLUSTER_TOKEN_FILE) or BOTLIST_CLUSTER_TOKEN"
                .into()),
        }
    }
}

/// A token kept in a file (one line; surrounding whitespace dropped), for `flag`'s message.
fn read_token_file(path: &std::path::Path, flag: &str) -> Result<Secret, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{flag}: cannot read the token file {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!(
            "{flag}: the token file {} is empty",
            path.display()
        ));
    }
    Ok(Secret(token.to_owned()))
}

impl ServeArgs {}

impl Secret {
    /// Refuses a token shorter than [`MIN_ADMIN_TOKEN_CHARS`], without repeating it.
    pub fn check_admin_token(&self) -> Result<(), String> {
        let chars = self.0.chars().count();
        if chars < MIN_ADMIN_TOKEN_CHARS {
            return Err(format!(
                "the admin token is {chars} characters long; it must have at least {MIN_ADMIN_TOKEN_CHARS} characters \
                 (a random one: `openssl rand -hex 32`). Set it in BOTLIST_ADMIN_TOKEN or in a file named \
                 by --admin-token-file"
            ));
        }
        Ok(())
    }
}

/// What the server needs, whether it came from the command line or a test.
#[derive(Clone, Debug)]
pub struct Settings {
    pub bind: SocketAddr,
    pub base_path: String,
    /// Empty: no classic surface.
    pub classic_base_path: String,
    pub admin_token: Option<Secret>,
    pub demo: bool,
    pub workers: usize,
    /// 0 runs bot actors on the HTTP workers' threads (the default); N on N threads of their
    /// own.
    pub actor_threads: usize,
    /// `None` keeps everything in memory (tests that are not about durability).
    pub data_dir: Option<PathBuf>,
    pub fsync: FsyncMode,
    /// A fault put into journal writes on purpose (tests of the real binary only).
    pub journal_fault: JournalFault,
    /// Whether failed admin authentications lock an address out (off only for schemathesis).
    pub admin_lockout: bool,
    /// `None`: snapshots only on shutdown and on request.
    pub snapshot_interval: Option<Duration>,
    pub recover: bool,
    /// Requests per minute per key; 0 turns limits off.
    pub rate_limit: u32,
    pub trust_forwarded_for: bool,
    /// With `trust_forwarded_for`: the client is this many X-Forwarded-For entries from the right.
    pub trusted_proxies: usize,
    /// `Some`: `/metrics` is served there, and not on `bind`.
    pub metrics_bind: Option<SocketAddr>,
    /// Connections served at once, over all workers.
    pub max_connections: usize,
    /// Time to send headers, and again to send the body.
    pub request_timeout: Duration,
    pub keep_alive: Duration,
    /// Let webhooks reach loopback and private addresses (tests, private deployments).
    pub allow_private_webhooks: bool,
    /// How long a webhook receiver has to answer.
    pub webhook_timeout: Duration,
    /// Origins browsers may call the API from (`*`: any); empty: no CORS headers at all.
    pub cors_origins: Vec<String>,
    /// Vote history retention and the live vote stream.
    pub vote_history: HistorySettings,
    /// What a vote counts on a weekend (1: no weekend).
    pub weekend_multiplier: u32,
}

impl Settings {
    /// The two surfaces need paths of their own: one that is the other's would hide it.
    pub fn check_paths(&self) -> Result<(), String> {
        if !self.classic_base_path.is_empty() && self.classic_base_path == self.base_path {
            return Err(format!(
                "--classic-base-path `{}` is also --base-path: give the classic surface another \
                 prefix, or an empty one to serve none",
                self.classic_base_path
            ));
        }
        Ok(())
    }

    /// The settings of the command line, with the admin token already read (see
    /// [`ServeArgs::admin_token`]).
    pub fn from_args(args: &ServeArgs, admin_token: Option<Secret>) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        Self {
            bind: args.bind,
            base_path: args.base_path.clone(),
            classic_base_path: args.classic_base_path.clone(),
            admin_token,
            demo: args.demo,
            workers: args.workers.map_or(cores, NonZeroUsize::get),
            actor_threads: args.actor_threads.map_or(0, NonZeroUsize::get),
            data_dir: Some(args.data_dir.clone()),
            fsync: args.fsync,
            journal_fault: args.inject_journal_fault.clone().unwrap_or_default(),
            admin_lockout: !args.no_admin_lockout,
            snapshot_interval: (args.snapshot_interval > 0)
                .then(|| Duration::from_secs(args.snapshot_interval)),
            recover: args.recover,
            rate_limit: args.rate_limit,
            trust_forwarded_for: args.trust_forwarded_for,
            trusted_proxies: args.trusted_proxies as usize,
            metrics_bind: args.metrics_bind,
            max_connections: args.max_connections.max(1),
            request_timeout: Duration::from_secs(args.request_timeout.max(1)),
            keep_alive: Duration::from_secs(args.keep_alive),
            allow_private_webhooks: args.allow_private_webhooks,
            webhook_timeout: Duration::from_secs(5),
            cors_origins: args.cors_origins.clone(),
            vote_history: HistorySettings {
                retention: args
                    .vote_history_days
                    .map(|days| chrono::Duration::days(i64::from(days))),
                max_streams_per_bot: args.max_streams_per_bot as usize,
                write_interval: Duration::from_millis(u64::from(args.stream_write_interval_ms)),
                ..Default::default()
            },
            weekend_multiplier: args.weekend_multiplier,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Cli {
        fn into_serve_args(self) -> ServeArgs {
            match self.into_command() {
                Command::Serve(args) => args,
                Command::Generate(_)
                | Command::Cluster(_)
                | Command::Backup(_)
                | Command::Restore(_) => panic!("not serve"),
            }
        }
    }

    #[test]
    fn plain_botlist_serves_with_the_contract_defaults() {
        let args = Cli::parse_from(["botlist"]).into_serve_args();
        assert_eq!(args.bind.to_string(), "127.0.0.1:8080");
        assert_eq!(args.base_path, "/api/v1");
        assert_eq!(args.data_dir, PathBuf::from("snapshots"));
        // docs/API.md gives the reasons for 100 ms: ingest with 100 readers, and the buffer.
        assert_eq!(args.stream_write_interval_ms, 100);
        assert_eq!(args.weekend_multiplier, 1);
        let args = Cli::parse_from(["botlist", "--weekend-multiplier", "2"]).into_serve_args();
        assert_eq!(Settings::from_args(&args, None).weekend_multiplier, 2);
        assert!(Cli::try_parse_from(["botlist", "--weekend-multiplier", "0"]).is_err());
        assert!(Cli::try_parse_from(["botlist", "--weekend-multiplier", "101"]).is_err());
        let args = Cli::parse_from(["botlist", "serve", "--demo", "--base-path", "x/y/"])
            .into_serve_args();
        assert!(args.demo);
        assert_eq!(args.base_path, "/x/y");
        let args = Cli::parse_from(["botlist", "--bind", "127.0.0.1:0"]).into_serve_args();
        assert_eq!(args.bind.port(), 0);
        assert!(Cli::try_parse_from(["botlist", "--base-path", "/a b"]).is_err());
        assert!(Cli::try_parse_from(["botlist", "--base-path", "/docs/"]).is_err());
        let args = Cli::parse_from(["botlist", "--base-path", "/docs/api"]).into_serve_args();
        assert_eq!(args.base_path, "/docs/api");
        assert!(args.cors_origins.is_empty());
        assert_eq!(args.log_format, LogFormat::Text);
        let args = Cli::parse_from([
            "botlist",
            "--cors-origin",
            "https://a.example",
            "--cors-origin",
            "http://localhost:3000/",
            "--log-format",
            "json",
        ])
        .into_serve_args();
        assert_eq!(
            args.cors_origins,
            ["https://a.example", "http://localhost:3000"]
        );
        assert_eq!(args.log_format, LogFormat::Json);
        assert!(
            Cli::try_parse_from(["botlist", "--cors-origin", "https://a.example/path"]).is_err()
        );
        assert!(Cli::try_parse_from(["botlist", "--cors-origin", "example.com"]).is_err());
        assert_eq!(args.trusted_proxies, 1);
        assert!(args.metrics_bind.is_none());
        let both = ["botlist", "--admin-token", "a", "--admin-token-file", "f"];
        assert!(
            Cli::try_parse_from(both).is_err(),
            "one source of the admin token"
        );
    }

    #[test]
    fn an_admin_token_under_16_characters_is_refused_without_repeating_it() {
        let refusal = Secret::from("fifteen-chars-x")
            .check_admin_token()
            .expect_err("refused");
        assert!(
            refusal.contains("16") && !refusal.contains("fifteen"),
            "{refusal}"
        );
        Secret::from(crate::demo::DEMO_ADMIN_TOKEN)
            .check_admin_token()
            .expect("the demo's token is long enough");
    }

    #[test]
    fn cluster_mode_refuses_the_demo_and_requires_a_cluster_token() {
        let demo = Cli::try_parse_from([
            "botlist",
            "serve",
            "--demo",
            "--replicate",
            "nats://127.0.0.1:4222",
            "--cluster-token",
            "t",
        ]);
        assert!(demo.is_err(), "--demo with --replicate");
        let tokenless =
            Cli::parse_from(["botlist", "serve", "--replicate", "nats://a:4222"]).into_serve_args();
        let refusal = tokenless.cluster_token().expect_err("no cluster token");
        assert!(refusal.contains("--cluster-token-file"), "{refusal}");
        let args = Cli::parse_from([
            "botlist",
            "serve",
            "--replicate",
            "nats://a:4222",
            "--cluster-token",
            "t",
            "--role",
            "follower",
            "--lease-ttl",
            "3",
            "--publish-deadline",
            "4",
            "--min-seq-wait-ms",
            "250",
        ])
        .into_serve_args();
        let cluster = ClusterSettings::from_args(&args).expect("cluster mode");
        assert_eq!(cluster.role, Role::Follower);
        assert_eq!(cluster.lease_ttl, Duration::from_secs(3));
        assert_eq!(cluster.publish_deadline, Duration::from_secs(4));
        assert_eq!(cluster.min_seq_wait, Duration::from_millis(250));
        assert_eq!(cluster.prefix, "botlist");
        assert!(
            ClusterSettings::from_args(&Cli::parse_from(["botlist"]).into_serve_args()).is_none()
        );
    }

    #[test]
    fn printing_the_settings_never_shows_the_admin_token() {
        let cli = Cli::try_parse_from(["botlist", "--admin-token", "hunter2-admin-token"])
            .expect("valid arguments");
        let Command::Serve(args) = cli.into_command() else {
            panic!("serve is the default command");
        };
        let settings = Settings::from_args(&args, args.admin_token().expect("a token"));
        assert_eq!(
            settings.admin_token.as_ref().map(Secret::expose),
            Some("hunter2-admin-token")
        );
        for printed in [format!("{args:?}"), format!("{settings:?}")] {
            assert!(!printed.contains("hunter2"), "{printed}");
            assert!(printed.contains("redacted"), "{printed}");
        }
    }
}
