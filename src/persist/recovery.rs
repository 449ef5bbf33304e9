//! Startup: the newest good state that the journal continues without a gap. Nothing damaged is
//! used silently, nothing is deleted, and a start never serves fewer records than the files
//! show existed: continuity is proven from the files (`super::continuity`), and the newest
//! segment is accounted for by the journal's head (`super::head`). docs/PERSISTENCE.md,
//! "Startup", states the rules.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::continuity::{describe, Extent};
use super::head::{self, Found};
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

/// Why the service refuses to start; the message names the files and the records.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RecoveryRefused(pub String);

/// Why a start is refused: damage or missing records (`--recover` passes over them), or files
/// a newer botlist wrote, which nothing passes over: starting from older state would drop the
/// newer data, and applying a record this build does not know would serve a wrong state.
#[derive(Debug, thiserror::Error)]
pub enum StartRefused {
    #[error("{0}")]
    Damaged(#[from] RecoveryRefused),
    #[error("{0}")]
    Newer(String),
}

const RECOVER: &str = "Start with --recover to serve what remains (it says which records are \
    lost, numbers new records after every number ever used, and keeps each file it cannot use \
    as *.corrupt).";

/// The smallest frame a record can take: how many numbers a lost stretch of segment could hold.
const SMALLEST_FRAME: u64 = journal::FRAME_HEADER_LEN as u64 + 1;

/// What a start has found so far: its warnings, the files it will set aside once it is sure to
/// start, and whether it recovers on purpose.
struct Reading {
    recover: bool,
    warnings: Vec<String>,
    aside: BTreeSet<PathBuf>,
}

impl Reading {
    /// A finding that would serve fewer records than existed: refuses the start, or, with
    /// `--recover`, is said and passed over.
    fn loses(&mut self, problem: String) -> Result<(), RecoveryRefused> {
        if !self.recover {
            return Err(RecoveryRefused(format!("{problem}. {RECOVER}")));
        }
        self.warnings
            .push(format!("{problem}; --recover goes on without it"));
        Ok(())
    }
}

/// Reads the data directory. With `recover`, what would refuse the start is passed over: the
/// service starts from the last good state, says which records are lost, and moves every file
/// it cannot use aside as `*.corrupt`.
pub fn recover(dir: &Path, recover: bool) -> Result<Recovered, StartRefused> {
    super::private::create_dir(dir).map_err(|e| {
        RecoveryRefused(format!(
            "cannot create the data directory {}: {e}",
            dir.display()
        ))
    })?;
    let mut reading = Reading {
        recover,
        warnings: Vec::new(),
        aside: BTreeSet::new(),
    };
    let mut journal = read_journal(dir)?;
    let found = head::read(dir)
        .map_err(|e| RecoveryRefused(format!("cannot read {}: {e}", head::path(dir).display())))?;
    let snapshots =
        snapshot::list(dir).map_err(|e| RecoveryRefused(format!("cannot list snapshots: {e}")))?;
    refuse_newer(dir, &journal, &found, &snapshots)?;

    let mut extent = everything_seen(&journal, &snapshots);
    let unknown = account_for_newest(dir, &journal, &found, &mut extent, &mut reading)?
        + stop_at_damage(&mut journal, &mut reading)?;
    note_torn(&journal, &mut reading);
    for scan in &journal {
        if let (Some((first, _)), Some((last, _))) = (scan.records.first(), scan.records.last()) {
            extent.hold(*first, *last);
        }
    }
    let base = choose_base(&snapshots, &extent, &mut reading)?;
    let state = replay(base, journal, &mut reading);
    if recover {
        for (seq, path) in &snapshots {
            // Newer than what is served: another history, never to meet the new records.
            if *seq > state.seq {
                reading.aside.insert(path.clone());
            }
        }
    }
    let next_seq = number_after(&state, &extent, unknown, &mut reading);
    let mut warnings = reading.warnings;
    for path in &reading.aside {
        move_aside(path, &mut warnings)?;
    }
    Ok(Recovered {
        next_seq,
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

/// Files of a newer format, and records this build does not know, are refused even with
/// `--recover`, before any file is changed: starting from older state would drop the newer
/// data. The message says how to go back (docs/UPGRADING.md).
fn refuse_newer(
    dir: &Path,
    journal: &[SegmentScan],
    found: &Found,
    snapshots: &[(u64, PathBuf)],
) -> Result<(), StartRefused> {
    let this = super::FORMAT_VERSION;
    let newer = journal
        .iter()
        .find_map(|s| match &s.end {
            SegmentEnd::NewerVersion(v) => Some(format!(
                "{} was written by a newer botlist (format version {v}; this build reads version {this} and older)",
                s.path.display()
            )),
            SegmentEnd::UnknownRecord { offset, seq, reason } => Some(format!(
                "{} holds record {seq} (at byte {offset}) of a kind this build does not know: {reason}",
                s.path.display()
            )),
            _ => None,
        })
        .or_else(|| match found {
            Found::Newer(v) => Some(format!(
                "{} was written by a newer botlist (format version {v}; this build reads version {this} and older)",
                head::path(dir).display()
            )),
            _ => None,
        })
        .or_else(|| {
            snapshots.iter().find_map(|(_, path)| {
                let v = snapshot::newer_version(path)?;
                Some(format!(
                    "snapshot {} was written by a newer botlist (format version {v}; this build reads version {this} and older)",
                    path.display()
                ))
            })
        });
    match newer {
        Some(why) => Err(StartRefused::Newer(format!(
            "{why}. Nothing was changed. {GO_BACK}"
        ))),
        None => Ok(()),
    }
}

/// What a refused downgrade says: the ways back, in docs/UPGRADING.md.
const GO_BACK: &str = "Run the newer botlist on this directory; or, to go back to this build, \
    restore a backup made before the upgrade with this build's `botlist restore` into a new \
    directory (docs/UPGRADING.md, \"Going back\"): writes made since the upgrade are not in it.";

/// The highest number any file shows was used, whatever state the files are in.
fn everything_seen(journal: &[SegmentScan], snapshots: &[(u64, PathBuf)]) -> Extent {
    let mut extent = Extent::default();
    for scan in journal {
        extent.reaches(scan.first_seq.saturating_sub(1));
        if let Some((last, _)) = scan.records.last() {
            extent.reaches(*last);
        }
        if let SegmentEnd::Corrupt { beyond, .. } = scan.end {
            extent.reaches(beyond);
        }
    }
    for (seq, _) in snapshots {
        extent.reaches(*seq);
    }
    extent
}

/// Checks the newest segment against the head. Returns how many numbers past the known end
/// may have been used without any file left to say so (a newest segment cut short or removed):
/// new records skip them, so that no number is used twice.
fn account_for_newest(
    dir: &Path,
    journal: &[SegmentScan],
    found: &Found,
    extent: &mut Extent,
    reading: &mut Reading,
) -> Result<u64, RecoveryRefused> {
    let head = match found {
        Found::Good(head) => *head,
        Found::Missing | Found::Damaged(_) | Found::Newer(_) => {
            no_head(dir, journal, found, reading)?;
            return Ok(0);
        }
    };
    extent.reaches(head.newest.saturating_sub(1));
    if let Some(closed) = head.closed {
        extent.reaches(closed);
    }
    let newest = journal.iter().find(|s| s.first_seq == head.newest);
    let name = dir.join(journal::segment_name(head.newest));
    let unknown = match (newest, head.closed) {
        (None, Some(closed)) if closed < head.newest => {
            reading.warnings.push(format!(
                "{} is missing, but it held no record: the journal was closed at record {closed}",
                name.display()
            ));
            0
        }
        (None, closed) => {
            reading.loses(format!(
                "{}, the journal's newest segment, is missing: {}",
                name.display(),
                held_from(head.newest, closed)
            ))?;
            // It names what is gone; a new head is written with the next segment.
            reading.aside.insert(head::path(dir));
            if closed.is_some() {
                0
            } else {
                head.length / SMALLEST_FRAME
            }
        }
        (Some(scan), None) if scan.length < head.length => {
            let last = scan.records.last().map_or(head.newest - 1, |(seq, _)| *seq);
            reading.loses(format!(
                "{} was cut short: it is {} bytes, and was made {} bytes long; {}",
                name.display(),
                scan.length,
                head.length,
                held_from(last + 1, None)
            ))?;
            (head.length - scan.length) / SMALLEST_FRAME + 1
        }
        (Some(scan), Some(closed)) => {
            let last = scan.records.last().map_or(head.newest - 1, |(seq, _)| *seq);
            if last < closed {
                reading.loses(format!(
                    "{} ends at record {last}, but the journal was closed at record {closed}: records {} to {closed} are lost",
                    name.display(),
                    last + 1
                ))?;
            } else if scan.length < head.length {
                reading.warnings.push(format!(
                    "{} was cut short after its last record; the journal was closed there, so nothing is lost",
                    name.display()
                ));
            }
            0
        }
        (Some(_), None) => 0,
    };
    Ok(unknown)
}

/// Without a readable head, nothing proves the newest segment whole: refused when the journal
/// is of a format that has one and holds records (its head was written before the first).
fn no_head(
    dir: &Path,
    journal: &[SegmentScan],
    found: &Found,
    reading: &mut Reading,
) -> Result<(), RecoveryRefused> {
    let written = journal
        .iter()
        .any(|s| s.version >= journal::ZEROED_AHEAD && !s.records.is_empty());
    if !written {
        return Ok(());
    }
    let why = match found {
        Found::Damaged(why) => format!("is damaged ({why})"),
        _ => "is missing".into(),
    };
    let path = head::path(dir);
    reading.loses(format!(
        "the journal's head {} {why}: without it a newest segment cut short or removed cannot be told from one that was whole",
        path.display()
    ))?;
    if matches!(found, Found::Damaged(_)) {
        reading.aside.insert(path);
    }
    Ok(())
}

/// What a lost stretch of the newest segment held, as far as the head says.
fn held_from(first: u64, closed: Option<u64>) -> String {
    match closed {
        Some(closed) if closed >= first => {
            format!(
                "records {first} to {closed} are lost (the journal was closed at record {closed})"
            )
        }
        Some(_) => "it held no record after that".into(),
        None => {
            format!("records from {first} on, which may have been acknowledged, cannot be read")
        }
    }
}

/// Damage in the middle of the journal: the records after it cannot be replayed. Returns how
/// many numbers the unreadable bytes could have held, as [`account_for_newest`] does.
fn stop_at_damage(
    journal: &mut Vec<SegmentScan>,
    reading: &mut Reading,
) -> Result<u64, RecoveryRefused> {
    let Some(bad) = journal
        .iter()
        .position(|s| matches!(s.end, SegmentEnd::Corrupt { .. }))
    else {
        return Ok(0);
    };
    let scan = &journal[bad];
    let SegmentEnd::Corrupt {
        offset,
        reason,
        unread,
        ..
    } = &scan.end
    else {
        unreachable!("found above")
    };
    let unknown = unread / SMALLEST_FRAME;
    let problem = format!(
        "journal {} is damaged at byte {offset}: {reason}; the acknowledged writes after that point cannot be replayed",
        scan.path.display()
    );
    reading.loses(problem)?;
    for later in &journal[bad..] {
        reading.aside.insert(later.path.clone());
    }
    journal.truncate(bad + 1);
    Ok(unknown)
}

fn note_torn(journal: &[SegmentScan], reading: &mut Reading) {
    for scan in journal {
        if let SegmentEnd::Torn { offset, dropped } = scan.end {
            reading.warnings.push(format!(
                "dropped an incomplete last record of {} at byte {offset} ({dropped} bytes; a crash mid-write, so it was never acknowledged)",
                scan.path.display()
            ));
        }
    }
}

/// The newest good snapshot that the journal continues up to the highest number ever used, or
/// the empty state when the journal holds everything from record 1. Damaged snapshots are named
/// and set aside.
fn choose_base(
    snapshots: &[(u64, PathBuf)],
    extent: &Extent,
    reading: &mut Reading,
) -> Result<SavedState, RecoveryRefused> {
    let mut damaged: Vec<(u64, PathBuf, String)> = Vec::new();
    let mut newest_good: Option<(PathBuf, SavedState)> = None;
    let mut chosen = None;
    for (seq, path) in snapshots {
        match snapshot::read(path) {
            Ok(state) if extent.missing_after(state.seq).is_empty() => {
                chosen = Some(state);
                break;
            }
            Ok(state) => {
                newest_good.get_or_insert((path.clone(), state));
            }
            Err(SnapshotError::NewerVersion(v)) => {
                return Err(RecoveryRefused(format!(
                    "snapshot {} {}. Run that botlist, or move the file away to start from older state.",
                    path.display(),
                    SnapshotError::NewerVersion(v)
                )))
            }
            Err(error) => damaged.push((*seq, path.clone(), error.to_string())),
        }
    }
    // A snapshot numbered 0 holds a directory made without records (`generate`, the demo):
    // the empty state stands in for it only when it is not there at all.
    let seeded = damaged.iter().any(|(seq, _, _)| *seq == 0);
    let chosen = match chosen {
        Some(state) => state,
        None if !seeded && extent.missing_after(0).is_empty() => SavedState::default(),
        None => {
            let (name, base) = match newest_good {
                Some((path, state)) => (format!("snapshot {}", path.display()), state),
                None => ("the empty state".into(), SavedState::default()),
            };
            let missing = extent.missing_after(base.seq);
            let what = if missing.is_empty() {
                "the directory the damaged snapshot 0 held is lost".to_owned()
            } else {
                format!("{} are missing", describe(&missing))
            };
            let damaged_names: Vec<String> = damaged
                .iter()
                .map(|(_, p, why)| format!("{} {why}", p.display()))
                .collect();
            reading.loses(format!(
                "{what}: the newest state the journal continues from is {name}, and no good file holds them{}",
                if damaged_names.is_empty() {
                    String::new()
                } else {
                    format!(" (damaged: {})", damaged_names.join("; "))
                }
            ))?;
            base
        }
    };
    for (seq, path, why) in damaged {
        reading.warnings.push(format!(
            "snapshot {} {why}; {}",
            path.display(),
            if seq > chosen.seq {
                "started from an older state and the journal"
            } else {
                "not needed"
            }
        ));
        reading.aside.insert(path);
    }
    Ok(chosen)
}

/// Applies the journal after the base, in order, up to its end or (only with `--recover`) its
/// first gap; what lies past a gap is another history, set aside.
fn replay(base: SavedState, journal: Vec<SegmentScan>, reading: &mut Reading) -> SavedState {
    let mut replayer = Replayer::new(base);
    let mut expected = replayer.seq() + 1;
    let mut past_gap = false;
    for scan in journal {
        if past_gap {
            reading.aside.insert(scan.path);
            continue;
        }
        for (seq, record) in scan.records {
            if seq < expected {
                continue;
            }
            if seq > expected {
                reading.warnings.push(format!(
                    "the journal jumps from record {} to {seq} in {}; serving the state before the gap",
                    expected - 1,
                    scan.path.display()
                ));
                past_gap = true;
                break;
            }
            replayer.apply(seq, record);
            expected = seq + 1;
        }
        if past_gap {
            reading.aside.insert(scan.path);
        }
    }
    reading.warnings.append(&mut replayer.warnings);
    replayer.finish()
}

/// New records are numbered after every number the files show was used (and after the
/// numbers a lost stretch could have used): a number is never given to two records.
fn number_after(state: &SavedState, extent: &Extent, unknown: u64, reading: &mut Reading) -> u64 {
    // A snapshot may hold bots ahead of its own number (they are read after it is noted).
    let held = state
        .bots
        .iter()
        .map(|b| b.state.last_seq)
        .chain([state.seq, state.registry_seq])
        .max()
        .unwrap_or(0);
    let used = extent.end.saturating_add(unknown);
    if used > state.seq && used > held {
        let lost = describe(&[state.seq + 1..=extent.end]);
        let beyond = if unknown > 0 {
            format!(" and as many as {unknown} more after {}", extent.end)
        } else {
            String::new()
        };
        reading.warnings.push(format!(
            "serving the state at record {}: {lost}{beyond} are lost or kept in files set aside; new records are numbered from {}",
            state.seq,
            used + 1
        ));
    } else if held > state.seq {
        // Only after a power cut with --fsync batch or never, or a recovery: the snapshot's
        // bots hold records the journal no longer has. A snapshot is written at once, so the
        // numbers skipped here are never looked for.
        reading.warnings.push(format!(
            "the journal ends at record {}, before records the snapshot already holds (up to {held}); continuing after {held}",
            state.seq
        ));
    }
    used.max(held) + 1
}

/// Renames a file to `*.corrupt`: kept for inspection, never read again.
fn move_aside(path: &Path, warnings: &mut Vec<String>) -> Result<(), RecoveryRefused> {
    let aside = super::files::set_aside(path)
        .map_err(|e| RecoveryRefused(format!("cannot move {} aside: {e}", path.display())))?;
    warnings.push(format!(
        "moved {} aside as {}",
        path.display(),
        aside.display()
    ));
    Ok(())
}
