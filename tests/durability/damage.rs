//! The damage matrix: directories made by the real binary, every file in them flipped, cut and
//! removed, one at a time. Each start without `--recover` either refuses with exit code 2
//! naming the damaged file, or serves every acknowledged write. With `--recover` it starts,
//! serves what remains, says what was lost, and the directory it leaves starts again without
//! `--recover`, new writes included (no record number is used twice).

use std::fs;
use std::path::{Path, PathBuf};

use reqwest::StatusCode;

use crate::process::{files, Server};

/// A directory as the binary left it, and every write it acknowledged: each bot's id and votes.
struct Scene {
    dir: tempfile::TempDir,
    bots: Vec<(String, u64)>,
}

#[derive(Clone, Copy, Debug)]
enum Damage {
    /// One byte flipped in the middle of what the file holds.
    Flip,
    /// Cut to half of what it holds.
    Cut,
    Remove,
}

/// One bot with `votes` votes before the first snapshot; each later round adds a bot and votes
/// and then, while `snapshots` asks for more, a snapshot.
fn make(snapshots: usize, rounds: usize, stop: fn(Server)) -> Scene {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &["--snapshot-interval", "0"]);
    let mut bots = Vec::new();
    let mut user = 0;
    for round in 0..rounds {
        let (bot, _) = server.create_bot(500 + round as u64);
        for _ in 0..3 {
            user += 1;
            assert_eq!(server.vote(&bot, user), StatusCode::CREATED);
        }
        bots.push((bot, 3));
        if round < snapshots {
            server.snapshot();
        }
    }
    stop(server);
    Scene { dir, bots }
}

fn clean_stop(server: Server) {
    assert_eq!(server.terminate().code(), Some(0));
}

fn kill9(server: Server) {
    server.kill9();
}

/// Every data file of the scene, as names (the lock holds no data).
fn data_files(dir: &Path) -> Vec<String> {
    files(dir)
        .iter()
        .map(|p| name(p))
        .filter(|n| n != "botlist.lock")
        .collect()
}

fn name(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .expect("a name")
        .to_owned()
}

/// How much of the file is data: a journal segment is made ahead with zeros, which hold none.
fn held_length(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |last| last + 1)
}

fn damage(path: &Path, damage: Damage) {
    match damage {
        Damage::Remove => fs::remove_file(path).expect("removed"),
        Damage::Flip => {
            let mut bytes = fs::read(path).expect("readable");
            if bytes.is_empty() {
                return;
            }
            let at = held_length(&bytes).max(1) / 2;
            bytes[at] ^= 0x5a;
            fs::write(path, bytes).expect("written");
        }
        Damage::Cut => {
            let bytes = fs::read(path).expect("readable");
            let file = fs::OpenOptions::new()
                .write(true)
                .open(path)
                .expect("opened");
            file.set_len((held_length(&bytes) / 2) as u64).expect("cut");
        }
    }
}

fn copy_of(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().expect("temp dir");
    for file in files(from) {
        fs::copy(&file, to.path().join(name(&file))).expect("copied");
    }
    to
}

impl Scene {
    /// What a started server serves of the acknowledged writes: (served in full, served votes).
    fn served(&self, server: &Server) -> (bool, u64) {
        let mut whole = true;
        let mut votes = 0;
        for (bot, expected) in &self.bots {
            let (status, body) = server.get(&format!("/bots/{bot}"), None);
            let count = if status == StatusCode::OK {
                body["vote_count"].as_u64().unwrap_or(0)
            } else {
                0
            };
            whole &= count == *expected;
            votes += count;
        }
        (whole, votes)
    }

    fn total_votes(&self) -> u64 {
        self.bots.iter().map(|(_, votes)| votes).sum()
    }

    /// Every file of the scene, damaged each way, one at a time.
    fn check_every_file(&self, how: Damage) {
        for file in data_files(self.dir.path()) {
            self.check(&file, how);
        }
    }

    fn check(&self, file: &str, how: Damage) {
        let case = format!("{file} {how:?}");
        let copy = copy_of(self.dir.path());
        damage(&copy.path().join(file), how);
        match Server::try_start(copy.path(), &["--snapshot-interval", "0"]) {
            Ok(server) => {
                let (whole, votes) = self.served(&server);
                eprintln!("{case}: served every acknowledged write");
                assert!(
                    whole,
                    "{case}: started without --recover and served {votes} of {} votes\n{}",
                    self.total_votes(),
                    server.log()
                );
                drop(server);
            }
            Err(refused) => {
                assert_eq!(refused.status.code(), Some(2), "{case}: {}", refused.stderr);
                assert!(
                    refused.stderr.contains(file),
                    "{case}: the refusal does not name the file: {}",
                    refused.stderr
                );
                eprintln!("{case}: refused, naming the file");
                self.recover(copy.path(), &case);
            }
        }
    }

