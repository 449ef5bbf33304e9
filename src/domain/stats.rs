//! Server counts as bots post them: one whole count, or one count per shard, the way the classic
//! client libraries send them (`server_count` as an array, `shards`, or `shard_id` and
//! `shard_count` beside one count).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Type};
use utoipa::ToSchema;

/// A server count: an integer a JavaScript client can hold exactly (0 ..= 2^53 - 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = u64)]
pub struct ServerCount(u64);

impl ServerCount {
    pub const MAX: u64 = (1 << 53) - 1;
    pub const ZERO: Self = Self(0);

    pub fn new(count: u64) -> Option<Self> {
        (count <= Self::MAX).then_some(Self(count))
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for ServerCount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CountVisitor)
    }
}

/// Shards a bot may post counts for; shard numbers go from 0 to this minus one.
pub const MAX_SHARDS: usize = 10_000;

/// What the API says a count must be, in every message about one.
pub const COUNT_RULE: &str = "a whole number from 0 to 9007199254740991";

/// One change to a bot's server count, as stored in the journal: replaying it gives the same
/// counts whatever the clock says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StatsUpdate {
    /// The bot's whole count; it replaces every shard.
    Whole(ServerCount),
    /// The count of every shard, shard i at index i; it replaces every earlier shard.
    AllShards(Vec<ServerCount>),
    /// One shard's count; a `shard_count` given drops the shards numbered at or above it.
    OneShard {
        shard: u32,
        count: ServerCount,
        shard_count: Option<u32>,
    },
}

/// The counts a bot has posted per shard; empty when it posts one whole count.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardCounts(BTreeMap<u32, ServerCount>);

impl ShardCounts {
    /// Applies `update` and returns the bot's count: the whole count, or the sum of the shards
    /// (held at the largest count a client can read exactly).
    pub fn apply(&mut self, update: &StatsUpdate) -> ServerCount {
        match update {
            StatsUpdate::Whole(count) => {
                self.0.clear();
                return *count;
            }
            StatsUpdate::AllShards(counts) => {
                self.0 = (0u32..).zip(counts.iter().copied()).collect();
            }
            StatsUpdate::OneShard {
                shard,
                count,
                shard_count,
            } => {
                self.0.insert(*shard, *count);
                if let Some(total) = shard_count {
                    self.0.retain(|number, _| number < total);
                }
            }
        }
        self.sum()
    }

    fn sum(&self) -> ServerCount {
        let sum = self
            .0
            .values()
            .fold(0u64, |sum, count| sum.saturating_add(count.get()));
        ServerCount::new(sum.min(ServerCount::MAX)).unwrap_or(ServerCount::ZERO)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The body of `POST /bots/:id/stats`; fields not listed here are ignored.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StatsPost {
    /// The bot's count (an integer from 0 to 2^53 - 1), or every shard's count as an array
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = count_or_counts_schema)]
    pub server_count: Option<Counts>,
    /// Every shard's count, used when `server_count` is absent; `null` is the same as absent
    #[serde(default)]
    #[schema(schema_with = nullable_counts_schema)]
    pub shards: Option<ShardList>,
    /// The shard this count is for (0 to 9999), with `server_count` an integer. Less than
    /// `shard_count` when both are given, else 400: a rule across two fields that this schema
    /// cannot state
    #[serde(default)]
    #[schema(value_type = Option<u32>, minimum = 0, maximum = 9999)]
    pub shard_id: Option<ShardNumber>,
    /// How many shards the bot runs (1 to 10000); shards numbered at or above it are dropped
    #[serde(default)]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 10000)]
    pub shard_count: Option<ShardTotal>,
}

fn count_schema() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(0))
        .maximum(Some(ServerCount::MAX as f64))
}

