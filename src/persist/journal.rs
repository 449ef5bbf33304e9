//! The journal: every acknowledged change, appended before its 2xx is sent.
//!
//! Writers hand records to one writer thread and wait; the thread writes whatever has queued up
//! and makes it durable with one fsync for the whole batch (group commit), so concurrent writers
//! share an fsync instead of queueing for one each.
//!
//! A segment file is a header (magic, format version, first sequence number) and frames:
//! `len: u32 LE | crc32: u32 LE | seq: u64 LE | payload (MessagePack Record, len bytes)`, the
//! CRC covering `len`, `seq` and the payload. docs/PERSISTENCE.md has the details.

use std::fs::{self, File};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::files::{self, HeaderFault, Numbered};
use super::head;
use super::state::Record;
use super::{sync_dir, FORMAT_VERSION};

pub const MAGIC: &[u8; 8] = b"BLJOURNL";
/// The first format version whose segments are made ahead with zeros and named by the head.
pub const ZEROED_AHEAD: u32 = 5;
pub const HEADER_LEN: usize = 8 + 4 + 8;
pub const FRAME_HEADER_LEN: usize = 4 + 4 + 8;
/// No record is near this; a length above it is damage, not data.
pub const MAX_RECORD_BYTES: usize = 4 * 1024 * 1024;
/// A segment past this size is closed and a new one started.
const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// How many queued records one write and fsync take at most.
const MAX_BATCH: usize = 8192;
/// With `--fsync batch`, how often written records are made durable.
const BATCH_INTERVAL: Duration = Duration::from_millis(50);

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JournalFault {
    #[default]
    None,
    /// Every batch waits this long before anything of it is written: a slow (or frozen) disk.
    Delay(Duration),
    /// Every batch holding a record numbered this or later fails with this OS error, as a
    /// failing (EIO), full (ENOSPC) or read-only (EROFS) disk would.
    FailFrom(u64, i32),
}

impl std::str::FromStr for JournalFault {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "`{text}` is not a journal fault: delay:<ms> or fail-from:<seq>[:eio|enospc|erofs]"
            )
        };
        let mut parts = text.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("delay"), Some(ms), None, None) => Ok(Self::Delay(Duration::from_millis(
                ms.parse().map_err(|_| bad())?,
            ))),
            (Some("fail-from"), Some(seq), errno, None) => {
                let errno = match errno.unwrap_or("eio") {
                    "eio" => libc::EIO,
                    "enospc" => libc::ENOSPC,
                    "erofs" => libc::EROFS,
                    _ => return Err(bad()),
                };
                Ok(Self::FailFrom(seq.parse().map_err(|_| bad())?, errno))
            }
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
    /// Cluster mode: this node follows the stream and makes no records of its own.
    #[error("this node does not write; writes go to the writer")]
    NotWriter,
}

/// Journal segments: `journal-<first seq>.log`.
pub const SEGMENTS: Numbered = Numbered::new("journal-", ".log");

pub fn segment_name(first_seq: u64) -> String {
    SEGMENTS.name(first_seq)
}

/// The first sequence number in a segment's file name.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    SEGMENTS.parse(name)
}

/// Journal segments in `dir`, oldest first.
pub fn list(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    SEGMENTS.list(dir)
}

