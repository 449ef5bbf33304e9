//! A listing's status and who may change it (CONTRACT sections 13 and 14): one state machine,
//! written as one table the compiler checks. Every pair of statuses is a row of
//! [`ListingStatus::who_may`], with no wildcard, so a status added makes the compiler ask
//! about every pair it is in, and staff's decisions (the next step) are rows, not new code.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ids::ProfileId;
use super::time::Timestamp;

/// Where a listing is in its life. Only an `approved` listing is public: the others are 404
/// on every public route, out of search and out of every count, and shown to its owners.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListingStatus {
    /// Submitted by an owner, waiting for a decision.
    Pending,
    /// Public. A bot listed through `POST /admin/bots` (or by any build before statuses) is
    /// approved from the start.
    #[default]
    Approved,
    /// Refused, with a reason; its owner's next edit sends it back to `pending`.
    Denied,
    /// Taken off the directory by the operator (kept, with a reason, not removed).
    Delisted,
}

/// Who asks for a change of status (named apart from the actors of `actors/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decider {
    /// The operator, through the admin API (until staff exist, the only one who decides).
    Admin,
    /// One of the listing's owners, with a `bots` token.
    Owner,
    /// A profile with `mod` or `admin`, with a `staff` token (CONTRACT section 14).
    Staff,
}

/// Who made an edit of a listing, as its record keeps it: the deciding actor of a status
/// change (the events of a decision and the audit read it from the record).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecidedBy {
    /// The operator, through the admin API.
    Admin,
    /// One of the listing's owners.
    Owner(ProfileId),
    /// A staff member.
    Staff(ProfileId),
}

impl DecidedBy {
    /// The row of [`ListingStatus::who_may`] this actor is checked against.
    pub fn decider(self) -> Decider {
        match self {
            DecidedBy::Admin => Decider::Admin,
            DecidedBy::Owner(_) => Decider::Owner,
            DecidedBy::Staff(_) => Decider::Staff,
        }
    }

    /// The profile that decided, if a profile did.
    pub fn profile(self) -> Option<ProfileId> {
        match self {
            DecidedBy::Admin => None,
            DecidedBy::Owner(profile) | DecidedBy::Staff(profile) => Some(profile),
        }
    }
}

/// A change of a listing's status, as the edit's record (`Record::BotEdited`) carries it: the
/// one record kind every decision on a listing goes through, whoever makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub by: DecidedBy,
    pub from: ListingStatus,
    pub to: ListingStatus,
}

/// Who on the staff took a pending listing to review, and when (advisory: another staff
/// member may take it over; a decision ends it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Claim {
    /// The staff member's profile
    #[schema(value_type = String)]
    pub profile_id: ProfileId,
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
}

