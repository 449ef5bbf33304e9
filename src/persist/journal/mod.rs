//! The journal: every acknowledged change, appended before its 2xx is sent.
//!
//! Writers hand records to one writer thread and wait; the thread writes whatever has queued up
//! and makes it durable with one fsync for the whole batch (group commit), so concurrent writers
//! share an fsync instead of queueing for one each.
//!
//! A segment file is a header (magic, format version, first sequence number) and frames:
//! `len: u32 LE | crc32: u32 LE | seq: u64 LE | payload (MessagePack Record, len bytes)`, the
//! CRC covering `len`, `seq` and the payload. docs/PERSISTENCE.md has the details.

mod file_sink;
mod frames;
mod scan;
mod writer;

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::state::Record;
use crate::domain::audit::{AuditEntry, AuditLog};

pub use file_sink::FileSink;
pub use frames::{
    frame, frame_bytes, list, parse_segment_name, read_frame, record_kind, segment_header,
    segment_name, FrameError, FRAME_HEADER_LEN, HEADER_LEN, MAGIC, MAX_RECORD_BYTES, SEGMENTS,
    ZEROED_AHEAD,
};
pub use scan::{read_segment, scan_segment, SegmentEnd, SegmentScan};
use writer::spawn_threads;

/// When acknowledged means on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FsyncMode {
    /// fsync before every acknowledgement, shared by the writes that arrive together.
    Always,
    /// fsync every 50 ms: a power cut may lose the last 50 ms; a crash of the process does not.
    Batch,
    /// Never fsync: the operating system decides when data reaches the disk.
    Never,
}

/// A storage fault put into the journal's writes on purpose, so that tests on the real binary
/// can show what the service does while its disk is slow or failing (`--inject-journal-fault`,
/// hidden from `--help`; docs/PERSISTENCE.md). Never set in production.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum JournalFault {
    #[default]
    None,
    /// Every batch waits this long before anything of it is written: a slow (or frozen) disk.
    Delay(Duration),
    /// Every batch holding a record numbered this or later fails with this OS error, as a
    /// failing (EIO), full (ENOSPC) or read-only (EROFS) disk would.
    FailFrom(u64, i32),
    /// As `FailFrom`, but the batch's frames are written to the file first and then the batch
    /// fails as a flush or fsync would: the case where a refused record's bytes reached the
    /// file, which the writer then takes back (`Sink::take_back`).
    FsyncFailFrom(u64, i32),
    /// Every batch, and every probe of a journal that failed (`Sink::probe`), fails with this
    /// OS error while this path exists: a disk that fails and then recovers, at the test's
    /// command (it creates and removes the file). The two kinds above never recover.
    FailWhileExists(std::path::PathBuf, i32),
}

impl std::str::FromStr for JournalFault {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "`{text}` is not a journal fault: delay:<ms>, fail-from:<seq>[:eio|enospc|erofs], \
                 fsync-fail-from:<seq>[:eio|enospc|erofs] or fail-while-exists:<eio|enospc|erofs>:<path>"
            )
        };
        let errno = |name: Option<&str>| match name.unwrap_or("eio") {
            "eio" => Ok(libc::EIO),
            "enospc" => Ok(libc::ENOSPC),
            "erofs" => Ok(libc::EROFS),
            _ => Err(bad()),
        };
        if let Some(rest) = text.strip_prefix("fail-while-exists:") {
            let (name, path) = rest.split_once(':').ok_or_else(bad)?;
            if path.is_empty() {
                return Err(bad());
            }
            return Ok(Self::FailWhileExists(path.into(), errno(Some(name))?));
        }
        let mut parts = text.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("delay"), Some(ms), None, None) => Ok(Self::Delay(Duration::from_millis(
                ms.parse().map_err(|_| bad())?,
            ))),
            (Some("fail-from"), Some(seq), name, None) => Ok(Self::FailFrom(
                seq.parse().map_err(|_| bad())?,
                errno(name)?,
            )),
            (Some("fsync-fail-from"), Some(seq), name, None) => Ok(Self::FsyncFailFrom(
                seq.parse().map_err(|_| bad())?,
                errno(name)?,
            )),
            _ => Err(bad()),
        }
    }
}

/// Why the journal refused a record. Cloned to every write waiting on the batch that failed;
/// the I/O error is kept as the cause, for the log.
#[derive(Clone, Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal write failed: {0}")]
    Write(#[source] Arc<io::Error>),
    #[error("a record did not encode: {0}")]
    Encode(String),
    #[error("the journal writer stopped")]
    Stopped,
    /// Cluster mode: the replicated log refused or could not confirm a batch (another writer
    /// took over, or the deadline passed). Nothing after it is acknowledged by this node.
    #[error("this node is no longer the writer: {0}")]
    Fenced(String),
    /// Cluster mode: the batch was sent and then the writer lost its role without learning
    /// that the stream stored it (no ack before the deadline, or one after the fence time). It
    /// may have been stored, and the next writer then applies it: never answered "not stored".
    #[error(
        "this node lost the writer's role after sending the write, which may have been stored: {0}"
    )]
    Unconfirmed(String),
    /// Cluster mode: this node follows the stream and makes no records of its own.
    #[error("this node does not write; writes go to the writer")]
    NotWriter,
    /// The write failed after the batch's bytes were handed to the file (a write cut short, a
    /// flush or an fsync that failed): the records may be on disk and replayed at the next start.
    #[error("journal write failed after the records reached the file: {0}")]
    MaybeWritten(#[source] Arc<io::Error>),
}

