//! The audit log the figures are taken over (examples/audit_figures.rs and
//! examples/moderation_fill.rs): one entry in seven by the admin token, one in 50 with a
//! reason, five kinds of change, the entries spread over every bot and profile.

use botlist::domain::audit::{Acting, AuditAction, AuditActor, AuditEntry};
use botlist::domain::time::Timestamp;
use uuid::Uuid;

/// Entry `n` of the mix, about one of `bots`, by one of `people` or the admin, made `at`.
pub fn entry(n: usize, bots: &[Uuid], people: &[Uuid], at: Timestamp) -> AuditEntry {
    let (action, changes): (AuditAction, &[&str]) = match n % 5 {
        0 => (AuditAction::BotUpdate, &["name"]),
        1 => (AuditAction::BotUpdate, &["long_description", "tags"]),
        2 => (AuditAction::BotOwners, &["owner_ids"]),
        3 => (AuditAction::BotTokenRotate, &["token"]),
        _ => (AuditAction::CommandsSet, &["commands"]),
    };
    let actor = if n.is_multiple_of(7) {
        AuditActor::Admin
    } else {
        AuditActor::Profile(people[n % people.len()])
    };
    let reason = n
        .is_multiple_of(50)
        .then(|| "Spam in the long description".to_string());
    Acting::new(actor, action).with_reason(reason).entry(
        bots[(n * 7919) % bots.len()],
        changes.iter().map(|c| c.to_string()).collect(),
        at,
    )
}