fn counts_schema() -> ArrayBuilder {
    ArrayBuilder::new()
        .items(count_schema())
        .min_items(Some(1))
        .max_items(Some(MAX_SHARDS))
        .description(Some(
            "One count per shard: shard i's count is element i. The body is at most 64 KiB \
             whatever it holds, so 10,000 counts fit only while they are short",
        ))
}

fn nullable_counts_schema() -> OneOfBuilder {
    OneOfBuilder::new()
        .item(counts_schema())
        .item(ObjectBuilder::new().schema_type(Type::Null))
}

fn count_or_counts_schema() -> OneOfBuilder {
    OneOfBuilder::new()
        .item(
            count_schema().description(Some("The bot's whole count, or one shard's with shard_id")),
        )
        .item(counts_schema())
}

impl StatsPost {
    /// What the post asks for, or why it cannot be done, naming the field at fault.
    pub fn update(self) -> Result<StatsUpdate, String> {
        let counts = match (self.server_count, self.shards) {
            (Some(counts), _) => counts,
            (None, Some(ShardList(shards))) => Counts::PerShard(shards),
            (None, None) => return Err("server_count is required".into()),
        };
        match counts {
            Counts::PerShard(counts) => Ok(StatsUpdate::AllShards(counts)),
            Counts::One(count) => match self.shard_id {
                None => Ok(StatsUpdate::Whole(count)),
                Some(ShardNumber(shard)) => {
                    let shard_count = self.shard_count.map(|ShardTotal(total)| total);
                    if let Some(total) = shard_count.filter(|total| shard >= *total) {
                        return Err(format!(
                            "shard_id must be less than shard_count ({total}), got {shard}"
                        ));
                    }
                    Ok(StatsUpdate::OneShard {
                        shard,
                        count,
                        shard_count,
                    })
                }
            },
        }
    }
}

/// `server_count`: one count, or one per shard.
#[derive(Debug)]
pub enum Counts {
    One(ServerCount),
    PerShard(Vec<ServerCount>),
}

/// `shards`: one count per shard.
#[derive(Debug)]
pub struct ShardList(pub Vec<ServerCount>);

/// `shard_id`: 0 to 9999.
#[derive(Debug)]
pub struct ShardNumber(pub u32);

/// `shard_count`: 1 to 10000.
#[derive(Debug)]
pub struct ShardTotal(pub u32);

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A whole JSON number: an integer, or a float with no fractional part (`90.0` is 90).
fn whole<E: de::Error>(number: f64) -> Result<u64, E> {
    if number.fract() == 0.0 && (0.0..=ServerCount::MAX as f64).contains(&number) {
        Ok(number as u64)
    } else {
        Err(E::custom(format!("must be {COUNT_RULE}, got {number}")))
    }
}

fn count<E: de::Error>(number: u64) -> Result<ServerCount, E> {
    ServerCount::new(number).ok_or_else(|| E::custom(format!("must be {COUNT_RULE}, got {number}")))
}

fn negative<T, E: de::Error>(number: i64) -> Result<T, E> {
    Err(E::custom(format!("must be {COUNT_RULE}, got {number}")))
}

/// Reads one count; shared by `ServerCount` and the elements of the arrays.
pub(crate) struct CountVisitor;

