use std::time::Duration;

use super::*;
use crate::domain::bot::NewBot;
use crate::domain::time::{ManualClock, Timestamp};
use crate::persist::journal::{self, FsyncMode};

fn json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("valid")
}

fn new_bot(platform_id: &str) -> NewBot {
    json(serde_json::json!({
        "platform_id": platform_id, "name": "Bot", "username": "bot",
        "short_description": "A bot"
    }))
}

/// A registry over a journal in `dir`, with every bot on one arbiter that the test can stop.
fn registry(dir: &std::path::Path, arbiter: &Arbiter) -> Addr<Registry> {
    registry_and_directory(dir, arbiter).0
}

fn registry_and_directory(
    dir: &std::path::Path,
    arbiter: &Arbiter,
) -> (Addr<Registry>, Arc<Directory>) {
    registry_over(dir, &[arbiter])
}

/// A registry over a journal in `dir`, its bots spread over `arbiters`, and its directory.
fn registry_over(dir: &std::path::Path, arbiters: &[&Arbiter]) -> (Addr<Registry>, Arc<Directory>) {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_790_000_000_000)));
    let directory = Arc::new(Directory::new(clock.now()));
    let journal = Journal::open(dir, 1, FsyncMode::Never).expect("a journal");
    let dispatcher = Dispatcher::new(
        clock.clone(),
        journal.clone(),
        Arc::clone(&directory),
        Duration::from_secs(1),
        false,
    )
    .expect("a client");
    let spawner = BotSpawner::new(arbiters.iter().map(|arbiter| arbiter.handle()).collect());
    let registry = Registry::new(Arc::clone(&directory), clock, journal, dispatcher, spawner);
    (registry.start(), directory)
}

/// Holds the bots' thread until the returned sender is dropped: a bot busy for as long as
/// the test wants, with no sleep.
fn hold(arbiter: &Arbiter) -> std::sync::mpsc::Sender<()> {
    let (release, held) = std::sync::mpsc::channel::<()>();
    arbiter.spawn_fn(move || {
        let _ = held.recv();
    });
    release
}

async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("answered instead of waiting behind the bot")
}

#[actix_web::test]
async fn the_registry_goes_on_while_a_bot_journals_an_edit() {
    let dir = tempfile::tempdir().expect("a directory");
    let arbiter = Arbiter::new();
    let registry = registry(dir.path(), &arbiter);
    let (view, _) = within(registry.send(CreateBot(new_bot("42"))))
        .await
        .expect("delivered")
        .expect("listed");

    let release = hold(&arbiter);
    let edit = registry.send(UpdateBot(
        view.listing.id,
        json(serde_json::json!({"short_description": "Edited while busy"})),
    ));
    let edit = actix_web::rt::spawn(edit);
    let profile = within(registry.send(CreateProfile(json(
        serde_json::json!({"username": "someone"}),
    ))))
    .await
    .expect("delivered");
    assert!(profile.is_ok(), "{profile:?}");
    assert!(!edit.is_finished());

    drop(release);
    let edited = within(edit).await.expect("ran").expect("delivered");
    assert_eq!(
        edited.expect("edited").listing.short_description.as_str(),
        "Edited while busy"
    );
    arbiter.stop();
}

#[actix_web::test]
async fn a_platform_id_given_up_by_an_edit_is_taken_only_after_that_edit_is_journaled() {
    let dir = tempfile::tempdir().expect("a directory");
    let arbiter = Arbiter::new();
    let registry = registry(dir.path(), &arbiter);
    let (moved, _) = within(registry.send(CreateBot(new_bot("42"))))
        .await
        .expect("delivered")
        .expect("listed");

    let release = hold(&arbiter);
    let edit = actix_web::rt::spawn(registry.send(UpdateBot(
        moved.listing.id,
        json(serde_json::json!({"platform_id": "43"})),
    )));
    let taker = actix_web::rt::spawn(registry.send(CreateBot(new_bot("42"))));
    // The registry runs on this thread: let it take both messages while the bot is held.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    drop(release);
    within(edit)
        .await
        .expect("ran")
        .expect("delivered")
        .expect("edited");
    let (taker, _) = within(taker)
        .await
        .expect("ran")
        .expect("delivered")
        .expect("listed once 42 was free");

    // Replay sees the edit that freed 42 before the listing that took it.
    let order: Vec<&str> = journal::list(dir.path())
        .expect("segments")
        .iter()
        .flat_map(|(_, path)| journal::read_segment(path).expect("readable").records)
        // Each is audited: the change is inside its audit record.
        .filter_map(|(_, record)| match record.change() {
            Record::BotEdited { bot, .. } if *bot == moved.listing.id => Some("edit"),
            Record::BotListed { state, .. } if state.listing.id == taker.listing.id => {
                Some("listing")
            }
            _ => None,
        })
        .collect();
    assert_eq!(order, ["edit", "listing"]);
    arbiter.stop();
}

#[actix_web::test]
async fn a_bot_delisted_during_its_edit_leaves_nothing_published() {
    let dir = tempfile::tempdir().expect("a directory");
    let arbiter = Arbiter::new();
    let (registry, directory) = registry_and_directory(dir.path(), &arbiter);
    let (bot, _) = within(registry.send(CreateBot(new_bot("42"))))
        .await
        .expect("delivered")
        .expect("listed");
    let id = bot.listing.id;

    let release = hold(&arbiter);
    let edit = actix_web::rt::spawn(registry.send(UpdateBot(
        id,
        json(serde_json::json!({"platform_id": "43"})),
    )));
    let delisting = actix_web::rt::spawn(registry.send(DelistBot(id)));
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    drop(release);
    let _ = within(edit).await;
    within(delisting)
        .await
        .expect("ran")
        .expect("delivered")
        .expect("delisted");
    assert!(directory.resolve("42").is_none());
    assert!(directory.resolve("43").is_none());
    assert!(directory.get(id).is_none());
    arbiter.stop();
}

/// A loaded state large enough to be prepared on several threads, its actors spread over three
/// arbiters: each bot's handle reaches the actor of its own state, and every bot is published.
#[actix_web::test]
async fn a_loaded_state_gives_each_bot_the_actor_of_its_own_state() {
    let dir = tempfile::tempdir().expect("a directory");
    let arbiters = [Arbiter::new(), Arbiter::new(), Arbiter::new()];
    let (registry, directory) = registry_over(dir.path(), &arbiters.iter().collect::<Vec<_>>());
    let size = crate::demo::DemoSize {
        seed: 5,
        bots: 5_000,
        profiles: 50,
        voters: 2_000,
        votes: 10_000,
    };
    let state = crate::demo::build(Timestamp::from_millis(1_790_000_000_000), &size).state;
    let expected: Vec<(BotId, u64, bool)> = state
        .bots
        .iter()
        .map(|bot| {
            let s = &bot.state;
            (s.listing.id, s.votes.total, s.listing.status.is_public())
        })
        .collect();
    within(registry.send(LoadState { state }))
        .await
        .expect("loaded");
    let public = expected.iter().filter(|(_, _, public)| *public).count();
    assert_eq!(directory.len(), public);
    for (id, votes, _) in expected {
        let handle = directory.managed(id).expect("published");
        assert_eq!(handle.view().vote_count, votes);
        let read = within(handle.addr.send(crate::actors::bot::ReadState))
            .await
            .expect("its actor answers");
        assert_eq!(
            read.listing.id, id,
            "the handle reaches its own bot's actor"
        );
        assert_eq!(read.votes.total, votes);
    }
    for arbiter in arbiters {
        arbiter.stop();
    }
}