impl JournalError {
    /// Whether the record may have been kept although it was refused: its bytes reached the
    /// file (or, in cluster mode, the stream may have taken it), so a restart may replay it.
    pub fn maybe_stored(&self) -> bool {
        match self {
            Self::MaybeWritten(_) | Self::Unconfirmed(_) => true,
            // A fenced batch was refused by the stream's compare-and-set: never stored.
            Self::Write(_)
            | Self::Encode(_)
            | Self::Stopped
            | Self::Fenced(_)
            | Self::NotWriter => false,
        }
    }

    /// The failure's kind, for the metric and the readiness answer: `enospc` (disk or quota
    /// full), `read_only`, `io` (EIO), `permission`, `other`; `fenced`, `stopped`,
    /// `not_writer`, `encode` for the journal's own refusals.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Write(error) | Self::MaybeWritten(error) => io_kind(error),
            Self::Encode(_) => "encode",
            Self::Stopped => "stopped",
            Self::Fenced(_) => "fenced",
            Self::Unconfirmed(_) => "unconfirmed",
            Self::NotWriter => "not_writer",
        }
    }

    /// The same failure as told to a record that never reached the file: every record after
    /// the batch that failed is refused before it is written.
    fn not_written(self) -> Self {
        match self {
            Self::MaybeWritten(error) => Self::Write(error),
            // Only the batch that was sent may have been stored; every later one never is.
            Self::Unconfirmed(why) => Self::Fenced(why),
            other => other,
        }
    }
}

/// One of `telemetry::JOURNAL_FAILURE_KINDS`, which the metric shows from the start.
fn io_kind(error: &io::Error) -> &'static str {
    match error.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => "enospc",
        Some(libc::EROFS) => "read_only",
        Some(libc::EIO) => "io",
        Some(libc::EACCES | libc::EPERM) => "permission",
        _ => "other",
    }
}

/// What a change shows readers, run once its record is durable: never for a record that failed,
/// and always in record order, so a reader never sees a write that was not acknowledged and never
/// sees an older state after a newer one.
pub type Publish = Box<dyn FnOnce() + Send>;

/// What a record's writer is told once the record is durable, or that it never will be: run
/// by the journal's publisher after the record's [`Publish`] (or at once, when the record is
/// refused). A [`Durable`] is one; a write's answer sent straight to the asker is another
/// (`actors::Answer`), so that the asker is woken by the publisher and by nobody before it.
pub type Settle = Box<dyn FnOnce(Result<(), JournalError>) + Send>;

struct Pending {
    frame: Vec<u8>,
    seq: u64,
    publish: Option<Publish>,
    done: Settle,
}

struct Submitter {
    next_seq: u64,
    queue: Option<mpsc::Sender<Pending>>,
    /// Cluster mode, on a node that does not write: records come from the stream
    /// ([`Journal::advance`]) and none is made here until [`Journal::promote`].
    follows: bool,
    /// Set by [`Journal::close`]: every record is refused from then on.
    closed: bool,
}

struct Shared {
    submitter: Mutex<Submitter>,
    failed: Mutex<Option<JournalError>>,
    rotate: AtomicBool,
    /// Every record numbered up to this one is durable.
    durable_seq: AtomicU64,
    /// The writer and publisher threads, joined by [`Journal::close`].
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// Writes refused since the journal failed, and when that was last logged.
    refusals: AtomicU64,
    refusals_logged: Mutex<Option<std::time::Instant>>,
    /// The audit log each audited record's entry joins once the record is published.
    audit: std::sync::OnceLock<Arc<AuditLog>>,
    /// After a failure: whether the writer's last probe of the disk wrote and synced
    /// (`Sink::probe`, every [`PROBE_EVERY`]).
    disk_writable: AtomicBool,
    /// Set when a refused batch could not be taken back (its writers were told "may have
    /// been stored"): the disk may hold records the actors never kept, so the process does
    /// not take writes again; only a restart replays them (see [`Journal::resume`]).
    maybe_stored: AtomicBool,
    /// Why the journal, failed, will not take writes again in this process: said by
    /// `/readyz` (a restart is needed).
    restart_needed: Mutex<Option<String>>,
    /// Where a single node's journal reopens after a failure once the disk is back: the data
    /// directory, the fsync mode and the injected fault (`None` for any other sink).
    reopen: Mutex<Option<(std::path::PathBuf, FsyncMode, JournalFault)>>,
}

