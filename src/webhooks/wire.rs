//! A delivery's bodies on the wire, beside the sender (`webhooks/mod.rs`) that sends them,
//! rendered from what the delivery is made of each time an attempt is sent (see
//! `domain::webhook::Delivery`): written once for every kind of event and every format. The
//! format's implementation (`domain/webhook/formats.rs`) says which body family it sends, the
//! kind's (`domain/webhook/events.rs`) what each family's body holds.

use std::borrow::Cow;

use crate::domain::webhook::{
    Delivery, EventKind, FormatVisitor, Head, KindVisitor, WebhookFormat, WireFormat,
};

/// The body an attempt of `delivery` sends in this format: the same bytes every time.
pub fn body(delivery: &Delivery, format: WebhookFormat) -> Cow<'_, str> {
    delivery.body(format)
}

/// A delivery as the wire sees it.
pub trait Wire {
    /// The body an attempt sends in this format: the same bytes every time.
    fn body(&self, format: WebhookFormat) -> Cow<'_, str>;
}

impl Wire for Delivery {
    fn body(&self, format: WebhookFormat) -> Cow<'_, str> {
        let rendered = self.content.visit(Render {
            head: self.head(),
            format,
        });
        match rendered {
            Ok(body) => Cow::Owned(body),
            // Bodies of an earlier build, which knew only `signed` and `legacy`: the format
            // says which it sends (its signature is still made at send time).
            Err(bodies) => Cow::Borrowed(format.visit(Stored(bodies))),
        }
    }
}

/// A kind's body in one format: the kind from the delivery's content, then the format from
/// its tag.
struct Render {
    head: Head,
    format: WebhookFormat,
}

impl KindVisitor for Render {
    type Output = String;

    fn visit<K: EventKind>(self, kind: &K) -> String {
        self.format.visit(Body {
            kind,
            head: self.head,
        })
    }
}

/// One kind's body in the format it is visited with.
struct Body<'a, K> {
    kind: &'a K,
    head: Head,
}

impl<K: EventKind> FormatVisitor for Body<'_, K> {
    type Output = String;

    fn visit<F: WireFormat>(self) -> String {
        F::body(self.kind, self.head).to_string()
    }
}

/// Which of an earlier build's stored bodies the format it is visited with sends.
struct Stored<'a>(&'a crate::domain::webhook::RenderedBodies);

impl<'a> FormatVisitor for Stored<'a> {
    type Output = &'a str;

    fn visit<F: WireFormat>(self) -> &'a str {
        F::stored_body(self.0)
    }
}

#[cfg(test)]
mod rendering_tests {
    use std::sync::Arc;

    use uuid::Uuid;

    use super::*;
    use crate::domain::ids::{BotId, Snowflake};
    use crate::domain::text::{HttpUrl, VoterName};
    use crate::domain::time::Timestamp;
    use crate::domain::votes::{VoteCounts, Voter};
    use crate::domain::webhook::{
        Attempt, Content, DeliveryState, Event, EventBot, MAX_PENDING, OUTBOX_FULL,
    };
    use serde::Serialize;

    fn bot() -> EventBot {
        EventBot {
            id: BotId::parse("0eb87e52-6e64-4636-be84-37bfa0718f05").expect("an id"),
            platform_id: Snowflake::from_u64(4242),
        }
    }

    fn ada() -> Arc<Voter> {
        Arc::new(Voter {
            id: Snowflake::from_u64(7),
            username: VoterName::parse("ada \"the\" <first>".to_owned()).expect("a name"),
            avatar: Some(HttpUrl::parse("https://cdn.example/a.png".to_owned()).expect("a URL")),
        })
    }

