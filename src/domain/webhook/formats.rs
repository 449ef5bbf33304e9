//! The wire formats a receiver may ask for. Each is one [`WireFormat`] implementation (its name
//! and stored number, the secrets it takes, the body family it sends, the headers it signs
//! with) and one row of the `wire_formats!` table below, which dispatches from the stored tag,
//! [`WebhookFormat`], to the implementations in one exhaustive `match`. Nothing else names a
//! format: the sender (`webhooks/mod.rs`) asks the format for its headers, the renderer
//! (`webhooks/wire.rs`) for its body, a bot's settings (`domain/bot.rs`) for its secret rule.
//!
//! A new format is one implementation, one variant at the end of [`WebhookFormat`] (its place
//! is its stored number) and one row; the compiler refuses a variant without a row, and a row
//! whose number is not its variant's place. A format whose bodies are a new family is also one
//! more method of `EventKind`, which every kind of event then must answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::events::{EventKind, Head, RenderedBodies};
use super::sign;

// The tag stored with a bot's settings, which names its `WireFormat`. Serialised as derived
// (by name, or MessagePack's variant index), so its place in this list is its stored number
// and a new variant goes at the end. (Its doc comment is the OpenAPI document's description.)
/// How deliveries to a bot's receiver are shaped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    /// botlist's event, signed with HMAC-SHA256 of the secret.
    #[default]
    Signed,
    /// The classic bot-list vote body, with the secret as the `Authorization` header.
    Legacy,
    /// What the webhook classes of @top-gg/sdk 4.0.0 and topggpy 2.0.0 verify:
    /// `x-topgg-signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">` and `x-topgg-trace`.
    V1,
    /// Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`,
    /// with a `whsec_` secret.
    Standard,
}

/// What an attempt's headers are made from.
#[derive(Clone, Copy, Debug)]
pub struct Signing<'a> {
    /// The bot's `webhook_secret`, as its settings are at the attempt.
    pub secret: Option<&'a str>,
    /// The delivery's id: the same on every attempt.
    pub delivery: Uuid,
    /// The attempt's time: signatures are made at send time, every attempt afresh, since
    /// receivers refuse an old one.
    pub unix_seconds: i64,
    /// The raw body sent.
    pub body: &'a str,
}