/// Why [`Journal::resume`] did not take writes again.
#[derive(Debug, thiserror::Error)]
pub enum ResumeRefused {
    /// Never in this process: only a restart takes writes again.
    #[error("{0}")]
    Never(String),
    /// Not yet: the new segment could not be made; the journal stays failed and may be
    /// resumed again.
    #[error("the new journal segment could not be made: {0}")]
    NotYet(io::Error),
}

/// How often the writer of a journal that failed on its disk probes the disk again.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How often refused writes are logged while the journal cannot take them.
pub const REFUSALS_LOGGED_EVERY: Duration = Duration::from_secs(10);

/// A handle to the journal; cheap to clone, one per actor.
#[derive(Clone)]
pub struct Journal {
    shared: Arc<Shared>,
}

/// Resolves when the record is as durable as the fsync mode promises.
pub struct Durable(Result<oneshot::Receiver<Result<(), JournalError>>, JournalError>);

impl Durable {
    /// A `Durable` and the [`Settle`] that resolves it.
    fn settled_by() -> (Settle, Self) {
        let (tx, rx) = oneshot::channel();
        let settle: Settle = Box::new(move |result| {
            let _ = tx.send(result);
        });
        (settle, Self(Ok(rx)))
    }

    pub fn done() -> Self {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(Ok(()));
        Self(Ok(rx))
    }

    pub async fn wait(self) -> Result<(), JournalError> {
        match self.0 {
            Err(error) => Err(error),
            Ok(rx) => rx.await.unwrap_or(Err(JournalError::Stopped)),
        }
    }
}

impl Journal {
    /// A journal that numbers records and keeps nothing: the service without a data directory.
    pub fn in_memory(next_seq: u64) -> Self {
        Self::with_queue(next_seq, None)
    }

    /// Cluster mode, on a node that does not write: it numbers nothing and refuses every
    /// record; [`Journal::advance`] says how far the stream has been applied, and
    /// [`Journal::promote`] makes it the writer's journal.
    pub fn follower(next_seq: u64) -> Self {
        let journal = Self::with_queue(next_seq, None);
        lock(&journal.shared.submitter).follows = true;
        journal
    }

    /// Whether this journal only follows the stream (see [`Journal::follower`]).
    pub fn follows(&self) -> bool {
        lock(&self.shared.submitter).follows
    }

    /// On a follower: every record up to `seq` has been applied from the stream, and is shown.
    pub fn advance(&self, seq: u64) {
        let mut submitter = lock(&self.shared.submitter);
        if submitter.follows {
            submitter.next_seq = submitter.next_seq.max(seq + 1);
            self.shared.durable_seq.fetch_max(seq, Ordering::AcqRel);
        }
    }

    /// Makes a follower's journal the writer's: records from `next_seq` on go to `sink`. Every
    /// actor holding this journal writes through it from now on.
    pub fn promote(&self, sink: Box<dyn Sink>, next_seq: u64) -> io::Result<()> {
        let mut submitter = lock(&self.shared.submitter);
        if !submitter.follows {
            return Err(io::Error::other("the journal already writes"));
        }
        let queue = spawn_threads(Arc::clone(&self.shared), sink, JournalFault::None)?;
        submitter.queue = Some(queue);
        submitter.next_seq = next_seq;
        submitter.follows = false;
        crate::telemetry::journal_healthy(true);
        self.shared
            .durable_seq
            .store(next_seq.saturating_sub(1), Ordering::Release);
        Ok(())
    }

    fn with_queue(next_seq: u64, queue: Option<mpsc::Sender<Pending>>) -> Self {
        Self {
            shared: Arc::new(Shared {
                submitter: Mutex::new(Submitter {
                    next_seq,
                    queue,
                    follows: false,
                    closed: false,
                }),
                failed: Mutex::new(None),
                rotate: AtomicBool::new(false),
                durable_seq: AtomicU64::new(next_seq.saturating_sub(1)),
                threads: Mutex::new(Vec::new()),
                refusals: AtomicU64::new(0),
                refusals_logged: Mutex::new(None),
                audit: std::sync::OnceLock::new(),
                disk_writable: AtomicBool::new(false),
                maybe_stored: AtomicBool::new(false),
                restart_needed: Mutex::new(None),
                reopen: Mutex::new(None),
            }),
        }
    }

    /// Starts a new segment at `next_seq` in `dir` and the thread that writes it.
    pub fn open(dir: &Path, next_seq: u64, mode: FsyncMode) -> io::Result<Self> {
        Self::open_with_fault(dir, next_seq, mode, JournalFault::None)
    }

    /// As [`Journal::open`], with a storage fault put into every write (tests only).
    pub fn open_with_fault(
        dir: &Path,
        next_seq: u64,
        mode: FsyncMode,
        fault: JournalFault,
    ) -> io::Result<Self> {
        let sink = FileSink::create(dir, next_seq, mode)?;
        let journal = Self::start_writer(Box::new(sink), next_seq, fault.clone())?;
        *lock(&journal.shared.reopen) = Some((dir.to_path_buf(), mode, fault));
        Ok(journal)
    }

