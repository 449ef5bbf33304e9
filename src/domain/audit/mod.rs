//! The audit log's entries: who changed what in the directory's management (a listing, a
//! profile, a token, an owner list, a vote ban, a review's removal by staff), with the changed
//! field names and never a value.
//!
//! An entry travels inside the journal record of its change (`Record::Audited`, in
//! `persist/state.rs`), so the two are durable, replicated and replayed together; the log
//! itself (`log.rs`) is what the entries make once their records are applied.
//!
//! A new management write adopts the log in one line: the route names who acts and what they do
//! (an [`Acting`]), and the actor that makes the record wraps it with
//! `Record::audited(acting.entry(target, changes, at), record)`. A new action is one row of
//! `audit_actions!`.

pub mod log;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::ids::{BotId, ProfileId};
use super::time::Timestamp;

pub use log::{ActorFilter, AuditEntries, AuditFilter, AuditLog, AuditPage, AuditView};

/// What an entry's target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    Bot,
    Profile,
    /// A profile's token (the target's id is the token's id, never its secret).
    Token,
}

impl TargetKind {
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Bot => "bot",
            TargetKind::Profile => "profile",
            TargetKind::Token => "token",
        }
    }
}

/// The actions, one row each: the variant, its name in the API and the kind of its target.
/// Rows are only ever appended: the stored entries name actions by their names.
macro_rules! audit_actions {
    ($($variant:ident => $name:literal, $target:ident;)*) => {
        /// What an entry records.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum AuditAction {
            $($variant,)*
        }

        impl AuditAction {
            pub const ALL: &'static [AuditAction] = &[$(AuditAction::$variant,)*];

            pub fn name(self) -> &'static str {
                match self {
                    $(AuditAction::$variant => $name,)*
                }
            }

            pub fn target_kind(self) -> TargetKind {
                match self {
                    $(AuditAction::$variant => TargetKind::$target,)*
                }
            }
        }
    };
}

audit_actions! {
    ProfileCreate => "profile.create", Profile;
    ProfileUpdate => "profile.update", Profile;
    ProfileDelete => "profile.delete", Profile;
    TokenIssue => "token.issue", Token;
    TokenRevoke => "token.revoke", Token;
    BotCreate => "bot.create", Bot;
    BotSubmit => "bot.submit", Bot;
    BotUpdate => "bot.update", Bot;
    BotOwners => "bot.owners", Bot;
    BotDelete => "bot.delete", Bot;
    BotTokenRotate => "bot.token.rotate", Bot;
    CommandsSet => "bot.commands.set", Bot;
    AnnouncementPost => "bot.announcement.post", Bot;
    BotClaim => "bot.claim", Bot;
    BotApprove => "bot.approve", Bot;
    BotDeny => "bot.deny", Bot;
    BotDelist => "bot.delist", Bot;
    BotCertify => "bot.certify", Bot;
    BotUncertify => "bot.uncertify", Bot;
    BotFeature => "bot.feature", Bot;
    BotUnfeature => "bot.unfeature", Bot;
    VoteBan => "profile.vote_ban", Profile;
    VoteUnban => "profile.vote_unban", Profile;
    ReviewRemove => "bot.review.remove", Bot;
}

impl AuditAction {
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|action| action.name() == name)
    }

    /// Its place in [`AuditAction::ALL`], as the log packs it.
    fn index(self) -> u8 {
        self as u8
    }

    fn from_index(index: u8) -> Self {
        // Only ever made from `index`.
        Self::ALL[usize::from(index)]
    }
}

impl Serialize for AuditAction {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for AuditAction {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Self::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown audit action `{name}`")))
    }
}

/// Who made a change: the operator through the admin API, a profile with one of its tokens, or a
/// bot with its own token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditActor {
    Admin,
    Profile(Uuid),
    Bot(Uuid),
}

impl AuditActor {
    pub fn profile(id: ProfileId) -> Self {
        AuditActor::Profile(Uuid::from_u128(id.as_u128()))
    }

    pub fn bot(id: BotId) -> Self {
        AuditActor::Bot(Uuid::from_u128(id.as_u128()))
    }

    pub fn kind(self) -> &'static str {
        match self {
            AuditActor::Admin => "admin",
            AuditActor::Profile(_) => "profile",
            AuditActor::Bot(_) => "bot",
        }
    }

    pub fn id(self) -> Option<Uuid> {
        match self {
            AuditActor::Admin => None,
            AuditActor::Profile(id) | AuditActor::Bot(id) => Some(id),
        }
    }
}

