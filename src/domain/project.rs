//! What the project API (CONTRACT section 12, the clients of 2026) adds to a bot: its application
//! commands and its announcements, with their rules, and the shapes of metrics those clients
//! send. A "project" is a listed bot; everything else it answers comes from the bot's listing,
//! counts and votes.

use std::sync::Arc;

use chrono::{NaiveDateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::stats::{ServerCount, COUNT_RULE};
use super::time::Timestamp;

/// One announcement per bot per this many hours (the 2026 clients keep the same limit).
pub const ANNOUNCEMENT_INTERVAL_HOURS: i64 = 4;
/// Announcements kept per bot, newest; older ones are dropped as new ones come.
pub const KEPT_ANNOUNCEMENTS: usize = 100;
/// Commands a bot may list (Discord allows 100 global commands of each of three types).
pub const MAX_COMMANDS: usize = 300;
/// Entries in one metrics batch.
pub const MAX_BATCH: usize = 100;
/// A batch entry may be this far ahead of the service's clock (a client's clock runs fast).
pub const MAX_FUTURE_SECONDS: i64 = 60;

/// What an announcement is filed under; `announcement` when the client names none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnnouncementCategory {
    #[default]
    Announcement,
    Event,
    NewFeature,
}

/// A bot's announcement, as stored and as every route shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    pub title: String,
    pub content: String,
    pub category: AnnouncementCategory,
    pub created_at: Timestamp,
}

impl Announcement {
    /// An announcement from what a client sent, checked: title 3 to 100 characters, content 10
    /// to 2000 (counted in Unicode scalar values, as the clients count them).
    pub fn new(
        title: String,
        content: String,
        category: AnnouncementCategory,
        at: Timestamp,
    ) -> Result<Self, String> {
        within("title", &title, 3, 100)?;
        within("content", &content, 10, 2000)?;
        Ok(Self {
            title,
            content,
            category,
            created_at: at,
        })
    }
}

fn within(field: &str, text: &str, min: usize, max: usize) -> Result<(), String> {
    let length = text.chars().count();
    if (min..=max).contains(&length) {
        Ok(())
    } else {
        Err(format!(
            "{field} must be {min} to {max} characters, got {length}"
        ))
    }
}

/// A bot's application commands as its client sent them: a JSON array of objects, each with a
/// `name`, kept as compact JSON text (their fields are Discord's, which botlist does not read).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commands(Arc<str>);

impl Commands {
    pub fn parse(value: &Value) -> Result<Self, String> {
        let list = value
            .as_array()
            .ok_or("the body must be a JSON array of application commands")?;
        if list.len() > MAX_COMMANDS {
            return Err(format!(
                "at most {MAX_COMMANDS} commands, got {}",
                list.len()
            ));
        }
        for (index, command) in list.iter().enumerate() {
            let name = command
                .as_object()
                .ok_or_else(|| format!("command {index} must be a JSON object"))?
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("command {index} must have a string `name`"))?;
            let length = name.chars().count();
            if !(1..=32).contains(&length) {
                return Err(format!(
                    "command {index}: name must be 1 to 32 characters, got {length}"
                ));
            }
        }
        Ok(Self(Arc::from(value.to_string())))
    }

    /// The JSON array, as stored.
    pub fn json(&self) -> &str {
        &self.0
    }
}

/// What a bot keeps for the project API: its commands and its announcements (oldest first).
/// Stored last in a bot's state and snapshot, so files written without it load empty.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectState {
    pub commands: Option<Commands>,
    pub commands_at: Option<Timestamp>,
    pub announcements: Vec<Announcement>,
}

impl ProjectState {
    /// When the bot may announce again, if not yet at `now`.
    pub fn announce_blocked_until(&self, now: Timestamp) -> Option<Timestamp> {
        let last = self.announcements.last()?;
        let next = last
            .created_at
            .plus(chrono::Duration::hours(ANNOUNCEMENT_INTERVAL_HOURS));
        (next > now).then_some(next)
    }

