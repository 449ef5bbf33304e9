//! The writer thread (group commit into the sink) and the publisher thread behind it.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::{lock, FsyncMode, JournalError, JournalFault, Pending, Shared, Sink};

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
        // Only the batch that was sent may have been stored; every later one never is.
        let error = match error {
            JournalError::Unconfirmed(why) => JournalError::Fenced(why),
            error => error,
        };
        let mut failed = lock(&self.shared.failed);
        if failed.is_none() {
            *failed = Some(error);
        }
    }
}

pub(super) fn io_error(error: io::Error) -> JournalError {
    JournalError::Write(Arc::new(error))
}
