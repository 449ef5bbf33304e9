//! Startup: the newest good snapshot, then the journal after it; nothing damaged is used silently
//! and nothing is deleted.

use std::fs;
use std::path::{Path, PathBuf};

use super::journal::{self, read_segment, SegmentEnd, SegmentScan};
use super::snapshot::{self, SnapshotError};
use super::state::{Replayer, SavedState};

/// The state to serve from, and what was noticed on the way.
#[derive(Debug)]
pub struct Recovered {
    pub state: SavedState,
    /// The sequence number the next record gets.
    pub next_seq: u64,
    pub warnings: Vec<String>,
}

/// Why the service refuses to start; the message names the file and the reason.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RecoveryRefused(pub String);

/// Reads the data directory. With `recover`, damage that would otherwise stop the start is moved
/// aside as `*.corrupt` and the service starts from the last good state before it.
pub fn recover(dir: &Path, recover: bool) -> Result<Recovered, RecoveryRefused> {
    super::private::create_dir(dir).map_err(|e| {
        RecoveryRefused(format!(
            "cannot create the data directory {}: {e}",
            dir.display()
        ))
    })?;
    let mut warnings = Vec::new();
    let mut journal = read_journal(dir)?;
    if let Some(newer) = journal.iter().find_map(|s| match s.end {
        SegmentEnd::NewerVersion(v) => Some((s.path.clone(), v)),
        _ => None,
    }) {
        return Err(RecoveryRefused(format!(
            "journal {} was written by a newer botlist (format version {}; this build reads version {}). Run that botlist.",
            newer.0.display(),
            newer.1,
            super::FORMAT_VERSION
        )));
    }

    // Damage in the journal: records after it cannot be replayed.
    if let Some(bad) = journal
        .iter()
        .position(|s| matches!(s.end, SegmentEnd::Corrupt { .. }))
    {
        let scan = &journal[bad];
        let SegmentEnd::Corrupt { offset, reason } = &scan.end else {
            unreachable!("matched above")
        };
        let problem = format!(
            "journal {} is damaged at byte {offset}: {reason}",
            scan.path.display()
        );
        if !recover {
            return Err(RecoveryRefused(format!(
                "{problem}. Acknowledged writes after that point cannot be replayed. \
                 Start with --recover to serve the last good state before it; the damaged file \
                 and any later ones are kept as *.corrupt."
            )));
        }
        for later in &journal[bad..] {
            move_aside(&later.path, &mut warnings)?;
        }
        warnings.push(format!("{problem}; recovering from the state before it"));
        journal.truncate(bad + 1);
    }
    for scan in &journal {
        if let SegmentEnd::Torn { offset } = scan.end {
            warnings.push(format!(
                "dropped an incomplete last record of {} at byte {offset} (a crash mid-write; it was never acknowledged)",
                scan.path.display()
            ));
        }
    }

    let records: Vec<u64> = journal
        .iter()
        .flat_map(|s| s.records.iter().map(|(seq, _)| *seq))
        .collect();
    let base = choose_snapshot(dir, &records, recover, &mut warnings)?;

    let mut replayer = Replayer::new(base);
    let mut expected = replayer.seq() + 1;
    let mut abandoned: Vec<PathBuf> = Vec::new();
    for scan in journal {
        if !abandoned.is_empty() {
            abandoned.push(scan.path);
            continue;
        }
        let mut jumped = false;
        for (seq, record) in scan.records {
            if seq < expected {
                continue;
            }
            if seq > expected {
                let problem = format!(
                    "the journal jumps from record {} to {seq} in {}",
                    expected - 1,
                    scan.path.display()
                );
                if !recover {
                    return Err(RecoveryRefused(format!("{problem}: records are missing. Start with --recover to serve the state before the gap.")));
                }
                warnings.push(format!("{problem}; serving the state before the gap"));
                jumped = true;
                break;
            }
            replayer.apply(seq, record);
            expected = seq + 1;
        }
        if jumped {
            abandoned.push(scan.path);
        }
    }
    warnings.append(&mut replayer.warnings);
    let state = replayer.finish();
    // What lies past a gap is another history: set aside, so that new records, which take the
    // numbers after the state served, never meet it on a later start.
    for path in &abandoned {
        move_aside(path, &mut warnings)?;
    }
    if recover {
        for (seq, path) in snapshot::list(dir)
            .map_err(|e| RecoveryRefused(format!("cannot list snapshots: {e}")))?
        {
            if seq > state.seq {
                move_aside(&path, &mut warnings)?;
            }
        }
    }
    // A snapshot may hold bots ahead of its own number (they are read after it is noted); new
    // records must be numbered past everything the state has seen, or replay would skip them.
    let seen = state
        .bots
        .iter()
        .map(|b| b.state.last_seq)
        .chain([state.seq, state.registry_seq])
        .max()
        .unwrap_or(0);
    if seen > state.seq {
        // Only after a power cut with --fsync batch or never, or a recovery: the snapshot's bots
        // hold records the journal no longer has. A snapshot is written at once, so the numbers
        // skipped here are never looked for.
        warnings.push(format!(
            "the journal ends at record {}, before records the snapshot already holds (up to {seen}); continuing after {seen}",
            state.seq
        ));
    }
    Ok(Recovered {
        next_seq: seen + 1,
        state,
        warnings,
    })
}

