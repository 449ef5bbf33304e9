//! How a bot's webhook deliveries are stored, in snapshots and in the journal's records.
//!
//! A delivery is stored as what its bodies are made of (the bot as the event names it, and what
//! its kind stores: for a vote the voter and the counts), never as the bodies, written once for
//! every kind (`domain/webhook/events.rs`); those of earlier builds, which stored
//! both bodies, read as they are and are written back the same way. The list is stored newest
//! first, with the count of deliveries given up for a full outbox.

use std::sync::Arc;

use serde::de::{DeserializeOwned, DeserializeSeed, Error as _, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use crate::domain::ids::{BotId, Snowflake};
use crate::domain::time::Timestamp;
use crate::domain::webhook::{
    Content, Deliveries, Delivery, Event, EventBot, EventKind, KindVisitor, RenderedBodies,
    StoredReader,
};

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

/// What a delivery is made of, as files store it: the bot as the event names it, and what its
/// kind stores (`EventKind::Stored`: for a vote the voter and the counts, for a test event
/// nothing). Named `vote` because the first kinds stored a vote or nothing there.
#[derive(Serialize)]
struct StoredContent<T> {
    bot: BotId,
    platform_id: Snowflake,
    #[serde(rename = "vote")]
    stored: T,
}

/// Writes a kind's content as one element of a delivery's sequence.
struct Store<'a, S>(&'a mut S);

impl<S: SerializeSeq> KindVisitor for Store<'_, S> {
    type Output = Result<(), S::Error>;

    fn visit<K: EventKind>(self, kind: &K) -> Self::Output {
        let bot = kind.bot();
        self.0.serialize_element(&StoredContent {
            bot: bot.id,
            platform_id: bot.platform_id,
            stored: kind.stored(),
        })
    }
}

/// Stored as a sequence: `[id, event, created_at, content, state, attempts, last_status,
/// last_error, next_attempt_at, delivered_at]`. Deliveries read from files of earlier builds,
/// which stored both bodies where `content` is (`..., created_at, signed_body, legacy_body,
/// state, ...`), are written back the same way.
impl Serialize for Delivery {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let rendered = matches!(self.content, Content::Rendered(_));
        let mut seq = serializer.serialize_seq(Some(10 + usize::from(rendered)))?;
        seq.serialize_element(&self.id)?;
        seq.serialize_element(&self.event())?;
        seq.serialize_element(&self.created_at)?;
        match self.content.visit(Store(&mut seq)) {
            Ok(stored) => stored?,
            Err(bodies) => {
                seq.serialize_element(&bodies.signed)?;
                seq.serialize_element(&bodies.legacy)?;
            }
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
    Content(Content),
}

/// Reads the fourth element of a delivery of `event`.
struct ContentOf(Event);

impl<'de> DeserializeSeed<'de> for ContentOf {
    type Value = BodyOrContent;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<BodyOrContent, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContentOf {
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

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BodyOrContent, A::Error> {
        let bot = EventBot {
            id: next(&mut seq)?,
            platform_id: next(&mut seq)?,
        };
        Content::read_stored(self.0, bot, Next(&mut seq)).map(BodyOrContent::Content)
    }
}

/// The next element of a sequence, which must be there.
fn next<'de, T: Deserialize<'de>, A: SeqAccess<'de>>(seq: &mut A) -> Result<T, A::Error> {
    seq.next_element()?
        .ok_or_else(|| A::Error::custom("a webhook delivery cut short"))
}

/// A kind's stored part, read as the next element.
struct Next<'a, A>(&'a mut A);

impl<'de, A: SeqAccess<'de>> StoredReader<A::Error> for Next<'_, A> {
    fn read<T: DeserializeOwned>(self) -> Result<T, A::Error> {
        next(self.0)
    }
}

impl<'de> Deserialize<'de> for Delivery {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DeliveryVisitor;
        impl<'de> Visitor<'de> for DeliveryVisitor {
            type Value = Delivery;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a webhook delivery")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Delivery, A::Error> {
                let id: Uuid = next(&mut seq)?;
                let event: Event = next(&mut seq)?;
                let created_at: Timestamp = next(&mut seq)?;
                let content = match seq.next_element_seed(ContentOf(event))? {
                    Some(BodyOrContent::Content(content)) => content,
                    Some(BodyOrContent::Body(signed)) => {
                        Content::Rendered(Arc::new(RenderedBodies {
                            event,
                            signed,
                            legacy: next(&mut seq)?,
                        }))
                    }
                    None => return Err(A::Error::custom("a webhook delivery cut short")),
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
        deserializer.deserialize_seq(DeliveryVisitor)
    }
}
