//! Profile tokens (CONTRACT section 13): what a profile may do through the API, with which
//! token, until when. Issued by the operator's login through the admin API, kept only as a
//! hash inside the profile they belong to, so a profile deleted takes its tokens with it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::ids::{ProfileId, TokenHash};
use super::text::TokenLabel;
use super::time::Timestamp;

/// What a profile token allows. One row each: the bit it is held in, its name on the wire.
macro_rules! scopes {
    ($($variant:ident = $bit:literal, $name:literal, $doc:literal;)*) => {
        /// A scope of a profile token.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
        #[serde(rename_all = "lowercase")]
        pub enum Scope {
            $(#[doc = $doc] $variant,)*
        }

        impl Scope {
            pub const ALL: &'static [Scope] = &[$(Scope::$variant,)*];

            pub fn name(self) -> &'static str {
                match self {
                    $(Scope::$variant => $name,)*
                }
            }

            fn bit(self) -> u8 {
                match self {
                    $(Scope::$variant => 1 << $bit,)*
                }
            }
        }
    };
}

scopes! {
    Vote = 0, "vote", "Vote as the profile (`POST /bots/{id}/votes`)";
    Bots = 1, "bots", "Submit and manage the profile's own listings";
    Reviews = 2, "reviews", "Write, edit and delete the profile's own reviews (`POST {base}/bots/{id}/reviews`, `PATCH` and `DELETE .../reviews/{review_id}`)";
    Staff = 3, "staff", "Act as staff, for a profile with `mod` or `admin`: the routes under `{base}/staff` (queue, claims, decisions, vote bans, audit log) and a review's removal (`POST .../reviews/{review_id}/remove`)";
}

/// A set of scopes, in one byte: what the token lookup hands a handler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    pub fn of(scopes: &[Scope]) -> Self {
        Self(scopes.iter().fold(0, |bits, scope| bits | scope.bit()))
    }

    pub fn has(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }
}

/// One token of a profile, as it is kept: its hash, never the secret.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileToken {
    pub id: Uuid,
    pub hash: TokenHash,
    pub scopes: Vec<Scope>,
    pub label: TokenLabel,
    pub created_at: Timestamp,
    /// `None`: lives until revoked.
    pub expires_at: Option<Timestamp>,
}

impl ProfileToken {
    /// What a request with this token may do, and for whom.
    pub fn grant(&self, profile: ProfileId) -> Grant {
        Grant {
            profile,
            token: self.id,
            scopes: Scopes::of(&self.scopes),
            expires_at: self.expires_at,
        }
    }
}

/// A token's authority, as the directory hands it to a request: small and `Copy`, so a lookup
/// costs one map read like a bot token's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    pub profile: ProfileId,
    pub token: Uuid,
    pub scopes: Scopes,
    pub expires_at: Option<Timestamp>,
}

impl Grant {
    /// Whether the token still works at `now`: an expired token is refused from the instant
    /// it expires, on the injected clock.
    pub fn live_at(&self, now: Timestamp) -> bool {
        self.expires_at.is_none_or(|end| now < end)
    }
}

/// The longest a token may be issued for: ten years, so that `expires_at` stays a date.
pub const MAX_EXPIRES_IN: u64 = 10 * 365 * 24 * 3600;

/// The body of `POST /admin/users/{id}/tokens`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewProfileToken {
    /// One to four of `vote`, `bots`, `reviews`, `staff`, counted as sent (a repeat counts, and
    /// means nothing more)
    #[schema(min_items = 1, max_items = 4)]
    pub scopes: Vec<Scope>,
    pub label: TokenLabel,
    /// Seconds from now until the token stops working (1 to 315360000); left out, it lives
    /// until revoked
    #[serde(default, deserialize_with = "whole_seconds")]
    #[schema(minimum = 1, maximum = 315360000)]
    pub expires_in: Option<u64>,
}

/// `expires_in` from any whole JSON number (`3600.0` is the integer 3600 to JSON Schema, so to
/// the document), as a review's rating and the stats post's counts are read; `null` is none.
/// The range is [`NewProfileToken::checked`]'s to refuse.
fn whole_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    struct Seconds;
    impl serde::de::Visitor<'_> for Seconds {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a whole number of seconds, or null")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Self::Value, E> {
            Ok(Some(value))
        }
        fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Self::Value, E> {
            u64::try_from(value).map(Some).map_err(|_| {
                E::custom(format!(
                    "expires_in must be 1 to {MAX_EXPIRES_IN} seconds, got {value}"
                ))
            })
        }
        fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Self::Value, E> {
            if value.fract() != 0.0 || !(0.0..=MAX_EXPIRES_IN as f64).contains(&value) {
                return Err(E::custom(format!(
                    "expires_in must be 1 to {MAX_EXPIRES_IN} seconds, got {value}"
                )));
            }
            // Whole and within the range: the cast is exact.
            Ok(Some(value as u64))
        }
    }
    d.deserialize_any(Seconds)
}

impl NewProfileToken {
    /// The token's scopes, each once, in the table's order; refused when empty, and the
    /// expiry, refused when out of range.
    pub fn checked(&self) -> Result<Vec<Scope>, String> {
        let scopes: Vec<Scope> = Scope::ALL
            .iter()
            .copied()
            .filter(|scope| self.scopes.contains(scope))
            .collect();
        if scopes.is_empty() {
            return Err("scopes must name at least one of vote, bots, reviews, staff".into());
        }
        // As the document says: at most four entries as sent, repeats included.
        if self.scopes.len() > Scope::ALL.len() {
            return Err(format!(
                "scopes holds {} entries; at most {} (each scope once)",
                self.scopes.len(),
                Scope::ALL.len()
            ));
        }
        if let Some(seconds) = self.expires_in {
            if seconds == 0 || seconds > MAX_EXPIRES_IN {
                return Err(format!(
                    "expires_in must be 1 to {MAX_EXPIRES_IN} seconds, got {seconds}"
                ));
            }
        }
        Ok(scopes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_one_bit_each() {
        let all = Scopes::of(Scope::ALL);
        for scope in Scope::ALL {
            assert!(all.has(*scope));
            let one = Scopes::of(&[*scope]);
            for other in Scope::ALL {
                assert_eq!(one.has(*other), other == scope);
            }
        }
    }

    #[test]
    fn a_grant_ends_at_its_expiry() {
        let grant = Grant {
            profile: ProfileId::new_random(),
            token: Uuid::nil(),
            scopes: Scopes::default(),
            expires_at: Some(Timestamp::from_millis(1000)),
        };
        assert!(grant.live_at(Timestamp::from_millis(999)));
        assert!(!grant.live_at(Timestamp::from_millis(1000)));
        let forever = Grant {
            expires_at: None,
            ..grant
        };
        assert!(forever.live_at(Timestamp::from_millis(i64::MAX)));
    }
}