/// A header an attempt sends: its name and value.
pub type Header = (&'static str, String);

/// One wire format.
pub trait WireFormat {
    /// What the API, files and JSON call it.
    const NAME: &'static str;
    /// Its index in MessagePack: its variant's place in [`WebhookFormat`] (checked when built).
    const NUMBER: u32;

    /// Whether its receivers refuse every delivery that carries no signature, so a webhook
    /// of this format may not be set without a secret (nor sent without one).
    const NEEDS_SECRET: bool;

    /// Whether `secret` is one this format's receivers can verify with.
    fn check_secret(secret: &str) -> Result<(), String>;

    /// The body an event of kind `K` sends in this format: which of the kind's body families.
    fn body<K: EventKind>(kind: &K, head: Head) -> Value;

    /// Which of the bodies an earlier build rendered and stored (only `signed` and `legacy`
    /// ones exist) it sends.
    fn stored_body(bodies: &RenderedBodies) -> &str;

    /// The headers it signs (or authorises) an attempt with, in the order sent; `Err` (why)
    /// refuses the attempt rather than send it without the signature its receivers need.
    fn headers(signing: Signing<'_>) -> Result<Vec<Header>, String>;
}

/// botlist's own event: `X-Botlist-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`.
pub struct SignedFormat;

impl WireFormat for SignedFormat {
    const NAME: &'static str = "signed";
    const NEEDS_SECRET: bool = false;
    const NUMBER: u32 = 0;

    fn check_secret(_: &str) -> Result<(), String> {
        Ok(())
    }

    fn body<K: EventKind>(kind: &K, head: Head) -> Value {
        kind.signed(head)
    }

    fn stored_body(bodies: &RenderedBodies) -> &str {
        &bodies.signed
    }

    fn headers(signing: Signing<'_>) -> Result<Vec<Header>, String> {
        Ok(signing
            .secret
            .map(|secret| {
                let value = sign::signature_header(secret, signing.unix_seconds, signing.body);
                ("X-Botlist-Signature", value)
            })
            .into_iter()
            .collect())
    }
}

/// The classic bot-list body, the secret itself as `Authorization`.
pub struct LegacyFormat;

impl WireFormat for LegacyFormat {
    const NAME: &'static str = "legacy";
    const NEEDS_SECRET: bool = false;
    const NUMBER: u32 = 1;

    fn check_secret(_: &str) -> Result<(), String> {
        Ok(())
    }

    fn body<K: EventKind>(kind: &K, head: Head) -> Value {
        kind.legacy(head)
    }

    fn stored_body(bodies: &RenderedBodies) -> &str {
        &bodies.legacy
    }

    fn headers(signing: Signing<'_>) -> Result<Vec<Header>, String> {
        Ok(signing
            .secret
            .map(|secret| ("Authorization", secret.to_owned()))
            .into_iter()
            .collect())
    }
}

/// The 2026 SDKs' webhook classes: `x-topgg-signature` (the `signed` header's form), which they
/// verify on every delivery, and the `x-topgg-trace` they read.
pub struct V1Format;

impl WireFormat for V1Format {
    const NAME: &'static str = "v1";
    const NEEDS_SECRET: bool = true;
    const NUMBER: u32 = 2;

    fn check_secret(_: &str) -> Result<(), String> {
        Ok(())
    }

    fn body<K: EventKind>(kind: &K, head: Head) -> Value {
        kind.v1(head)
    }

    /// Earlier builds stored no `v1` body: the signed one, signed at send time all the same.
    fn stored_body(bodies: &RenderedBodies) -> &str {
        &bodies.signed
    }

    fn headers(signing: Signing<'_>) -> Result<Vec<Header>, String> {
        let mut headers = Vec::with_capacity(2);
        // Its receivers verify every delivery: one without a secret (set before every surface
        // required one) is refused, never sent unsigned.
        let secret = signing.secret.ok_or(NO_SECRET)?;
        let value = sign::signature_header(secret, signing.unix_seconds, signing.body);
        headers.push(("x-topgg-signature", value));
        // The delivery's id correlates the receiver's trace with the delivery log.
        headers.push(("x-topgg-trace", signing.delivery.to_string()));
        Ok(headers)
    }
}

/// Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`, keyed with the
/// bytes of a `whsec_` secret.
pub struct StandardFormat;

impl WireFormat for StandardFormat {
    const NAME: &'static str = "standard";
    const NEEDS_SECRET: bool = true;
    const NUMBER: u32 = 3;

    fn check_secret(secret: &str) -> Result<(), String> {
        standard_key(secret).map(|_| ())
    }

    fn body<K: EventKind>(kind: &K, head: Head) -> Value {
        kind.standard(head)
    }

    /// Earlier builds stored no `standard` body: the signed one, signed at send time.
    fn stored_body(bodies: &RenderedBodies) -> &str {
        &bodies.signed
    }

    /// A secret that is not `whsec_` and base64 (stored before every surface checked it)
    /// refuses the attempt: never sent unsigned.
    fn headers(signing: Signing<'_>) -> Result<Vec<Header>, String> {
        let secret = signing.secret.ok_or(NO_SECRET)?;
        let key = standard_key(secret)?;
        let id = signing.delivery.to_string();
        let t = signing.unix_seconds;
        let signature = sign::standard_signature(&key, &id, t, signing.body);
        Ok(vec![
            ("webhook-signature", signature),
            ("webhook-id", id),
            ("webhook-timestamp", t.to_string()),
        ])
    }
}

/// Why a delivery of a format whose receivers verify every delivery is not sent.
const NO_SECRET: &str =
    "this format's receivers verify every delivery, and no secret is set to sign it with";

/// The key of a Standard Webhooks secret: the base64 after `whsec_`, at least 16 bytes.
pub fn standard_key(secret: &str) -> Result<Vec<u8>, String> {
    use base64::Engine;
    let encoded = secret
        .strip_prefix("whsec_")
        .ok_or("a `standard` webhook secret is `whsec_` followed by the base64 of its key")?;
    let key = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| "the part of a `standard` webhook secret after `whsec_` is not base64")?;
    if key.len() < 16 {
        return Err("the key of a `standard` webhook secret must be at least 16 bytes".into());
    }
    Ok(key)
}

/// Code written once for every format: called with the implementation a tag names.
pub trait FormatVisitor {
    type Output;
    fn visit<F: WireFormat>(self) -> Self::Output;
}

/// The table of formats: `Variant => Implementation`, in [`WebhookFormat`]'s order.
macro_rules! wire_formats {
    ($($variant:ident => $format:ty,)+) => {
        impl WebhookFormat {
            /// Every format, in stored-number order.
            pub const ALL: &'static [WebhookFormat] = &[$(WebhookFormat::$variant,)+];

            /// `visitor` with the implementation this tag names: the one place a tag is
            /// matched, without a wildcard.
            pub fn visit<V: FormatVisitor>(self, visitor: V) -> V::Output {
                match self {
                    $(Self::$variant => visitor.visit::<$format>(),)+
                }
            }
        }

        // Each row's number is its variant's place, which is what MessagePack stores; and
        // the rows are in that order, so `ALL[n]` is the format numbered `n`.
        const _: () = {
            let mut place = 0;
            $(
                assert!(<$format as WireFormat>::NUMBER == WebhookFormat::$variant as u32);
                assert!(<$format as WireFormat>::NUMBER == place);
                place += 1;
            )+
            let _ = place;
        };
    };
}

wire_formats! {
    Signed => SignedFormat,
    Legacy => LegacyFormat,
    V1 => V1Format,
    Standard => StandardFormat,
}

/// The formats' names, as the API and files say them.
const FORMATS: &str = "`signed`, `legacy`, `v1` or `standard`";

struct Name;
impl FormatVisitor for Name {
    type Output = &'static str;
    fn visit<F: WireFormat>(self) -> &'static str {
        F::NAME
    }
}

