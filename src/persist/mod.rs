//! Durable state: snapshots, the journal, and recovery at startup (docs/PERSISTENCE.md).
//!
//! docs/PERSISTENCE.md describes the files and the guarantees.

pub mod backup;
pub mod codec;
pub mod continuity;
pub mod files;
pub mod head;
pub mod journal;
pub mod lock;
pub mod private;
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
    /// Every listed bot, in no particular order.
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
/// written by a newer botlist instead of reading them as damaged. Version 5 makes journal
/// segments ahead with zeros and names the newest in the journal's head (`head`), so that a
/// start can prove the newest segment whole; its frames and its snapshots are version 4's, and
/// a build of version 4 refuses them rather than miss a cut or removed newest segment.
/// Version 6 adds the audit log as a snapshot's sixth part (and `Record::Audited`): a build of
/// version 5 would read such a snapshot as damaged, and `--recover` would set it aside, so it
/// refuses it as newer (exit 9) instead. Segments and heads are version 5's.
pub const FORMAT_VERSION: u32 = 6;

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

/// Cluster mode: where the replicated journal stood when a snapshot's state was captured. Every
/// record in stream messages up to `stream_seq` is in the snapshot, so a node that starts from
/// it reads the stream from the next message on; `epoch` is the newest writer epoch by then,
/// so that a stale writer's message after it is still known as void.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StreamMark {
    pub stream_seq: u64,
    pub epoch: u64,
}

/// Cluster mode's part in a snapshot: the mark, read before the state is captured, and what is
/// done with a snapshot once it is durably written (the writer shares it with the cluster).
pub trait Replication: Send + Sync + 'static {
    fn mark(&self) -> StreamMark;
    fn written(&self, written: Written, seq: u64, mark: StreamMark) -> BoxFuture<'static, ()>;
}

/// Takes snapshots of the running service, one at a time.
pub struct Persistence {
    dir: PathBuf,
    journal: Journal,
    source: Box<dyn StateSource>,
    one_at_a_time: tokio::sync::Mutex<()>,
    replication: Option<Box<dyn Replication>>,
}

impl Persistence {
    pub fn new(dir: PathBuf, journal: Journal, source: impl StateSource) -> Self {
        Self {
            dir,
            journal,
            source: Box::new(source),
            one_at_a_time: tokio::sync::Mutex::new(()),
            replication: None,
        }
    }

    /// Cluster mode: each snapshot is written with its stream mark beside it, and handed on.
    pub fn with_replication(mut self, replication: Box<dyn Replication>) -> Self {
        self.replication = Some(replication);
        self
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
        // Read before the capture: every record in the stream messages up to the mark was
        // submitted before it, so the captured state holds it.
        let mark = self.replication.as_ref().map(|r| r.mark());
        let captured = self.source.capture().await?;
        let dir = self.dir.clone();
        let (seq, registry_seq, profiles) =
            (captured.seq, captured.registry_seq, captured.profiles);
        let bots = captured.bots;
        let writer =
            on_quiet_thread(move || write_bots(&dir, seq, registry_seq, &profiles, bots)).await?;
        // Every change the bots handed over is in the journal before the snapshot can stand for
        // it; a change whose record failed (and whose request got a 503) never reaches a file.
        if let Err(error) = self.journal.barrier().wait().await {
            abandon(writer).await;
            return Err(error.into());
        }
        let dir = self.dir.clone();
        // Past the barrier, every record up to `seq` is published, and so is its audit entry.
        let audit = self.journal.audit();
        let written = on_quiet_thread(move || -> io::Result<Written> {
            let mut writer = writer;
            if let Some(audit) = audit {
                writer.audit(audit);
            }
            let written = writer.finish()?;
            if let Some(mark) = mark {
                snapshot::write_mark(&dir, seq, mark)?;
            }
            retire(&dir)?;
            Ok(written)
        })
        .await?;
        tracing::info!(file = %written.path.display(), bytes = written.bytes, "snapshot written");
        crate::telemetry::snapshot_written(started, written.bytes);
        if let (Some(replication), Some(mark)) = (&self.replication, mark) {
            replication.written(written.clone(), seq, mark).await;
        }
        Ok(written)
    }
}

