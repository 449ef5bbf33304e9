//! `botlist backup` against a running server under load, kill -9 in the middle of a backup,
//! and `botlist restore` then serve: every write acknowledged before the backup began is there
//! (docs/BACKUP.md).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::process::{binary, Server, ADMIN};

/// Exit codes of the commands (docs/BACKUP.md).
const DAMAGED: i32 = 2;
const DESTINATION_TAKEN: i32 = 8;

fn backup_command(server: &Server, data_dir: &Path, to: &Path) -> Command {
    let mut command = Command::new(binary());
    command
        .arg("backup")
        .arg("--to")
        .arg(to)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--url", &server.base])
        .env("BOTLIST_ADMIN_TOKEN", ADMIN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn restore(from: &Path, data_dir: &Path) -> Output {
    Command::new(binary())
        .arg("restore")
        .arg("--from")
        .arg(from)
        .arg("--data-dir")
        .arg(data_dir)
        .output()
        .expect("restore runs")
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A vote acknowledged with 2xx, and when.
type Acked = Arc<Mutex<Vec<(usize, u64, Instant)>>>;

#[test]
fn a_backup_under_load_restores_every_write_acknowledged_before_it_began() {
    let root = tempfile::tempdir().expect("a directory");
    let data = root.path().join("data");
    let server = Arc::new(Server::start(&data, &["--snapshot-interval", "0"]));
    let bots: Vec<(String, String)> = (0..4).map(|n| server.create_bot(5100 + n)).collect();
    let bots = Arc::new(bots);
    let (acked, stop): (Acked, _) = (Arc::default(), Arc::new(AtomicBool::new(false)));
    let writers: Vec<_> = (0..4u64)
        .map(|writer| {
            let (server, bots, acked, stop) = (
                Arc::clone(&server),
                Arc::clone(&bots),
                Arc::clone(&acked),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                let mut user = 51_000_000 + writer * 1_000_000;
                while !stop.load(Ordering::SeqCst) {
                    user += 1;
                    let bot = (user % bots.len() as u64) as usize;
                    if server.vote(&bots[bot].0, user).is_success() {
                        acked
                            .lock()
                            .expect("not poisoned")
                            .push((bot, user, Instant::now()));
                    }
                }
            })
        })
        .collect();
    let wait_for = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while acked.lock().expect("not poisoned").len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(50);

    let to = root.path().join("backup");
    let began = Instant::now();
    let output = backup_command(&server, &data, &to)
        .output()
        .expect("backup runs");
    assert!(output.status.success(), "{}", said(&output));
    assert!(said(&output).contains("verified"), "{}", said(&output));
    // Writes went on during the backup and after it.
    let so_far = acked.lock().expect("not poisoned").len();
    wait_for(so_far + 20);
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.join().expect("a writer");
    }
    let acked = acked.lock().expect("not poisoned").clone();
    let before: Vec<_> = acked.iter().filter(|(_, _, at)| *at < began).collect();
    let during = acked.iter().filter(|(_, _, at)| *at >= began).count();
    assert!(
        before.len() >= 50 && during >= 20,
        "{} / {during}",
        before.len()
    );

    // A second backup to the same path is refused and leaves it alone.
    let again = backup_command(&server, &data, &to).output().expect("runs");
    assert_eq!(
        again.status.code(),
        Some(DESTINATION_TAKEN),
        "{}",
        said(&again)
    );

    // The server is gone for good; the backup is all there is.
    let server = Arc::try_unwrap(server).unwrap_or_else(|_| panic!("writers joined"));
    server.kill9();
    let restored = root.path().join("restored");
    let output = restore(&to, &restored);
    assert!(output.status.success(), "{}", said(&output));
    let output = restore(&to, &restored);
    assert_eq!(
        output.status.code(),
        Some(DESTINATION_TAKEN),
        "{}",
        said(&output)
    );

    let server = Server::start(&restored, &[]);
    assert!(!server.log().contains("WARN"), "{}", server.log());
    for (n, (bot, _)) in bots.iter().enumerate() {
        let mine = before.iter().filter(|(b, _, _)| *b == n).count() as u64;
        let all = acked.iter().filter(|(b, _, _)| *b == n).count() as u64;
        let count = server.vote_count(bot);
        assert!(
            (mine..=all).contains(&count),
            "bot {n}: {count} votes, {mine} acknowledged before the backup, {all} in all"
        );
    }
    for (bot, user, _) in &before {
        let (id, token) = &bots[*bot];
        let (status, check) = server.get(&format!("/bots/{id}/check?userId={user}"), Some(token));
        assert!(status.is_success(), "{check}");
        assert_eq!(
            check["voted"], 1,
            "the vote of {user} for bot {bot} is missing"
        );
    }
}

#[test]
fn a_backup_killed_midway_is_never_at_its_name_and_a_restore_refuses_what_does_not_verify() {
    let root = tempfile::tempdir().expect("a directory");
    let data = root.path().join("data");
    let made = Command::new(binary())
        .args([
            "generate", "--bots", "400", "--votes", "40000", "--seed", "3",
        ])
        .arg("--out")
        .arg(&data)
        .output()
        .expect("generate runs");
    assert!(made.status.success(), "{}", said(&made));
    let server = Server::start(&data, &["--snapshot-interval", "0"]);
    let (bot, _) = server.create_bot(5200);
    for user in 0..20 {
        assert!(server.vote(&bot, 52_000 + user).is_success());
    }
    let mut outcomes = (0, 0);
    for (round, wait) in [0u64, 2, 5, 10, 20, 40, 80, 160, 320]
        .into_iter()
        .enumerate()
    {
        let to = root.path().join(format!("killed-{round}"));
        let mut child = backup_command(&server, &data, &to).spawn().expect("runs");
        std::thread::sleep(Duration::from_millis(wait));
        let _ = child.kill();
        let _ = child.wait();
        if to.exists() {
            // Finished before the kill: whole and verified, so it restores.
            outcomes.1 += 1;
            let output = restore(&to, &root.path().join(format!("from-killed-{round}")));
            assert!(output.status.success(), "{}", said(&output));
        } else {
            outcomes.0 += 1;
        }
    }
    assert!(outcomes.0 > 0, "no backup was cut short: {outcomes:?}");

    // A backup that was tampered with is refused, and nothing is written at the destination.
    let to = root.path().join("whole");
    let output = backup_command(&server, &data, &to).output().expect("runs");
    assert!(output.status.success(), "{}", said(&output));
    let snapshot = std::fs::read_dir(&to)
        .expect("readable")
        .map(|e| e.expect("entry").path())
        .find(|p| p.to_string_lossy().ends_with(".msgpack"))
        .expect("a snapshot");
    let mut bytes = std::fs::read(&snapshot).expect("readable");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&snapshot, bytes).expect("written");
    let target = root.path().join("not-restored");
    let output = restore(&to, &target);
    assert_eq!(output.status.code(), Some(DAMAGED), "{}", said(&output));
    assert!(!target.exists(), "nothing at the destination");
    // Nor into a directory that holds anything.
    let full = root.path().join("full");
    std::fs::create_dir(&full).expect("made");
    std::fs::write(full.join("notes.txt"), b"mine").expect("written");
    let output = restore(&root.path().join("killed-8"), &full);
    assert_eq!(
        output.status.code(),
        Some(DESTINATION_TAKEN),
        "{}",
        said(&output)
    );
}
