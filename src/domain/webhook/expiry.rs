//! `vote.expired` (CONTRACT section 14): the moment a voter's 12-hour window ends, so a bot can
//! tell the voter they may vote again. One [`EventKind`] implementation and one row of the
//! `event_kinds!` table in `events.rs`.
//!
//! Which expiries are due is the bot's check window's (`domain/votes`, its `announced` mark);
//! the record that announces them, the mark and the deliveries together, is
//! `Record::VotesExpired`, made by the bot's actor when the expiry timer (`webhooks/expiry.rs`)
//! wakes it. The kind was never sent by an earlier build, so it has no classic body: the
//! `legacy` format sends botlist's own (`signed`) body for it, and docs/API.md says so.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use super::events::{numeric_id, Event, EventKind, Head, Wants};
use super::EventBot;
use crate::domain::ids::Snowflake;
use crate::domain::time::Timestamp;
use crate::domain::votes::vote_window;

/// One vote whose window ended, as `Record::VotesExpired` journals it: the voter, when they
/// voted, and the delivery it queues (none when the bot has no `webhook_url`: the vote stream
/// is still told).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpiredVote {
    pub user: Snowflake,
    pub voted_at: Timestamp,
    pub delivery: Option<Uuid>,
}

impl ExpiredVote {
    /// When the vote's window ended: when the voter may vote again.
    pub fn expired_at(&self) -> Timestamp {
        self.voted_at.plus(vote_window())
    }
}

/// `vote.expired`: the voter `user`'s vote of `voted_at` stopped counting at `voted_at` plus
/// the window; they may vote again.
#[derive(Clone, Debug, PartialEq)]
pub struct VoteExpired {
    pub bot: EventBot,
    pub user: Snowflake,
    pub voted_at: Timestamp,
}

/// What a `vote.expired` delivery stores beside the bot: `[user, voted_at]`.
#[derive(Serialize, Deserialize)]
pub struct StoredExpiry(Snowflake, Timestamp);

impl VoteExpired {
    pub fn of(bot: EventBot, vote: &ExpiredVote) -> Self {
        Self {
            bot,
            user: vote.user,
            voted_at: vote.voted_at,
        }
    }

    /// The event's own data, the same in every format but `v1`, and on the vote stream.
    pub fn data(&self) -> Value {
        json!({
            "bot": { "id": self.bot.id, "platform_id": self.bot.platform_id },
            "user": { "id": self.user },
            "voted_at": self.voted_at,
            "expired_at": self.voted_at.plus(vote_window()),
        })
    }
}

impl EventKind for VoteExpired {
    type Stored = StoredExpiry;

    fn bot(&self) -> EventBot {
        self.bot
    }

    fn stored(&self) -> StoredExpiry {
        StoredExpiry(self.user, self.voted_at)
    }

    fn from_stored(bot: EventBot, StoredExpiry(user, voted_at): StoredExpiry) -> Self {
        Self {
            bot,
            user,
            voted_at,
        }
    }

    fn signed(&self, head: Head) -> Value {
        json!({
            "type": Event::VoteExpired.name(),
            "id": head.id,
            "created_at": head.created_at,
            "data": self.data(),
        })
    }

    /// No classic body exists for this kind: botlist's own.
    fn legacy(&self, head: Head) -> Value {
        self.signed(head)
    }

    fn v1(&self, head: Head) -> Value {
        json!({
            "type": Event::VoteExpired.name(),
            "data": {
                "id": numeric_id(head.id),
                "created_at": head.created_at,
                "voted_at": self.voted_at,
                "expired_at": self.voted_at.plus(vote_window()),
                "project": super::events::v1_project(&self.bot),
                "user": { "id": self.user, "platform_id": self.user },
            }
        })
    }

    fn standard(&self, head: Head) -> Value {
        json!({
            "type": Event::VoteExpired.name(),
            "timestamp": head.created_at,
            "data": self.data(),
        })
    }

    fn receives(wants: &Wants) -> bool {
        wants.chose(Event::VoteExpired)
    }

    const ON_STREAM: bool = true;

    fn stream_data(&self) -> Value {
        self.data()
    }
}

/// The body of a `vote.expired` delivery in the `signed` format (the `legacy` format sends it
/// too; `standard` sends `type`, `timestamp` and the same `data`), for the OpenAPI document.
/// Never built: the bodies are [`VoteExpired`]'s.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct VoteExpiredEvent {
    /// Always `vote.expired`.
    #[schema(example = "vote.expired")]
    r#type: String,
    /// The delivery's id, the same on every attempt.
    id: Uuid,
    /// When the announcement was made: the window's end, or a start after it when the server
    /// was down at that moment.
    created_at: chrono::DateTime<chrono::Utc>,
    data: VoteExpiredData,
}

/// What a `vote.expired` event says, in every format but `v1` and on the vote stream.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct VoteExpiredData {
    bot: VoteExpiredBot,
    user: VoteExpiredUser,
    /// When the vote was cast.
    voted_at: chrono::DateTime<chrono::Utc>,
    /// When its 12 hours ended: from this moment the user may vote again.
    expired_at: chrono::DateTime<chrono::Utc>,
}

/// The bot the vote was for.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct VoteExpiredBot {
    id: Uuid,
    /// The bot's platform id (numeric text).
    platform_id: String,
}

/// The voter, by platform id (numeric text).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct VoteExpiredUser {
    id: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::BotId;

    fn expiry() -> VoteExpired {
        VoteExpired {
            bot: EventBot {
                id: BotId::new_random(),
                platform_id: Snowflake::from_u64(7),
            },
            user: Snowflake::from_u64(42),
            voted_at: Timestamp::from_millis(1_790_000_000_000),
        }
    }

    #[test]
    fn every_format_names_the_voter_and_when_the_window_ended() {
        let event = expiry();
        let head = Head {
            id: Uuid::new_v4(),
            created_at: Timestamp::from_millis(1_790_043_200_000),
        };
        for body in [event.signed(head), event.standard(head)] {
            assert_eq!(body["type"], "vote.expired");
            assert_eq!(body["data"]["user"]["id"], "42");
            assert_eq!(body["data"]["expired_at"], "2026-09-22T02:13:20.000Z");
        }
        let v1 = event.v1(head);
        assert_eq!(v1["data"]["project"]["platform_id"], "7");
        assert_eq!(v1["data"]["user"]["platform_id"], "42");
    }

    #[test]
    fn what_it_stores_reads_back() {
        let event = expiry();
        let bytes = rmp_serde::to_vec(&event.stored()).expect("encodes");
        let stored: StoredExpiry = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(VoteExpired::from_stored(event.bot, stored), event);
    }
}