/// Runs `work` on a thread of its own at a lower priority than the threads that answer
/// requests: reading and encoding a snapshot takes seconds of CPU, which on a small machine
/// would otherwise be taken from requests (docs/PERFORMANCE.md, "Hot paths and memory", has the
/// figures). The thread ends with the work, so its priority never leaks to other work.
fn on_quiet_thread<T: Send + 'static, E: From<io::Error> + Send + 'static>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> impl std::future::Future<Output = Result<T, E>> {
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

/// `SCHED_IDLE` for the calling thread only (Linux schedules each thread on its own): a request
/// worker that wakes takes the core from it at once, where at nice 19 the scheduler lets the
/// writer finish its time slice first (docs/PERFORMANCE.md has the traces). An idle-class
/// thread still gets a small share of a busy machine (its weight is a fifth of nice 19's), so a
/// snapshot under full load is slower, never stopped. If the call
/// fails, nice 19; if that fails too, normal priority, which is only slower for requests.
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    {
        let idle = libc::sched_param { sched_priority: 0 };
        // SAFETY: `idle` outlives the call; 0 names the calling thread; gettid and setpriority
        // take no pointers and touch only this thread's priority.
        unsafe {
            if libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle) != 0 {
                let tid = libc::gettid();
                libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
            }
        }
    }
}

/// Bots asked for their state at once; the next as many are asked before these are written.
const READ_AHEAD: usize = 16;

/// Asks each bot for its state and writes it into a new snapshot file, in order, all on the
/// writer's thread; the file is finished by the caller. No request worker takes part, so none
/// wakes for each bot or lets go of every bot's handle at once at the end; here a bot's handle
/// is let go as soon as the bot is asked.
fn write_bots(
    dir: &Path,
    seq: u64,
    registry_seq: u64,
    profiles: &[Profile],
    mut bots: Vec<Box<dyn BotSource>>,
) -> Result<SnapshotWriter, SnapshotFailed> {
    // In id order, as a start hands bots on (a start from this file then need not sort).
    bots.sort_by_cached_key(|bot| bot.id());
    let mut writer = SnapshotWriter::create(dir, seq, registry_seq, profiles)?;
    if let Err(error) = read_into(&mut writer, bots) {
        writer.abandon();
        return Err(error);
    }
    Ok(writer)
}

fn read_into(
    writer: &mut SnapshotWriter,
    bots: Vec<Box<dyn BotSource>>,
) -> Result<(), SnapshotFailed> {
    // The answers come through the actors' reply channels, which need no I/O or timers.
    let answers = tokio::runtime::Builder::new_current_thread().build()?;
    let mut bots = bots.into_iter();
    let mut asked = ask(&mut bots);
    while !asked.is_empty() {
        let next = ask(&mut bots);
        for state in answers.block_on(futures_util::future::join_all(asked)) {
            // A bot delisted meanwhile is left out: its delisting is in the journal after the
            // snapshot's sequence number.
            if let Some(stored) = state? {
                writer.bot(&stored)?;
            }
        }
        asked = next;
    }
    Ok(())
}

type Answer = BoxFuture<'static, Result<Option<StoredBot>, SnapshotFailed>>;

/// Asks the next [`READ_AHEAD`] bots for their state; each bot's handle goes once it is asked.
fn ask(bots: &mut impl Iterator<Item = Box<dyn BotSource>>) -> Vec<Answer> {
    bots.take(READ_AHEAD).map(|bot| bot.read()).collect()
}

async fn abandon(writer: SnapshotWriter) {
    let _ = tokio::task::spawn_blocking(move || writer.abandon()).await;
}

