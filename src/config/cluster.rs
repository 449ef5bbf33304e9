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
    /// Messages the node's consumer never gets (`--test-missing-messages`, tests only).
    pub missing: Option<MissingMessages>,
    /// When the writer's renewals fail on purpose (`--test-lease-blackout`, tests only).
    pub blackout: Option<Blackout>,
    /// The follower never reads the lease's holder (`--test-lease-unread`, tests only).
    pub lease_unread: bool,
    /// The consumers the stream allows when this node creates it (`--test-max-consumers`,
    /// tests only; JetStream's default otherwise).
    pub max_consumers: Option<i32>,
}

/// `AFTER:FOR` in milliseconds: a window, counted from taking the lease, in which a test
/// makes every renewal fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blackout {
    pub after: Duration,
    pub lasts: Duration,
}

impl Blackout {
    pub fn covers(&self, since_taken: Duration) -> bool {
        self.after <= since_taken && since_taken < self.after + self.lasts
    }
}

impl std::str::FromStr for Blackout {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match two_numbers(text, ':') {
            Some((after, lasts)) => Ok(Self {
                after: Duration::from_millis(after),
                lasts: Duration::from_millis(lasts),
            }),
            None => Err(format!("expected AFTER:FOR in milliseconds, got {text:?}")),
        }
    }
}

/// `A-B`: stream sequences a test makes the node's consumer pass over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MissingMessages {
    pub first: u64,
    pub last: u64,
}

impl MissingMessages {
    pub fn contains(&self, seq: u64) -> bool {
        (self.first..=self.last).contains(&seq)
    }
}

/// `A<separator>B`, two whole numbers (the test flags' values).
fn two_numbers(text: &str, separator: char) -> Option<(u64, u64)> {
    let (a, b) = text.split_once(separator)?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

impl std::str::FromStr for MissingMessages {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match two_numbers(text, '-') {
            Some((first, last)) if 0 < first && first <= last => Ok(Self { first, last }),
            _ => Err(format!("expected A-B with 0 < A <= B, got {text:?}")),
        }
    }
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
            missing: args.test_missing_messages,
            blackout: args.test_lease_blackout,
            lease_unread: args.test_lease_unread,
            max_consumers: args.test_max_consumers,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_flags_read_their_two_numbers_and_refuse_the_rest() {
        let missing: MissingMessages = "4-6".parse().expect("parses");
        assert!(missing.contains(4) && missing.contains(6) && !missing.contains(7));
        for bad in ["6-4", "0-1", "4", "a-b", "4:6"] {
            assert!(bad.parse::<MissingMessages>().is_err(), "{bad}");
        }
        let blackout: Blackout = "4000:4500".parse().expect("parses");
        assert!(!blackout.covers(Duration::from_millis(3999)));
        assert!(blackout.covers(Duration::from_millis(4000)));
        assert!(!blackout.covers(Duration::from_millis(8500)));
        assert!("4000-4500".parse::<Blackout>().is_err());
    }
}
