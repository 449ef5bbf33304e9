//! The writer thread (group commit into the sink) and the publisher thread behind it.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::{lock, FsyncMode, JournalError, JournalFault, Pending, Shared, Sink, PROBE_EVERY};

/// How many queued records one write and fsync take at most.
const MAX_BATCH: usize = 8192;
/// With `--fsync batch`, how often written records are made durable.
const BATCH_INTERVAL: Duration = Duration::from_millis(50);

/// Starts the writer thread over `sink` and the publisher thread behind it; returns the queue
/// records are submitted on.
pub(super) fn spawn_threads(
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
            let first = if self.disk_failed() {
                // Nothing is queued while the journal is failed (every record is refused before
                // it is numbered): the thread has time to probe the disk.
                match queue.recv_timeout(PROBE_EVERY) {
                    Ok(pending) => pending,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        self.probe();
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            } else if mode == FsyncMode::Batch {
                match queue.recv_timeout(BATCH_INTERVAL) {
                    Ok(pending) => pending,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if unsynced {
                            if let Err(error) = self.sink.sync() {
                                // Acknowledged records were in it: nothing to take back.
                                let (_, behind) = self.refuse_from(error, &[], &queue);
                                self.send(behind);
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
            match result {
                Ok(()) => self.send((batch, Ok(()))),
                Err(error) => {
                    let (error, behind) = self.refuse_from(error, &batch, &queue);
                    self.send((batch, Err(error)));
                    self.send(behind);
                }
            }
        }
        // A journal that failed says nothing more: its head stays open, and the next start
        // reads the segment for what it holds.
        if lock(&self.shared.failed).is_none() {
            if let Err(error) = self.sink.close() {
                self.fail(&error);
            }
        } else if unsynced {
            let _ = self.sink.sync();
        }
    }

    /// Hands a batch as written (or refused) to the publisher, which answers its writers.
    fn send(&self, written: Written) {
        if written.0.is_empty() {
            return;
        }
        if let Err(mpsc::SendError(written)) = self.published.send(written) {
            // The publisher is gone (it only stops with the process): publish here.
            publish_batch(&self.shared, written);
        }
    }

    /// A batch failed with `error` (`batch` is empty when a sync of acknowledged records
    /// failed). If its bytes may have reached the file, the sink takes them back first, so
    /// that its writers are told "not stored" only when that is true. Then, under the
    /// submitter's lock, the journal is marked failed (nothing is numbered after that), every
    /// record queued behind the batch is taken off the queue, and the numbers of all records
    /// certainly not stored are given back: the next record numbered takes the first of
    /// them, so the journal on disk never has a hole nor a refused record. Returns the
    /// batch's error and the records taken off the queue, refused with the same failure.
    fn refuse_from(
        &mut self,
        error: JournalError,
        batch: &[Pending],
        queue: &mpsc::Receiver<Pending>,
    ) -> (JournalError, Written) {
        let error = match error {
            JournalError::MaybeWritten(cause) => match self.sink.take_back() {
                Ok(()) => JournalError::Write(cause),
                Err(why) => {
                    tracing::warn!(error = %why, "the failed batch could not be taken back from the journal's file: its writes may have been stored");
                    JournalError::MaybeWritten(cause)
                }
            },
            other => other,
        };
        let mut submitter = lock(&self.shared.submitter);
        self.fail(&error);
        let behind: Vec<Pending> = std::iter::from_fn(|| queue.try_recv().ok()).collect();
        let not_stored = if error.maybe_stored() { &[][..] } else { batch };
        let first_not_stored = not_stored
            .iter()
            .chain(&behind)
            .filter(|p| !p.frame.is_empty())
            .map(|p| p.seq)
            .min();
        if let Some(first) = first_not_stored {
            submitter.next_seq = submitter.next_seq.min(first);
        }
        drop(submitter);
        let kept = lock(&self.shared.failed).clone().unwrap_or(error.clone());
        (error, (behind, Err(kept)))
    }

    fn write(&mut self, batch: &[Pending], sync: bool) -> Result<(), JournalError> {
        if let Some(error) = lock(&self.shared.failed).clone() {
            return Err(error);
        }
        match &self.fault {
            JournalFault::None | JournalFault::FsyncFailFrom(..) => {}
            JournalFault::Delay(delay) => std::thread::sleep(*delay),
            JournalFault::FailFrom(seq, errno) => {
                if batch.iter().any(|p| !p.frame.is_empty() && p.seq >= *seq) {
                    return Err(io_error(io::Error::from_raw_os_error(*errno)));
                }
            }
            JournalFault::FailWhileExists(path, errno) => {
                if batch.iter().any(|p| !p.frame.is_empty()) && path.exists() {
                    return Err(io_error(io::Error::from_raw_os_error(*errno)));
                }
            }
        }
        let fail_after_write = match self.fault {
            JournalFault::FsyncFailFrom(seq, errno)
                if batch.iter().any(|p| !p.frame.is_empty() && p.seq >= seq) =>
            {
                Some(errno)
            }
            _ => None,
        };
        let rotate = self.shared.rotate.swap(false, Ordering::Relaxed);
        // A barrier has no frame: it only waits for the batch's write and fsync.
        let frames: Vec<&[u8]> = batch
            .iter()
            .filter(|p| !p.frame.is_empty())
            .map(|p| p.frame.as_slice())
            .collect();
        if let Some(errno) = fail_after_write {
            // Written (and flushed to the file), then failed as its fsync would.
            self.sink.commit(&frames, batch[0].seq, rotate, false)?;
            return Err(io_error_after_write(io::Error::from_raw_os_error(errno)));
        }
        self.sink.commit(&frames, batch[0].seq, rotate, sync)
    }

    /// Whether the journal failed on its storage (not fenced, stopped or refused otherwise):
    /// then the thread probes the disk.
    fn disk_failed(&self) -> bool {
        matches!(
            *lock(&self.shared.failed),
            Some(JournalError::Write(_) | JournalError::MaybeWritten(_))
        )
    }

    /// One probe of the disk (`Sink::probe`, under the injected fault as a batch would be); a
    /// log line and the gauge only when its answer changes, never one per probe.
    fn probe(&mut self) {
        let injected = match &self.fault {
            JournalFault::None | JournalFault::Delay(_) => None,
            // These disks never recover.
            JournalFault::FailFrom(_, errno) | JournalFault::FsyncFailFrom(_, errno) => {
                Some(*errno)
            }
            JournalFault::FailWhileExists(path, errno) => path.exists().then_some(*errno),
        };
        let result = match injected {
            Some(errno) => Err(io::Error::from_raw_os_error(errno)),
            None => self.sink.probe(),
        };
        let writable = result.is_ok();
        if self.shared.disk_writable.swap(writable, Ordering::AcqRel) == writable {
            return;
        }
        crate::telemetry::journal_disk_writable(writable);
        match result {
            Ok(()) => tracing::warn!("the disk takes writes again (a probe wrote and synced a file in the data directory); writes stay refused until the durable state is rebuilt"),
            Err(error) => tracing::warn!(%error, "the disk refuses writes again (a probe failed)"),
        }
    }

    /// The first failure is logged (once), counted by kind and kept: every record after it is
    /// refused before it is written. A batch refused for that kept failure is not another.
    fn fail(&self, error: &JournalError) {
        let mut failed = lock(&self.shared.failed);
        if failed.is_some() {
            return;
        }
        tracing::error!(%error, kind = error.kind(), "the journal failed; writes are refused from now on (GET /readyz says why)");
        if error.maybe_stored() {
            self.shared.maybe_stored.store(true, Ordering::Release);
        }
        crate::telemetry::journal_failed(error.kind());
        *failed = Some(error.clone().not_written());
    }
}

/// A failure before any byte of the batch reached the file.
pub(super) fn io_error(error: io::Error) -> JournalError {
    JournalError::Write(Arc::new(error))
}

/// A failure after some of the batch's bytes may have reached the file.
pub(super) fn io_error_after_write(error: io::Error) -> JournalError {
    JournalError::MaybeWritten(Arc::new(error))
}
