//! The damage matrix over what a cluster node starts from: every file of a node's snapshot
//! directory, and each snapshot uploaded to the object store, flipped, cut and removed, one at
//! a time. A node started on it either exits with code 2 naming what is damaged, or serves every
//! acknowledged write.

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::AsyncReadExt;

use super::harness::{nats_or_skip, writer_of, NatsCluster, Node, ADMIN};

#[derive(Clone, Copy, Debug)]
enum Damage {
    Flip,
    Cut,
    Remove,
}

const DAMAGES: [Damage; 3] = [Damage::Flip, Damage::Cut, Damage::Remove];

fn damaged(bytes: &[u8], how: Damage) -> Option<Vec<u8>> {
    match how {
        Damage::Remove => None,
        Damage::Cut => Some(bytes[..bytes.len() / 2].to_vec()),
        Damage::Flip => {
            let mut flipped = bytes.to_vec();
            if let Some(byte) = flipped.get_mut(bytes.len() / 2) {
                *byte ^= 0x5a;
            }
            Some(flipped)
        }
    }
}

fn copy_of(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(from).expect("readable") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("a name");
        std::fs::copy(&path, to.path().join(name)).expect("copied");
    }
    to
}

/// Starts a node on `dir` and checks the rule: exit 2 naming `what`, or every vote served (then
/// gives the node's log).
fn start_and_check(
    name: &str,
    nats: &str,
    dir: tempfile::TempDir,
    what: &str,
    bot: &str,
    votes: u64,
) -> Option<String> {
    match Node::try_start_on(name, nats, dir) {
        Ok(node) => {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let served = node
                    .get(&format!("/bots/{bot}"))
                    .ok()
                    .filter(|r| r.status() == StatusCode::OK)
                    .and_then(|r| r.json::<serde_json::Value>().ok())
                    .and_then(|v| v["vote_count"].as_u64());
                if served == Some(votes) {
                    eprintln!("{what}: served every acknowledged write");
                    return Some(node.log());
                }
                assert!(
                    Instant::now() < deadline,
                    "{what}: the node serves {served:?} of {votes} votes\n{}",
                    node.log()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Err((status, log)) => {
            assert_eq!(status.code(), Some(2), "{what}: {log}");
            assert!(
                log.contains(what),
                "{what}: the refusal does not name it: {log}"
            );
            eprintln!("{what}: refused, naming it");
            None
        }
    }
}

/// The uploaded snapshots, by object name, with their bytes and metadata.
struct Uploads {
    runtime: tokio::runtime::Runtime,
    store: async_nats::jetstream::object_store::ObjectStore,
}

impl Uploads {
    fn open(nats: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let store = runtime.block_on(async {
            let first = nats.split(',').next().expect("a url");
            let client = async_nats::connect(first).await.expect("connected");
            async_nats::jetstream::new(client)
                .get_object_store("botlist_snapshots")
                .await
                .expect("the snapshot bucket")
        });
        Self { runtime, store }
    }

    fn list(&self) -> Vec<(String, Vec<u8>, std::collections::HashMap<String, String>)> {
        self.runtime.block_on(async {
            let mut names = Vec::new();
            let mut list = self.store.list().await.expect("listed");
            while let Some(info) = list.next().await {
                let info = info.expect("an object");
                names.push((info.name.clone(), info.metadata.clone()));
            }
            let mut found = Vec::new();
            for (name, metadata) in names {
                let mut object = self.store.get(&name).await.expect("an object");
                let mut bytes = Vec::new();
                object.read_to_end(&mut bytes).await.expect("read");
                found.push((name, bytes, metadata));
            }
            found.sort_by(|a, b| a.0.cmp(&b.0));
            found
        })
    }

    fn put(
        &self,
        name: &str,
        bytes: Option<&[u8]>,
        metadata: &std::collections::HashMap<String, String>,
    ) {
        self.runtime.block_on(async {
            let _ = self.store.delete(name).await;
            if let Some(mut bytes) = bytes {
                let meta = async_nats::jetstream::object_store::ObjectMetadata {
                    name: name.to_owned(),
                    metadata: metadata.clone(),
                    ..Default::default()
                };
                self.store.put(meta, &mut bytes).await.expect("put");
            }
        });
    }
}

#[test]
fn a_damaged_snapshot_of_a_node_or_an_upload_never_starts_a_smaller_node() {
    let Some(binary) =
        nats_or_skip("a_damaged_snapshot_of_a_node_or_an_upload_never_starts_a_smaller_node")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let urls = nats.urls();
    let nodes: Vec<Node> = (0..2)
        .map(|i| Node::start(&format!("node{i}"), &urls, &[]))
        .collect();
    let writer = &nodes[writer_of(&nodes, Duration::from_secs(30))];
    let (bot, _) = writer.create_bot(77);
    let mut votes = 0u64;
    // Three snapshots: each is uploaded, the newest two are kept, and the stream is purged
    // below the older one's mark, so a node on an empty directory needs an upload.
    for _ in 0..3 {
        for _ in 0..3 {
            votes += 1;
            let status = writer
                .post(
                    &format!("/admin/bots/{bot}/votes"),
                    ADMIN,
                    &json!({"user_id": (600_000_000_000_000_000 + votes).to_string(), "username": "v", "avatar": null}),
                )
                .expect("sent")
                .status();
            assert_eq!(status, StatusCode::CREATED);
        }
        let status = writer
            .post("/admin/snapshot", ADMIN, &json!({}))
            .expect("sent")
            .status();
        assert_eq!(status, StatusCode::OK);
    }
    let uploads = Uploads::open(&urls);
    let deadline = Instant::now() + Duration::from_secs(20);
    while uploads.list().len() < 2 {
        assert!(Instant::now() < deadline, "the snapshots were not uploaded");
        std::thread::sleep(Duration::from_millis(100));
    }

    // This node's own snapshot directory, each file damaged in turn.
    let files: Vec<String> = std::fs::read_dir(writer.dir())
        .expect("readable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "botlist.lock")
        .collect();
    assert!(files.iter().any(|f| f.ends_with(".mark")), "{files:?}");
    let mut started = 0;
    for file in &files {
        for how in DAMAGES {
            let copy = copy_of(writer.dir());
            let path = copy.path().join(file);
            match damaged(&std::fs::read(&path).expect("readable"), how) {
                Some(bytes) => std::fs::write(&path, bytes).expect("written"),
                None => std::fs::remove_file(&path).expect("removed"),
            }
            started += 1;
            start_and_check(&format!("copy{started}"), &urls, copy, file, &bot, votes);
        }
    }

    // Each upload damaged in turn, for a node on an empty directory; then put back.
    let all = uploads.list();
    let newest = all.last().map(|(name, _, _)| name.clone());
    for (name, bytes, metadata) in all {
        for how in DAMAGES {
            uploads.put(&name, damaged(&bytes, how).as_deref(), &metadata);
            started += 1;
            let empty = tempfile::tempdir().expect("temp dir");
            let log = start_and_check(&format!("fresh{started}"), &urls, empty, &name, &bot, votes);
            if let (Some(log), Damage::Flip | Damage::Cut, true) =
                (log, how, Some(&name) == newest.as_ref())
            {
                // The newest upload, damaged, was read, named and passed over for the older one.
                assert!(log.contains("cannot be used"), "{name} {how:?}: {log}");
            }
            uploads.put(&name, Some(&bytes), &metadata);
        }
    }
}