pub fn frame(seq: u64, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
    out.extend_from_slice(&len);
    out.extend_from_slice(&frame_crc(len, seq.to_le_bytes(), payload).to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The CRC covers the length too, so a damaged length is caught, not read as a torn end.
fn frame_crc(len: [u8; 4], seq: [u8; 8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len);
    hasher.update(&seq);
    hasher.update(payload);
    hasher.finalize()
}

pub fn segment_header(first_seq: u64) -> Vec<u8> {
    files::header(MAGIC, FORMAT_VERSION, first_seq, HEADER_LEN)
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
}

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
        Self::start_writer(Box::new(sink), next_seq, fault)
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
        if let Some(error) = self.failure() {
            settle(Err(error));
            return 0;
        }
        let mut submitter = lock(&self.shared.submitter);
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
}

/// Starts the writer thread over `sink` and the publisher thread behind it; returns the queue
/// records are submitted on.
fn spawn_threads(
    shared: Arc<Shared>,
    sink: Box<dyn Sink>,
    fault: JournalFault,
) -> io::Result<mpsc::Sender<Pending>> {
    let (tx, rx) = mpsc::channel();
    let (published, publications) = mpsc::channel();
    let publisher_shared = Arc::clone(&shared);
    let publisher = std::thread::Builder::new()
        .name("journal-publisher".into())
        .spawn(move || publish_batches(&publisher_shared, &publications))?;
    let threads = Arc::clone(&shared);
    let writer = std::thread::Builder::new()
        .name("journal-writer".into())
        .spawn(move || {
            Writer {
                sink,
                fault,
                shared,
                published,
            }
            .run(rx)
        })?;
    lock(&threads.threads).extend([writer, publisher]);
    Ok(tx)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The length a new segment is made to: its header, then zeros. A segment is written ahead of
/// its records so that its length says how far it was made (the journal's head keeps that
/// length, `super::head`): a start then tells a segment cut short from one that was never
/// longer. It also spares each batch's fdatasync the write of the file's size.
const SEGMENT_START_LENGTH: u64 = 1 << 20;
/// A segment grows by its own length each time, up to this much at once.
const MAX_GROWTH: u64 = 8 << 20;

struct Segment {
    file: BufWriter<File>,
    first_seq: u64,
    /// Bytes of header and records; the rest of the file, up to `length`, is zeros.
    bytes: u64,
    length: u64,
    records: u64,
}

impl Segment {
    /// Makes the segment to its first length, durably, then names it the newest in the head:
    /// no record is written into a segment the head does not name yet.
    fn create(dir: &Path, first_seq: u64) -> io::Result<Self> {
        let path: PathBuf = dir.join(segment_name(first_seq));
        // A segment of this name exists when the last run wrote no record after starting it
        // (or only a torn one): it holds nothing acknowledged, so it is started over.
        if path.exists() && !read_segment(&path)?.records.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already holds records", path.display()),
            ));
        }
        // 0600 and never through a symlink (see `super::private`).
        let mut file = super::private::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        file.write_all(&segment_header(first_seq))?;
        write_zeros(&file, HEADER_LEN as u64, SEGMENT_START_LENGTH)?;
        file.sync_all()?;
        sync_dir(dir)?;
        head::Head {
            newest: first_seq,
            length: SEGMENT_START_LENGTH,
            closed: None,
        }
        .write(dir)?;
        file.seek(SeekFrom::Start(HEADER_LEN as u64))?;
        Ok(Self {
            file: BufWriter::with_capacity(1 << 20, file),
            first_seq,
            bytes: HEADER_LEN as u64,
            length: SEGMENT_START_LENGTH,
            records: 0,
        })
    }

    /// Grows the file by zeros, durably, before the head says its new length, so that a crash
    /// at any point leaves the file at least as long as the head says.
    fn make_room(&mut self, dir: &Path, more: u64) -> io::Result<()> {
        let needed = self.bytes + more;
        if needed <= self.length {
            return Ok(());
        }
        let grown = needed.max(self.length + self.length.min(MAX_GROWTH));
        write_zeros(self.file.get_ref(), self.length, grown)?;
        self.file.get_ref().sync_data()?;
        head::Head {
            newest: self.first_seq,
            length: grown,
            closed: None,
        }
        .write(dir)?;
        self.length = grown;
        Ok(())
    }

    /// The last record written into this segment (the one before it when there is none).
    fn last_seq(&self) -> u64 {
        (self.first_seq + self.records).saturating_sub(1)
    }
}