    pub fn set_commands(&mut self, commands: Commands, at: Timestamp) {
        self.commands = Some(commands);
        self.commands_at = Some(at);
    }

    pub fn announce(&mut self, announcement: Announcement) {
        self.announcements.push(announcement);
        if self.announcements.len() > KEPT_ANNOUNCEMENTS {
            let over = self.announcements.len() - KEPT_ANNOUNCEMENTS;
            self.announcements.drain(..over);
        }
    }

    /// Newest first.
    pub fn newest_announcements(&self) -> impl Iterator<Item = &Announcement> {
        self.announcements.iter().rev()
    }
}

/// A time as the 2026 clients send it: RFC 3339 with an offset (Node's `toISOString`), or
/// without one (Python's `isoformat()` of a naive datetime), which is read as UTC.
pub fn parse_time(text: &str) -> Result<Timestamp, String> {
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(Timestamp::from_datetime(at.with_timezone(&Utc)));
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .map(|naive| Timestamp::from_datetime(Utc.from_utc_datetime(&naive)))
        .map_err(|_| format!("`{text}` is not an ISO 8601 time such as 2026-04-17T10:00:00Z"))
}

/// A bot's metrics as the 2026 clients send them: `server_count` (required here, since it is
/// what botlist keeps) and `shard_count` (checked, 1 to 10000, and not kept); metrics of other
/// kinds of project (members, players) are refused.
pub fn parse_metrics(value: &Value) -> Result<ServerCount, String> {
    let object = value.as_object().ok_or("metrics must be a JSON object")?;
    for key in object.keys() {
        if !matches!(key.as_str(), "server_count" | "shard_count") {
            return Err(format!(
                "a bot's metrics are server_count and shard_count, not `{key}`"
            ));
        }
    }
    if let Some(shards) = object.get("shard_count").filter(|v| !v.is_null()) {
        if !whole(shards).is_some_and(|n| (1..=10_000).contains(&n)) {
            return Err(format!(
                "shard_count must be a whole number from 1 to 10000, got {shards}"
            ));
        }
    }
    let count = object
        .get("server_count")
        .filter(|v| !v.is_null())
        .ok_or("server_count is required")?;
    whole(count)
        .and_then(ServerCount::new)
        .ok_or_else(|| format!("server_count must be {COUNT_RULE}, got {count}"))
}

/// A whole JSON number: an integer, or a float with no fractional part (`90.0` is 90, as JSON
/// Schema's `integer` and the stats post read it); `None` for anything else or a negative.
fn whole(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|n| n.fract() == 0.0 && (0.0..=ServerCount::MAX as f64).contains(n))
            .map(|n| n as u64)
    })
}

