//! A bot's reviews (CONTRACT section 14), written through the bot's actor: the rules that read
//! the bot's reviews (one per profile, its author only) are checked here, in order with every
//! other write of the bot, so two requests racing cannot both pass. Each write is one record
//! applied by the one apply function and answered once durable.

use actix::prelude::*;
use uuid::Uuid;

use super::BotActor;
use crate::actors::Answer;
use crate::domain::audit::{bot_target, Acting, AuditAction, AuditActor};
use crate::domain::ids::ProfileId;
use crate::domain::reviews::{Cursor, Rating, Removal, Remover, Review, ReviewReply, ReviewSort};
use crate::domain::text::{ReplyContent, ReviewContent};
use crate::domain::webhook::ReviewCreated;
use crate::domain::Rejection;
use crate::persist::state::Record;

/// A new review by `author`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WriteReview {
    pub author: ProfileId,
    pub rating: Rating,
    pub content: ReviewContent,
    pub answer: Answer<Review>,
}

/// An edit of a review by its author: fields left out are kept.
#[derive(Message)]
#[rtype(result = "()")]
pub struct EditReview {
    pub review: Uuid,
    pub author: ProfileId,
    pub rating: Option<Rating>,
    pub content: Option<ReviewContent>,
    pub answer: Answer<Review>,
}

/// An owner's reply, set or replaced (refused unless `owner` is one of the bot's owners).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ReplyToReview {
    pub review: Uuid,
    pub owner: ProfileId,
    pub content: ReplyContent,
    pub answer: Answer<Review>,
}

/// A review deleted by its author, or removed by staff with a reason (staff's role was checked
/// by the registry, in order with the changes of profiles: `StaffRemoveReview`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct RemoveReview {
    pub review: Uuid,
    pub removal: Removal,
    pub answer: Answer<()>,
}

/// A page of the bot's durable reviews, with the average and count.
#[derive(Message, Clone, Copy)]
#[rtype(result = "Result<ReviewPage, Rejection>")]
pub struct ReadReviews {
    pub sort: ReviewSort,
    pub after: Option<Cursor>,
    pub limit: usize,
}

#[derive(Clone, Debug)]
pub struct ReviewPage {
    pub average: Option<f64>,
    pub count: u64,
    pub results: Vec<Review>,
    pub next: Option<Cursor>,
}

fn no_review(id: Uuid) -> Rejection {
    Rejection::NotFound(format!("no review with id `{id}` for this bot"))
}

impl BotActor {
    /// Keeps `review` (its new state; `created` when it was just written) and answers with it
    /// once durable.
    fn save_review(&mut self, review: Review, created: bool, answer: Answer<Review>) {
        let record = Record::ReviewSaved {
            bot: self.state.listing.id,
            review: review.clone(),
            created,
        };
        self.apply(&record);
        self.commit_answering(record, answer, review);
    }

    /// The review `id` if `author` wrote it: 404 without one, 403 for another's.
    fn own_review(&self, id: Uuid, author: ProfileId) -> Result<Review, Rejection> {
        let review = self.state.reviews.get(id).ok_or_else(|| no_review(id))?;
        if review.author != author {
            return Err(Rejection::Forbidden(
                "only its author may change or delete a review".into(),
            ));
        }
        Ok(review.clone())
    }
}

impl Handler<WriteReview> for BotActor {
    type Result = ();

    fn handle(&mut self, ask: WriteReview, _: &mut Self::Context) {
        if let Some(why) = self.refuse_while_failed() {
            return ask.answer.refuse(why);
        }
        // A directory's reviews are other people's word on a bot: its owners may reply to one,
        // not write one (docs/API.md, "Reviews"). Decided here, in order with the edits that
        // change the owners, so a profile made an owner a moment before is refused.
        if self.state.listing.owner_ids.contains(&ask.author) {
            return ask.answer.refuse(Rejection::Forbidden(
                "an owner of this bot may not review it (owners answer reviews with a reply)"
                    .into(),
            ));
        }
        if let Some(existing) = self.state.reviews.by_author(ask.author) {
            return ask.answer.refuse(Rejection::Conflict(format!(
                "this profile has already reviewed this bot (review `{}`); edit or delete that one",
                existing.id
            )));
        }
        let now = self.clock.now();
        let review = Review {
            id: Uuid::new_v4(),
            author: ask.author,
            rating: ask.rating,
            content: ask.content,
            created_at: now,
            updated_at: now,
            reply: None,
        };
        let event = ReviewCreated::of(self.state.listing.event_bot(), &review);
        self.save_review(review, true, ask.answer);
        self.queue_event(event);
    }
}

