//! The domain: identifiers, validated values, bots, profiles, votes and search.
//!
//! Nothing here does I/O, speaks HTTP or knows actors: the API turns these values into requests
//! and answers, the actors own them. (Their OpenAPI schemas are derived here, with `utoipa`,
//! beside the validation they describe.) A value of these types has passed its validation.

pub mod audit;
pub mod badge;
pub mod bot;
pub mod feed;
pub mod growth;
pub mod ids;
pub mod listing;
pub mod patch;
pub mod people;
pub mod profile;
pub mod project;
pub mod query;
pub mod render;
pub mod reviews;
pub mod search;
pub mod staff;
pub mod stats;
pub mod text;
pub mod time;
pub mod votes;
pub mod webhook;
pub mod weekend;

use time::Timestamp;

/// Why the directory refused a request, in the domain's words; the API maps each to a status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// No such bot or profile: names what was looked for.
    NotFound(String),
    /// A unique field (platform id, username) is taken.
    Conflict(String),
    /// A value is valid on its own but not in this directory (an owner that does not exist).
    Invalid(String),
    /// The user's last vote for this bot is still active until `retry_at`.
    AlreadyVoted { retry_at: Timestamp },
    /// The change could not be made durable; the service refuses writes from now on.
    NotStored(String),
    /// The asker may not do this (not an owner, not the first owner): says why.
    Forbidden(String),
    /// The change failed after it reached the disk (or the cluster's stream): it may be kept,
    /// and shown after a restart. A client retries; a retried vote is then 409.
    MaybeStored(String),
    /// Too soon after the last change of its kind (an announcement within 4 hours): allowed
    /// again in `retry_after` seconds.
    TooSoon { retry_after: u64, message: String },
    /// Cluster mode: the writer sent the change and lost its role before it knew whether the
    /// stream stored it. It may have been: clients retry it, never read it as "not stored".
    OutcomeUnknown(String),
}