/// Keeps the newest [`snapshot::KEEP`] snapshots and every journal segment with a record after
/// the oldest of them, so a damaged newest snapshot can fall back to an older one. While there
/// is only one snapshot the journal is kept from its start: a damaged only snapshot then falls
/// back to the journal alone instead of refusing the start.
fn retire(dir: &Path) -> io::Result<()> {
    let snapshots = snapshot::list(dir)?;
    for (seq, path) in snapshots.iter().skip(snapshot::KEEP) {
        fs::remove_file(path)?;
        snapshot::remove_mark(dir, *seq)?;
    }
    let kept = &snapshots[..snapshots.len().min(snapshot::KEEP)];
    let [.., (oldest_kept, _)] = kept else {
        return Ok(());
    };
    if kept.len() < 2 {
        return sync_dir(dir);
    }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use super::journal::FsyncMode;
    use super::state::SavedState;
    use super::*;
    use crate::demo::{self, DemoSize};
    use crate::domain::time::Timestamp;

    /// What a bot saw when it was asked for its state.
    #[derive(Debug)]
    struct Asked {
        thread: Option<String>,
        idle_class: bool,
        handles_let_go: usize,
    }

    /// A bot that answers at once and counts the handles let go before it was asked.
    struct Bot {
        stored: StoredBot,
        let_go: Arc<AtomicUsize>,
        asked: Arc<Mutex<Vec<Asked>>>,
    }

    impl BotSource for Bot {
        fn id(&self) -> BotId {
            self.stored.state.listing.id
        }

        fn read(&self) -> BoxFuture<'static, Result<Option<StoredBot>, SnapshotFailed>> {
            // SAFETY: sched_getscheduler takes no pointers; 0 is the calling thread.
            let policy = unsafe { libc::sched_getscheduler(0) };
            self.asked.lock().expect("not poisoned").push(Asked {
                thread: std::thread::current().name().map(str::to_owned),
                idle_class: policy == libc::SCHED_IDLE,
                handles_let_go: self.let_go.load(Ordering::SeqCst),
            });
            let stored = self.stored.clone();
            Box::pin(async move { Ok(Some(stored)) })
        }
    }

    impl Drop for Bot {
        fn drop(&mut self) {
            self.let_go.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A registry whose bots come in the reverse of their id order.
    struct Registry {
        state: SavedState,
        let_go: Arc<AtomicUsize>,
        asked: Arc<Mutex<Vec<Asked>>>,
    }

    impl StateSource for Registry {
        fn capture(&self) -> BoxFuture<'static, Result<Captured, SnapshotFailed>> {
            let mut bots: Vec<Box<dyn BotSource>> = Vec::new();
            for stored in &self.state.bots {
                bots.push(Box::new(Bot {
                    stored: stored.clone(),
                    let_go: Arc::clone(&self.let_go),
                    asked: Arc::clone(&self.asked),
                }));
            }
            bots.sort_by_key(|bot| std::cmp::Reverse(bot.id()));
            let captured = Captured {
                seq: 0,
                registry_seq: 0,
                profiles: self.state.profiles.clone(),
                bots,
            };
            Box::pin(async move { Ok(captured) })
        }
    }

    #[tokio::test]
    async fn a_snapshot_asks_its_bots_from_the_idle_writer_and_lets_each_go_once_asked() {
        let size = DemoSize {
            seed: 5,
            bots: 200,
            profiles: 10,
            voters: 300,
            votes: 1_000,
        };
        let state = demo::build(Timestamp::from_millis(1_790_000_000_000), &size).state;
        let mut ids: Vec<BotId> = state.bots.iter().map(|b| b.state.listing.id).collect();
        ids.sort_unstable();
        let dir = tempfile::tempdir().expect("a directory");
        let journal = Journal::open(dir.path(), 1, FsyncMode::Never).expect("a journal");
        let (let_go, asked) = (Arc::default(), Arc::default());
        let registry = Registry {
            state,
            let_go: Arc::clone(&let_go),
            asked: Arc::clone(&asked),
        };
        let persistence = Persistence::new(dir.path().to_owned(), journal, registry);

        let written = persistence.snapshot().await.expect("written");

        let back = snapshot::read(&written.path).expect("a good snapshot");
        let stored: Vec<BotId> = back.bots.iter().map(|b| b.state.listing.id).collect();
        assert_eq!(stored, ids, "every bot, in id order");
        let asked = asked.lock().expect("not poisoned");
        assert_eq!(asked.len(), ids.len());
        for each in asked.iter() {
            // Not a request worker: the snapshot's own thread, which wakes never take a core from.
            assert_eq!(each.thread.as_deref(), Some("snapshot-writer"), "{each:?}");
            assert!(each.idle_class, "{each:?}");
        }
        // No more than two rounds of handles are held at once, so none are let go in a heap.
        let last = asked.last().expect("asked");
        assert!(
            last.handles_let_go >= ids.len() - 2 * READ_AHEAD,
            "{} of {} let go before the last was asked",
            last.handles_let_go,
            ids.len()
        );
        assert_eq!(let_go.load(Ordering::SeqCst), ids.len());
    }
}