struct NeedsSecret;
impl FormatVisitor for NeedsSecret {
    type Output = bool;
    fn visit<F: WireFormat>(self) -> bool {
        F::NEEDS_SECRET
    }
}

struct Number;
impl FormatVisitor for Number {
    type Output = u32;
    fn visit<F: WireFormat>(self) -> u32 {
        F::NUMBER
    }
}

struct CheckSecret<'a>(&'a str);
impl FormatVisitor for CheckSecret<'_> {
    type Output = Result<(), String>;
    fn visit<F: WireFormat>(self) -> Result<(), String> {
        F::check_secret(self.0)
    }
}

struct Headers<'a>(Signing<'a>);
impl FormatVisitor for Headers<'_> {
    type Output = Result<Vec<Header>, String>;
    fn visit<F: WireFormat>(self) -> Result<Vec<Header>, String> {
        F::headers(self.0)
    }
}

impl WebhookFormat {
    pub fn name(self) -> &'static str {
        self.visit(Name)
    }

    /// Whether a webhook of this format must have a secret (its receivers verify every
    /// delivery).
    pub fn needs_secret(self) -> bool {
        self.visit(NeedsSecret)
    }

    /// Its index in MessagePack.
    pub fn number(self) -> u32 {
        self.visit(Number)
    }

    /// The format named `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|format| format.name() == name)
    }

    /// The format numbered `number`.
    pub fn numbered(number: u64) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|format| u64::from(format.number()) == number)
    }

    /// Whether `secret` is one this format's receivers can verify with: a Standard Webhooks
    /// secret is `whsec_` and the base64 of at least 16 bytes (the key).
    pub fn check_secret(self, secret: &str) -> Result<(), String> {
        self.visit(CheckSecret(secret))
    }

    /// The headers this format signs an attempt with; `Err` refuses the attempt.
    pub fn headers(self, signing: Signing<'_>) -> Result<Vec<Header>, String> {
        self.visit(Headers(signing))
    }
}

