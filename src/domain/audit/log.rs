//! The audit log in memory: every entry packed into 64 bytes, in journal order, in chunks that
//! never move once filled; reasons and change lists kept once each beside them; an index of
//! positions by target and by actor, so that a bot's or a person's entries are read without a
//! scan (docs/PERFORMANCE.md, "The audit log", has the figures).
//!
//! Entries are appended in the order of their records' numbers, and only once: an entry whose
//! number is not above the last one held is passed over, so the live journal, a follower's
//! stream, replay and a snapshot's entries can each offer an entry without counting it twice.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use sha2::{Digest as _, Sha256};
use uuid::Uuid;

use super::{AuditAction, AuditActor, AuditEntry, TargetKind};
use crate::domain::time::Timestamp;

/// Entries per chunk: 4 MiB each, allocated whole, so an append never copies the log.
const CHUNK: usize = 1 << 16;

/// A page of a filtered read examines at most this many entries, then says where it stopped.
/// Every filter has an index, and a page walks the shortest of those its filters name, so
/// only a combination whose shortest index is long and rarely matches the other filters
/// reaches it.
pub const SCAN_BUDGET: usize = 1_000_000;

/// No reason.
const NONE: u32 = u32::MAX;

/// One entry, packed.
#[derive(Clone, Copy, Debug)]
struct Packed {
    seq: u64,
    at: i64,
    actor: [u8; 16],
    target: [u8; 16],
    /// Into `Entries::change_sets`.
    changes: u32,
    /// Into `Entries::reasons`, or `NONE`.
    reason: u32,
    action: u8,
    /// 0 admin, 1 profile, 2 bot.
    actor_kind: u8,
}

/// The log's entries, owned: what a saved state holds and what the live log guards.
#[derive(Clone, Debug, Default)]
pub struct AuditEntries {
    chunks: Vec<Vec<Packed>>,
    len: usize,
    last_seq: u64,
    reasons: Vec<Box<str>>,
    /// Each distinct list of changed fields, once.
    change_sets: Vec<Arc<[Box<str>]>>,
    change_set_of: HashMap<Vec<String>, u32>,
    by_target: HashMap<Uuid, Vec<u32>>,
    by_actor: HashMap<Uuid, Vec<u32>>,
    /// Positions by action (`AuditAction::index`): `action=` of an action no entry has, or
    /// only old entries have, used to walk the whole log back (0.34 s a page at 10 million).
    by_action: Vec<Vec<u32>>,
    /// Positions of the admin token's entries (`actor=admin`).
    by_admin: Vec<u32>,
    /// A SHA-256 chain over every entry in id order ([`chain_link`]): kept as entries are
    /// appended, so the cluster digest covers a log of millions of entries at no cost.
    chain: [u8; 32],
}

/// The chain after `previous` and the entry of record `seq`: the hash of the previous link and
/// each of the entry's fields, each length-prefixed (so no two entries hash alike by shifting
/// bytes from one field to the next).
fn chain_link(previous: &[u8; 32], seq: u64, entry: &AuditEntry) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(previous);
    hasher.update(seq.to_le_bytes());
    hasher.update(entry.at.millis().to_le_bytes());
    let (kind, actor) = match entry.actor {
        AuditActor::Admin => (0u8, [0; 16]),
        AuditActor::Profile(id) => (1, *id.as_bytes()),
        AuditActor::Bot(id) => (2, *id.as_bytes()),
    };
    hasher.update([kind, entry.action.index()]);
    hasher.update(actor);
    hasher.update(entry.target.as_bytes());
    let mut text = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    // The flag after it tells "no reason" from an empty one.
    text(entry.reason.as_deref().unwrap_or_default().as_bytes());
    hasher.update([u8::from(entry.reason.is_some())]);
    hasher.update((entry.changes.len() as u64).to_le_bytes());
    for name in &entry.changes {
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
    }
    hasher.finalize().into()
}

/// An entry as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditView {
    pub id: u64,
    pub at: Timestamp,
    pub actor: AuditActor,
    pub action: AuditAction,
    pub target_kind: TargetKind,
    pub target: Uuid,
    pub reason: Option<Box<str>>,
    pub changes: Arc<[Box<str>]>,
}

/// Which entries a read wants; every filter given must match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub target: Option<Uuid>,
    pub actor: Option<ActorFilter>,
    pub action: Option<AuditAction>,
}

/// The actor a read wants: the admin token, or a profile or bot by its id (the two never share
/// an id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActorFilter {
    Admin,
    Id(Uuid),
}

/// A page, newest first, and where the next one starts (entries with an id below it).
#[derive(Debug, Default)]
pub struct AuditPage {
    pub entries: Vec<AuditView>,
    pub next: Option<u64>,
    /// How many entries the page looked at (the work a read cost, for tests and figures).
    pub examined: usize,
}

