use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;

use botlist::config::{BackupArgs, RestoreArgs};
use botlist::config::{Cli, ClusterCommand, ClusterInitArgs, Command, GenerateArgs, ServeArgs};
use botlist::config::{ClusterSettings, Role, Settings};
use botlist::demo::{self, DemoSize};
use botlist::domain::time::{Clock, SystemClock};
use botlist::persist::backup::{self, CopyError};
use botlist::persist::lock::{DirLock, LockError};
use botlist::persist::{journal, snapshot};
use botlist::startup::node::{self, Ended};
use botlist::startup::{clock, open_files};
use botlist::startup::{stop_signal, Application, StartError, StoppedAfterJournalFailure};
use botlist::telemetry::{self, LogFormat};

/// The exit code of a start refused because of damaged state.
const REFUSED: u8 = 2;
/// The exit code of a start refused because another process holds the data directory.
const IN_USE: u8 = 3;
/// The exit code of a stop (SIGTERM, SIGINT) after the journal failed: no last snapshot.
const STOPPED_AFTER_JOURNAL_FAILURE: u8 = 4;
/// The exit code of a start refused for an unsafe setup: an admin token too short or
/// unreadable, a data directory others can write to or another user owns, a symlink there.
const UNSAFE: u8 = 6;
/// Cluster mode: the writer lost (or handed over) its role; restart it as a follower.
const DEMOTED: u8 = 5;
/// Refused or stopped: the data directory (or a cluster's stream) holds a file of a newer
/// format or a record this build does not know. Nothing was changed or misapplied; run the
/// newer botlist (docs/UPGRADING.md).
const NEWER: u8 = 9;
/// `backup --to` exists, or `restore --data-dir` is not empty: nothing was written there.
const DESTINATION_TAKEN: u8 = 8;
/// The exit code of a start refused for a setting that cannot be used: a bad flag or variable
/// value, an address that is taken, a token file that cannot be read. The message names the
/// flag and its variable.
const CONFIG: u8 = 7;

#[actix_web::main]
async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return bad_arguments(&error),
    };
    match cli.into_command() {
        Command::Serve(args) => {
            telemetry::init_logs(args.log_format);
            serve(args).await
        }
        Command::Generate(args) => {
            telemetry::init_logs(LogFormat::Text);
            generate(&args)
        }
        Command::Cluster(ClusterCommand::Init(args)) => {
            telemetry::init_logs(LogFormat::Text);
            cluster_init(args).await
        }
        Command::Backup(args) => {
            telemetry::init_logs(LogFormat::Text);
            backup(args).await
        }
        Command::Restore(args) => {
            telemetry::init_logs(LogFormat::Text);
            restore(&args)
        }
    }
}

/// The exit code of a backup or restore that did not finish (docs/BACKUP.md).
fn copy_failed(command: &str, error: &CopyError) -> ExitCode {
    eprintln!("botlist {command} failed: {error}");
    ExitCode::from(match error {
        CopyError::Io(_) => 1,
        CopyError::Damaged(_) => REFUSED,
        CopyError::Exists(_) => DESTINATION_TAKEN,
        CopyError::Newer(_) => NEWER,
    })
}