/// By name (JSON and files) or by index (MessagePack written by other encoders, never a JSON
/// body: `"webhook_format": 0` is refused); anything else is refused in the API's words, not as
/// a malformed document.
impl<'de> Deserialize<'de> for WebhookFormat {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor {
            by_index: bool,
        }
        impl serde::de::Visitor<'_> for Visitor {
            type Value = WebhookFormat;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(FORMATS)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<WebhookFormat, E> {
                WebhookFormat::named(v)
                    .ok_or_else(|| E::custom(format!("must be {FORMATS}, got `{v}`")))
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<WebhookFormat, E> {
                match std::str::from_utf8(v) {
                    Ok(text) => self.visit_str(text),
                    Err(_) => Err(E::custom(format!("must be {FORMATS}"))),
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<WebhookFormat, E> {
                if !self.by_index {
                    return Err(E::invalid_type(serde::de::Unexpected::Unsigned(v), &self));
                }
                WebhookFormat::numbered(v)
                    .ok_or_else(|| E::custom(format!("must be {FORMATS}, got {v}")))
            }
        }
        let by_index = !deserializer.is_human_readable();
        deserializer.deserialize_any(Visitor { by_index })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed attempt: the known answers below were computed with Python's `hmac`, `hashlib`
    /// and `base64` modules from the formats' published descriptions, not with this code.
    const SECRET: &str = "whsec_test";
    const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const DELIVERY: &str = "545ef49a-8957-428a-827e-2f17c0a39b48";
    const T: i64 = 1_794_744_000;
    const BODY: &str = r#"{"type":"webhook.test"}"#;
    /// hmac.new(b"whsec_test", b"1794744000." + BODY, sha256).hexdigest()
    const HEX: &str = "ccc1d93fc2c6b7b7cec51e51bae0f53321a0d70a23a0727798040fea5628fe02";
    /// b64encode(hmac.new(b64decode("MfKQ…"), b"<DELIVERY>.1794744000." + BODY, sha256).digest())
    const STANDARD_B64: &str = "91CT4bwlh/froiFgtwMNNknDqtLP5RQ6Dhx1kSZQ1wo=";

    fn signing(secret: Option<&str>) -> Signing<'_> {
        Signing {
            secret,
            delivery: Uuid::parse_str(DELIVERY).expect("an id"),
            unix_seconds: T,
            body: BODY,
        }
    }

    fn headers(format: WebhookFormat, secret: Option<&str>) -> Vec<(&'static str, String)> {
        format.headers(signing(secret)).expect("headers")
    }

    /// Its name and number both ways, through JSON, MessagePack (by name as written, and by
    /// index as other encoders write it) and the OpenAPI enum.
    fn round_trips(format: WebhookFormat, name: &str, number: u32) {
        assert_eq!(format.name(), name);
        assert_eq!(format.number(), number);
        assert_eq!(WebhookFormat::named(name), Some(format));
        assert_eq!(WebhookFormat::numbered(u64::from(number)), Some(format));
        assert_eq!(WebhookFormat::ALL[number as usize], format);
        let json = serde_json::to_string(&format).expect("encodes");
        assert_eq!(json, format!("\"{name}\""));
        assert_eq!(
            serde_json::from_str::<WebhookFormat>(&json).expect("decodes"),
            format
        );
        let packed = rmp_serde::to_vec(&format).expect("encodes");
        assert_eq!(
            crate::persist::decode::<WebhookFormat>(&packed).expect("decodes"),
            format
        );
        let by_index = rmp_serde::to_vec(&number).expect("encodes");
        assert_eq!(
            crate::persist::decode::<WebhookFormat>(&by_index).expect("decodes"),
            format
        );
        assert!(serde_json::from_str::<WebhookFormat>(&number.to_string()).is_err());
        let schema = serde_json::to_value(<WebhookFormat as utoipa::PartialSchema>::schema())
            .expect("a schema");
        assert_eq!(schema["enum"][number as usize], name, "{schema}");
        assert!(FORMATS.contains(&format!("`{name}`")), "{FORMATS}");
    }

    #[test]
    fn signed() {
        round_trips(WebhookFormat::Signed, "signed", 0);
        assert_eq!(WebhookFormat::default(), WebhookFormat::Signed);
        assert!(WebhookFormat::Signed
            .check_secret("anything at all")
            .is_ok());
        assert_eq!(
            headers(WebhookFormat::Signed, Some(SECRET)),
            [("X-Botlist-Signature", format!("t={T},v1={HEX}"))]
        );
        assert!(headers(WebhookFormat::Signed, None).is_empty());
        assert!(!WebhookFormat::Signed.needs_secret());
    }

    #[test]
    fn legacy() {
        round_trips(WebhookFormat::Legacy, "legacy", 1);
        assert!(WebhookFormat::Legacy
            .check_secret("anything at all")
            .is_ok());
        assert_eq!(
            headers(WebhookFormat::Legacy, Some(SECRET)),
            [("Authorization", SECRET.to_owned())]
        );
        assert!(headers(WebhookFormat::Legacy, None).is_empty());
        assert!(!WebhookFormat::Legacy.needs_secret());
    }

    #[test]
    fn v1() {
        round_trips(WebhookFormat::V1, "v1", 2);
        assert!(WebhookFormat::V1.check_secret("anything at all").is_ok());
        assert_eq!(
            headers(WebhookFormat::V1, Some(SECRET)),
            [
                ("x-topgg-signature", format!("t={T},v1={HEX}")),
                ("x-topgg-trace", DELIVERY.to_owned()),
            ]
        );
        // Its receivers verify every delivery: without a secret it is refused, never unsigned.
        assert!(WebhookFormat::V1.needs_secret());
        assert!(WebhookFormat::V1.headers(signing(None)).is_err());
    }

    #[test]
    fn standard() {
        round_trips(WebhookFormat::Standard, "standard", 3);
        assert!(WebhookFormat::Standard
            .check_secret(STANDARD_SECRET)
            .is_ok());
        for bad in [
            "plain",
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_!!!",
            // 5 bytes: too short a key.
            "whsec_c2hvcnQ=",
        ] {
            assert!(WebhookFormat::Standard.check_secret(bad).is_err(), "{bad}");
            // Never sent unsigned with a secret that cannot sign.
            assert!(WebhookFormat::Standard.headers(signing(Some(bad))).is_err());
        }
        assert_eq!(
            headers(WebhookFormat::Standard, Some(STANDARD_SECRET)),
            [
                ("webhook-signature", format!("v1,{STANDARD_B64}")),
                ("webhook-id", DELIVERY.to_owned()),
                ("webhook-timestamp", T.to_string()),
            ]
        );
        assert!(WebhookFormat::Standard.needs_secret());
        assert!(WebhookFormat::Standard.headers(signing(None)).is_err());
    }

    #[test]
    fn the_table_lists_every_format_once_and_nothing_else_reads_as_one() {
        assert_eq!(WebhookFormat::ALL.len(), 4);
        assert_eq!(WebhookFormat::named("Signed"), None);
        assert_eq!(WebhookFormat::numbered(4), None);
        let packed = rmp_serde::to_vec(&4u32).expect("encodes");
        let refused = crate::persist::decode::<WebhookFormat>(&packed).expect_err("not a format");
        assert!(refused.to_string().contains(FORMATS), "{refused}");
        let refused = serde_json::from_str::<WebhookFormat>(r#""json""#).expect_err("not one");
        assert!(refused.to_string().contains("got `json`"), "{refused}");
    }
}