    /// What build 843a63ae rendered and journaled when this vote was taken (its journal is
    /// tests/durability/fixtures/843a63ae-journal).
    const SIGNED_843A63AE: &str = r#"{"created_at":"2026-11-23T08:45:22.410Z","data":{"bot":{"id":"0eb87e52-6e64-4636-be84-37bfa0718f05","platform_id":"4242"},"expires_at":"2026-11-23T20:45:22.410Z","monthly_vote_count":1,"user":{"avatar":"https://cdn.example/a.png","id":"7","username":"ada \"the\" <first>"},"vote_count":1,"voted_at":"2026-11-23T08:45:22.410Z"},"id":"545ef49a-8957-428a-827e-2f17c0a39b48","type":"vote.create"}"#;
    const LEGACY_843A63AE: &str =
        r#"{"bot":"4242","isWeekend":false,"query":"","type":"upvote","user":"7"}"#;

    fn at(text: &str) -> Timestamp {
        let parsed = chrono::DateTime::parse_from_rfc3339(text).expect("a time");
        Timestamp::from_datetime(parsed.with_timezone(&chrono::Utc))
    }

    fn voted() -> Delivery {
        let at = at("2026-11-23T08:45:22.410Z");
        Delivery::vote(
            Uuid::parse_str("545ef49a-8957-428a-827e-2f17c0a39b48").expect("an id"),
            bot(),
            ada(),
            at,
            VoteCounts {
                vote_count: 1,
                monthly_vote_count: 1,
            },
            1,
        )
    }

    #[test]
    fn a_weekend_vote_says_its_weight_in_both_formats_and_keeps_it_through_a_file() {
        let mut delivery = voted();
        let Content::VoteCreate(vote) = &mut delivery.content else {
            panic!("a vote");
        };
        vote.weight = 2;
        vote.counts = VoteCounts {
            vote_count: 2,
            monthly_vote_count: 2,
        };
        let signed: serde_json::Value =
            serde_json::from_str(&delivery.body(WebhookFormat::Signed)).expect("JSON");
        assert_eq!(signed["data"]["weight"], 2);
        assert_eq!(signed["data"]["vote_count"], 2);
        assert_eq!(
            delivery.body(WebhookFormat::Legacy),
            r#"{"bot":"4242","isWeekend":true,"query":"","type":"upvote","user":"7"}"#
        );
        let packed = rmp_serde::to_vec(&delivery).expect("encodes");
        let back: Delivery = crate::persist::decode(&packed).expect("decodes");
        assert_eq!(back, delivery);
        // A delivery of weight 1 is stored as earlier builds stored it.
        let single = rmp_serde::to_vec(&voted()).expect("encodes");
        assert!(single.len() < packed.len());
    }

    #[test]
    fn a_vote_renders_the_bytes_earlier_builds_stored_when_it_was_queued() {
        let delivery = voted();
        assert_eq!(delivery.body(WebhookFormat::Signed), SIGNED_843A63AE);
        assert_eq!(delivery.body(WebhookFormat::Legacy), LEGACY_843A63AE);
        assert_eq!(delivery.event(), Event::VoteCreate);
    }

    #[test]
    fn a_test_event_renders_its_bot_only() {
        let at = at("2026-11-23T08:45:22.410Z");
        let id = Uuid::parse_str("545ef49a-8957-428a-827e-2f17c0a39b48").expect("an id");
        let delivery = Delivery::test(id, bot(), at);
        assert_eq!(
            delivery.body(WebhookFormat::Signed),
            r#"{"created_at":"2026-11-23T08:45:22.410Z","data":{"bot":{"id":"0eb87e52-6e64-4636-be84-37bfa0718f05","platform_id":"4242"}},"id":"545ef49a-8957-428a-827e-2f17c0a39b48","type":"webhook.test"}"#
        );
        assert_eq!(
            delivery.body(WebhookFormat::Legacy),
            r#"{"bot":"4242","isWeekend":false,"query":"","type":"test","user":"0"}"#
        );
    }

