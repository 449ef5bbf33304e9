//! Cluster mode (`serve --replicate`): the journal is a JetStream stream, one node holds a KV
//! lease and writes, the others stand by. docs/CLUSTER.md describes it for operators.
//!
//! Nothing here is consensus: the order and durability of records come from JetStream (R3,
//! `sync_interval: always`), and the writer is fenced by `Nats-Expected-Last-Sequence`. The
//! lease only decides who tries to write.
//!
//! This is the replication core: the journal's sink, the lease, catch-up, following, the
//! snapshots' bucket and the node's view. It knows the persist traits and the actors'
//! `replicated` messages and nothing above them: the node's lifecycle, which puts these parts
//! together, is start-up's (`startup::node`), and the cluster's HTTP face is the API's
//! (`api::cluster`).

pub mod backup;
pub mod catchup;
pub mod digest;
pub mod follow;
pub mod init;
pub mod lease;
pub mod meta;
pub mod sink;
pub mod snapshots;
pub mod view;

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::{self, stream};

use crate::config::ClusterSettings;

/// The oldest nats-server botlist accepts: `sync_interval: always` exists from 2.10.0, and
/// 2.10.23 fixes acknowledged data lost in crashes.
pub const MIN_SERVER_VERSION: (u64, u64, u64) = (2, 10, 23);
/// Records are spread over messages of at most this many bytes (servers set `max_payload:
/// 8MB`, so a record of the largest size still fits alone).
pub const BATCH_BYTES: usize = 1024 * 1024;
/// The header that carries the writer's epoch on every journal message.
pub const EPOCH_HEADER: &str = "Botlist-Epoch";
/// The header on a writer's epoch message (the first of its epoch) that names it: the lease's
/// holder as JSON (`node_id`, `url`), so followers applying the message know where to forward
/// writes without waiting for their next look at the lease (docs/CLUSTER.md, "How a follower
/// learns the writer"). Records never carry it; the record format is unchanged.
pub const WRITER_HEADER: &str = "Botlist-Writer";

/// Why cluster mode could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{0}")]
    Refused(String),
    /// A stream message or a file of this node holds a record (or a format) this build does
    /// not know: a newer botlist wrote it. The node stops (exit code 9) rather than misapply it.
    #[error("{0}")]
    Newer(String),
    /// A setting that cannot be used (an address that is taken, a missing `--advertise-url`):
    /// exit 7 like the single node's, not 2, which says the data is damaged.
    #[error("{0}")]
    Config(String),
    #[error("NATS: {0}")]
    Nats(String),
}

pub fn nats_error(error: impl std::fmt::Display) -> ClusterError {
    ClusterError::Nats(error.to_string())
}

/// The NATS client's own runtime: one thread, so NATS I/O never waits behind the actors or the
/// HTTP workers, and the journal's writer thread can block on it.
#[derive(Clone)]
pub struct NatsRuntime {
    pub handle: tokio::runtime::Handle,
}

impl NatsRuntime {
    pub fn start() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        std::thread::Builder::new()
            .name("nats-rt".into())
            .spawn(move || runtime.block_on(std::future::pending::<()>()))?;
        Ok(Self { handle })
    }

    /// Runs `work` on the NATS runtime and waits for it: for plain threads only.
    pub fn block_on<F>(&self, work: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let task = self.handle.spawn(work);
        self.handle.block_on(task).expect("a NATS task panicked")
    }

    /// Runs `work` on the NATS runtime; the answer can be awaited from any runtime.
    pub async fn run<F>(&self, work: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(work).await.expect("a NATS task panicked")
    }
}

/// A connection with the server checked and the stream and bucket in place.
#[derive(Clone)]
pub struct Nats {
    pub runtime: NatsRuntime,
    pub client: async_nats::Client,
    pub js: jetstream::Context,
}