/// A metrics batch, as either client sends it (`{"data": [...]}` from Node, a bare array from
/// Python): each entry's time (its `timestamp`, or `now` when left out) and count, in time
/// order (entries of the same time in the order sent). 1 to [`MAX_BATCH`] entries, none more
/// than [`MAX_FUTURE_SECONDS`] ahead of `now`.
pub fn parse_batch(value: &Value, now: Timestamp) -> Result<Vec<(Timestamp, ServerCount)>, String> {
    let entries = match value {
        Value::Array(entries) => entries,
        Value::Object(object) => object
            .get("data")
            .and_then(Value::as_array)
            .ok_or("the body must be an array of entries, or {\"data\": [entries]}")?,
        _ => return Err("the body must be an array of entries, or {\"data\": [entries]}".into()),
    };
    if entries.is_empty() || entries.len() > MAX_BATCH {
        return Err(format!(
            "a batch holds 1 to {MAX_BATCH} entries, got {}",
            entries.len()
        ));
    }
    let latest = now.plus(chrono::Duration::seconds(MAX_FUTURE_SECONDS));
    let mut parsed = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let at = match entry.get("timestamp").filter(|v| !v.is_null()) {
            None => now,
            Some(Value::String(text)) => {
                parse_time(text).map_err(|why| format!("entry {index}: {why}"))?
            }
            Some(other) => {
                return Err(format!(
                    "entry {index}: timestamp must be a string, got {other}"
                ))
            }
        };
        if at > latest {
            return Err(format!("entry {index}: timestamp is in the future"));
        }
        let metrics = entry
            .get("metrics")
            .ok_or_else(|| format!("entry {index}: metrics is required"))?;
        let count = parse_metrics(metrics).map_err(|why| format!("entry {index}: {why}"))?;
        parsed.push((at, count));
    }
    parsed.sort_by_key(|(at, _)| *at);
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> Timestamp {
        parse_time(text).expect("a time")
    }

    #[test]
    fn times_with_and_without_an_offset_are_utc() {
        assert_eq!(at("2026-04-17T10:00:00Z"), at("2026-04-17T12:00:00+02:00"));
        assert_eq!(at("2026-04-17T10:00:00"), at("2026-04-17T10:00:00.000Z"));
        assert_eq!(at("2026-04-17T10:00:00.250"), at("2026-04-17T10:00:00.25Z"));
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn a_batch_is_read_from_either_client_in_time_order() {
        let now = at("2026-05-01T00:00:00Z");
        let node = json!({"data": [
            {"timestamp": "2026-04-17T10:05:00Z", "metrics": {"server_count": 420, "shard_count": 67}},
            {"timestamp": "2026-04-17T10:00:00Z", "metrics": {"server_count": 419}},
            {"metrics": {"server_count": 421}},
        ]});
        let parsed = parse_batch(&node, now).expect("valid");
        let counts: Vec<u64> = parsed.iter().map(|(_, c)| c.get()).collect();
        assert_eq!(counts, [419, 420, 421]);
        assert_eq!(parsed[2].0, now);
        let python = json!([{"timestamp": "2026-04-17T10:00:00", "metrics": {"server_count": 1}}]);
        assert_eq!(parse_batch(&python, now).expect("valid").len(), 1);
        assert!(parse_batch(&json!([]), now).is_err());
        let future = json!([{"timestamp": "2026-05-01T00:02:00Z", "metrics": {"server_count": 1}}]);
        assert!(parse_batch(&future, now).is_err());
        let members = json!([{"metrics": {"member_count": 1}}]);
        assert!(parse_batch(&members, now).is_err());
        let floats = json!({"server_count": 23043.0, "shard_count": 199.0});
        assert_eq!(parse_metrics(&floats).map(ServerCount::get), Ok(23043));
        assert!(parse_metrics(&json!({"server_count": 1.5})).is_err());
        assert!(parse_metrics(&json!({"server_count": 1, "shard_count": 2.5})).is_err());
        assert!(parse_metrics(&json!({"server_count": -1.0})).is_err());
    }

    #[test]
    fn announcements_are_checked_and_spaced_four_hours() {
        let now = at("2026-05-01T00:00:00Z");
        assert!(
            Announcement::new("ab".into(), "0123456789".into(), Default::default(), now).is_err()
        );
        assert!(
            Announcement::new("abc".into(), "012345678".into(), Default::default(), now).is_err()
        );
        let first = Announcement::new("abc".into(), "0123456789".into(), Default::default(), now)
            .expect("valid");
        let mut state = ProjectState::default();
        assert_eq!(state.announce_blocked_until(now), None);
        state.announce(first);
        let later = now.plus(chrono::Duration::hours(4));
        assert_eq!(state.announce_blocked_until(now), Some(later));
        assert_eq!(state.announce_blocked_until(later), None);
    }

    #[test]
    fn commands_are_an_array_of_named_objects() {
        assert!(Commands::parse(&json!([{"name": "ping"}])).is_ok());
        assert!(Commands::parse(&json!({"name": "ping"})).is_err());
        assert!(Commands::parse(&json!([{"description": "x"}])).is_err());
        assert!(Commands::parse(&json!([])).is_ok());
    }
}
