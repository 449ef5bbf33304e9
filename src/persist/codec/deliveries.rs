//! How a bot's webhook deliveries are stored, in snapshots and in the journal's records.
//!
//! A delivery is stored as what its bodies are made of (the bot as the event names it, and for
//! a vote the voter and the counts), never as the bodies; those of earlier builds, which stored
//! both bodies, read as they are and are written back the same way. The list is stored newest
//! first, with the count of deliveries given up for a full outbox.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use crate::domain::ids::{BotId, Snowflake};
use crate::domain::time::Timestamp;
use crate::domain::votes::{VoteCounts, Voter};
use crate::domain::webhook::{Content, Deliveries, Delivery, Event, EventBot, RenderedBodies};
use crate::domain::weekend::{self, Weight};

/// How deliveries are stored: newest first, and the count of those given up for a full outbox.
#[derive(Serialize)]
struct StoredDeliveries<'a> {
    items: Newest<'a>,
    given_up_full: u64,
}

struct Newest<'a>(&'a Deliveries);

impl Serialize for Newest<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.newest_first())
    }
}

#[derive(Deserialize)]
struct ReadDeliveries {
    items: Vec<Delivery>,
    #[serde(default)]
    given_up_full: u64,
}

impl Serialize for Deliveries {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StoredDeliveries {
            items: Newest(self),
            given_up_full: self.given_up_full(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Deliveries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = ReadDeliveries::deserialize(deserializer)?;
        Ok(Deliveries::stored(read.items, read.given_up_full))
    }
}

/// What a delivery is made of, as files store it: the bot as the event names it, and for a vote
/// the voter and the counts.
#[derive(Serialize, Deserialize)]
struct StoredContent {
    bot: BotId,
    platform_id: Snowflake,
    vote: Option<StoredVote>,
}

#[derive(Serialize, Deserialize)]
struct StoredVote {
    voter: Arc<Voter>,
    vote_count: u64,
    monthly_vote_count: u64,
    /// Left out when 1 (and read as 1 from files of earlier builds).
    #[serde(
        default = "weekend::single",
        skip_serializing_if = "weekend::is_single"
    )]
    weight: Weight,
}

/// Stored as a sequence: `[id, event, created_at, content, state, attempts, last_status,
/// last_error, next_attempt_at, delivered_at]`. Deliveries read from files of earlier builds,
/// which stored both bodies where `content` is (`..., created_at, signed_body, legacy_body,
/// state, ...`), are written back the same way.
impl Serialize for Delivery {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let rendered = match &self.content {
            Content::Rendered(bodies) => Some(bodies),
            _ => None,
        };
        let mut seq = serializer.serialize_seq(Some(10 + usize::from(rendered.is_some())))?;
        seq.serialize_element(&self.id)?;
        seq.serialize_element(&self.event())?;
        seq.serialize_element(&self.created_at)?;
        match &self.content {
            Content::Rendered(bodies) => {
                seq.serialize_element(&bodies.signed)?;
                seq.serialize_element(&bodies.legacy)?;
            }
            Content::Vote {
                bot,
                voter,
                counts,
                weight,
            } => seq.serialize_element(&StoredContent {
                bot: bot.id,
                platform_id: bot.platform_id,
                vote: Some(StoredVote {
                    voter: Arc::clone(voter),
                    vote_count: counts.vote_count,
                    monthly_vote_count: counts.monthly_vote_count,
                    weight: *weight,
                }),
            })?,
            Content::Test { bot } => seq.serialize_element(&StoredContent {
                bot: bot.id,
                platform_id: bot.platform_id,
                vote: None,
            })?,
        }
        seq.serialize_element(&self.state)?;
        seq.serialize_element(&self.attempts)?;
        seq.serialize_element(&self.last_status)?;
        seq.serialize_element(&self.last_error)?;
        seq.serialize_element(&self.next_attempt_at)?;
        seq.serialize_element(&self.delivered_at)?;
        seq.end()
    }
}

/// The fourth element of a stored delivery: the signed body (earlier builds) or the content.
enum BodyOrContent {
    Body(String),
    Content(StoredContent),
}

impl<'de> Deserialize<'de> for BodyOrContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = BodyOrContent;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a delivery's body or content")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<BodyOrContent, E> {
                Ok(BodyOrContent::Body(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<BodyOrContent, E> {
                Ok(BodyOrContent::Body(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<BodyOrContent, A::Error> {
                StoredContent::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(BodyOrContent::Content)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl<'de> Deserialize<'de> for Delivery {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Delivery;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a webhook delivery")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Delivery, A::Error> {
                use serde::de::Error;
                fn next<'de, T: Deserialize<'de>, A: serde::de::SeqAccess<'de>>(
                    seq: &mut A,
                ) -> Result<T, A::Error> {
                    seq.next_element()?
                        .ok_or_else(|| A::Error::custom("a webhook delivery cut short"))
                }
                let id: Uuid = next(&mut seq)?;
                let event: Event = next(&mut seq)?;
                let created_at: Timestamp = next(&mut seq)?;
                let content = match (next(&mut seq)?, event) {
                    (BodyOrContent::Body(signed), event) => {
                        Content::Rendered(Arc::new(RenderedBodies {
                            event,
                            signed,
                            legacy: next(&mut seq)?,
                        }))
                    }
                    (BodyOrContent::Content(stored), Event::VoteCreate) => {
                        let vote = stored.vote.ok_or_else(|| {
                            A::Error::custom("a vote's delivery without its vote")
                        })?;
                        Content::Vote {
                            bot: EventBot {
                                id: stored.bot,
                                platform_id: stored.platform_id,
                            },
                            voter: vote.voter,
                            counts: VoteCounts {
                                vote_count: vote.vote_count,
                                monthly_vote_count: vote.monthly_vote_count,
                            },
                            weight: vote.weight,
                        }
                    }
                    (BodyOrContent::Content(stored), Event::Test) => {
                        if stored.vote.is_some() {
                            return Err(A::Error::custom("a test event's delivery with a vote"));
                        }
                        Content::Test {
                            bot: EventBot {
                                id: stored.bot,
                                platform_id: stored.platform_id,
                            },
                        }
                    }
                };
                Ok(Delivery {
                    id,
                    created_at,
                    content,
                    state: next(&mut seq)?,
                    attempts: next(&mut seq)?,
                    last_status: next(&mut seq)?,
                    last_error: next(&mut seq)?,
                    next_attempt_at: next(&mut seq)?,
                    delivered_at: next(&mut seq)?,
                })
            }
        }
        deserializer.deserialize_seq(Visitor)
    }
}