impl Nats {
    pub async fn connect(settings: &ClusterSettings) -> Result<Self, ClusterError> {
        let runtime = NatsRuntime::start().map_err(nats_error)?;
        let servers: Vec<String> = settings
            .servers
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        let settings = settings.clone();
        runtime
            .clone()
            .run(async move {
                let client = async_nats::ConnectOptions::new()
                    .name("botlist")
                    .ping_interval(PING_INTERVAL)
                    .connection_timeout(CONNECTION_TIMEOUT)
                    .retry_on_initial_connect()
                    .connect(servers.as_slice())
                    .await
                    .map_err(nats_error)?;
                // The server's INFO arrives with the connection.
                let mut info = client.server_info();
                for _ in 0..100 {
                    if !info.version.is_empty() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    info = client.server_info();
                }
                check_version(&info.version)?;
                let js = jetstream::new(client.clone());
                // A cluster that is just starting has no JetStream leader for a few seconds.
                let give_up = std::time::Instant::now() + Duration::from_secs(30);
                loop {
                    let ready = async {
                        ensure_stream(&js, &settings).await?;
                        lease::ensure_bucket(&js, &settings).await
                    };
                    // A request sent before the servers elected their meta leader is never
                    // answered: waiting out the client's 5 s timeout delayed a fresh cluster's
                    // start by 10 s. One second bounds each attempt; both steps are idempotent.
                    let ready = tokio::time::timeout(START_ATTEMPT, ready)
                        .await
                        .unwrap_or_else(|_| Err(nats_error("no answer within 1 s")));
                    match ready {
                        Ok(_) => break,
                        Err(ClusterError::Nats(why)) if std::time::Instant::now() < give_up => {
                            tracing::warn!(%why, "JetStream is not ready; retrying");
                            tokio::time::sleep(Duration::from_millis(500)).await;
                        }
                        Err(error) => return Err(error),
                    }
                }
                Ok(Nats {
                    runtime,
                    client,
                    js,
                })
            })
            .await
    }
}

/// How often the client pings its server when it hears nothing from it. A server that hangs
/// (stopped, its box frozen) keeps the connection open and answers nothing: the client gives it
/// up after three unanswered pings and reconnects to another. At the client's default of 60 s,
/// a writer connected to a hung server wrote nothing until that server resumed (the seeded
/// fault schedule stops servers for up to 9 s); at 1 s it writes again through another server
/// after about 3 s. A ping costs a few bytes a second.
pub const PING_INTERVAL: Duration = Duration::from_secs(1);

/// How long connecting to a server may take before the next is tried: a hung server accepts
/// the connection and never says hello, and a reconnect may draw it again (one in three).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one attempt to find or make the stream and the lease's bucket may take at start.
pub const START_ATTEMPT: Duration = Duration::from_secs(1);

/// Refuses servers older than [`MIN_SERVER_VERSION`].
pub fn check_version(version: &str) -> Result<(), ClusterError> {
    let parsed = parse_version(version).ok_or_else(|| {
        ClusterError::Refused(format!(
            "cannot read the nats-server version {version:?}; botlist needs 2.10.23 or later"
        ))
    })?;
    if parsed < MIN_SERVER_VERSION {
        return Err(ClusterError::Refused(format!(
            "nats-server {version} is too old: botlist needs 2.10.23 or later (older servers \
             cannot fsync before acknowledging, or lose acknowledged data in crashes)"
        )));
    }
    Ok(())
}

fn parse_version(version: &str) -> Option<(u64, u64, u64)> {
    let version = version.trim().trim_start_matches('v');
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().unwrap_or(Some(0))?,
    ))
}

/// The journal stream's required configuration.
pub fn stream_config(settings: &ClusterSettings) -> stream::Config {
    stream::Config {
        name: settings.stream_name(),
        subjects: vec![settings.subject()],
        storage: stream::StorageType::File,
        num_replicas: 3,
        retention: stream::RetentionPolicy::Limits,
        // A full store refuses writes; it never drops records.
        discard: stream::DiscardPolicy::New,
        max_bytes: -1,
        max_messages: -1,
        max_messages_per_subject: -1,
        max_age: Duration::ZERO,
        duplicate_window: Duration::from_secs(120),
        deny_delete: true,
        allow_direct: true,
        max_consumers: settings.max_consumers.unwrap_or(-1),
        ..Default::default()
    }
}