    /// `--recover` starts, says what it lost, and leaves a directory that starts again without
    /// it, with a write made after the recovery.
    fn recover(&self, dir: &Path, case: &str) {
        let server = match Server::try_start(dir, &["--snapshot-interval", "0", "--recover"]) {
            Ok(server) => server,
            // A flip that makes a header claim a newer format: --recover never drops what a
            // newer botlist may have written, and says so.
            Err(refused) if refused.stderr.contains("newer botlist") => return,
            Err(refused) => panic!("{case}: --recover did not start: {}", refused.stderr),
        };
        let (whole, votes) = self.served(&server);
        let log = server.log();
        assert!(
            whole || log.contains("lost"),
            "{case}: --recover served {votes} of {} votes without saying what was lost\n{log}",
            self.total_votes()
        );
        let (bot, _) = server.create_bot(9_999);
        assert_eq!(server.vote(&bot, 4242), StatusCode::CREATED, "{case}");
        server.kill9();
        let again = Server::try_start(dir, &["--snapshot-interval", "0"]).unwrap_or_else(|r| {
            panic!(
                "{case}: the directory --recover left does not start: {}",
                r.stderr
            )
        });
        assert_eq!(
            again.vote_count(&bot),
            1,
            "{case}: the write after --recover"
        );
        assert_eq!(
            self.served(&again).1,
            votes,
            "{case}: what --recover served"
        );
    }
}

fn one_snapshot_then_a_clean_stop() -> Scene {
    make(1, 1, clean_stop)
}

fn several_snapshots_then_a_clean_stop() -> Scene {
    make(3, 4, clean_stop)
}

fn a_snapshot_then_kill_9_with_records_in_the_journal() -> Scene {
    make(1, 3, kill9)
}

#[test]
fn one_snapshot_and_a_clean_stop_every_file_flipped() {
    one_snapshot_then_a_clean_stop().check_every_file(Damage::Flip);
}

#[test]
fn one_snapshot_and_a_clean_stop_every_file_cut() {
    one_snapshot_then_a_clean_stop().check_every_file(Damage::Cut);
}

#[test]
fn one_snapshot_and_a_clean_stop_every_file_removed() {
    one_snapshot_then_a_clean_stop().check_every_file(Damage::Remove);
}

#[test]
fn several_snapshots_every_file_flipped() {
    several_snapshots_then_a_clean_stop().check_every_file(Damage::Flip);
}

#[test]
fn several_snapshots_every_file_cut() {
    several_snapshots_then_a_clean_stop().check_every_file(Damage::Cut);
}

#[test]
fn several_snapshots_every_file_removed() {
    several_snapshots_then_a_clean_stop().check_every_file(Damage::Remove);
}

#[test]
fn kill_9_every_file_flipped() {
    a_snapshot_then_kill_9_with_records_in_the_journal().check_every_file(Damage::Flip);
}

#[test]
fn kill_9_every_file_cut() {
    a_snapshot_then_kill_9_with_records_in_the_journal().check_every_file(Damage::Cut);
}

#[test]
fn kill_9_every_file_removed() {
    a_snapshot_then_kill_9_with_records_in_the_journal().check_every_file(Damage::Remove);
}

/// The case found from outside: three bots, one snapshot, a clean stop, one byte of the only
/// snapshot flipped. The journal from record 1 is kept while there is one snapshot, so the start
/// serves every bot from it; with the journal's start gone too, it refuses.
#[test]
fn a_damaged_only_snapshot_never_starts_as_an_empty_directory() {
    let scene = make(1, 1, clean_stop);
    let snapshot = data_files(scene.dir.path())
        .into_iter()
        .find(|n| n.starts_with("snapshot-"))
        .expect("a snapshot");
    let copy = copy_of(scene.dir.path());
    damage(&copy.path().join(&snapshot), Damage::Flip);
    let server = Server::start(copy.path(), &[]);
    assert!(scene.served(&server).0, "{}", server.log());
    drop(server);

    let copy = copy_of(scene.dir.path());
    damage(&copy.path().join(&snapshot), Damage::Flip);
    let first = PathBuf::from(copy.path()).join("journal-00000000000000000001.log");
    fs::remove_file(&first).expect("the journal's first segment, kept while one snapshot is");
    let refused = match Server::try_start(copy.path(), &[]) {
        Ok(_) => panic!("started without the records only the damaged snapshot held"),
        Err(refused) => refused,
    };
    assert_eq!(refused.status.code(), Some(2), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("records 1 to") && refused.stderr.contains(&snapshot),
        "names the missing records and the damaged file: {}",
        refused.stderr
    );
}

/// A newest segment cut at a record boundary after kill -9 looks whole by itself; the head says
/// how long it was made.
#[test]
fn a_newest_segment_cut_at_a_record_boundary_is_refused() {
    let scene = make(1, 3, kill9);
    let copy = copy_of(scene.dir.path());
    let newest = files(copy.path())
        .into_iter()
        .rfind(|p| name(p).starts_with("journal-") && name(p).ends_with(".log"))
        .expect("a segment");
    let bytes = fs::read(&newest).expect("readable");
    // Walk the frames to the start of the last one.
    let mut at = 20;
    let mut last_start = at;
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        if len == 0 {
            break;
        }
        last_start = at;
        at += 16 + len;
    }
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&newest)
        .expect("opened");
    file.set_len(last_start as u64).expect("cut");
    let refused = match Server::try_start(copy.path(), &[]) {
        Ok(server) => panic!("started on a cut journal: {}", server.log()),
        Err(refused) => refused,
    };
    assert_eq!(refused.status.code(), Some(2), "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&name(&newest)) && refused.stderr.contains("cut short"),
        "{}",
        refused.stderr
    );
}
