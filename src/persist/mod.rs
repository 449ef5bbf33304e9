//! Durable state: snapshots, the journal, and recovery at startup (docs/PERSISTENCE.md).
//!
//! docs/PERSISTENCE.md describes the files and the guarantees.

pub mod files;
pub mod journal;
pub mod lock;
pub mod recovery;
pub mod snapshot;
pub mod state;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;

use crate::domain::ids::BotId;
use crate::domain::profile::Profile;
use journal::Journal;
use snapshot::{SnapshotWriter, Written};
use state::StoredBot;

/// Where a snapshot reads the service's state from: its owners, whoever they are. Persistence
/// knows them only through this interface, not as actors.
pub trait StateSource: Send + Sync + 'static {
    /// The registry's own part, taken at one moment, and every listed bot to read next.
    fn capture(&self) -> BoxFuture<'static, Result<Captured, SnapshotFailed>>;
}

/// One listed bot, to be asked for its state while requests go on.
pub trait BotSource: Send + Sync {
    fn id(&self) -> BotId;
    /// The bot's state and token; `None` when the bot was delisted since it was captured (its
    /// delisting is in the journal after the snapshot's sequence number).
    fn read(&self) -> BoxFuture<'static, Result<Option<StoredBot>, SnapshotFailed>>;
}

/// What a snapshot starts from.
pub struct Captured {
    /// Every record up to this one is in what the snapshot will hold.
    pub seq: u64,
    pub registry_seq: u64,
    pub profiles: Vec<Profile>,
    pub bots: Vec<Box<dyn BotSource>>,
}

/// Why a snapshot was not written; the cause is kept for the log.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotFailed {
    #[error("not taking a snapshot: {0}")]
    JournalFailed(#[from] journal::JournalError),
    #[error("the registry did not answer: {0}")]
    RegistryGone(String),
    #[error("bot {bot} did not answer: {why}")]
    BotGone { bot: BotId, why: String },
    #[error("the snapshot writer stopped: {0}")]
    WriterStopped(#[from] tokio::task::JoinError),
    #[error("the snapshot could not be written: {0}")]
    Write(#[from] io::Error),
}

/// The format version of snapshot and journal files this build writes (and the newest it reads).
/// Version 2 added the small delivery records and the count of deliveries given up for a full
/// outbox; version 3 changed only snapshots, to store each voter once in a table and each bot
/// as a part of its own (see [`snapshot::SnapshotWriter`]); version 4 added the journal record
/// of a vote that queues a webhook delivery (`VotedWithDelivery`) and stores deliveries by what
/// their bodies are made of instead of the bodies (a snapshot's layout is version 3's). Files
/// of versions 1 to 3 read as they are; a build of version 3 refuses files of version 4 as
/// written by a newer botlist instead of reading them as damaged.
pub const FORMAT_VERSION: u32 = 4;

/// How deep MessagePack may nest in a file: our records need about ten levels. The library's
/// default of 1024 lets a damaged file recurse deep enough to overflow a thread's stack.
const MAX_NESTING: usize = 64;

/// Decodes MessagePack from a file, with nesting bounded.
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, rmp_serde::decode::Error> {
    let mut deserializer = rmp_serde::Deserializer::from_read_ref(bytes);
    deserializer.set_max_depth(MAX_NESTING);
    T::deserialize(&mut deserializer)
}

/// Makes a rename or a new file in `dir` durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Takes snapshots of the running service, one at a time.
pub struct Persistence {
    dir: PathBuf,
    journal: Journal,
    source: Box<dyn StateSource>,
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl Persistence {
    pub fn new(dir: PathBuf, journal: Journal, source: impl StateSource) -> Self {
        Self {
            dir,
            journal,
            source: Box::new(source),
            one_at_a_time: tokio::sync::Mutex::new(()),
        }
    }

    /// Why the journal stopped taking writes, once it has.
    pub fn journal_failure(&self) -> Option<String> {
        self.journal.failure().map(|error| error.to_string())
    }

    /// Writes every actor's state while requests go on, bot by bot: the registry's part first,
    /// then each bot's state as its actor hands it over, straight into the file, so memory holds
    /// a few bots' copies at a time, never a copy of the whole directory. Then keeps the newest
    /// snapshots and the journal they need, and retires the rest.
    pub async fn snapshot(&self) -> Result<Written, SnapshotFailed> {
        let _one = self.one_at_a_time.lock().await;
        let started = std::time::Instant::now();
        if let Some(error) = self.journal.failure() {
            return Err(error.into());
        }
        self.journal.request_rotation();
        let captured = self.source.capture().await?;
        let (bots, to_writer) = tokio::sync::mpsc::channel::<StoredBot>(IN_FLIGHT);
        let dir = self.dir.clone();
        let (seq, registry_seq, profiles) =
            (captured.seq, captured.registry_seq, captured.profiles);
        let writer =
            on_quiet_thread(move || write_bots(&dir, seq, registry_seq, &profiles, to_writer));
        let read = read_bots(&captured.bots, bots).await;
        let writer = writer.await?;
        if let Err(error) = read {
            abandon(writer).await;
            return Err(error);
        }
        // Every change the bots handed over is in the journal before the snapshot can stand for
        // it; a change whose record failed (and whose request got a 503) never reaches a file.
        if let Err(error) = self.journal.barrier().wait().await {
            abandon(writer).await;
            return Err(error.into());
        }
        let dir = self.dir.clone();
        let written = on_quiet_thread(move || -> io::Result<Written> {
            let written = writer.finish()?;
            retire(&dir)?;
            Ok(written)
        })
        .await?;
        tracing::info!(file = %written.path.display(), bytes = written.bytes, "snapshot written");
        crate::telemetry::snapshot_written(started, written.bytes);
        Ok(written)
    }
}

/// Runs `work` on a thread of its own at a lower priority than the threads that answer
/// requests: encoding a snapshot takes seconds of CPU, which on a small machine would otherwise
/// be taken from requests (a check waited up to 15 ms behind it). The thread ends with the work,
/// so its priority never leaks to other work.
fn on_quiet_thread<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> impl std::future::Future<Output = io::Result<T>> {
    let (done, result) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("snapshot-writer".into())
        .spawn(move || {
            lower_this_threads_priority();
            let _ = done.send(work());
        });
    async move {
        spawned?;
        result
            .await
            .map_err(|_| io::Error::other("the snapshot writer's thread panicked"))?
    }
}

/// Nice 19, the lowest, for the calling thread only (Linux gives each thread its own nice value):
/// a request worker that wakes takes the core at once. Not `SCHED_IDLE`, which would stop a
/// snapshot for as long as anything else keeps the cores busy (a machine under load would never
/// finish one, and the journal would grow meanwhile). A failure leaves the thread at normal
/// priority, which is only slower for requests, never wrong.
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take no pointers and touch only this thread's priority.
        unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
        }
    }
}

