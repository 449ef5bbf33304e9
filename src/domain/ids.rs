//! Identifiers: listing and profile UUIDs, platform snowflakes and API tokens.
//!
//! Each type can only be built from valid text, so code that holds one never re-checks it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

/// Parses a listing or profile id: a UUID, accepted in any case, shown lowercase hyphenated.
fn parse_uuid(text: &str) -> Option<Uuid> {
    // `Uuid::parse_str` also takes braced, URN and simple forms; only the hyphenated one is an
    // id, so anything of another length is not.
    if text.len() != 36 {
        return None;
    }
    Uuid::parse_str(text).ok()
}

macro_rules! uuid_id {
    ($name:ident, $what:literal) => {
        #[doc = concat!("The UUID of a ", $what, ".")]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            pub fn new_random() -> Self {
                Self(Uuid::new_v4())
            }

            /// A v4 UUID made from the given bytes, for deterministic directories.
            pub fn from_random_bytes(bytes: [u8; 16]) -> Self {
                Self(uuid::Builder::from_random_bytes(bytes).into_uuid())
            }

            /// The id as a number whose order is the ids' order.
            pub fn as_u128(self) -> u128 {
                self.0.as_u128()
            }

            pub fn parse(text: &str) -> Option<Self> {
                parse_uuid(text).map(Self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::parse(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!("`{text}` is not a {} id (a UUID)", $what))
                })
            }
        }
    };
}

uuid_id!(BotId, "bot listing");
uuid_id!(ProfileId, "profile");

crate::domain::text::string_to_schema!(
    BotId,
    "A listing UUID, hyphenated; sent lowercase, accepted in any case",
    Some(36),
    Some(36),
    None,
    Some(utoipa::openapi::KnownFormat::Uuid)
);
crate::domain::text::string_to_schema!(
    ProfileId,
    "A profile UUID, hyphenated; sent lowercase, accepted in any case",
    Some(36),
    Some(36),
    None,
    Some(utoipa::openapi::KnownFormat::Uuid)
);
crate::domain::text::string_to_schema!(
    Snowflake,
    "A platform id (snowflake): the decimal text of a u64 (0 to 18446744073709551615), no sign, no leading zero; always a JSON string",
    Some(1),
    Some(20),
    Some(SNOWFLAKE_PATTERN),
    None
);

/// Exactly the texts [`Snowflake::parse`] takes: digits without a leading zero, at most u64::MAX.
pub const SNOWFLAKE_PATTERN: &str = r"^(0|[1-9][0-9]{0,18}|1[0-7][0-9]{18}|18[0-3][0-9]{17}|184[0-3][0-9]{16}|1844[0-5][0-9]{15}|18446[0-6][0-9]{14}|184467[0-3][0-9]{13}|1844674[0-3][0-9]{12}|184467440[0-6][0-9]{10}|1844674407[0-2][0-9]{9}|18446744073[0-6][0-9]{8}|1844674407370[0-8][0-9]{6}|18446744073709[0-4][0-9]{5}|184467440737095[0-4][0-9]{4}|18446744073709550[0-9]{3}|18446744073709551[0-5][0-9]{2}|1844674407370955160[0-9]|1844674407370955161[0-4]|18446744073709551615)$";

/// A platform id: the decimal text of a u64, 1 to 20 digits, no sign, no leading zero.
///
/// In JSON it is always a string: JavaScript clients cannot hold a u64 in a number, so a JSON
/// number where a snowflake belongs is refused rather than silently rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Snowflake(u64);

impl Snowflake {
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        let well_formed = !bytes.is_empty()
            && bytes.len() <= 20
            && bytes.iter().all(u8::is_ascii_digit)
            && (bytes[0] != b'0' || bytes.len() == 1);
        if !well_formed {
            return None;
        }
        text.parse().ok().map(Self)
    }

    pub fn from_u64(value: u64) -> Self {
        Self(value)
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Snowflake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for Snowflake {
    type Err = ();
    fn from_str(text: &str) -> Result<Self, ()> {
        Self::parse(text).ok_or(())
    }
}

impl Serialize for Snowflake {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Digits on the stack, then one string: `collect_str` goes through a formatter and
        // an escaping writer, and every vote event shows a snowflake.
        serializer.serialize_str(itoa::Buffer::new().format(self.0))
    }
}