    /// Whether this journal, failed on its disk, may take writes again in this process: a
    /// single node's files (no other sink), every refused batch taken back (nothing on disk
    /// that was refused), and no reason given to need a restart. `Err` says why not.
    pub fn may_resume(&self) -> Result<(), String> {
        if let Some(why) = lock(&self.shared.restart_needed).clone() {
            return Err(why);
        }
        if self.shared.maybe_stored.load(Ordering::Acquire) {
            return Err(
                "a refused batch could not be taken back from the journal's file (its \
                 writes were told they may have been stored): restart the service to replay it"
                    .into(),
            );
        }
        if lock(&self.shared.reopen).is_none() {
            return Err(
                "this journal does not reopen in place (cluster mode): restart the node".into(),
            );
        }
        Ok(())
    }

    /// Says that the journal will not take writes again in this process, and why: `/readyz`
    /// tells it, and only a restart clears it.
    pub fn needs_restart(&self, why: String) {
        lock(&self.shared.restart_needed).get_or_insert(why);
    }

    /// Why the journal will not take writes again without a restart, once that is known.
    pub fn restart_needed(&self) -> Option<String> {
        lock(&self.shared.restart_needed).clone()
    }

    /// Takes writes again after a failure of the disk, the way a start does: the failed
    /// writer's threads end, a new segment is started at `next_seq` (the number after the
    /// last durable record, which the caller rebuilt the actors' state from and which must be
    /// the next number this journal gives: nothing refused holds a number), and only then is
    /// the failure cleared. Never an append after the batch that failed. The caller has put
    /// every actor back to the durable state first (docs/PERSISTENCE.md, "Taking writes again
    /// without a restart").
    pub fn resume(&self, next_seq: u64) -> Result<(), ResumeRefused> {
        self.may_resume().map_err(ResumeRefused::Never)?;
        if self.failure().is_none() {
            return Err(ResumeRefused::Never("the journal has not failed".into()));
        }
        let Some((dir, mode, fault)) = lock(&self.shared.reopen).clone() else {
            return Err(ResumeRefused::Never(
                "this journal does not reopen in place".into(),
            ));
        };
        let threads = {
            let mut submitter = lock(&self.shared.submitter);
            if submitter.closed {
                return Err(ResumeRefused::Never("the journal is closed".into()));
            }
            if submitter.next_seq != next_seq || self.durable_seq() + 1 != next_seq {
                return Err(ResumeRefused::Never(format!(
                    "the files end before record {next_seq}, the journal at record {} (durable up to {})",
                    submitter.next_seq,
                    self.durable_seq()
                )));
            }
            // The failed writer ends once its queue is gone (it holds nothing: every record
            // is refused before it is queued while the journal is failed).
            submitter.queue = None;
            std::mem::take(&mut *lock(&self.shared.threads))
        };
        for thread in threads {
            let _ = thread.join();
        }
        // After the old writer ended: it never writes the head again. A segment that cannot be
        // made yet (a disk with room for the probe's 4 KiB but not a segment's 1 MiB) leaves the
        // journal failed, with no writer: the next call tries again (a segment of this name
        // holding no record is started over).
        let sink = FileSink::create(&dir, next_seq, mode).map_err(ResumeRefused::NotYet)?;
        let queue = spawn_threads(Arc::clone(&self.shared), Box::new(sink), fault)
            .map_err(ResumeRefused::NotYet)?;
        let mut submitter = lock(&self.shared.submitter);
        submitter.queue = Some(queue);
        *lock(&self.shared.failed) = None;
        drop(submitter);
        self.shared.disk_writable.store(false, Ordering::Release);
        self.shared.refusals.store(0, Ordering::Relaxed);
        *lock(&self.shared.refusals_logged) = None;
        crate::telemetry::journal_healthy(true);
        crate::telemetry::journal_disk_writable(true);
        Ok(())
    }

    /// Starts the writer thread over `sink`: the journal's seam. Batching, the order of
    /// publications, `durable_seq` and the answers stay here; only where batches go changes
    /// (files in single-node mode, the replicated log in cluster mode).
    pub fn with_sink(sink: Box<dyn Sink>, next_seq: u64) -> io::Result<Self> {
        Self::start_writer(sink, next_seq, JournalFault::None)
    }

    fn start_writer(sink: Box<dyn Sink>, next_seq: u64, fault: JournalFault) -> io::Result<Self> {
        let journal = Self::with_queue(next_seq, None);
        let queue = spawn_threads(Arc::clone(&journal.shared), sink, fault)?;
        lock(&journal.shared.submitter).queue = Some(queue);
        crate::telemetry::journal_healthy(true);
        Ok(journal)
    }

    /// Numbers the record and queues it; the order of numbers is the order of calls.
    pub fn submit(&self, record: &Record) -> (u64, Durable) {
        self.submit_then(record, None)
    }