/// Bots read ahead of the writer: enough to keep it busy, few enough to hold little memory.
const IN_FLIGHT: usize = 64;
/// Bots asked for their state at once.
const READ_AHEAD: usize = 16;

/// Asks each bot for its state and hands it to the writer, in order.
async fn read_bots(
    bots: &[Box<dyn BotSource>],
    to_writer: tokio::sync::mpsc::Sender<StoredBot>,
) -> Result<(), SnapshotFailed> {
    for chunk in bots.chunks(READ_AHEAD) {
        let states = futures_util::future::join_all(chunk.iter().map(|bot| bot.read())).await;
        for state in states {
            // A bot delisted meanwhile is left out: its delisting is in the journal after the
            // snapshot's sequence number.
            if let Some(stored) = state? {
                if to_writer.send(stored).await.is_err() {
                    // The writer stopped on an error, which it reports.
                    return Ok(());
                }
            }
        }
        // The snapshot runs on a request worker's thread; when every bot answers at once this
        // loop would not give the thread back, and that worker's other requests would wait.
        tokio::task::yield_now().await;
    }
    Ok(())
}

/// Writes the bots as they come, on a blocking thread; the file is finished by the caller.
fn write_bots(
    dir: &Path,
    seq: u64,
    registry_seq: u64,
    profiles: &[Profile],
    mut bots: tokio::sync::mpsc::Receiver<StoredBot>,
) -> io::Result<SnapshotWriter> {
    let mut writer = SnapshotWriter::create(dir, seq, registry_seq, profiles)?;
    while let Some(bot) = bots.blocking_recv() {
        if let Err(error) = writer.bot(&bot) {
            writer.abandon();
            return Err(error);
        }
    }
    Ok(writer)
}

async fn abandon(writer: SnapshotWriter) {
    let _ = tokio::task::spawn_blocking(move || writer.abandon()).await;
}

/// Keeps the newest [`snapshot::KEEP`] snapshots and every journal segment with a record after
/// the oldest of them, so a damaged newest snapshot can fall back to an older one.
fn retire(dir: &Path) -> io::Result<()> {
    let snapshots = snapshot::list(dir)?;
    for (_, path) in snapshots.iter().skip(snapshot::KEEP) {
        fs::remove_file(path)?;
    }
    let Some(&(oldest_kept, _)) = snapshots.iter().take(snapshot::KEEP).next_back() else {
        return Ok(());
    };
    let segments = journal::list(dir)?;
    // A segment's records all come before the next segment's first; the newest is never retired.
    for pair in segments.windows(2) {
        let (_, path) = &pair[0];
        let (next_first, _) = pair[1];
        if next_first <= oldest_kept + 1 {
            fs::remove_file(path)?;
        }
    }
    sync_dir(dir)
}