impl AuditEntries {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The hash chained over every entry held, in id order (all zeros for an empty log): two
    /// logs have the same chain exactly when they hold the same entries.
    pub fn chain(&self) -> [u8; 32] {
        self.chain
    }

    /// The number of the newest entry's record (0 when there is none).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Appends the entry of record `seq`, unless an entry of that record or a later one is held
    /// already; says whether it was appended.
    pub fn push(&mut self, seq: u64, entry: &AuditEntry) -> bool {
        if seq <= self.last_seq {
            return false;
        }
        let Ok(position) = u32::try_from(self.len) else {
            // Four billion entries: refused rather than wrapped (far past what memory holds).
            return false;
        };
        let reason = match &entry.reason {
            Some(reason) => {
                self.reasons.push(reason.as_str().into());
                u32::try_from(self.reasons.len() - 1).unwrap_or(NONE)
            }
            None => NONE,
        };
        let changes = self.change_set(&entry.changes);
        let (actor_kind, actor) = match entry.actor {
            AuditActor::Admin => (0, [0; 16]),
            AuditActor::Profile(id) => (1, *id.as_bytes()),
            AuditActor::Bot(id) => (2, *id.as_bytes()),
        };
        let packed = Packed {
            seq,
            at: entry.at.millis(),
            actor,
            target: *entry.target.as_bytes(),
            changes,
            reason,
            action: entry.action.index(),
            actor_kind,
        };
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.push(packed);
        }
        self.len += 1;
        self.last_seq = seq;
        self.chain = chain_link(&self.chain, seq, entry);
        self.by_target
            .entry(entry.target)
            .or_default()
            .push(position);
        match entry.actor.id() {
            Some(id) => self.by_actor.entry(id).or_default().push(position),
            None => self.by_admin.push(position),
        }
        let action = usize::from(entry.action.index());
        if self.by_action.len() <= action {
            self.by_action.resize_with(action + 1, Vec::new);
        }
        self.by_action[action].push(position);
        true
    }

    fn change_set(&mut self, changes: &[String]) -> u32 {
        if let Some(&index) = self.change_set_of.get(changes) {
            return index;
        }
        let index = u32::try_from(self.change_sets.len()).unwrap_or(u32::MAX);
        self.change_sets
            .push(changes.iter().map(|name| name.as_str().into()).collect());
        self.change_set_of.insert(changes.to_vec(), index);
        index
    }

    fn packed(&self, position: usize) -> &Packed {
        &self.chunks[position / CHUNK][position % CHUNK]
    }

    fn view(&self, packed: &Packed) -> AuditView {
        let action = AuditAction::from_index(packed.action);
        let id = Uuid::from_bytes(packed.actor);
        AuditView {
            id: packed.seq,
            at: Timestamp::from_millis(packed.at),
            actor: match packed.actor_kind {
                0 => AuditActor::Admin,
                1 => AuditActor::Profile(id),
                _ => AuditActor::Bot(id),
            },
            action,
            target_kind: action.target_kind(),
            target: Uuid::from_bytes(packed.target),
            reason: self.reasons.get(packed.reason as usize).cloned(),
            changes: self
                .change_sets
                .get(packed.changes as usize)
                .cloned()
                .unwrap_or_else(|| Arc::from(Vec::new())),
        }
    }

    /// The entry at `position`, as its record carried it (for snapshots).
    pub fn entry(&self, position: usize) -> Option<(u64, AuditEntry)> {
        (position < self.len).then(|| {
            let view = self.view(self.packed(position));
            let entry = AuditEntry {
                at: view.at,
                actor: view.actor,
                action: view.action,
                target: view.target,
                reason: view.reason.map(String::from),
                changes: view
                    .changes
                    .iter()
                    .map(|name| String::from(&**name))
                    .collect(),
            };
            (view.id, entry)
        })
    }

    fn matches(&self, packed: &Packed, filter: &AuditFilter) -> bool {
        if filter
            .target
            .is_some_and(|t| *t.as_bytes() != packed.target)
        {
            return false;
        }
        if filter.action.is_some_and(|a| a.index() != packed.action) {
            return false;
        }
        match filter.actor {
            None => true,
            Some(ActorFilter::Admin) => packed.actor_kind == 0,
            Some(ActorFilter::Id(id)) => packed.actor_kind != 0 && *id.as_bytes() == packed.actor,
        }
    }

    /// The positions of the entries each filter given matches, one list per filter (an empty
    /// list for a target, actor or action no entry has).
    fn indexes(&self, filter: &AuditFilter) -> Vec<&[u32]> {
        let mut lists: Vec<&[u32]> = Vec::new();
        if let Some(target) = filter.target {
            lists.push(self.by_target.get(&target).map_or(&[], Vec::as_slice));
        }
        match filter.actor {
            Some(ActorFilter::Id(actor)) => {
                lists.push(self.by_actor.get(&actor).map_or(&[], Vec::as_slice));
            }
            Some(ActorFilter::Admin) => lists.push(&self.by_admin),
            None => {}
        }
        if let Some(action) = filter.action {
            let positions = self.by_action.get(usize::from(action.index()));
            lists.push(positions.map_or(&[], Vec::as_slice));
        }
        lists
    }

    /// Up to `limit` entries matching `filter`, newest first, with ids below `before` (all when
    /// `None`). The shortest of the indexes the filters name gives the candidates, and the
    /// other filters are checked on each; without a filter the log is walked back. Either way
    /// at most [`SCAN_BUDGET`] entries are examined: a page cut short by it still says where
    /// to go on.
    pub fn page(&self, filter: &AuditFilter, before: Option<u64>, limit: usize) -> AuditPage {
        // Entries are in number order: every position below `end` has a smaller id.
        let end = match before {
            Some(before) => self.partition(before),
            None => self.len,
        };
        let shortest = self
            .indexes(filter)
            .into_iter()
            .min_by_key(|list| list.partition_point(|&p| (p as usize) < end));
        let candidates: Box<dyn Iterator<Item = usize> + '_> = match shortest {
            Some(positions) => {
                let upto = positions.partition_point(|&p| (p as usize) < end);
                Box::new(positions[..upto].iter().rev().map(|&p| p as usize))
            }
            None => Box::new((0..end).rev()),
        };
        let mut page = AuditPage::default();
        let mut last_examined = None;
        for (examined, position) in candidates.enumerate() {
            if page.entries.len() >= limit {
                // More may follow: the next page starts below the last entry shown.
                page.next = page.entries.last().map(|e| e.id);
                return page;
            }
            if examined >= SCAN_BUDGET {
                page.next = last_examined;
                return page;
            }
            let packed = self.packed(position);
            last_examined = Some(packed.seq);
            page.examined = examined + 1;
            if self.matches(packed, filter) {
                page.entries.push(self.view(packed));
            }
        }
        page
    }

    /// The first position whose id is at least `seq`.
    fn partition(&self, seq: u64) -> usize {
        let (mut low, mut high) = (0, self.len);
        while low < high {
            let middle = low + (high - low) / 2;
            if self.packed(middle).seq < seq {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// Roughly what the log holds in memory: the packed entries, the indexes' positions and
    /// the reasons' text (for the figures in docs/PERFORMANCE.md).
    pub fn bytes(&self) -> usize {
        let packed = self.chunks.len() * CHUNK * std::mem::size_of::<Packed>();
        let index = |map: &HashMap<Uuid, Vec<u32>>| {
            map.values().map(|v| v.capacity() * 4 + 48).sum::<usize>()
        };
        let reasons: usize = self.reasons.iter().map(|r| r.len() + 16).sum();
        let lists = self.by_action.iter().chain([&self.by_admin]);
        let by_kind: usize = lists.map(|v| v.capacity() * 4 + 24).sum();
        packed + index(&self.by_target) + index(&self.by_actor) + by_kind + reasons
    }
}

/// The live log, shared by the journal (which appends each entry once its record is durable and
/// published) and the readers.
#[derive(Debug, Default)]
pub struct AuditLog {
    entries: RwLock<AuditEntries>,
}

impl AuditLog {
    /// Takes over recovered entries (at start, before any record is applied).
    pub fn restore(&self, entries: AuditEntries) {
        *self.write() = entries;
    }

    /// Appends the entry of record `seq` unless it is held already; says whether it was.
    pub fn append(&self, seq: u64, entry: &AuditEntry) -> bool {
        self.write().push(seq, entry)
    }

    pub fn page(&self, filter: &AuditFilter, before: Option<u64>, limit: usize) -> AuditPage {
        self.read().page(filter, before, limit)
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    pub fn last_seq(&self) -> u64 {
        self.read().last_seq()
    }

    /// See [`AuditEntries::chain`].
    pub fn chain(&self) -> [u8; 32] {
        self.read().chain()
    }

    /// Entries `from..to` (clamped), as their records carried them, read under the lock once:
    /// a snapshot copies the log a chunk at a time, so appends wait for one chunk at most.
    pub fn entries(&self, from: usize, to: usize) -> Vec<(u64, AuditEntry)> {
        let entries = self.read();
        (from..to.min(entries.len()))
            .filter_map(|position| entries.entry(position))
            .collect()
    }

    /// A copy of every entry (tests, and a state built whole).
    pub fn snapshot(&self) -> AuditEntries {
        self.read().clone()
    }

    fn read(&self) -> RwLockReadGuard<'_, AuditEntries> {
        // A panic while holding the lock leaves whole entries: the data is still sound.
        self.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, AuditEntries> {
        self.entries.write().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::audit::Acting;

    fn entry(action: AuditAction, actor: AuditActor, target: Uuid) -> AuditEntry {
        Acting::new(actor, action).entry(target, vec!["name".into()], Timestamp::from_millis(1))
    }

    #[test]
    fn an_entry_is_appended_once_and_read_back_as_it_was() {
        let mut log = AuditEntries::default();
        let target = Uuid::new_v4();
        let e = Acting::admin(AuditAction::BotUpdate)
            .with_reason(Some("why".into()))
            .entry(target, vec!["tags".into()], Timestamp::from_millis(7));
        assert!(log.push(3, &e));
        assert!(!log.push(3, &e));
        assert!(!log.push(2, &e));
        assert_eq!(log.entry(0), Some((3, e)));
        assert_eq!(log.len(), 1);
    }

    #[test]
    fn pages_go_newest_first_with_filters_and_a_cursor() {
        let mut log = AuditEntries::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let profile = AuditActor::Profile(Uuid::new_v4());
        for seq in 1..=10u64 {
            let target = if seq % 2 == 0 { a } else { b };
            let actor = if seq % 3 == 0 {
                profile
            } else {
                AuditActor::Admin
            };
            log.push(seq * 2, &entry(AuditAction::BotUpdate, actor, target));
        }
        let all = log.page(&AuditFilter::default(), None, 4);
        let ids: Vec<u64> = all.entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, [20, 18, 16, 14]);
        assert_eq!(all.next, Some(14));
        let next = log.page(&AuditFilter::default(), all.next, 100);
        assert_eq!(next.entries.len(), 6);
        assert_eq!(next.next, None);
        let of_a = AuditFilter {
            target: Some(a),
            ..AuditFilter::default()
        };
        let ids: Vec<u64> = log
            .page(&of_a, Some(16), 10)
            .entries
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids, [12, 8, 4]);
        let by_profile = AuditFilter {
            actor: profile.id().map(ActorFilter::Id),
            target: Some(a),
            ..AuditFilter::default()
        };
        let ids: Vec<u64> = log
            .page(&by_profile, None, 10)
            .entries
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids, [12]);
        let by_admin = AuditFilter {
            actor: Some(ActorFilter::Admin),
            action: Some(AuditAction::BotUpdate),
            ..AuditFilter::default()
        };
        assert_eq!(log.page(&by_admin, None, 100).entries.len(), 7);
        let none = AuditFilter {
            action: Some(AuditAction::BotDelete),
            ..AuditFilter::default()
        };
        assert!(log.page(&none, None, 100).entries.is_empty());
    }

    #[test]
    fn every_filter_reads_its_index_not_the_log() {
        let mut log = AuditEntries::default();
        let (bot, profile) = (Uuid::new_v4(), AuditActor::Profile(Uuid::new_v4()));
        for seq in 1..=1000u64 {
            log.push(seq, &entry(AuditAction::BotUpdate, profile, bot));
        }
        log.push(1001, &entry(AuditAction::BotDelete, AuditActor::Admin, bot));
        let examined = |filter: AuditFilter| {
            let page = log.page(&filter, None, 50);
            (page.entries.len(), page.examined)
        };
        let action = |action| AuditFilter {
            action: Some(action),
            ..AuditFilter::default()
        };
        // An action no entry has, or one entry has: nothing walked past it.
        assert_eq!(examined(action(AuditAction::BotApprove)), (0, 0));
        assert_eq!(examined(action(AuditAction::BotDelete)), (1, 1));
        let admin = AuditFilter {
            actor: Some(ActorFilter::Admin),
            ..AuditFilter::default()
        };
        assert_eq!(examined(admin), (1, 1));
        // The shortest index of those named: the admin's one entry, not the bot's 1,001.
        let both = AuditFilter {
            target: Some(bot),
            action: Some(AuditAction::BotUpdate),
            actor: Some(ActorFilter::Admin),
        };
        assert_eq!(examined(both), (0, 1));
        // Below a cursor, the index is cut at the cursor's place.
        let page = log.page(&action(AuditAction::BotDelete), Some(1001), 50);
        assert_eq!((page.entries.len(), page.examined), (0, 0));
    }

    #[test]
    fn an_entry_packs_into_64_bytes() {
        assert_eq!(std::mem::size_of::<Packed>(), 64);
    }
}