    /// As [`Journal::submit`], and runs `publish` once the record is durable, before the
    /// record's [`Durable`] resolves and after every earlier record's `publish`.
    pub fn submit_then(&self, record: &Record, publish: Option<Publish>) -> (u64, Durable) {
        let (settle, durable) = Durable::settled_by();
        (self.submit_settled(record, publish, settle), durable)
    }

    /// As [`Journal::submit_then`], and runs `settle` once the record is durable (after its
    /// `publish`), or at once with the error when it is refused; 0 for a refused record.
    pub fn submit_settled(&self, record: &Record, publish: Option<Publish>, settle: Settle) -> u64 {
        let payload = match rmp_serde::to_vec(record) {
            Ok(payload) => payload,
            Err(error) => {
                settle(Err(JournalError::Encode(error.to_string())));
                return 0;
            }
        };
        let mut submitter = lock(&self.shared.submitter);
        // Checked under the submitter's lock, which the writer holds while it marks the
        // journal failed and gives back the numbers of what it refused: no record is numbered
        // after that, so a number given back is never taken twice.
        let failed = lock(&self.shared.failed).clone();
        if let Some(error) = failed {
            drop(submitter);
            self.note_refusal(&error);
            settle(Err(error));
            return 0;
        }
        let refused = if submitter.closed {
            Some(JournalError::Stopped)
        } else if submitter.follows {
            Some(JournalError::NotWriter)
        } else {
            None
        };
        if let Some(error) = refused {
            drop(submitter);
            settle(Err(error));
            return 0;
        }
        let seq = submitter.next_seq;
        submitter.next_seq += 1;
        let publish = self.with_audit_entry(seq, record, publish);
        let Some(queue) = &submitter.queue else {
            // Kept nowhere: published at once, still in order under the lock.
            if let Some(publish) = publish {
                publish();
            }
            self.shared.durable_seq.store(seq, Ordering::Release);
            drop(submitter);
            settle(Ok(()));
            return seq;
        };
        let pending = Pending {
            frame: frame(seq, &payload),
            seq,
            publish,
            done: settle,
        };
        if let Err(mpsc::SendError(pending)) = queue.send(pending) {
            drop(submitter);
            (pending.done)(Err(JournalError::Stopped));
        }
        seq
    }

    /// The audit log that audited records' entries join (see [`Journal::keep_audit`]).
    pub fn audit(&self) -> Option<Arc<AuditLog>> {
        self.shared.audit.get().cloned()
    }

    /// From now on, each audited record's entry joins `log` right after the record's own
    /// publication: once it is durable, in record order, never for a refused record. Set once,
    /// at start, before the first record; a later call is ignored.
    pub fn keep_audit(&self, log: Arc<AuditLog>) {
        let _ = self.shared.audit.set(log);
    }

    /// A follower: the record `seq`, read from the stream, has been applied and published; its
    /// entry joins the log, as the writer's journal added it there.
    pub fn audit_applied(&self, seq: u64, entry: &AuditEntry) {
        if let Some(log) = self.shared.audit.get() {
            log.append(seq, entry);
            metrics::gauge!("botlist_audit_entries").set(log.len() as f64);
        }
    }

    /// `publish`, followed by the record's audit entry joining the log.
    fn with_audit_entry(
        &self,
        seq: u64,
        record: &Record,
        publish: Option<Publish>,
    ) -> Option<Publish> {
        let (Some(log), Some(entry)) = (self.shared.audit.get(), record.audit_entry()) else {
            return publish;
        };
        let (log, entry) = (Arc::clone(log), entry.clone());
        Some(Box::new(move || {
            if let Some(publish) = publish {
                publish();
            }
            if log.append(seq, &entry) {
                metrics::counter!("botlist_audit_entries_written_total").increment(1);
                metrics::gauge!("botlist_audit_entries").set(log.len() as f64);
            }
        }))
    }

    /// Resolves once every record submitted before it is as durable as the fsync mode promises.
    pub fn barrier(&self) -> Durable {
        if let Some(error) = self.failure() {
            return Durable(Err(error));
        }
        let submitter = lock(&self.shared.submitter);
        if submitter.closed {
            return Durable(Err(JournalError::Stopped));
        }
        let Some(queue) = &submitter.queue else {
            return Durable::done();
        };
        let (settle, durable) = Durable::settled_by();
        let barrier = Pending {
            frame: Vec::new(),
            seq: submitter.next_seq,
            publish: None,
            done: settle,
        };
        match queue.send(barrier) {
            Ok(()) => durable,
            Err(_) => Durable(Err(JournalError::Stopped)),
        }
    }

    /// The number of the last record known durable: every record up to it is.
    pub fn durable_seq(&self) -> u64 {
        self.shared.durable_seq.load(Ordering::Acquire)
    }

    /// The number of the last record submitted.
    pub fn last_seq(&self) -> u64 {
        lock(&self.shared.submitter).next_seq - 1
    }

