//! Taking writes again without a restart, on a single node (docs/PERSISTENCE.md, "Taking
//! writes again without a restart"): once the failed journal's probe finds the disk taking
//! writes again, the durable state is rebuilt from the data directory by start-up's own
//! `recovery::recover` (on a blocking thread, while reads go on from the current actors), the
//! actors that hold a refused change take their part of it, and the journal reopens at its
//! durable end, then clears its failure. If any of that cannot be done, writes stay refused
//! and `/readyz` says a restart is needed.

use std::path::{Path, PathBuf};

use actix::Addr;

use crate::actors::registry::{Registry, TakeDurableBook};
use crate::persist::journal::{Journal, ResumeRefused, PROBE_EVERY, REFUSALS_LOGGED_EVERY};
use crate::persist::recovery::recover;
use crate::shutdown::Shutdown;

/// Looks every [`PROBE_EVERY`] whether the failed journal's disk takes writes again, and then
/// takes writes again. An attempt that failed for a reason that may pass (the new segment
/// could not be made yet) is tried again a second later, said at most every
/// [`REFUSALS_LOGGED_EVERY`]; any other leaves it to a restart.
pub(super) fn spawn_resume(
    dir: PathBuf,
    journal: Journal,
    registry: Addr<Registry>,
    mut stop: Shutdown,
) {
    actix_web::rt::spawn(async move {
        let mut ticks = actix_web::rt::time::interval(PROBE_EVERY);
        let mut said: Option<std::time::Instant> = None;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = stop.requested() => return,
            }
            if !journal.disk_writable_again() || journal.restart_needed().is_some() {
                continue;
            }
            match resume(&dir, &journal, &registry).await {
                Ok(()) => said = None,
                Err(Attempt::Again(why)) => {
                    if said.is_none_or(|at| at.elapsed() >= REFUSALS_LOGGED_EVERY) {
                        said = Some(std::time::Instant::now());
                        tracing::warn!(%why, "writes stay refused for now: tried again every second");
                    }
                }
                Err(Attempt::Never(why)) => {
                    tracing::error!(%why, "writes stay refused: restart botlist to take writes again");
                    journal.needs_restart(why);
                }
            }
        }
    });
}

/// Why an attempt did not take writes again: for now, or for the rest of this process.
enum Attempt {
    Again(String),
    Never(String),
}

impl From<String> for Attempt {
    fn from(why: String) -> Self {
        Self::Never(why)
    }
}

/// Steps 3 to 6 of the design: rebuild, hand each actor its part, reopen the journal. Tried
/// again after `Again`: every step is idempotent (an actor already at the durable state drops
/// its part).
async fn resume(dir: &Path, journal: &Journal, registry: &Addr<Registry>) -> Result<(), Attempt> {
    journal.may_resume()?;
    let read = dir.to_path_buf();
    // Start-up's own reading of the directory (never its step 0, which deletes `*.tmp` files:
    // this directory is live). Nothing changes under it: the journal refuses every write and
    // no snapshot is taken while it is failed.
    let recovered = actix_web::rt::task::spawn_blocking(move || recover(&read, false))
        .await
        .map_err(|e| format!("the rebuild of the durable state stopped: {e}"))?
        .map_err(|e| format!("the data directory could not be read back: {e}"))?;
    for warning in &recovered.warnings {
        tracing::warn!(%warning, "reading the data directory back");
    }
    let durable = journal.durable_seq();
    if recovered.next_seq != durable + 1 {
        return Err(Attempt::Never(format!(
            "the data directory holds records up to {}, the journal acknowledged up to {durable}",
            recovered.next_seq.saturating_sub(1)
        )));
    }
    let (taken, stopped) = registry
        .send(TakeDurableBook {
            state: recovered.state,
        })
        .await
        .map_err(|e| format!("the registry did not answer: {e}"))??;
    journal
        .resume(recovered.next_seq)
        .map_err(|refused| match refused {
            ResumeRefused::NotYet(e) => Attempt::Again(format!("the journal did not reopen: {e}")),
            ResumeRefused::Never(why) => {
                Attempt::Never(format!("the journal did not reopen: {why}"))
            }
        })?;
    tracing::warn!(
        bots_rebuilt = taken,
        refused_listings_dropped = stopped,
        next_record = recovered.next_seq,
        "the journal takes writes again: the actors holding refused changes took the durable state read back from the data directory, and a new segment starts after the last durable record"
    );
    Ok(())
}
