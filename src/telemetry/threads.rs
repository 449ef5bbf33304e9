//! An application's telemetry threads: the access-log writer and the metrics upkeep.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::access_line::AccessLine;
use super::access_log::{AccessLog, ACCESS_FLUSH, ACCESS_LINES};
use super::exporter::exporter;
use crate::shutdown::Shutdown;

/// The threads of an application's telemetry: its access-log writer and the metrics upkeep.
/// Each holds the application's [`Shutdown`] and ends when the application stops (after
/// writing the lines still waiting), so `Trigger::stopped` waits for them, and none outlives
/// the application that started it.
pub struct Threads(Vec<std::thread::JoinHandle<()>>);

impl Threads {
    /// Starts the threads, named after the application's port (`access-PORT`,
    /// `metrics-PORT`): two applications in one process have two of each.
    pub fn start(log: &std::sync::Arc<AccessLog>, port: u16, shutdown: &Shutdown) -> Self {
        let mut threads = Vec::new();
        // Each thread says when it runs (named, as the application's threads are then listed).
        let (running, ran) = std::sync::mpsc::channel::<()>();
        let (access, stop, up) = (
            std::sync::Arc::clone(log),
            shutdown.clone(),
            running.clone(),
        );
        let started = std::thread::Builder::new()
            .name(format!("access-{port}"))
            .spawn(move || {
                let _ = up.send(());
                ACCESS_LINES.set(Some(Vec::new()));
                let mut records = Vec::new();
                let mut line = AccessLine::default();
                loop {
                    let stopping = stop.is_requested();
                    if !stopping {
                        std::thread::sleep(ACCESS_FLUSH);
                    }
                    access.write_waiting(&mut records, &mut line);
                    if stopping {
                        // Later requests (none, once the server has stopped) write their own.
                        access.running.store(false, Ordering::Release);
                        access.write_waiting(&mut records, &mut line);
                        return;
                    }
                }
            });
        if let Ok(thread) = started {
            log.running.store(true, Ordering::Release);
            threads.push(thread);
        }
        if let Some(exporter) = exporter() {
            // Histograms keep raw samples until drained; a scrape drains them too, but a
            // server nobody scrapes must not grow.
            let (upkeep, stop, up) = (exporter.handle.clone(), shutdown.clone(), running.clone());
            let started = std::thread::Builder::new()
                .name(format!("metrics-{port}"))
                .spawn(move || {
                    let _ = up.send(());
                    let mut since = Instant::now();
                    while !stop.is_requested() {
                        std::thread::sleep(STOP_POLL);
                        if since.elapsed() >= UPKEEP {
                            upkeep.run_upkeep();
                            since = Instant::now();
                        }
                    }
                });
            threads.extend(started.ok());
        }
        drop(running);
        for _ in &threads {
            let _ = ran.recv();
        }
        Self(threads)
    }

    /// Waits until the threads have ended; call once the application's `Trigger::stopped`
    /// has resolved (they end within [`ACCESS_FLUSH`] of the stop), so that none is left
    /// behind, even for a moment, when the application's `run_until` returns.
    pub fn join(self) {
        for thread in self.0 {
            let _ = thread.join();
        }
    }
}

/// How often the metrics upkeep runs.
const UPKEEP: Duration = Duration::from_secs(5);
/// How soon the metrics upkeep thread notices a stop.
const STOP_POLL: Duration = Duration::from_millis(50);