    /// Refuses every record from now on, lets the writer finish what was queued, and waits for
    /// its threads to end (blocking): the application's stop, after its last snapshot.
    pub fn close(&self) {
        let threads = {
            let mut submitter = lock(&self.shared.submitter);
            submitter.closed = true;
            // The writer ends once its queue is empty and closed; the publisher after it.
            submitter.queue = None;
            std::mem::take(&mut *lock(&self.shared.threads))
        };
        for thread in threads {
            let _ = thread.join();
        }
    }

    /// The journal's threads still running (none once [`Journal::close`] has returned).
    pub fn threads_running(&self) -> usize {
        lock(&self.shared.threads)
            .iter()
            .filter(|thread| !thread.is_finished())
            .count()
    }

    /// Starts a new segment with the next batch, so older ones can be retired sooner.
    pub fn request_rotation(&self) {
        self.shared.rotate.store(true, Ordering::Relaxed);
    }

    /// Refuses every write from now on (cluster mode: the node lost the writer's role).
    pub fn fence(&self, error: JournalError) {
        let mut failed = lock(&self.shared.failed);
        if failed.is_none() {
            *failed = Some(error);
        }
    }

    /// Set once a write or fsync failed: from then on every write is refused, because the
    /// service can no longer promise that what it acknowledges is kept.
    pub fn failure(&self) -> Option<JournalError> {
        lock(&self.shared.failed).clone()
    }

    /// After a failure of the disk: whether the writer's last probe of it (a small write and
    /// its fsync, every [`PROBE_EVERY`]) succeeded, i.e. the disk takes writes again. Writes
    /// stay refused either way until the actors are back to the durable state and
    /// [`Journal::resume`] reopens the journal (`startup/resume.rs`), or the service restarts.
    pub fn disk_writable_again(&self) -> bool {
        self.failure().is_some() && self.shared.disk_writable.load(Ordering::Acquire)
    }

    /// Counts a write refused because the journal failed, and says so in the log at most once
    /// per [`REFUSALS_LOGGED_EVERY`] (with how many there were), not once per write.
    pub fn note_refusal(&self, error: &JournalError) {
        let refused = self.shared.refusals.fetch_add(1, Ordering::Relaxed) + 1;
        let mut last = lock(&self.shared.refusals_logged);
        if last.is_some_and(|at| at.elapsed() < REFUSALS_LOGGED_EVERY) {
            return;
        }
        *last = Some(std::time::Instant::now());
        tracing::warn!(%error, refused_so_far = refused, "writes are refused: the journal cannot take them");
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Where the writer thread puts each batch of frames. A batch is acknowledged only once
/// `commit` returned `Ok` for it (and, for a sink that syncs lazily, as the mode promises).
pub trait Sink: Send + 'static {
    /// Writes the batch's frames in order. `first_seq` is the first frame's sequence number;
    /// `rotate` asks a file sink to start a new segment with this batch; `sync` asks for the
    /// batch to be durable before returning. An empty batch (a barrier) only syncs.
    fn commit(
        &mut self,
        frames: &[&[u8]],
        first_seq: u64,
        rotate: bool,
        sync: bool,
    ) -> Result<(), JournalError>;

    /// Makes everything written so far durable.
    fn sync(&mut self) -> Result<(), JournalError>;

    /// The journal stops cleanly: everything written is durable and nothing follows it.
    fn close(&mut self) -> Result<(), JournalError> {
        self.sync()
    }

    /// When batches must be durable: decides how the writer groups and syncs them.
    fn mode(&self) -> FsyncMode {
        FsyncMode::Always
    }

    /// After the last batch failed once its bytes may have reached the sink: takes them back,
    /// durably, so that none of its records is ever read again, and the next batch goes where
    /// it began. `Ok` means certainly not stored; a sink that cannot says so (the default), and
    /// the batch stays "may have been stored".
    fn take_back(&mut self) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }

    /// After a failure: tries whether the storage takes a write and its sync again, with a
    /// small bounded write of its own (never a record). `Ok` says it did; a sink that cannot
    /// tell says no (the default).
    fn probe(&mut self) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::BotId;

    /// A sink whose every batch fails with `errno`, after its bytes reached the file or before.
    struct Failing {
        errno: i32,
        after_write: bool,
    }

    impl Sink for Failing {
        fn commit(&mut self, _: &[&[u8]], _: u64, _: bool, _: bool) -> Result<(), JournalError> {
            let error = Arc::new(io::Error::from_raw_os_error(self.errno));
            Err(if self.after_write {
                JournalError::MaybeWritten(error)
            } else {
                JournalError::Write(error)
            })
        }

        fn sync(&mut self) -> Result<(), JournalError> {
            Ok(())
        }
    }

    /// A sink whose batches all fail, and whose probes succeed once `back` is set.
    struct Recovering {
        back: Arc<AtomicBool>,
        probes: Arc<AtomicU64>,
    }

    impl Sink for Recovering {
        fn commit(&mut self, _: &[&[u8]], _: u64, _: bool, _: bool) -> Result<(), JournalError> {
            Err(JournalError::Write(Arc::new(io::Error::from_raw_os_error(
                libc::EIO,
            ))))
        }