fn read_journal(dir: &Path) -> Result<Vec<SegmentScan>, RecoveryRefused> {
    let segments = journal::list(dir).map_err(|e| {
        RecoveryRefused(format!(
            "cannot read the data directory {}: {e}",
            dir.display()
        ))
    })?;
    segments
        .into_iter()
        .map(|(_, path)| {
            read_segment(&path).map_err(|e| {
                RecoveryRefused(format!("cannot read journal {}: {e}", path.display()))
            })
        })
        .collect()
}

/// The newest snapshot that is good and that the journal continues without a gap; damaged ones
/// are named and moved aside when an older one (or the journal from the start) replaces them.
fn choose_snapshot(
    dir: &Path,
    records: &[u64],
    recover: bool,
    warnings: &mut Vec<String>,
) -> Result<SavedState, RecoveryRefused> {
    let snapshots =
        snapshot::list(dir).map_err(|e| RecoveryRefused(format!("cannot list snapshots: {e}")))?;
    let continues = |seq: u64| match records.iter().find(|&&r| r > seq) {
        None => true,
        Some(&first_after) => first_after == seq + 1,
    };
    let mut damaged: Vec<(PathBuf, String)> = Vec::new();
    let mut gapped: Vec<(PathBuf, SavedState)> = Vec::new();
    let mut chosen = None;
    for (_, path) in &snapshots {
        match snapshot::read(path) {
            Ok(state) if continues(state.seq) => {
                chosen = Some(state);
                break;
            }
            Ok(state) => gapped.push((path.clone(), state)),
            Err(SnapshotError::NewerVersion(v)) => {
                return Err(RecoveryRefused(format!(
                    "snapshot {} {}. Run that botlist, or move the file away to start from older state.",
                    path.display(),
                    SnapshotError::NewerVersion(v)
                )))
            }
            Err(error) => damaged.push((path.clone(), error.to_string())),
        }
    }
    let chosen = match chosen {
        Some(state) => state,
        // No snapshot ever written, or none usable: the journal alone, if it starts at 1.
        None if continues(0) => SavedState::default(),
        None if recover => match gapped.into_iter().next() {
            Some((path, state)) => {
                warnings.push(format!(
                    "records after snapshot {} are missing from the journal: serving that snapshot",
                    path.display()
                ));
                state
            }
            None => {
                warnings.push("no usable snapshot and the journal does not start at record 1: starting from what the journal holds".into());
                SavedState {
                    seq: records.first().map_or(0, |first| first.saturating_sub(1)),
                    ..SavedState::default()
                }
            }
        },
        None => {
            let mut reasons: Vec<String> = damaged
                .iter()
                .map(|(p, why)| format!("{} {why}", p.display()))
                .collect();
            reasons.extend(gapped.iter().map(|(p, state)| {
                format!(
                    "{} is good but the journal after record {} is missing",
                    p.display(),
                    state.seq
                )
            }));
            return Err(RecoveryRefused(format!(
                "no snapshot can be used ({}) and the journal does not reach back to the start. \
                 Start with --recover to serve what the journal holds; damaged files are kept as *.corrupt.",
                reasons.join("; ")
            )));
        }
    };
    for (path, why) in damaged {
        if chosen.seq < snapshot_seq(&path) {
            warnings.push(format!(
                "snapshot {} {why}; started from an older state and the journal",
                path.display()
            ));
            move_aside(&path, warnings)?;
        }
    }
    Ok(chosen)
}

fn snapshot_seq(path: &Path) -> u64 {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(snapshot::parse_snapshot_name)
        .unwrap_or(0)
}

/// Renames a damaged file to `*.corrupt`: kept for inspection, never read again.
fn move_aside(path: &Path, warnings: &mut Vec<String>) -> Result<(), RecoveryRefused> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".corrupt");
    fs::rename(path, &aside)
        .map_err(|e| RecoveryRefused(format!("cannot move {} aside: {e}", path.display())))?;
    warnings.push(format!(
        "moved {} aside as {}",
        path.display(),
        PathBuf::from(aside).display()
    ));
    Ok(())
}
