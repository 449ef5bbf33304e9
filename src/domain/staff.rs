//! Staff (CONTRACT section 14): what a profile with `mod` or `admin` may do with a `staff`
//! token, one row each, and the vote bans they set. The listing's status moves themselves are
//! rows of [`super::listing::ListingStatus::who_may`]; this table says which of staff's
//! actions need `admin` and which status each decision asks for.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ids::ProfileId;
use super::listing::ListingStatus;
use super::profile::Profile;
use super::text::DecisionReason;
use super::time::Timestamp;

/// One action of staff on a listing (`POST {base}/staff/bots/{id}/...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaffAction {
    Claim,
    Approve,
    Deny,
    Delist,
    Certify,
    Uncertify,
    Feature,
    Unfeature,
}

/// Which staff may act: every staff member, or only those with `admin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaffRole {
    /// `mod` or `admin`.
    Staff,
    /// `admin` only.
    Admin,
}

impl StaffRole {
    /// Whether `profile` holds the role now: read at request time, so a profile that loses
    /// `mod`/`admin` loses staff rights with the very next request.
    pub fn held_by(self, profile: &Profile) -> bool {
        match self {
            StaffRole::Staff => profile.moderator || profile.admin,
            StaffRole::Admin => profile.admin,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StaffRole::Staff => "`mod` or `admin`",
            StaffRole::Admin => "`admin`",
        }
    }
}

impl StaffAction {
    /// The audit log's name for the action (`domain::audit`).
    pub fn audit_action(self) -> crate::domain::audit::AuditAction {
        use crate::domain::audit::AuditAction;
        match self {
            StaffAction::Claim => AuditAction::BotClaim,
            StaffAction::Approve => AuditAction::BotApprove,
            StaffAction::Deny => AuditAction::BotDeny,
            StaffAction::Delist => AuditAction::BotDelist,
            StaffAction::Certify => AuditAction::BotCertify,
            StaffAction::Uncertify => AuditAction::BotUncertify,
            StaffAction::Feature => AuditAction::BotFeature,
            StaffAction::Unfeature => AuditAction::BotUnfeature,
        }
    }

    /// The action's table row: its path segment, who may take it, and the status a decision
    /// asks for (`None` for the actions that are not a status move).
    pub fn row(self) -> (&'static str, StaffRole, Option<ListingStatus>) {
        use ListingStatus::{Approved, Delisted, Denied};
        match self {
            StaffAction::Claim => ("claim", StaffRole::Staff, None),
            StaffAction::Approve => ("approve", StaffRole::Staff, Some(Approved)),
            StaffAction::Deny => ("deny", StaffRole::Staff, Some(Denied)),
            StaffAction::Delist => ("delist", StaffRole::Staff, Some(Delisted)),
            StaffAction::Certify => ("certify", StaffRole::Staff, None),
            StaffAction::Uncertify => ("uncertify", StaffRole::Staff, None),
            StaffAction::Feature => ("feature", StaffRole::Admin, None),
            StaffAction::Unfeature => ("unfeature", StaffRole::Admin, None),
        }
    }

    pub fn role(self) -> StaffRole {
        self.row().1
    }

    pub fn status(self) -> Option<ListingStatus> {
        self.row().2
    }
}

/// A profile's ban from voting, kept in the profile (`POST {base}/staff/users/{id}/vote-ban`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteBan {
    pub reason: DecisionReason,
    /// `None`: until lifted. Ends on the injected clock at this instant.
    pub until: Option<Timestamp>,
    pub by: ProfileId,
    pub at: Timestamp,
}

impl VoteBan {
    /// Whether the ban still holds at `now`.
    pub fn holds_at(&self, now: Timestamp) -> bool {
        self.until.is_none_or(|end| now < end)
    }
}

/// The body of `POST {base}/staff/users/{id}/vote-ban`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewVoteBan {
    #[schema(value_type = DecisionReason)]
    pub reason: DecisionReason,
    /// When the ban ends (RFC 3339, in the future); left out, it lasts until lifted
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub until: Option<Timestamp>,
}

/// The body of `/deny` and `/delist`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    #[schema(value_type = DecisionReason)]
    pub reason: DecisionReason,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_featuring_needs_admin() {
        let all = [
            StaffAction::Claim,
            StaffAction::Approve,
            StaffAction::Deny,
            StaffAction::Delist,
            StaffAction::Certify,
            StaffAction::Uncertify,
            StaffAction::Feature,
            StaffAction::Unfeature,
        ];
        for action in all {
            let admin_only = matches!(action, StaffAction::Feature | StaffAction::Unfeature);
            assert_eq!(action.role() == StaffRole::Admin, admin_only, "{action:?}");
        }
    }

    #[test]
    fn a_ban_ends_at_its_instant() {
        let ban = VoteBan {
            reason: DecisionReason::parse("spam".into()).expect("valid"),
            until: Some(Timestamp::from_millis(1_000)),
            by: ProfileId::new_random(),
            at: Timestamp::from_millis(0),
        };
        assert!(ban.holds_at(Timestamp::from_millis(999)));
        assert!(!ban.holds_at(Timestamp::from_millis(1_000)));
    }
}