/// Creates the stream when there is none; refuses one configured otherwise.
async fn ensure_stream(
    js: &jetstream::Context,
    settings: &ClusterSettings,
) -> Result<(), ClusterError> {
    let want = stream_config(settings);
    let info = match js.get_stream(&want.name).await {
        Ok(mut stream) => stream.info().await.map_err(nats_error)?.clone(),
        Err(error)
            if matches!(
                error.kind(),
                jetstream::context::GetStreamErrorKind::JetStream(e)
                    if e.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND
            ) =>
        {
            js.create_stream(want.clone()).await.map_err(nats_error)?;
            return Ok(());
        }
        Err(error) => return Err(nats_error(error)),
    };
    let have = &info.config;
    let differences = config_differences(&want, have);
    if !differences.is_empty() {
        return Err(ClusterError::Refused(format!(
            "the stream {} is configured otherwise than botlist requires: {}",
            want.name,
            differences.join(", ")
        )));
    }
    Ok(())
}

/// What in `have` differs from the required configuration, as `field (want x, found y)`.
pub fn config_differences(want: &stream::Config, have: &stream::Config) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |name: &str, ok: bool, want: String, have: String| {
        if !ok {
            out.push(format!("{name} (want {want}, found {have})"));
        }
    };
    // The fields that must be exactly as required.
    macro_rules! same {
        ($($field:ident),*) => {$(
            check(
                stringify!($field),
                want.$field == have.$field,
                format!("{:?}", want.$field),
                format!("{:?}", have.$field),
            );
        )*};
    }
    same!(subjects, storage, num_replicas, retention, discard);
    check(
        "limits",
        have.max_bytes <= 0
            && have.max_messages <= 0
            && have.max_messages_per_subject <= 0
            && have.max_age.is_zero(),
        "none".into(),
        format!(
            "max_bytes {}, max_messages {}, max_messages_per_subject {}, max_age {:?}",
            have.max_bytes, have.max_messages, have.max_messages_per_subject, have.max_age
        ),
    );
    check(
        "deny_delete",
        have.deny_delete,
        "true".into(),
        have.deny_delete.to_string(),
    );
    check(
        "duplicate_window",
        have.duplicate_window >= want.duplicate_window,
        format!("{:?}", want.duplicate_window),
        format!("{:?}", have.duplicate_window),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Role;

    #[test]
    fn versions_before_2_10_23_are_refused() {
        assert!(check_version("2.9.10").is_err());
        assert!(check_version("2.10.22").is_err());
        assert!(check_version("garbage").is_err());
        assert!(check_version("2.10.23").is_ok());
        assert!(check_version("v2.15.1").is_ok());
        assert!(check_version("2.11.0-beta.1").is_ok());
    }

    #[test]
    fn a_stream_configured_otherwise_is_named_field_by_field() {
        let settings = ClusterSettings {
            servers: String::new(),
            node_id: None,
            advertise_url: None,
            prefix: "botlist".into(),
            lease_ttl: Duration::from_secs(15),
            token: crate::config::Secret::from("t"),
            role: Role::Auto,
            publish_deadline: Duration::from_secs(10),
            min_seq_wait: Duration::from_secs(1),
            max_lag: Duration::from_secs(8),
            missing: None,
            blackout: None,
            lease_unread: false,
            max_consumers: None,
        };
        let want = stream_config(&settings);
        assert!(config_differences(&want, &want).is_empty());
        let mut have = want.clone();
        have.num_replicas = 1;
        have.max_age = Duration::from_secs(60);
        have.discard = stream::DiscardPolicy::Old;
        let found = config_differences(&want, &have);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found[0].starts_with("num_replicas"));
    }
}