impl<'de> Visitor<'de> for CountVisitor {
    type Value = ServerCount;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(COUNT_RULE)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ServerCount, E> {
        count(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ServerCount, E> {
        match u64::try_from(v) {
            Ok(v) => count(v),
            Err(_) => negative(v),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ServerCount, E> {
        count(whole(v)?)
    }
}

/// Reads a list of counts, at most [`MAX_SHARDS`] and at least one.
fn counts<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<ServerCount>, A::Error> {
    struct Element;
    impl<'de> de::DeserializeSeed<'de> for Element {
        type Value = ServerCount;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ServerCount, D::Error> {
            d.deserialize_any(CountVisitor)
        }
    }
    let mut counts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_SHARDS));
    while let Some(count) = seq.next_element_seed(Element)? {
        if counts.len() == MAX_SHARDS {
            return Err(de::Error::custom(format!(
                "must have at most {MAX_SHARDS} shards"
            )));
        }
        counts.push(count);
    }
    if counts.is_empty() {
        return Err(de::Error::custom("must have at least one shard's count"));
    }
    Ok(counts)
}

impl<'de> Deserialize<'de> for Counts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CountsVisitor;
        impl<'de> Visitor<'de> for CountsVisitor {
            type Value = Counts;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "{COUNT_RULE}, or an array of such numbers (one per shard)"
                )
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Counts, E> {
                CountVisitor.visit_u64(v).map(Counts::One)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Counts, E> {
                CountVisitor.visit_i64(v).map(Counts::One)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Counts, E> {
                CountVisitor.visit_f64(v).map(Counts::One)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Counts, A::Error> {
                counts(seq).map(Counts::PerShard)
            }
        }
        deserializer.deserialize_any(CountsVisitor)
    }
}

impl<'de> Deserialize<'de> for ShardList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = ShardList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "an array of counts, each {COUNT_RULE}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ShardList, A::Error> {
                counts(seq).map(ShardList)
            }
        }
        deserializer.deserialize_any(ListVisitor)
    }
}

/// Reads a shard number in `low..=high`.
fn shard_number<'de, D: Deserializer<'de>>(d: D, low: u64, high: u64) -> Result<u32, D::Error> {
    struct NumberVisitor(u64, u64);
    impl Visitor<'_> for NumberVisitor {
        type Value = u32;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a whole number from {} to {}", self.0, self.1)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u32, E> {
            if (self.0..=self.1).contains(&v) {
                Ok(v as u32)
            } else {
                Err(E::custom(format!(
                    "must be a whole number from {} to {}, got {v}",
                    self.0, self.1
                )))
            }
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u32, E> {
            match u64::try_from(v) {
                Ok(v) => self.visit_u64(v),
                Err(_) => Err(E::custom(format!(
                    "must be a whole number from {} to {}, got {v}",
                    self.0, self.1
                ))),
            }
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<u32, E> {
            if v.fract() == 0.0 && v >= 0.0 && v <= self.1 as f64 {
                self.visit_u64(v as u64)
            } else {
                Err(E::custom(format!(
                    "must be a whole number from {} to {}, got {v}",
                    self.0, self.1
                )))
            }
        }
    }
    d.deserialize_any(NumberVisitor(low, high))
}

impl<'de> Deserialize<'de> for ShardNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        shard_number(deserializer, 0, MAX_SHARDS as u64 - 1).map(ShardNumber)
    }
}

impl<'de> Deserialize<'de> for ShardTotal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        shard_number(deserializer, 1, MAX_SHARDS as u64).map(ShardTotal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(n: u64) -> ServerCount {
        ServerCount::new(n).expect("in range")
    }

    #[test]
    fn shards_add_up_and_a_whole_count_replaces_them() {
        let mut shards = ShardCounts::default();
        let one = |shard, count, shard_count| StatsUpdate::OneShard {
            shard,
            count: c(count),
            shard_count,
        };
        assert_eq!(shards.apply(&one(0, 100, Some(2))), c(100));
        assert_eq!(shards.apply(&one(1, 200, Some(2))), c(300));
        assert_eq!(shards.apply(&one(1, 250, None)), c(350));
        assert_eq!(shards.apply(&one(0, 10, Some(1))), c(10), "shard 1 dropped");
        assert_eq!(
            shards.apply(&StatsUpdate::AllShards(vec![c(1), c(2)])),
            c(3)
        );
        assert_eq!(shards.apply(&StatsUpdate::Whole(c(7))), c(7));
        assert!(shards.is_empty());
        let huge = StatsUpdate::AllShards(vec![c(ServerCount::MAX), c(ServerCount::MAX)]);
        assert_eq!(
            shards.apply(&huge),
            c(ServerCount::MAX),
            "held at the largest"
        );
    }
}