impl Handler<EditReview> for BotActor {
    type Result = ();

    fn handle(&mut self, ask: EditReview, _: &mut Self::Context) {
        if let Some(why) = self.refuse_while_failed() {
            return ask.answer.refuse(why);
        }
        let mut review = match self.own_review(ask.review, ask.author) {
            Ok(review) => review,
            Err(why) => return ask.answer.refuse(why),
        };
        if let Some(rating) = ask.rating {
            review.rating = rating;
        }
        if let Some(content) = ask.content {
            review.content = content;
        }
        review.updated_at = self.clock.now();
        self.save_review(review, false, ask.answer);
    }
}

impl Handler<ReplyToReview> for BotActor {
    type Result = ();

    fn handle(&mut self, ask: ReplyToReview, _: &mut Self::Context) {
        if let Some(why) = self.refuse_while_failed() {
            return ask.answer.refuse(why);
        }
        // In order with the edits that change the owners, as a review's own check.
        if !self.state.listing.owner_ids.contains(&ask.owner) {
            return ask.answer.refuse(Rejection::Forbidden(
                "this profile is not an owner of this bot".into(),
            ));
        }
        let Some(mut review) = self.state.reviews.get(ask.review).cloned() else {
            return ask.answer.refuse(no_review(ask.review));
        };
        review.reply = Some(ReviewReply {
            author: ask.owner,
            content: ask.content,
            at: self.clock.now(),
        });
        self.save_review(review, false, ask.answer);
    }
}

impl Handler<RemoveReview> for BotActor {
    type Result = ();

    fn handle(&mut self, ask: RemoveReview, _: &mut Self::Context) {
        if let Some(why) = self.refuse_while_failed() {
            return ask.answer.refuse(why);
        }
        if let Remover::Author(author) = ask.removal.by {
            if let Err(why) = self.own_review(ask.review, author) {
                return ask.answer.refuse(why);
            }
        } else if self.state.reviews.get(ask.review).is_none() {
            return ask.answer.refuse(no_review(ask.review));
        }
        let (bot, at) = (self.state.listing.id, self.clock.now());
        let entry = removal_entry(&ask.removal, bot, at);
        let record = Record::ReviewRemoved {
            bot,
            review: ask.review,
            removal: ask.removal,
            at,
        };
        // Staff's removal is management: the change and its audit entry are one record.
        let record = match entry {
            Some(entry) => Record::audited(entry, record),
            None => record,
        };
        self.apply(&record);
        self.commit_answering(record, ask.answer, ());
    }
}

/// The audit log entry of a removal, made from the removal itself so that a staff removal
/// cannot be journaled without one: its author's deletion is the directory's data (like a
/// vote), staff's removal is management (CONTRACT section 14) and says why.
fn removal_entry(
    removal: &Removal,
    bot: crate::domain::ids::BotId,
    at: crate::domain::time::Timestamp,
) -> Option<crate::domain::audit::AuditEntry> {
    match removal.by {
        Remover::Author(_) => None,
        Remover::Staff(staff) => Some(
            Acting::new(AuditActor::profile(staff), AuditAction::ReviewRemove)
                .with_reason(removal.reason.as_ref().map(|r| r.as_str().to_owned()))
                .entry(bot_target(bot), vec!["reviews".into()], at),
        ),
    }
}

impl Handler<ReadReviews> for BotActor {
    type Result = ResponseFuture<Result<ReviewPage, Rejection>>;

    fn handle(&mut self, ask: ReadReviews, ctx: &mut Self::Context) -> Self::Result {
        if self.acknowledged().is_some() {
            // What the failed journal refused cannot be told apart here: nothing is shown.
            return Box::pin(async {
                Err(Rejection::NotStored(
                    "the journal failed; reviews are not read".into(),
                ))
            });
        }
        let reviews = &self.state.reviews;
        let (results, next) = reviews.page(ask.sort, ask.after, ask.limit);
        let page = ReviewPage {
            average: reviews.average(),
            count: reviews.count(),
            results: results.into_iter().cloned().collect(),
            next,
        };
        self.when_seen_durable(page, ask, ctx)
    }
}