        fn sync(&mut self) -> Result<(), JournalError> {
            Ok(())
        }

        fn probe(&mut self) -> io::Result<()> {
            self.probes.fetch_add(1, Ordering::Relaxed);
            if self.back.load(Ordering::Relaxed) {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(libc::EIO))
            }
        }
    }

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + 10 * PROBE_EVERY;
        while !done() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_journal_failed_on_its_disk_probes_it_and_says_when_it_takes_writes_again_and_refuses_still(
    ) {
        let back = Arc::new(AtomicBool::new(false));
        let probes = Arc::new(AtomicU64::new(0));
        let sink = Recovering {
            back: Arc::clone(&back),
            probes: Arc::clone(&probes),
        };
        let journal = Journal::with_sink(Box::new(sink), 1).expect("journal");
        assert!(!journal.disk_writable_again(), "healthy: nothing to say");
        assert_eq!(outcome(&journal).kind(), "io");
        wait_until("a probe runs", || probes.load(Ordering::Relaxed) >= 1);
        assert!(!journal.disk_writable_again());
        back.store(true, Ordering::Relaxed);
        wait_until("the disk is seen back", || journal.disk_writable_again());
        // Still refused: the probe alone takes nothing again (`Journal::resume` does).
        assert_eq!(outcome(&journal).kind(), "io");
        back.store(false, Ordering::Relaxed);
        wait_until("the disk is seen gone again", || {
            !journal.disk_writable_again()
        });
        journal.close();
    }

    /// A disk that fails and comes back: once the probe sees it back, `resume` at the number
    /// after the last durable record starts a new segment there and takes records again; the
    /// files then hold exactly the acknowledged records, numbered without a hole, a resume at
    /// any other number is refused for good, and one whose segment cannot be made yet can be
    /// tried again.
    #[test]
    fn a_journal_resumed_after_its_disk_came_back_writes_on_in_a_new_segment_without_a_hole() {
        let dir = tempfile::tempdir().expect("dir");
        let faults = tempfile::tempdir().expect("dir");
        let switch = faults.path().join("full");
        let fault = JournalFault::FailWhileExists(switch.clone(), libc::ENOSPC);
        let journal =
            Journal::open_with_fault(dir.path(), 1, FsyncMode::Always, fault).expect("journal");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let write = |journal: &Journal| {
            let (seq, durable) = journal.submit(&Record::BotDelisted(BotId::new_random()));
            runtime.block_on(durable.wait()).map(|()| seq)
        };
        assert_eq!(write(&journal).ok(), Some(1));
        assert!(journal.resume(2).is_err(), "not failed: nothing to resume");
        std::fs::write(&switch, b"").expect("full");
        assert!(write(&journal).is_err());
        assert!(write(&journal).is_err());
        assert_eq!(journal.may_resume(), Ok(()));
        std::fs::remove_file(&switch).expect("room again");
        wait_until("the disk is seen back", || journal.disk_writable_again());
        assert!(
            matches!(journal.resume(3), Err(ResumeRefused::Never(_))),
            "a number after a hole"
        );
        // A segment that cannot be made yet (here a directory in its place) leaves the journal
        // failed and writerless; the next call makes it.
        let blocker = dir.path().join(segment_name(2));
        std::fs::create_dir(&blocker).expect("blocker");
        assert!(matches!(journal.resume(2), Err(ResumeRefused::NotYet(_))));
        assert!(write(&journal).is_err(), "still refused");
        std::fs::remove_dir(&blocker).expect("removed");
        journal.resume(2).expect("resumed");
        assert!(journal.failure().is_none());
        assert_eq!(write(&journal).ok(), Some(2));
        assert_eq!(write(&journal).ok(), Some(3));
        journal.close();
        let numbers: Vec<u64> = on_disk(dir.path()).iter().map(|(seq, _)| *seq).collect();
        assert_eq!(numbers, vec![1, 2, 3]);
    }

    /// A journal whose refused batch could not be taken back never takes writes again in
    /// place: its disk may hold a record the actors never kept.
    #[test]
    fn a_journal_whose_refused_batch_may_be_stored_does_not_resume() {
        let sink = Failing {
            errno: libc::EIO,
            after_write: true,
        };
        let journal = Journal::with_sink(Box::new(sink), 1).expect("journal");
        assert!(outcome(&journal).maybe_stored());
        assert!(journal.may_resume().is_err());
        assert!(journal.resume(1).is_err());
        journal.close();
    }

    #[test]
    fn a_journal_that_failed_otherwise_than_on_its_disk_never_probes() {
        let probes = Arc::new(AtomicU64::new(0));
        let sink = Recovering {
            back: Arc::new(AtomicBool::new(true)),
            probes: Arc::clone(&probes),
        };
        let journal = Journal::with_sink(Box::new(sink), 1).expect("journal");
        journal.fence(JournalError::Fenced("another writer".into()));
        std::thread::sleep(3 * PROBE_EVERY);
        assert_eq!(probes.load(Ordering::Relaxed), 0);
        assert!(!journal.disk_writable_again());
        journal.close();
    }

    #[test]
    fn faults_parse_with_their_kinds_and_a_path_that_may_hold_colons() {
        let parse = |text: &str| text.parse::<JournalFault>();
        assert_eq!(
            parse("fail-while-exists:enospc:/tmp/a:b"),
            Ok(JournalFault::FailWhileExists(
                "/tmp/a:b".into(),
                libc::ENOSPC
            ))
        );
        assert_eq!(
            parse("fail-from:3:erofs"),
            Ok(JournalFault::FailFrom(3, libc::EROFS))
        );
        for bad in [
            "fail-while-exists:enospc",
            "fail-while-exists:enospc:",
            "fail-while-exists:full:/tmp/x",
            "fail-between:1:2",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    fn outcome(journal: &Journal) -> JournalError {
        let (_, durable) = journal.submit(&Record::BotDelisted(BotId::new_random()));
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(durable.wait())
            .expect_err("refused")
    }

    #[test]
    fn a_batch_that_failed_after_its_write_may_be_stored_and_every_later_one_was_not() {
        let sink = Failing {
            errno: libc::ENOSPC,
            after_write: true,
        };
        let journal = Journal::with_sink(Box::new(sink), 1).expect("journal");
        let first = outcome(&journal);
        assert!(first.maybe_stored(), "{first}");
        assert_eq!(first.kind(), "enospc");
        let later = outcome(&journal);
        assert!(!later.maybe_stored(), "{later}");
        assert_eq!(later.kind(), "enospc");
        assert_eq!(journal.failure().map(|e| e.kind()), Some("enospc"));
        journal.close();
    }

    #[test]
    fn a_batch_that_failed_before_its_write_was_not_stored_and_kinds_follow_the_error() {
        for (errno, kind) in [
            (libc::EROFS, "read_only"),
            (libc::EIO, "io"),
            (libc::EDQUOT, "enospc"),
            (libc::EACCES, "permission"),
            (libc::EINVAL, "other"),
        ] {
            let sink = Failing {
                errno,
                after_write: false,
            };
            let journal = Journal::with_sink(Box::new(sink), 1).expect("journal");
            let error = outcome(&journal);
            assert!(!error.maybe_stored(), "{error}");
            assert_eq!(error.kind(), kind);
            journal.close();
        }
    }

    /// Every record in every segment of `dir`, in order.
    fn on_disk(dir: &Path) -> Vec<(u64, Record)> {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .expect("dir")
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
            .collect();
        paths.sort();
        paths
            .iter()
            .flat_map(|path| read_segment(path).expect("readable").records)
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// Records submitted in groups (which the writer batches as they come), a rotation now
        /// and then, and from record `fail_at` on every batch written to the file and then
        /// failed as an fsync would: the file then holds exactly the acknowledged records,
        /// numbered without a hole, every refusal says "not stored" (the batch was taken back)
        /// and the numbers of what was refused are given back.
        #[test]
        fn a_batch_failed_after_its_write_is_taken_back_and_its_numbers_given_back(
            groups in proptest::collection::vec((1usize..12, proptest::bool::ANY), 1..8),
            fail_at in 1u64..40,
        ) {
            let dir = tempfile::tempdir().expect("dir");
            let fault = JournalFault::FsyncFailFrom(fail_at, libc::ENOSPC);
            let journal =
                Journal::open_with_fault(dir.path(), 1, FsyncMode::Always, fault).expect("journal");
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            let mut acknowledged = Vec::new();
            for (size, rotate) in groups {
                if rotate {
                    journal.request_rotation();
                }
                let submitted: Vec<_> = (0..size)
                    .map(|_| {
                        let record = Record::BotDelisted(BotId::new_random());
                        let (seq, durable) = journal.submit(&record);
                        (seq, record, durable)
                    })
                    .collect();
                for (seq, record, durable) in submitted {
                    match runtime.block_on(durable.wait()) {
                        Ok(()) => acknowledged.push((seq, record)),
                        Err(error) => {
                            proptest::prop_assert!(!error.maybe_stored(), "{}", error);
                            proptest::prop_assert_eq!(error.kind(), "enospc");
                        }
                    }
                }
            }
            let last = acknowledged.last().map_or(0, |(seq, _)| *seq);
            proptest::prop_assert_eq!(journal.last_seq(), last, "numbers given back");
            proptest::prop_assert!(last < fail_at);
            journal.close();
            let kept = on_disk(dir.path());
            let numbers: Vec<u64> = kept.iter().map(|(seq, _)| *seq).collect();
            proptest::prop_assert_eq!(numbers, (1..=last).collect::<Vec<_>>());
            for ((_, on_file), (_, answered)) in kept.iter().zip(&acknowledged) {
                proptest::prop_assert_eq!(
                    rmp_serde::to_vec(on_file).expect("encodes"),
                    rmp_serde::to_vec(answered).expect("encodes")
                );
            }
        }
    }
}