    #[test]
    fn the_bodies_are_the_same_after_each_try_and_a_round_trip_through_a_file() {
        let mut delivery = voted();
        delivery.record(
            Attempt::Unreachable("refused".into()),
            Timestamp::from_millis(1),
        );
        delivery.record(
            Attempt::Status {
                status: 503,
                retry_after: None,
            },
            Timestamp::from_millis(2),
        );
        let packed = rmp_serde::to_vec(&delivery).expect("encodes");
        let back: Delivery = crate::persist::decode(&packed).expect("decodes");
        assert_eq!(back, delivery);
        assert_eq!(back.body(WebhookFormat::Signed), SIGNED_843A63AE);
        assert_eq!(back.body(WebhookFormat::Legacy), LEGACY_843A63AE);
        let test = Delivery::test(Uuid::new_v4(), bot(), Timestamp::from_millis(3));
        let packed = rmp_serde::to_vec(&test).expect("encodes");
        assert_eq!(
            crate::persist::decode::<Delivery>(&packed).expect("decodes"),
            test
        );
    }

    /// A delivery as earlier builds stored it, bodies and all.
    #[derive(Serialize)]
    struct Stored843a63ae {
        id: Uuid,
        event: Event,
        created_at: Timestamp,
        signed_body: String,
        legacy_body: String,
        state: DeliveryState,
        attempts: u32,
        last_status: Option<u16>,
        last_error: Option<String>,
        next_attempt_at: Option<Timestamp>,
        delivered_at: Option<Timestamp>,
    }

    #[test]
    fn a_delivery_stored_with_its_bodies_reads_sends_them_and_is_written_back_the_same() {
        let old = Stored843a63ae {
            id: Uuid::new_v4(),
            event: Event::VoteCreate,
            created_at: Timestamp::from_millis(5),
            signed_body: SIGNED_843A63AE.to_owned(),
            legacy_body: LEGACY_843A63AE.to_owned(),
            state: DeliveryState::Retrying,
            attempts: 2,
            last_status: Some(503),
            last_error: Some("the receiver answered 503".into()),
            next_attempt_at: Some(Timestamp::from_millis(9)),
            delivered_at: None,
        };
        let packed = rmp_serde::to_vec(&old).expect("encodes");
        let read: Delivery = crate::persist::decode(&packed).expect("decodes");
        assert_eq!(read.event(), Event::VoteCreate);
        assert_eq!(read.body(WebhookFormat::Signed), SIGNED_843A63AE);
        assert_eq!(read.body(WebhookFormat::Legacy), LEGACY_843A63AE);
        // No `v1` or `standard` body was stored then: both send the signed one.
        assert_eq!(read.body(WebhookFormat::V1), SIGNED_843A63AE);
        assert_eq!(read.body(WebhookFormat::Standard), SIGNED_843A63AE);
        assert_eq!(read.attempts, 2);
        assert_eq!(read.next_attempt_at, Some(Timestamp::from_millis(9)));
        assert_eq!(rmp_serde::to_vec(&read).expect("encodes"), packed);
    }

    #[test]
    fn a_stored_delivery_whose_event_and_content_disagree_is_refused() {
        let mut test = Delivery::test(Uuid::new_v4(), bot(), Timestamp::from_millis(3));
        test.content = voted().content;
        let packed = rmp_serde::to_vec(&test).expect("encodes");
        // Written as a vote's content under the test event's name: not a delivery.
        let mut tampered = packed.clone();
        let at = tampered
            .windows(b"vote.create".len())
            .position(|w| w == b"vote.create")
            .expect("the event's name");
        tampered[at..at + b"vote.create".len()].copy_from_slice(b"webhook.tes");
        assert!(crate::persist::decode::<Delivery>(&tampered).is_err());
        assert!(crate::persist::decode::<Delivery>(&packed[..packed.len() - 1]).is_err());
    }

    #[test]
    fn the_outbox_full_error_names_the_limit() {
        assert_eq!(
            OUTBOX_FULL,
            format!("given up: the outbox of this bot held {MAX_PENDING} open deliveries")
        );
    }
}