/// Writes zeros from `from` up to `to` without moving the file's cursor.
fn write_zeros(file: &File, from: u64, to: u64) -> io::Result<()> {
    let zeros = vec![0u8; 64 << 10];
    let mut at = from;
    while at < to {
        let n = zeros.len().min((to - at) as usize);
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
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
}

/// The single-node sink: segment files in the data directory, rotated past 64 MiB or on request.
pub struct FileSink {
    dir: PathBuf,
    segment: Segment,
    mode: FsyncMode,
}

impl FileSink {
    pub fn create(dir: &Path, next_seq: u64, mode: FsyncMode) -> io::Result<Self> {
        Ok(Self {
            dir: dir.to_path_buf(),
            segment: Segment::create(dir, next_seq)?,
            mode,
        })
    }
}

impl Sink for FileSink {
    fn commit(
        &mut self,
        frames: &[&[u8]],
        first_seq: u64,
        requested: bool,
        sync: bool,
    ) -> Result<(), JournalError> {
        let rotate = self.segment.records > 0 && (requested || self.segment.bytes >= SEGMENT_BYTES);
        if rotate {
            self.sync()?;
            let old = std::mem::replace(
                &mut self.segment,
                Segment::create(&self.dir, first_seq).map_err(io_error)?,
            );
            // No longer the newest: the next segment's first number says where it ends, so its
            // zeros are only taken space.
            let _ = old.file.get_ref().set_len(old.bytes);
        }
        let more: u64 = frames.iter().map(|f| f.len() as u64).sum();
        self.segment.make_room(&self.dir, more).map_err(io_error)?;
        for frame in frames {
            self.segment.file.write_all(frame).map_err(io_error)?;
            self.segment.bytes += frame.len() as u64;
            crate::telemetry::journal_written(frame.len());
            self.segment.records += 1;
        }
        self.segment.file.flush().map_err(io_error)?;
        if sync {
            self.sync()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), JournalError> {
        crate::telemetry::timed_fsync(|| self.segment.file.get_ref().sync_data()).map_err(io_error)
    }

    /// Says in the head where the journal ends, so that a next start can tell the newest
    /// segment's last records from records that were never written.
    fn close(&mut self) -> Result<(), JournalError> {
        self.segment.file.flush().map_err(io_error)?;
        self.sync()?;
        head::Head {
            newest: self.segment.first_seq,
            length: self.segment.length,
            closed: Some(self.segment.last_seq()),
        }
        .write(&self.dir)
        .map_err(io_error)
    }

    fn mode(&self) -> FsyncMode {
        self.mode
    }
}

struct Writer {
    sink: Box<dyn Sink>,
    fault: JournalFault,
    shared: Arc<Shared>,
    /// Each batch once written (and synced, as the mode promises), to the publisher.
    published: mpsc::Sender<Written>,
}

/// A batch as the writer left it: its records and whether they are kept.
type Written = (Vec<Pending>, Result<(), JournalError>);

/// The publisher thread: runs each written batch's publications in record order and then
/// answers its writers, while the writer already writes and syncs the next batch. Nothing is
/// published before its batch is durable, and a write is answered only after its
/// publication, as before; only the writer's group commit no longer waits for them.
fn publish_batches(shared: &Shared, publications: &mpsc::Receiver<Written>) {
    while let Ok(written) = publications.recv() {
        publish_batch(shared, written);
    }
}

fn publish_batch(shared: &Shared, (batch, result): Written) {
    for pending in batch {
        if result.is_ok() {
            if let Some(publish) = pending.publish {
                publish();
            }
            if !pending.frame.is_empty() {
                shared.durable_seq.fetch_max(pending.seq, Ordering::AcqRel);
            }
        }
        (pending.done)(result.clone());
    }
}

impl Writer {
    fn run(mut self, queue: mpsc::Receiver<Pending>) {
        let mode = self.sink.mode();
        let mut unsynced = false;
        let mut last_sync = Instant::now();
        loop {
            let first = if mode == FsyncMode::Batch {
                match queue.recv_timeout(BATCH_INTERVAL) {
                    Ok(pending) => pending,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if unsynced {
                            if let Err(error) = self.sink.sync() {
                                self.fail(error);
                            }
                            unsynced = false;
                            last_sync = Instant::now();
                        }
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match queue.recv() {
                    Ok(pending) => pending,
                    Err(_) => break,
                }
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(pending) => batch.push(pending),
                    Err(_) => break,
                }
            }
            let sync_now = match mode {
                FsyncMode::Always => true,
                FsyncMode::Batch => last_sync.elapsed() >= BATCH_INTERVAL,
                FsyncMode::Never => false,
            };
            let result = self.write(&batch, sync_now);
            if sync_now {
                last_sync = Instant::now();
            }
            unsynced = !sync_now;
            if let Err(error) = &result {
                self.fail(error.clone());
            }
            if let Err(mpsc::SendError(written)) = self.published.send((batch, result)) {
                // The publisher is gone (it only stops with the process): publish here.
                publish_batch(&self.shared, written);
            }
        }
        // A journal that failed says nothing more: its head stays open, and the next start
        // reads the segment for what it holds.
        if lock(&self.shared.failed).is_none() {
            if let Err(error) = self.sink.close() {
                self.fail(error);
            }
        } else if unsynced {
            let _ = self.sink.sync();
        }
    }

    fn write(&mut self, batch: &[Pending], sync: bool) -> Result<(), JournalError> {
        if let Some(error) = lock(&self.shared.failed).clone() {
            return Err(error);
        }
        match self.fault {
            JournalFault::None => {}
            JournalFault::Delay(delay) => std::thread::sleep(delay),
            JournalFault::FailFrom(seq, errno) => {
                if batch.iter().any(|p| !p.frame.is_empty() && p.seq >= seq) {
                    return Err(io_error(io::Error::from_raw_os_error(errno)));
                }
            }
        }
        let rotate = self.shared.rotate.swap(false, Ordering::Relaxed);
        // A barrier has no frame: it only waits for the batch's write and fsync.
        let frames: Vec<&[u8]> = batch
            .iter()
            .filter(|p| !p.frame.is_empty())
            .map(|p| p.frame.as_slice())
            .collect();
        self.sink.commit(&frames, batch[0].seq, rotate, sync)
    }

    fn fail(&self, error: JournalError) {
        tracing::error!(%error, "the journal failed; writes are refused from now on");
        let mut failed = lock(&self.shared.failed);
        if failed.is_none() {
            *failed = Some(error);
        }
    }
}

fn io_error(error: io::Error) -> JournalError {
    JournalError::Write(Arc::new(error))
}

/// How a segment ended when read back.
#[derive(Debug, PartialEq, Eq)]
pub enum SegmentEnd {
    Clean,
    /// The last record was cut short by a crash mid-write: never acknowledged, dropped.
    Torn {
        offset: u64,
        /// The bytes of the torn record that were dropped.
        dropped: u64,
    },
    /// Damage followed by more data: never skipped silently.
    Corrupt {
        offset: u64,
        reason: String,
        /// The highest record number in a good frame after the damage (the one before the
        /// damage when none is found), so that a start knows which numbers were used.
        beyond: u64,
        /// Bytes from the damage to the segment's last byte that is not zero: how many
        /// records could be there that no frame shows.
        unread: u64,
    },
    /// Written by a newer botlist: refused, never passed over.
    NewerVersion(u32),
}

#[derive(Debug)]
pub struct SegmentScan {
    pub path: PathBuf,
    /// The format version in its header (0 when the header is unreadable).
    pub version: u32,
    /// The file's length in bytes.
    pub length: u64,
    pub first_seq: u64,
    pub records: Vec<(u64, Record)>,
    pub end: SegmentEnd,
}

/// Reads and checks one segment. A damaged tail of zeros or a record that runs past the end of
/// the file is a torn write; a bad record with data after it is corruption.
pub fn read_segment(path: &Path) -> io::Result<SegmentScan> {
    let bytes = fs::read(path)?;
    Ok(scan_segment(path, &bytes))
}

pub fn scan_segment(path: &Path, bytes: &[u8]) -> SegmentScan {
    let name_seq = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_segment_name)
        .unwrap_or(0);
    let mut scan = SegmentScan {
        path: path.to_path_buf(),
        version: 0,
        length: bytes.len() as u64,
        first_seq: name_seq,
        records: Vec::new(),
        end: SegmentEnd::Clean,
    };
    let corrupt = |offset: u64, reason: String| SegmentEnd::Corrupt {
        offset,
        reason,
        beyond: name_seq.saturating_sub(1),
        unread: (held(bytes) as u64).saturating_sub(offset),
    };
    let first = match files::read_header(bytes, MAGIC) {
        Ok((version, first)) => {
            scan.version = version;
            first
        }
        Err(fault) => {
            scan.end = match fault {
                // A crash between creating the file and writing its header: nothing was
                // acknowledged.
                HeaderFault::CutShort => SegmentEnd::Torn {
                    offset: 0,
                    dropped: bytes.len() as u64,
                },
                HeaderFault::BadMagic => {
                    corrupt(0, "not a botlist journal (bad magic bytes)".into())
                }
                HeaderFault::Newer(version) => SegmentEnd::NewerVersion(version),
                HeaderFault::NoSuchVersion => corrupt(8, fault.to_string()),
            };
            return scan;
        }
    };
    if first != name_seq {
        scan.end = corrupt(
            12,
            "the header's first record number does not match the file name".into(),
        );
        return scan;
    }
    let mut offset = HEADER_LEN;
    let mut expected = name_seq;
    while offset < bytes.len() {
        let frame = read_frame(&bytes[offset..]).and_then(|(seq, record, used)| {
            if seq == expected {
                Ok((seq, record, used))
            } else {
                Err(format!("record {seq} where record {expected} belongs"))
            }
        });
        match frame {
            Ok((seq, record, used)) => {
                scan.records.push((seq, record));
                offset += used;
                expected = seq + 1;
            }
            Err(reason) => {
                let rest = &bytes[offset..];
                let written = held(rest);
                // A segment is made ahead with zeros (version 5 on): where they start, the
                // records end.
                if written == 0 && scan.version >= ZEROED_AHEAD {
                    break;
                }
                // A crash tears only the end: a good record anywhere after the bad bytes means
                // the damage is in the middle, and what follows was acknowledged.
                scan.end = if later_record(&rest[1..], expected).is_some() {
                    SegmentEnd::Corrupt {
                        offset: offset as u64,
                        reason,
                        beyond: highest_after(&rest[1..], expected).unwrap_or(expected - 1),
                        unread: written as u64,
                    }
                } else {
                    SegmentEnd::Torn {
                        offset: offset as u64,
                        dropped: written as u64,
                    }
                };
                break;
            }
        }
    }
    scan
}

/// Where a valid frame of one of the next few records starts in `rest`, if anywhere.
fn later_record(rest: &[u8], expected: u64) -> Option<usize> {
    (0..rest.len().saturating_sub(FRAME_HEADER_LEN)).find(|&at| {
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&rest[at + 8..at + 16]);
        let seq = u64::from_le_bytes(seq);
        (expected..expected.saturating_add(64)).contains(&seq) && read_frame(&rest[at..]).is_ok()
    })
}