/// `botlist backup`: asks the running server for a snapshot, then copies it and the journal
/// after it from the data directory, which needs no lock to read (docs/BACKUP.md).
async fn backup(args: BackupArgs) -> ExitCode {
    if let Some(servers) = args.replicate.clone() {
        return cluster_backup(servers, args).await;
    }
    let started = Instant::now();
    let token = match (&args.admin_token_file, &args.admin_token) {
        (Some(path), _) => match std::fs::read_to_string(path) {
            Ok(text) => text.trim().to_owned(),
            Err(error) => {
                eprintln!(
                    "botlist backup failed: cannot read {}: {error}",
                    path.display()
                );
                return ExitCode::FAILURE;
            }
        },
        (None, Some(token)) => token.expose().to_owned(),
        (None, None) => {
            eprintln!("botlist backup failed: the server's admin token is needed (BOTLIST_ADMIN_TOKEN or --admin-token-file)");
            return ExitCode::FAILURE;
        }
    };
    if args.to.exists() {
        return copy_failed(
            "backup",
            &CopyError::Exists(format!(
                "{} already exists; a backup goes to a new path",
                args.to.display()
            )),
        );
    }
    let seq = match take_snapshot(&args.url, &token).await {
        Ok(seq) => seq,
        Err(why) => {
            eprintln!("botlist backup failed: {why}");
            return ExitCode::FAILURE;
        }
    };
    let (data_dir, to) = (args.data_dir.clone(), args.to.clone());
    let copied = tokio::task::spawn_blocking(move || backup::backup(&data_dir, seq, &to)).await;
    match copied {
        Ok(Ok(copied)) => {
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "backed up to {}: snapshot {} and the journal to record {}, {} bots, {} bytes in {seconds:.2} s ({:.1} MB/s), verified",
                args.to.display(),
                copied.snapshot_seq,
                copied.last_seq,
                copied.bots,
                copied.bytes,
                copied.bytes as f64 / 1e6 / seconds.max(1e-9)
            );
            ExitCode::SUCCESS
        }
        Ok(Err(error)) => copy_failed("backup", &error),
        Err(error) => {
            eprintln!("botlist backup failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `botlist backup --replicate`: a cluster's state from its object store and stream, written
/// as a single snapshot (docs/BACKUP.md, "A cluster").
async fn cluster_backup(servers: String, args: BackupArgs) -> ExitCode {
    let started = Instant::now();
    if args.to.exists() {
        return copy_failed(
            "backup",
            &CopyError::Exists(format!(
                "{} already exists; a backup goes to a new path",
                args.to.display()
            )),
        );
    }
    let settings = offline_cluster(servers, args.cluster_prefix, 7);
    let found = match botlist::cluster::backup::state_at_end(&settings).await {
        Ok(found) => found,
        Err(botlist::cluster::ClusterError::Newer(why)) => {
            return copy_failed("backup", &CopyError::Newer(why))
        }
        Err(botlist::cluster::ClusterError::Refused(why)) => {
            return copy_failed("backup", &CopyError::Damaged(why))
        }
        Err(error) => return copy_failed("backup", &CopyError::Io(error.to_string())),
    };
    let (to, mark) = (args.to.clone(), found.mark);
    let copied = tokio::task::spawn_blocking(move || {
        backup::backup_state(&found.state, Some(found.mark), found.cursor_key, &to)
    })
    .await;
    match copied {
        Ok(Ok(copied)) => {
            println!(
                "backed up the cluster to {}: its state at record {} (stream message {}), {} bots, {} bytes in {:.2} s, verified",
                args.to.display(),
                copied.last_seq,
                mark.stream_seq,
                copied.bots,
                copied.bytes,
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Ok(Err(error)) => copy_failed("backup", &error),
        Err(error) => {
            eprintln!("botlist backup failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `POST {url}/admin/snapshot`: the sequence number of the snapshot the server wrote.
async fn take_snapshot(url: &str, token: &str) -> Result<u64, String> {
    let address = format!("{}/admin/snapshot", url.trim_end_matches('/'));
    let response = reqwest::Client::new()
        .post(&address)
        .header("Authorization", token)
        .send()
        .await
        .map_err(|e| format!("cannot reach the server at {address}: {e}"))?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!("{address} answered {status}: {body}"));
    }
    body["file"]
        .as_str()
        .and_then(|file| std::path::Path::new(file).file_name()?.to_str())
        .and_then(snapshot::parse_snapshot_name)
        .ok_or_else(|| format!("{address} answered without a snapshot's file: {body}"))
}

/// `botlist restore`: a backup into a new or empty data directory, verified first.
fn restore(args: &RestoreArgs) -> ExitCode {
    let started = Instant::now();
    match backup::restore(&args.from, &args.data_dir) {
        Ok(copied) => {
            println!(
                "restored {} into {}: snapshot {} and the journal to record {}, {} bots, {} bytes in {:.2} s, verified",
                args.from.display(),
                args.data_dir.display(),
                copied.snapshot_seq,
                copied.last_seq,
                copied.bots,
                copied.bytes,
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(error) => copy_failed("restore", &error),
    }
}

/// `--help` and `--version` exit 0; any other refusal of the command line or of a `BOTLIST_*`
/// variable exits [`CONFIG`], not clap's 2, which is damaged state here.
fn bad_arguments(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let _ = error.print();
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::SUCCESS,
        _ => {
            eprintln!(
                "(every flag also reads its BOTLIST_* variable; booleans take true/false, \
                 yes/no, on/off or 1/0; README.md, \"Configuration\")"
            );
            ExitCode::from(CONFIG)
        }
    }
}

/// glibc's default padding when a heap grows (mallopt(3), `M_TOP_PAD`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const DEFAULT_TOP_PAD: libc::c_int = 128 * 1024;

/// Lets glibc grow each heap 64 MiB at a time while the state is loaded. A thread's arena
/// otherwise grows by the few pages each allocation needs, one `mprotect` call each: a start
/// of 100,000 bots and 5,000,000 votes made 163,505 of them (56 with this), about 8% of the
/// start's CPU, and each takes the address space's lock that the other threads' page faults
/// wait on. Only address space is reserved; pages are still touched one by one.
/// [`free_small_blocks_at_once`] puts the padding back, so the running server holds no more
/// unused heap than before. Setting it fixes glibc's threshold for serving a large block by
/// `mmap` at its 128 KiB default, as it was before the first such block was freed.
fn grow_heaps_in_large_steps() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes plain integers and only changes the allocator's policy.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

/// Turns off glibc's fast bins once the state is loaded. Fast bins keep freed small blocks
/// aside and merge them all on the next large free or allocation. A snapshot lets go of a few
/// hundred thousand small blocks (one per bot it read); the next large free on that thread
/// would merge them in one go while a request worker's requests wait (docs/PERFORMANCE.md,
/// "Hot paths and memory", has the profile). Without fast bins a small free goes to the
/// thread's cache or is merged at once, so the cost is spread over the frees. Loading keeps
/// them, since it is faster with them; the blocks loading set aside are merged here, before the
/// first request, by trimming every arena. Other C libraries have no such knob.
fn free_small_blocks_at_once() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt and malloc_trim take plain integers and only change the allocator's
    // policy and free lists.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
        libc::mallopt(libc::M_TOP_PAD, DEFAULT_TOP_PAD);
        libc::malloc_trim(0);
    }
}

async fn serve(args: ServeArgs) -> ExitCode {
    let admin_token = match args.admin_token() {
        Ok(token) => token,
        Err(why) => {
            eprintln!("botlist will not start: {why}");
            return ExitCode::from(CONFIG);
        }
    };
    if let Some(Err(why)) = admin_token.as_ref().map(|token| token.check_admin_token()) {
        eprintln!("botlist will not start: {why}");
        return ExitCode::from(UNSAFE);
    }
    let cluster_token = match args.cluster_token() {
        Ok(token) => token,
        Err(why) => {
            eprintln!("botlist will not start: {why}");
            return ExitCode::from(CONFIG);
        }
    };
    let settings = Settings::from_args(&args, admin_token);
    // Before the listener: every connection the cap lets in is a descriptor.
    open_files::raise_to(open_files::descriptors_needed(
        settings.max_connections,
        settings.workers,
    ));
    // The system clock, unless a test of the real binary moves it (startup/clock.rs).
    let clock = match clock::from_env() {
        Ok(clock) => clock,
        Err(why) => {
            eprintln!("botlist will not start: {why}");
            return ExitCode::from(CONFIG);
        }
    };
    if let Some(cluster) = cluster_token.and_then(|token| ClusterSettings::with_token(&args, token))
    {
        return serve_replicated(settings, cluster, clock).await;
    }
    grow_heaps_in_large_steps();
    let app = match Application::build(settings, clock).await {
        Ok(app) => {
            free_small_blocks_at_once();
            app
        }
        Err(StartError::Refused(why)) => {
            eprintln!("botlist will not start: {why}");
            return ExitCode::from(REFUSED);
        }
        Err(StartError::InUse(why)) => {
            eprintln!("botlist will not start: {why}");
            return ExitCode::from(IN_USE);
        }
        Err(StartError::Unsafe(why)) => {
            eprintln!("botlist will not start: {why}");
            return ExitCode::from(UNSAFE);
        }
        Err(StartError::Newer(why)) => {
            eprintln!("botlist will not start: {why}");
            return ExitCode::from(NEWER);
        }
        Err(StartError::Config(why)) => {
            eprintln!("botlist will not start: {why}");
            return ExitCode::from(CONFIG);
        }
        Err(StartError::Io(error)) => {
            eprintln!("botlist could not start: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(demo) = &app.demo {
        println!("demo directory loaded: {} bots", app.directory.len());
        println!(
            "  admin token:        {}",
            app.admin_token.as_ref().map_or("", |token| token.expose())
        );
        println!("  demo bot id:        {}", demo.bot_id);
        println!("  demo bot platform:  {}", demo.bot_platform_id);
        println!("  demo bot token:     {}", demo.bot_token.as_str());
        println!("  a recent voter:     {}", demo.recent_voter);
        println!("  a profile id:       {}", demo.profile_id);
        println!("  demo profile:       {}", demo.token_profile_id);
        println!("  demo profile token: {}", demo.profile_token.as_str());
        println!("  demo moderator:     {}", demo.moderator_id);
        println!("  moderator token:    {}", demo.moderator_token.as_str());
        println!("  a pending listing:  {}", demo.pending_bot_id);
    }
    if let Some(metrics) = app.metrics_url() {
        println!("metrics on {metrics}");
    }
    println!("listening on {}", app.base_url());
    match app.run_until(stop_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error)
            if error
                .get_ref()
                .is_some_and(|inner| inner.is::<StoppedAfterJournalFailure>()) =>
        {
            eprintln!("botlist {error}");
            ExitCode::from(STOPPED_AFTER_JOURNAL_FAILURE)
        }
        Err(error) => {
            eprintln!("botlist stopped with an error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Cluster mode: the node's lifecycle is in `startup::node`.
async fn serve_replicated(
    settings: Settings,
    cluster: ClusterSettings,
    clock: Arc<dyn Clock>,
) -> ExitCode {
    // The state is loaded as a single node's is (`serve`): heaps grown in large steps until
    // the node's application is built, then the serving settings.
    grow_heaps_in_large_steps();
    match node::run(settings, cluster, clock, free_small_blocks_at_once).await {
        Ended::Stopped => ExitCode::SUCCESS,
        Ended::Demoted(why) => {
            eprintln!(
                "botlist is no longer the writer ({why}); exiting to be restarted as a follower"
            );
            ExitCode::from(DEMOTED)
        }
        Ended::Refused(why) => {
            eprintln!("botlist will not start: {why}");
            ExitCode::from(REFUSED)
        }
        Ended::Config(why) => {
            eprintln!("botlist will not start: {why}");
            ExitCode::from(CONFIG)
        }
        Ended::Newer(why) => {
            eprintln!("botlist stopped: {why}");
            ExitCode::from(NEWER)
        }
        Ended::Failed(why) => {
            eprintln!("botlist stopped with an error: {why}");
            ExitCode::FAILURE
        }
    }
}

/// The settings of a command that reads or seeds a cluster's stream without being a node: it
/// serves nothing, so it needs no node id, URL or cluster token. `lease_ttl` (seconds) is the
/// lease bucket's if this command is the one that makes it.
fn offline_cluster(servers: String, prefix: String, lease_ttl: u64) -> ClusterSettings {
    ClusterSettings {
        servers,
        node_id: None,
        advertise_url: None,
        prefix,
        lease_ttl: std::time::Duration::from_secs(lease_ttl),
        token: botlist::config::Secret::from("unused"),
        role: Role::Follower,
        publish_deadline: std::time::Duration::from_secs(20),
        min_seq_wait: std::time::Duration::from_secs(1),
        max_lag: std::time::Duration::from_secs(8),
        missing: None,
        blackout: None,
        lease_unread: false,
        max_consumers: None,
    }
}

/// `botlist cluster init`: seeds the empty stream from a single-node data directory.
async fn cluster_init(args: ClusterInitArgs) -> ExitCode {
    let settings = offline_cluster(args.replicate, args.cluster_prefix, args.lease_ttl);
    let _lock = match DirLock::acquire(&args.from) {
        Ok(lock) => lock,
        Err(error @ LockError::Held { .. }) => {
            eprintln!("botlist cluster init will not run: {error}");
            return ExitCode::from(IN_USE);
        }
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };
    match botlist::cluster::init::seed(settings, args.from).await {
        Ok(seeded) => {
            println!(
                "seeded the cluster: {} profiles and {} bots as records 1 to {}{}",
                seeded.profiles,
                seeded.bots,
                seeded.records,
                if seeded.cursor_key {
                    ", and the directory's history cursor key"
                } else {
                    ""
                }
            );
            ExitCode::SUCCESS
        }
        Err(botlist::cluster::ClusterError::Refused(why)) => {
            eprintln!("botlist cluster init will not run: {why}");
            ExitCode::from(REFUSED)
        }
        Err(botlist::cluster::ClusterError::Newer(why)) => {
            eprintln!("botlist cluster init will not run: {why}");
            ExitCode::from(NEWER)
        }
        Err(error) => {
            eprintln!("botlist cluster init failed: {error}");
            ExitCode::FAILURE
        }
    }
}

fn generate(args: &GenerateArgs) -> ExitCode {
    let started = Instant::now();
    if let Err(error) = botlist::persist::private::create_dir(&args.out) {
        eprintln!("cannot create {}: {error}", args.out.display());
        return ExitCode::FAILURE;
    }
    // Held until the snapshot is written, so no server starts on a half-written directory.
    let _lock = match DirLock::acquire(&args.out) {
        Ok(lock) => lock,
        Err(error @ LockError::Held { .. }) => {
            eprintln!("botlist generate will not run: {error}");
            return ExitCode::from(IN_USE);
        }
        Err(error @ LockError::Unsafe(_)) => {
            eprintln!("botlist generate will not run: {error}");
            return ExitCode::from(UNSAFE);
        }
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };
    let holds_state = std::fs::read_dir(&args.out)
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            snapshot::parse_snapshot_name(&name).is_some()
                || journal::parse_segment_name(&name).is_some()
        });
    if holds_state {
        eprintln!(
            "{} already holds botlist state; generate into an empty directory",
            args.out.display()
        );
        return ExitCode::FAILURE;
    }
    let size = DemoSize {
        seed: args.seed,
        bots: args.bots.max(1),
        profiles: (args.bots / 3).max(1),
        voters: (args.votes as u64 / 10).max(1_000),
        votes: args.votes,
    };
    let generated = demo::build(SystemClock.now(), &size);
    let built = started.elapsed();
    match snapshot::write(&args.out, &generated.state) {
        Ok(written) => {
            println!(
                "wrote {} ({} bytes): {} bots, {} votes; generated in {:.1} s, written in {:.1} s",
                written.path.display(),
                written.bytes,
                generated.state.bots.len(),
                generated.accepted_votes,
                built.as_secs_f64(),
                (started.elapsed() - built).as_secs_f64()
            );
            let stored: usize = generated
                .state
                .bots
                .iter()
                .map(|bot| bot.state.votes.recent.len())
                .sum();
            println!("  recent voters stored: {stored}");
            println!("  a bot id:    {}", generated.info.bot_id);
            println!("  its token:   {}", generated.info.bot_token.as_str());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("cannot write the snapshot: {error}");
            ExitCode::FAILURE
        }
    }
}
