//! The settings of cluster mode (`serve --replicate`, docs/CLUSTER.md).

use std::time::Duration;

use super::{Secret, ServeArgs};

/// What `--replicate` and its companions set.
#[derive(Clone, Debug)]
pub struct ClusterSettings {
    pub servers: String,
    pub node_id: Option<String>,
    pub advertise_url: Option<String>,
    pub prefix: String,
    pub lease_ttl: Duration,
    pub token: Secret,
    pub role: Role,
    /// How long a batch is retried (same message, same headers) before the writer gives up
    /// (`--publish-deadline`).
    pub publish_deadline: Duration,
    /// How long a waiting read waits for this node to apply the sequence it asks for
    /// (`--min-seq-wait-ms`).
    pub min_seq_wait: Duration,
    /// How far behind the stream a node may be before its reads answer 503 `replica_behind`
    /// unless the client allows stale reads (`--max-lag-ms`).
    pub max_lag: Duration,
}

/// `--role`: `auto` takes the lease when it is free; `follower` never does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    Auto,
    Follower,
}

impl ClusterSettings {
    /// `None` without `--replicate` (single-node mode) or without the cluster token (which
    /// `ServeArgs::cluster_token` reads, from the flag or its file form).
    pub fn from_args(args: &ServeArgs) -> Option<Self> {
        let token = args.cluster_token().ok().flatten()?;
        Self::with_token(args, token)
    }

    /// As [`Self::from_args`], with the cluster token already read.
    pub fn with_token(args: &ServeArgs, token: Secret) -> Option<Self> {
        let servers = args.replicate.clone()?;
        Some(Self {
            servers,
            node_id: args.node_id.clone(),
            advertise_url: args.advertise_url.clone(),
            prefix: args.cluster_prefix.clone(),
            lease_ttl: Duration::from_secs(args.lease_ttl),
            token,
            role: args.role,
            publish_deadline: Duration::from_secs(args.publish_deadline),
            min_seq_wait: Duration::from_millis(args.min_seq_wait_ms),
            max_lag: Duration::from_millis(args.max_lag_ms),
        })
    }

    pub fn stream_name(&self) -> String {
        format!("{}_journal", self.prefix)
    }

    pub fn subject(&self) -> String {
        format!("{}.journal", self.prefix)
    }

    pub fn lease_bucket(&self) -> String {
        format!("{}_lease", self.prefix)
    }

    pub fn snapshot_bucket(&self) -> String {
        format!("{}_snapshots", self.prefix)
    }
}
