//! The project API's messages to a bot's actor (CONTRACT section 12): its commands, its
//! announcements (one per 4 hours, on the injected clock), metrics batches, and its votes in
//! time order. Each write is a record applied by the one apply function and answered once
//! durable, like every other write of the bot.

use actix::prelude::*;

use super::BotActor;
use crate::actors::Answer;
use crate::domain::audit::{bot_target, Acting, AuditAction, AuditActor};
use crate::domain::project::{Announcement, AnnouncementCategory, Commands, ProjectState};
use crate::domain::stats::ServerCount;
use crate::domain::time::Timestamp;
use crate::domain::votes::history::HistoryEntry;
use crate::domain::Rejection;
use crate::persist::state::Record;

/// Replaces the bot's application commands.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetCommands(pub Commands, pub Answer<()>);

impl Handler<SetCommands> for BotActor {
    type Result = ();

    fn handle(&mut self, SetCommands(commands, answer): SetCommands, _: &mut Self::Context) {
        if let Some(why) = self.refuse_while_failed() {
            return answer.refuse(why);
        }
        let (bot, at) = (self.state.listing.id, self.clock.now());
        let record = Record::CommandsSet { bot, commands, at };
        let acting = Acting::new(AuditActor::bot(bot), AuditAction::CommandsSet);
        let record = Record::audited(
            acting.entry(bot_target(bot), vec!["commands".into()], at),
            record,
        );
        self.apply(&record);
        self.commit_answering(record, answer, ());
    }
}

/// Posts an announcement now, unless the bot's last one is less than 4 hours old.
#[derive(Message)]
#[rtype(result = "()")]
pub struct PostAnnouncement {
    pub title: String,
    pub content: String,
    pub category: AnnouncementCategory,
    pub answer: Answer<Announcement>,
}

impl Handler<PostAnnouncement> for BotActor {
    type Result = ();

    fn handle(&mut self, ask: PostAnnouncement, _: &mut Self::Context) {
        if let Some(why) = self.refuse_while_failed() {
            return ask.answer.refuse(why);
        }
        let now = self.clock.now();
        let announcement = match Announcement::new(ask.title, ask.content, ask.category, now) {
            Ok(announcement) => announcement,
            Err(why) => return ask.answer.refuse(Rejection::Invalid(why)),
        };
        // The rule reads the bot's own state, which holds every announcement it accepted,
        // durable or on its way: two posts racing cannot both pass.
        if let Some(until) = self.state.project.announce_blocked_until(now) {
            let seconds = (until.millis() - now.millis()).max(0);
            let retry_after = u64::try_from((seconds + 999) / 1000).unwrap_or(0);
            return ask.answer.refuse(Rejection::TooSoon {
                retry_after,
                message: format!(
                    "one announcement per 4 hours; the next is possible at {}",
                    until
                        .to_datetime()
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
            });
        }
        let bot = self.state.listing.id;
        let record = Record::AnnouncementPosted {
            bot,
            announcement: announcement.clone(),
        };
        let acting = Acting::new(AuditActor::bot(bot), AuditAction::AnnouncementPost);
        let entry = acting.entry(bot_target(bot), vec!["announcements".into()], now);
        let record = Record::audited(entry, record);
        self.apply(&record);
        self.commit_answering(record, ask.answer, announcement);
    }
}

/// A metrics batch, already in time order.
#[derive(Message)]
#[rtype(result = "()")]
pub struct PostMetricsBatch(pub Vec<(Timestamp, ServerCount)>, pub Answer<()>);

impl Handler<PostMetricsBatch> for BotActor {
    type Result = ();

    fn handle(
        &mut self,
        PostMetricsBatch(entries, answer): PostMetricsBatch,
        _: &mut Self::Context,
    ) {
        if let Some(why) = self.refuse_while_failed() {
            return answer.refuse(why);
        }
        let record = Record::MetricsBatchPosted {
            bot: self.state.listing.id,
            entries,
            at: self.clock.now(),
        };
        self.apply(&record);
        self.commit_answering(record, answer, ());
    }
}

/// The bot's commands and announcements, as far as they are durable.
#[derive(Message, Clone, Copy)]
#[rtype(result = "Result<ProjectState, Rejection>")]
pub struct ReadProject;

impl Handler<ReadProject> for BotActor {
    type Result = ResponseFuture<Result<ProjectState, Rejection>>;

    fn handle(&mut self, ask: ReadProject, ctx: &mut Self::Context) -> Self::Result {
        if self.acknowledged().is_some() {
            // What the failed journal refused cannot be told apart here: nothing is shown.
            return Box::pin(async {
                Err(Rejection::NotStored(
                    "the journal failed; commands and announcements are not read".into(),
                ))
            });
        }
        self.when_seen_durable(self.state.project.clone(), ask, ctx)
    }
}

/// Where a page of votes in time order starts.
#[derive(Clone, Copy, Debug)]
pub enum VotesFrom {
    /// The first vote taken at or after this time.
    Since(Timestamp),
    /// A history position a previous page named.
    Position(u64),
}

/// Up to `limit` durable votes in the order they were taken, from `from`, and the position
/// the next page starts at (`None` on the last page).
#[derive(Message, Clone, Copy)]
#[rtype(result = "Result<(Vec<HistoryEntry>, Option<u64>), Rejection>")]
pub struct VotesInOrder {
    pub from: VotesFrom,
    pub limit: usize,
}

impl Handler<VotesInOrder> for BotActor {
    type Result = ResponseFuture<Result<(Vec<HistoryEntry>, Option<u64>), Rejection>>;

    fn handle(&mut self, ask: VotesInOrder, ctx: &mut Self::Context) -> Self::Result {
        let acknowledged = self.acknowledged().map(|a| a.votes_before);
        let history = &self.state.votes.history;
        let from = match ask.from {
            VotesFrom::Since(since) => history.position_since(since),
            VotesFrom::Position(position) => position,
        };
        let end = acknowledged.unwrap_or_else(|| history.next_position());
        let entries = self.state.votes.history_range(from, end, ask.limit);
        let next = entries
            .last()
            .map(|last| last.position + 1)
            .filter(|&next| next < end);
        let page = (entries, next);
        if acknowledged.is_some() {
            return Box::pin(async move { Ok(page) });
        }
        self.when_seen_durable(page, ask, ctx)
    }
}