/// One entry as its record carries it; its id is the journal number of that record, given when
/// the record is numbered (so it is the same on every node and in every replay).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub at: Timestamp,
    pub actor: AuditActor,
    pub action: AuditAction,
    /// The target's id; its kind is the action's.
    pub target: Uuid,
    pub reason: Option<String>,
    /// The names of the fields the change set or changed, sorted; never a value.
    pub changes: Vec<String>,
}

/// Who acts and what they do, as a route knows it: the record's maker adds the target, the
/// changed fields and the time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acting {
    pub actor: AuditActor,
    pub action: AuditAction,
    pub reason: Option<String>,
}

impl Acting {
    pub fn new(actor: AuditActor, action: AuditAction) -> Self {
        Self {
            actor,
            action,
            reason: None,
        }
    }

    pub fn admin(action: AuditAction) -> Self {
        Self::new(AuditActor::Admin, action)
    }

    pub fn with_reason(mut self, reason: Option<String>) -> Self {
        self.reason = reason;
        self
    }

    pub fn entry(self, target: Uuid, mut changes: Vec<String>, at: Timestamp) -> AuditEntry {
        changes.sort_unstable();
        changes.dedup();
        AuditEntry {
            at,
            actor: self.actor,
            action: self.action,
            target,
            reason: self.reason,
            changes,
        }
    }
}

/// A bot's id as an entry's target.
pub fn bot_target(id: BotId) -> Uuid {
    Uuid::from_u128(id.as_u128())
}

/// A profile's id as an entry's target.
pub fn profile_target(id: ProfileId) -> Uuid {
    Uuid::from_u128(id.as_u128())
}

/// The names of the fields whose values differ between `old` and `new` (as their JSON
/// shows them): what an edit changed, named and never shown.
pub fn changed_fields<T: Serialize>(old: &T, new: &T) -> Vec<String> {
    let (Ok(serde_json::Value::Object(old)), Ok(serde_json::Value::Object(new))) =
        (serde_json::to_value(old), serde_json::to_value(new))
    else {
        return Vec::new();
    };
    let mut names: Vec<String> = new
        .iter()
        .filter(|(name, value)| old.get(*name) != Some(*value))
        .map(|(name, _)| name.clone())
        .collect();
    names.extend(old.keys().filter(|name| !new.contains_key(*name)).cloned());
    names
}

/// The names of the fields a new value sets (not null, not empty): what a creation set.
pub fn set_fields<T: Serialize>(new: &T) -> Vec<String> {
    let Ok(serde_json::Value::Object(new)) = serde_json::to_value(new) else {
        return Vec::new();
    };
    new.into_iter()
        .filter(|(_, value)| match value {
            serde_json::Value::Null => false,
            serde_json::Value::Array(items) => !items.is_empty(),
            serde_json::Value::String(text) => !text.is_empty(),
            _ => true,
        })
        .map(|(name, _)| name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_parses_from_its_name_and_packs_to_its_place() {
        for (index, action) in AuditAction::ALL.iter().enumerate() {
            assert_eq!(AuditAction::parse(action.name()), Some(*action));
            assert_eq!(usize::from(action.index()), index);
            assert_eq!(AuditAction::from_index(action.index()), *action);
        }
        assert_eq!(AuditAction::parse("nope"), None);
    }

    #[test]
    fn changed_fields_name_what_differs_and_nothing_else() {
        let old = serde_json::json!({"a": 1, "b": "x", "c": null});
        let new = serde_json::json!({"a": 2, "b": "x", "d": true});
        let mut names = changed_fields(&old, &new);
        names.sort();
        assert_eq!(names, ["a", "c", "d"]);
        let mut set = set_fields(&serde_json::json!({"a": 1, "b": "", "c": null, "d": [1]}));
        set.sort();
        assert_eq!(set, ["a", "d"]);
    }

    #[test]
    fn an_entry_survives_messagepack_as_records_encode_it() {
        let entry = Acting::admin(AuditAction::BotUpdate)
            .with_reason(Some("spam".into()))
            .entry(
                Uuid::new_v4(),
                vec!["name".into(), "avatar".into(), "name".into()],
                Timestamp::from_millis(5),
            );
        assert_eq!(entry.changes, ["avatar", "name"]);
        let bytes = rmp_serde::to_vec(&entry).expect("encodes");
        let back: AuditEntry = rmp_serde::from_slice(&bytes).expect("decodes");
        assert_eq!(back, entry);
    }
}
