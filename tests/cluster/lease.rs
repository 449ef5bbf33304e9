//! Issue 40, point 1: a writer keeps its lease through a renewal whose answer was lost. Seen in
//! `a_nats_server_killed_under_writes_loses_nothing`: a renewal timed out while a nats-server
//! died, yet was stored; the next renewal, sent with the older revision, found the key moved on
//! to the writer's own value, took it for another node's and gave the role up (exit 5).

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, kv};
use botlist::cluster::lease::{Holder, Lease, Renewal, KEY};

use super::harness::{nats_or_skip, NatsCluster};

/// A lease bucket like a node's (three replicas, entries living one TTL), once JetStream answers.
async fn bucket(urls: &str, ttl: Duration) -> kv::Store {
    let servers: Vec<String> = urls.split(',').map(str::to_owned).collect();
    let client = async_nats::ConnectOptions::new()
        .connect(servers.as_slice())
        .await
        .expect("connected");
    let js = jetstream::new(client);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let made = js
            .create_key_value(kv::Config {
                bucket: "lease_test".into(),
                history: 1,
                max_age: ttl,
                storage: jetstream::stream::StorageType::File,
                num_replicas: 3,
                ..Default::default()
            })
            .await;
        match made {
            Ok(store) => return store,
            Err(error) => {
                assert!(Instant::now() < deadline, "no bucket: {error}");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
}

#[test]
fn a_renewal_stored_though_its_answer_was_lost_keeps_the_lease() {
    let Some(binary) = nats_or_skip("a_renewal_stored_though_its_answer_was_lost_keeps_the_lease")
    else {
        return;
    };
    let nats = NatsCluster::start(&binary);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let ttl = Duration::from_secs(10);
        let store = bucket(&nats.urls(), ttl).await;
        let me = Holder {
            node_id: "node0".into(),
            url: "http://127.0.0.1:1".into(),
        };
        let mut lease = Lease::try_take(&store, &me, ttl).await.expect("taken");

        // A renewal stored whose answer never came back: the key holds the holder's own bytes
        // at a revision the holder has not seen.
        let entry = store.entry(KEY).await.expect("read").expect("held");
        store
            .update(KEY, entry.value.clone(), entry.revision)
            .await
            .expect("stored");
        assert!(
            matches!(lease.renew().await, Renewal::Failed(_)),
            "the holder's own stored renewal taken for another node's"
        );
        assert!(
            matches!(lease.renew().await, Renewal::Renewed),
            "not renewed from the revision it found"
        );

        // Another process of the same node (same id, same URL) is another holder.
        let entry = store.entry(KEY).await.expect("read").expect("held");
        let other = serde_json::to_vec(&serde_json::json!({
            "node_id": me.node_id, "url": me.url, "claim": "another process"
        }))
        .expect("json");
        store
            .update(KEY, other.into(), entry.revision)
            .await
            .expect("stored");
        assert!(matches!(lease.renew().await, Renewal::TakenOver(_)));
    });
}