impl ListingStatus {
    pub const ALL: [ListingStatus; 4] = [
        ListingStatus::Pending,
        ListingStatus::Approved,
        ListingStatus::Denied,
        ListingStatus::Delisted,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ListingStatus::Pending => "pending",
            ListingStatus::Approved => "approved",
            ListingStatus::Denied => "denied",
            ListingStatus::Delisted => "delisted",
        }
    }

    pub fn is_public(self) -> bool {
        self == ListingStatus::Approved
    }

    /// Who may move a listing from `self` to `to`: the table. (An owner removes a listing
    /// with `DELETE`, which is not a status: it is gone.)
    pub fn who_may(self, to: ListingStatus) -> &'static [Decider] {
        use Decider::{Admin, Owner, Staff};
        use ListingStatus::{Approved, Delisted, Denied, Pending};
        match (self, to) {
            (Pending, Approved) => &[Admin, Staff],
            (Pending, Denied) => &[Admin, Staff],
            (Pending, Pending) | (Pending, Delisted) => &[],
            (Approved, Delisted) => &[Admin, Staff],
            (Approved, Pending) | (Approved, Approved) | (Approved, Denied) => &[],
            // An owner's edit of a denied listing asks for a new decision.
            (Denied, Pending) => &[Owner],
            (Denied, Approved) | (Denied, Denied) | (Denied, Delisted) => &[],
            // The operator and staff may put a delisted listing back.
            (Delisted, Approved) => &[Admin, Staff],
            (Delisted, Pending) | (Delisted, Denied) | (Delisted, Delisted) => &[],
        }
    }

    /// Who may remove a listing in status `self` (`DELETE`: it is gone, not a status): the
    /// table's removal row. An owner removes an approved listing only (CONTRACT section 14:
    /// `approved` -> removed by its owner); a pending or denied one waits for a decision, a
    /// delisted one stays as staff left it. The operator's `DELETE /admin/bots/{id}` is older
    /// than statuses and removes a listing in any of them.
    pub fn who_may_remove(self) -> &'static [Decider] {
        use Decider::{Admin, Owner};
        match self {
            ListingStatus::Approved => &[Admin, Owner],
            ListingStatus::Pending | ListingStatus::Denied | ListingStatus::Delisted => &[Admin],
        }
    }

    /// The removal of a listing in status `self` by `by`, or why not, naming the status (a 409).
    pub fn check_removal(self, by: Decider) -> Result<(), String> {
        if self.who_may_remove().contains(&by) {
            return Ok(());
        }
        Err(format!(
            "the listing is `{}` and cannot be removed by {}: only an `approved` listing can be",
            self.name(),
            match by {
                Decider::Admin => "the operator",
                Decider::Owner => "its owner",
                Decider::Staff => "staff",
            }
        ))
    }

    /// Whether a decision to `to` needs a reason (a denial or a delisting says why).
    pub fn needs_reason(self) -> bool {
        match self {
            ListingStatus::Denied | ListingStatus::Delisted => true,
            ListingStatus::Pending | ListingStatus::Approved => false,
        }
    }

    /// The move from `self` to `to` by `by`, or why not, naming the status (a 409).
    pub fn check_move(self, to: ListingStatus, by: Decider) -> Result<(), String> {
        if self.who_may(to).contains(&by) {
            return Ok(());
        }
        let allowed: Vec<&str> = ListingStatus::ALL
            .iter()
            .filter(|next| self.who_may(**next).contains(&by))
            .map(|next| next.name())
            .collect();
        Err(format!(
            "the listing is `{}` and cannot become `{}`{}",
            self.name(),
            to.name(),
            if allowed.is_empty() {
                String::new()
            } else {
                format!(" (it can become: {})", allowed.join(", "))
            }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_only_sends_a_denied_listing_back_to_review() {
        for from in ListingStatus::ALL {
            for to in ListingStatus::ALL {
                let owner = from.who_may(to).contains(&Decider::Owner);
                assert_eq!(
                    owner,
                    from == ListingStatus::Denied && to == ListingStatus::Pending
                );
            }
        }
    }

    #[test]
    fn an_owner_removes_an_approved_listing_only() {
        for status in ListingStatus::ALL {
            let by_owner = status.check_removal(Decider::Owner);
            assert_eq!(by_owner.is_ok(), status == ListingStatus::Approved);
            if let Err(why) = by_owner {
                assert!(why.contains(&format!("`{}`", status.name())), "{why}");
            }
            assert!(status.check_removal(Decider::Admin).is_ok());
            assert!(status.check_removal(Decider::Staff).is_err());
        }
    }

    #[test]
    fn staff_decide_as_the_operator_does() {
        for from in ListingStatus::ALL {
            for to in ListingStatus::ALL {
                let may = from.who_may(to);
                assert_eq!(may.contains(&Decider::Staff), may.contains(&Decider::Admin));
            }
        }
    }

    #[test]
    fn a_refusal_names_the_status() {
        let why = ListingStatus::Approved
            .check_move(ListingStatus::Denied, Decider::Admin)
            .expect_err("not a move");
        assert!(
            why.contains("`approved`") && why.contains("delisted"),
            "{why}"
        );
        assert!(ListingStatus::Pending
            .check_move(ListingStatus::Approved, Decider::Admin)
            .is_ok());
    }
}