impl<'de> Deserialize<'de> for Snowflake {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Snowflake;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a snowflake as a string of 1 to 20 digits")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Snowflake, E> {
                Snowflake::parse(text).ok_or_else(|| {
                    E::custom(format!(
                        "`{text}` is not a snowflake (1 to 20 digits, no leading zero, at most 18446744073709551615)"
                    ))
                })
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// An API token in clear: exists only between its creation and the response that shows it once.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// 32 bytes from the OS generator, hex-encoded behind a recognisable prefix.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        // The OS generator failing means the machine cannot make secrets at all; no token is
        // better than a guessable one.
        getrandom::fill(&mut bytes).expect("the operating system's random generator failed");
        Self::from_entropy(bytes)
    }

    /// A token made from given bytes, for the deterministic demo directory only.
    pub fn from_entropy(bytes: [u8; 32]) -> Self {
        Self::prefixed(Self::BOT_PREFIX, bytes)
    }

    /// What a bot's token starts with.
    pub const BOT_PREFIX: &'static str = "blt_";
    /// What a profile's token starts with: the two kinds are told apart by it, so that one
    /// sent where the other is needed is refused for what it is.
    pub const PROFILE_PREFIX: &'static str = "usr_";

    /// A profile's token (section 13 of the contract), from the OS generator.
    pub fn generate_for_profile() -> Self {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random generator failed");
        Self::prefixed(Self::PROFILE_PREFIX, bytes)
    }

    /// A profile's token made from given bytes, for the deterministic demo directory only.
    pub fn profile_from_entropy(bytes: [u8; 32]) -> Self {
        Self::prefixed(Self::PROFILE_PREFIX, bytes)
    }

    fn prefixed(prefix: &str, bytes: [u8; 32]) -> Self {
        let mut text = String::with_capacity(4 + 64);
        text.push_str(prefix);
        for byte in bytes {
            text.push_str(&format!("{byte:02x}"));
        }
        Self(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn hash(&self) -> TokenHash {
        TokenHash::of(&self.0)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// The SHA-256 of a token: the only form in which a token is kept.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TokenHash([u8; 32]);

impl TokenHash {
    pub fn of(presented: impl AsRef<[u8]>) -> Self {
        Self(Sha256::digest(presented.as_ref()).into())
    }

    /// Compares in constant time, so the time taken says nothing of how much matched.
    pub fn matches(&self, other: &TokenHash) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenHash(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snowflakes_are_plain_decimal_u64() {
        assert_eq!(Snowflake::parse("0").map(Snowflake::get), Some(0));
        assert_eq!(
            Snowflake::parse("18446744073709551615").map(Snowflake::get),
            Some(u64::MAX)
        );
        for bad in [
            "",
            "01",
            "+1",
            "-1",
            " 1",
            "1 ",
            "18446744073709551616",
            "123456789012345678901",
            "1e3",
            "١٢",
        ] {
            assert_eq!(Snowflake::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn uuids_are_hyphenated_in_any_case() {
        let id = BotId::parse("6F9619FF-8B86-4D11-B42D-00C04FC964FF").expect("valid");
        assert_eq!(id.to_string(), "6f9619ff-8b86-4d11-b42d-00c04fc964ff");
        assert!(BotId::parse("6f9619ff8b864d11b42d00c04fc964ff").is_none());
        assert!(BotId::parse("{6f9619ff-8b86-4d11-b42d-00c04fc964ff}").is_none());
    }

    #[test]
    fn tokens_hash_and_compare() {
        let token = Token::generate();
        assert_eq!(token.as_str().len(), 68);
        assert!(token.hash().matches(&TokenHash::of(token.as_str())));
        assert!(!token.hash().matches(&TokenHash::of("other")));
    }
}
