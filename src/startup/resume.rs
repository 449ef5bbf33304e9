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
use crate::persist::journal::{Journal, PROBE_EVERY};
use crate::persist::recovery::recover;
use crate::shutdown::Shutdown;

/// Looks every [`PROBE_EVERY`] whether the failed journal's disk takes writes again, and then
/// takes writes again (once per failure; a failed attempt leaves it to a restart).
pub(super) fn spawn_resume(
    dir: PathBuf,
    journal: Journal,
    registry: Addr<Registry>,
    mut stop: Shutdown,
) {
    actix_web::rt::spawn(async move {
        let mut ticks = actix_web::rt::time::interval(PROBE_EVERY);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = stop.requested() => return,
            }
            if !journal.disk_writable_again() || journal.restart_needed().is_some() {
                continue;
            }
            if let Err(why) = resume(&dir, &journal, &registry).await {
                tracing::error!(%why, "writes stay refused: restart botlist to take writes again");
                journal.needs_restart(why);
            }
        }
    });
}

/// Steps 3 to 6 of the design: rebuild, hand each actor its part, reopen the journal.
async fn resume(dir: &Path, journal: &Journal, registry: &Addr<Registry>) -> Result<(), String> {
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
        return Err(format!(
            "the data directory holds records up to {}, the journal acknowledged up to {durable}",
            recovered.next_seq.saturating_sub(1)
        ));
    }
    let (taken, stopped) = registry
        .send(TakeDurableBook {
            state: recovered.state,
        })
        .await
        .map_err(|e| format!("the registry did not answer: {e}"))??;
    journal
        .resume(recovered.next_seq)
        .map_err(|e| format!("the journal did not reopen: {e}"))?;
    tracing::warn!(
        bots_rebuilt = taken,
        refused_listings_dropped = stopped,
        next_record = recovered.next_seq,
        "the journal takes writes again: the actors holding refused changes took the durable state read back from the data directory, and a new segment starts after the last durable record"
    );
    Ok(())
}