/// The highest record number in the good frames of `rest`: each run of frames is followed
/// frame by frame, and the bytes after a run searched for the next.
fn highest_after(rest: &[u8], mut expected: u64) -> Option<u64> {
    let mut highest = None;
    let mut at = 0;
    while let Some(found) = rest.get(at..).and_then(|r| later_record(r, expected)) {
        at += found;
        while let Ok((seq, _, used)) = read_frame(&rest[at..]) {
            highest = Some(seq);
            expected = seq + 1;
            at += used;
        }
        at += 1;
    }
    highest
}

/// How many bytes of `bytes` are not the zeros a segment is made ahead with.
fn held(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |last| last + 1)
}

/// One frame: its sequence number, record and length in bytes.
pub fn read_frame(rest: &[u8]) -> Result<(u64, Record, usize), String> {
    if rest.len() < FRAME_HEADER_LEN {
        return Err("a record header is cut short".into());
    }
    let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
    if len > MAX_RECORD_BYTES {
        return Err(format!(
            "a record claims {len} bytes, more than any record has"
        ));
    }
    let end = FRAME_HEADER_LEN + len;
    if end > rest.len() {
        return Err("a record is cut short".into());
    }
    let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&rest[8..16]);
    if frame_crc(
        [rest[0], rest[1], rest[2], rest[3]],
        seq,
        &rest[FRAME_HEADER_LEN..end],
    ) != crc
    {
        return Err("checksum mismatch".into());
    }
    let record: Record = super::decode(&rest[FRAME_HEADER_LEN..end])
        .map_err(|e| format!("a record with a good checksum does not decode: {e}"))?;
    if let Record::BotListed { state, .. } = &record {
        state.votes.validate()?;
    }
    Ok((u64::from_le_bytes(seq), record, end))
}
