//! A listed bot: its listing, its owner-only settings, its published view and its public shape.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::growth::Growth;
use super::ids::{BotId, ProfileId, Snowflake};
pub use super::listing::{Claim, DecidedBy, Decider, Decision, ListingStatus};
use super::patch::{at_most, present, some_at_most, ListItem, Patch};
use super::project::ProjectState;
use super::render::{ListingRender, RenderedListing};
pub use super::stats::ServerCount;
use super::stats::{ShardCounts, StatsUpdate};
use super::text::{
    fold_case, BotName, DecisionReason, HttpUrl, LanguageCode, LongDescription, PlatformUsername,
    Prefix, ShortDescription, Tags, WebhookSecret,
};
use super::time::Timestamp;
use super::votes::{MonthlyCount, PublishedChecks, VoteBook};
use super::webhook::{Deliveries, Event, EventBot, EventSet, WebhookFormat};
use super::Rejection;

/// Owner lists are short; a longer one is a mistake, not a team.
pub const MAX_OWNERS: usize = 20;

impl ListItem for ProfileId {
    const MAX: usize = MAX_OWNERS;
    const PLURAL: &'static str = "owners";

    fn tidy(owners: &mut Vec<Self>) {
        let mut seen = std::collections::HashSet::new();
        owners.retain(|id| seen.insert(*id));
    }
}

/// The public part of a bot that only changes when its listing is edited.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    pub id: BotId,
    pub platform_id: Snowflake,
    pub name: BotName,
    pub username: PlatformUsername,
    pub avatar: Option<HttpUrl>,
    pub short_description: ShortDescription,
    pub long_description: Option<LongDescription>,
    pub tags: Tags,
    pub language_code: Option<LanguageCode>,
    pub prefix: Option<Prefix>,
    pub invite_url: Option<HttpUrl>,
    pub website_url: Option<HttpUrl>,
    pub support_server_url: Option<HttpUrl>,
    pub github_url: Option<HttpUrl>,
    pub owner_ids: Vec<ProfileId>,
    pub certified: bool,
    pub featured: bool,
    pub created_at: Timestamp,
    /// Case-folded name and short description, so search does not fold per query. Derived, so
    /// not stored: [`BotState::restore`] rebuilds it with this build's folding.
    #[serde(skip)]
    pub search_text: SearchText,
    /// Its public JSON, rendered on first use (see [`super::render`]).
    #[serde(skip)]
    pub rendered: ListingRender,
    /// Where the listing is in its life; only an approved one is public. Last, and read as
    /// `approved` from records and snapshots of builds before it.
    #[serde(default)]
    pub status: ListingStatus,
    /// Why the last decision (a denial or a delisting) was made, shown to the owners.
    #[serde(default)]
    pub reason: Option<DecisionReason>,
    /// The staff member reviewing a pending listing (`POST /staff/bots/{id}/claim`); a
    /// decision ends it. Last, and none in files of builds before staff.
    #[serde(default)]
    pub claim: Option<Claim>,
}

impl Listing {
    /// Its public JSON around the counts, rendered once.
    pub fn rendered(&self) -> &RenderedListing {
        self.rendered.get(self)
    }

    /// The bot as its webhook events name it.
    pub fn event_bot(&self) -> EventBot {
        EventBot {
            id: self.id,
            platform_id: self.platform_id,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchText {
    pub name: String,
    pub short_description: String,
}

impl SearchText {
    fn of(name: &BotName, short_description: &ShortDescription) -> Self {
        Self {
            name: fold_case(name.as_str()),
            short_description: fold_case(short_description.as_str()),
        }
    }
}

/// Owner-only delivery settings; never shown on a public route.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WebhookSettings {
    pub url: Option<HttpUrl>,
    pub secret: Option<WebhookSecret>,
    #[serde(default)]
    pub format: WebhookFormat,
    /// The kinds of event it is sent (`webhook_events`); left out when votes only (the
    /// default), so the records and snapshots of every bot that chose nothing are unchanged.
    #[serde(default, skip_serializing_if = "EventSet::is_default")]
    pub events: EventSet,
}

impl WebhookSettings {
    /// Whether the bot chose `vote.expired` (its webhook, and its vote stream, are told when
    /// each voter's window ends).
    pub fn announces_expiry(&self) -> bool {
        self.events.has(Event::VoteExpired)
    }

    /// Whether its secret is one its format's receivers can verify with (a `standard` one is
    /// `whsec_` and base64): the one rule of every surface that sets them (the admin API, an
    /// owner's submission and edit), checked where the settings are made, so a secret and a
    /// format set by two edits are checked together.
    pub fn check_secret(&self) -> Result<(), Rejection> {
        match &self.secret {
            Some(secret) => self
                .format
                .check_secret(secret.as_str())
                .map_err(|why| Rejection::Invalid(format!("webhook_secret: {why}"))),
            None if self.url.is_some() && self.format.needs_secret() => {
                Err(Rejection::Invalid(format!(
                    "webhook_secret: a `{}` webhook is always signed and its receivers refuse \
                     a delivery without a signature; set webhook_secret with it",
                    self.format.name()
                )))
            }
            None => Ok(()),
        }
    }
}

/// The body of `POST /admin/bots`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewBot {
    pub platform_id: Snowflake,
    pub name: BotName,
    pub username: PlatformUsername,
    pub short_description: ShortDescription,
    #[serde(default)]
    pub avatar: Option<HttpUrl>,
    #[serde(default)]
    pub long_description: Option<LongDescription>,
    #[serde(default)]
    pub tags: Tags,
    #[serde(default)]
    pub language_code: Option<LanguageCode>,
    #[serde(default)]
    pub prefix: Option<Prefix>,
    #[serde(default)]
    pub invite_url: Option<HttpUrl>,
    #[serde(default)]
    pub website_url: Option<HttpUrl>,
    #[serde(default)]
    pub support_server_url: Option<HttpUrl>,
    #[serde(default)]
    pub github_url: Option<HttpUrl>,
    /// Profiles that exist (400 `bad_request` naming one that does not)
    #[serde(default, deserialize_with = "at_most")]
    #[schema(max_items = 20)]
    pub owner_ids: Vec<ProfileId>,
    #[serde(default)]
    pub certified: bool,
    #[serde(default)]
    pub featured: bool,
    #[serde(default)]
    pub webhook_url: Option<HttpUrl>,
    #[serde(default)]
    pub webhook_secret: Option<WebhookSecret>,
    /// `signed` (default), `legacy`, `v1` or `standard`; `v1` and `standard` require `webhook_secret` (400 without one: their receivers verify every delivery), a `whsec_` one for `standard`
    #[serde(default)]
    pub webhook_format: WebhookFormat,
    /// The kinds of event the webhook is sent; default `["vote.create"]`
    #[serde(default)]
    pub webhook_events: EventSet,
}

/// Declares the two patch bodies from one table of fields: the owner's fields, which both
/// `OwnerPatch` and `BotPatch` hold, and the operator's fields, which only `BotPatch` holds. A field
/// is written once, in the list of who may send it, so the two bodies cannot drift apart, and
/// `BotPatch::from(OwnerPatch)` is the owner's edit with every operator field left out.
macro_rules! bot_patches {
    (
        $(#[$bot_meta:meta])*
        admin $bot:ident { $($(#[$am:meta])* $af:ident: $at:ty,)* }
        $(#[$owner_meta:meta])*
        owner $owner:ident { $($(#[$om:meta])* $of:ident: $ot:ty,)* }
    ) => {
        $(#[$bot_meta])*
        #[derive(Debug, Default, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $bot {
            $($(#[$am])* pub $af: $at,)*
            $($(#[$om])* pub $of: $ot,)*
        }

        $(#[$owner_meta])*
        #[derive(Debug, Default, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $owner {
            $($(#[$om])* pub $of: $ot,)*
        }

        impl From<$owner> for $bot {
            fn from(p: $owner) -> Self {
                $bot { $($of: p.$of,)* ..$bot::default() }
            }
        }
    };
}

bot_patches! {
    /// The body of `PATCH /admin/bots/:id`: fields left out are kept, `null` clears a field that
    /// may be null; the fields that may not be null refuse it.
    admin BotPatch {
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = Snowflake)]
        platform_id: Option<Snowflake>,
        /// Profiles that exist (400 `bad_request` naming one that does not)
        #[serde(default, deserialize_with = "some_at_most")]
        #[schema(value_type = Vec<ProfileId>, max_items = 20)]
        owner_ids: Option<Vec<ProfileId>>,
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = bool)]
        certified: Option<bool>,
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = bool)]
        featured: Option<bool>,
        /// The operator's decision on the listing: `approved`, `denied` or `delisted` (see
        /// docs/API.md, "A listing's status"); a denial or a delisting needs `reason`
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = ListingStatus)]
        status: Option<ListingStatus>,
        /// Why, shown to the owners; only with `status`
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = DecisionReason)]
        reason: Option<DecisionReason>,
    }
    /// The body of `PATCH /bots/{id}` by an owner: every field an owner may change (not
    /// `certified`, `featured`, the counts or the ids: the platform id is what was reviewed, and
    /// the owners have their own route). Fields left out are kept, `null` clears a field that may
    /// be null.
    owner OwnerPatch {
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = BotName)]
        name: Option<BotName>,
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = PlatformUsername)]
        username: Option<PlatformUsername>,
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = ShortDescription)]
        short_description: Option<ShortDescription>,
        #[serde(default)]
        #[schema(value_type = Option<HttpUrl>)]
        avatar: Patch<HttpUrl>,
        #[serde(default)]
        #[schema(value_type = Option<LongDescription>)]
        long_description: Patch<LongDescription>,
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = Tags)]
        tags: Option<Tags>,
        #[serde(default)]
        #[schema(value_type = Option<LanguageCode>)]
        language_code: Patch<LanguageCode>,
        #[serde(default)]
        #[schema(value_type = Option<Prefix>)]
        prefix: Patch<Prefix>,
        #[serde(default)]
        #[schema(value_type = Option<HttpUrl>)]
        invite_url: Patch<HttpUrl>,
        #[serde(default)]
        #[schema(value_type = Option<HttpUrl>)]
        website_url: Patch<HttpUrl>,
        #[serde(default)]
        #[schema(value_type = Option<HttpUrl>)]
        support_server_url: Patch<HttpUrl>,
        #[serde(default)]
        #[schema(value_type = Option<HttpUrl>)]
        github_url: Patch<HttpUrl>,
        #[serde(default)]
        #[schema(value_type = Option<HttpUrl>)]
        webhook_url: Patch<HttpUrl>,
        #[serde(default)]
        #[schema(value_type = Option<WebhookSecret>)]
        webhook_secret: Patch<WebhookSecret>,
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = WebhookFormat)]
        webhook_format: Option<WebhookFormat>,
        /// The kinds of event the webhook is sent (the whole list)
        #[serde(default, deserialize_with = "present")]
        #[schema(value_type = EventSet)]
        webhook_events: Option<EventSet>,
    }
}

/// Everything a bot actor owns: the unit that is published, snapshotted and replayed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BotState {
    pub listing: Arc<Listing>,
    pub webhook: WebhookSettings,
    pub votes: VoteBook,
    pub server_count: Option<ServerCount>,
    pub updated_at: Timestamp,
    /// The last journal record applied to this bot, so replay skips what a snapshot holds.
    #[serde(default)]
    pub last_seq: u64,
    /// The webhook outbox and the latest deliveries.
    #[serde(default)]
    pub deliveries: Deliveries,
    /// Each shard's latest count, for bots that post per shard; `server_count` is their sum.
    #[serde(default)]
    pub shards: ShardCounts,
    /// Server counts and votes over time (`GET /bots/:id/stats/history`); last, so that
    /// snapshots written without it load (as an empty history).
    #[serde(default)]
    pub growth: Growth,
    /// The project API's commands and announcements; last, so that snapshots written without
    /// it load (as none).
    #[serde(default)]
    pub project: ProjectState,
    /// Its reviews (CONTRACT section 14); last, so that snapshots written without them load
    /// (as none).
    #[serde(default)]
    pub reviews: crate::domain::reviews::Reviews,
}

impl BotState {
    pub fn create(id: BotId, new: NewBot, now: Timestamp) -> Self {
        let listing = Listing {
            id,
            platform_id: new.platform_id,
            search_text: SearchText::of(&new.name, &new.short_description),
            name: new.name,
            username: new.username,
            avatar: new.avatar,
            short_description: new.short_description,
            long_description: new.long_description,
            tags: new.tags,
            language_code: new.language_code,
            prefix: new.prefix,
            invite_url: new.invite_url,
            website_url: new.website_url,
            support_server_url: new.support_server_url,
            github_url: new.github_url,
            owner_ids: new.owner_ids,
            certified: new.certified,
            featured: new.featured,
            created_at: now,
            rendered: ListingRender::default(),
            status: ListingStatus::Approved,
            reason: None,
            claim: None,
        };
        let mut state = Self {
            listing: Arc::new(listing),
            webhook: WebhookSettings {
                url: new.webhook_url,
                secret: new.webhook_secret,
                format: new.webhook_format,
                events: new.webhook_events,
            },
            deliveries: Deliveries::default(),
            votes: VoteBook::new(now),
            server_count: None,
            updated_at: now,
            last_seq: 0,
            shards: ShardCounts::default(),
            growth: Growth::default(),
            project: ProjectState::default(),
            reviews: Default::default(),
        };
        state.follow_expiry_choice(now);
        state
    }

    /// Starts announcing the ends of its voters' windows from `at` on when its webhook
    /// settings chose `vote.expired`, or stops when they no longer do: applied with every
    /// change of the settings, live and in replay alike.
    pub fn follow_expiry_choice(&mut self, at: Timestamp) {
        let announcing = self.webhook.announces_expiry().then_some(at);
        self.votes.window.announce_from(announcing);
    }

    /// Rebuilds what is derived and not stored, after a snapshot or a journal record is read.
    pub fn restore(&mut self) {
        self.votes.reindex();
        self.restore_listing();
    }

    pub fn restore_listing(&mut self) {
        let l = &self.listing;
        let search_text = SearchText::of(&l.name, &l.short_description);
        if l.search_text != search_text {
            Arc::make_mut(&mut self.listing).search_text = search_text;
        }
    }

    /// The listing and webhook settings that `patch` makes of these; nothing changes yet.
    pub fn edited(&self, patch: BotPatch) -> (Listing, WebhookSettings) {
        let mut listing = Listing::clone(&self.listing);
        let l = &mut listing;
        if let Some(v) = patch.platform_id {
            l.platform_id = v;
        }
        if let Some(v) = patch.name {
            l.name = v;
        }
        if let Some(v) = patch.username {
            l.username = v;
        }
        if let Some(v) = patch.short_description {
            l.short_description = v;
        }
        if let Some(v) = patch.tags {
            l.tags = v;
        }
        if let Some(v) = patch.owner_ids {
            l.owner_ids = v;
        }
        if let Some(v) = patch.certified {
            l.certified = v;
        }
        if let Some(v) = patch.featured {
            l.featured = v;
        }
        l.avatar = patch.avatar.apply(l.avatar.take());
        l.long_description = patch.long_description.apply(l.long_description.take());
        l.language_code = patch.language_code.apply(l.language_code.take());
        l.prefix = patch.prefix.apply(l.prefix.take());
        l.invite_url = patch.invite_url.apply(l.invite_url.take());
        l.website_url = patch.website_url.apply(l.website_url.take());
        l.support_server_url = patch.support_server_url.apply(l.support_server_url.take());
        l.github_url = patch.github_url.apply(l.github_url.take());
        l.search_text = SearchText::of(&l.name, &l.short_description);
        let mut webhook = self.webhook.clone();
        webhook.url = patch.webhook_url.apply(webhook.url.take());
        webhook.secret = patch.webhook_secret.apply(webhook.secret.take());
        if let Some(format) = patch.webhook_format {
            webhook.format = format;
        }
        if let Some(events) = patch.webhook_events {
            webhook.events = events;
        }
        (listing, webhook)
    }

    /// The listing and webhook settings that `patch` makes of these when `by` asks, with the
    /// status it moves to (the table in [`super::listing`]) and, when it moves, the decision
    /// the edit's record carries; nothing changes yet. An owner's edit of a denied listing
    /// sends it back for review.
    pub fn edited_by(
        &self,
        mut patch: BotPatch,
        by: DecidedBy,
    ) -> Result<(Listing, WebhookSettings, Option<Decision>), Rejection> {
        let (status, reason) = (patch.status.take(), patch.reason.take());
        let from = self.listing.status;
        let decider = by.decider();
        // Checked only when the edit touches the webhook (its format, secret or URL): a secret
        // stored by an earlier build does not block an edit of the name.
        let sets_secret = patch.webhook_format.is_some()
            || !matches!(patch.webhook_secret, Patch::Keep)
            || !matches!(patch.webhook_url, Patch::Keep);
        let (mut listing, webhook) = self.edited(patch);
        if sets_secret {
            webhook.check_secret()?;
        }
        let to = match status {
            Some(to) => Some(to),
            None if reason.is_some() => {
                return Err(Rejection::Invalid(
                    "reason is given only with status".into(),
                ))
            }
            None if decider == Decider::Owner && from == ListingStatus::Denied => {
                Some(ListingStatus::Pending)
            }
            None => None,
        };
        let Some(to) = to else {
            return Ok((listing, webhook, None));
        };
        if to.needs_reason() && reason.is_none() && decider != Decider::Owner {
            return Err(Rejection::Invalid(format!(
                "reason is required to make a listing `{}`",
                to.name()
            )));
        }
        from.check_move(to, decider).map_err(Rejection::Conflict)?;
        listing.status = to;
        // The reason of the last decision: an approval has none.
        listing.reason = if to == ListingStatus::Pending {
            listing.reason
        } else {
            reason
        };
        // A decision ends the review a staff member claimed; a listing back in the queue
        // waits for a new claim.
        listing.claim = None;
        Ok((listing, webhook, Some(Decision { by, from, to })))
    }

    /// A metrics batch, in time order: each entry goes into the growth history at its time,
    /// and one no older than the bot's last count becomes its count, as a post would.
    pub fn post_metrics_batch(&mut self, entries: &[(Timestamp, ServerCount)]) {
        for &(at, count) in entries {
            if at >= self.updated_at || self.server_count.is_none() {
                self.post_stats(&StatsUpdate::Whole(count), at);
            } else {
                self.growth.post(at, count.get());
            }
        }
    }

    pub fn post_stats(&mut self, update: &StatsUpdate, now: Timestamp) {
        let count = self.shards.apply(update);
        self.server_count = Some(count);
        self.updated_at = now;
        self.growth.post(now, count.get());
    }

    /// The picture of this bot that readers see without asking the actor: a copy, fixed once
    /// made, but for `checks`, the table of active votes that the view shares with the actor
    /// and that the actor's publications keep writing.
    pub fn view(&self) -> BotView {
        BotView {
            listing: Arc::clone(&self.listing),
            vote_count: self.votes.total,
            monthly: self.votes.monthly,
            server_count: self.server_count,
            updated_at: self.updated_at,
            checks: Arc::clone(self.votes.window.published()),
            growth_changes: self.growth.changes(),
            reviews: self.reviews.figures(),
        }
    }
}

/// What search, `GET /bots/:id` and `GET /bots/:id/stats` read: cheap to publish on every vote,
/// since the listing is shared, not copied.
#[derive(Clone, Debug)]
pub struct BotView {
    pub listing: Arc<Listing>,
    pub vote_count: u64,
    pub monthly: MonthlyCount,
    pub server_count: Option<ServerCount>,
    pub updated_at: Timestamp,
    /// Who has an active vote, as far as it is durable: read by `GET /bots/:id/check` without
    /// asking the actor, written only by the actor's publications.
    pub checks: Arc<PublishedChecks>,
    /// The growth history's count of changes when this view was made (see
    /// [`Growth::changes`](crate::domain::growth::Growth::changes)): a history answer kept at
    /// this count shows what this view's state holds.
    pub growth_changes: u64,
    /// Its reviews' count and sum of ratings, as far as they are durable.
    pub reviews: crate::domain::reviews::ReviewFigures,
}

impl BotView {
    /// The invites bucket and sort key: a count never posted counts as 0.
    pub fn servers(&self) -> u64 {
        self.server_count.map_or(0, ServerCount::get)
    }

    pub fn public(&self, now: Timestamp) -> PublicBot<'_> {
        PublicBot::of(
            &self.listing,
            self.vote_count,
            self.monthly.at(now),
            self.server_count,
        )
    }

    /// `serde_json::to_vec(&self.public(now))` appended to `out`, from the listing's rendering.
    pub fn write_public(&self, now: Timestamp, out: &mut Vec<u8>) {
        self.listing.rendered().write(
            out,
            self.vote_count,
            self.monthly.at(now),
            self.server_count,
        );
    }

    /// The public JSON as [`BotView::write_public`] writes it.
    pub fn public_json(&self, now: Timestamp) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.listing.rendered().len());
        self.write_public(now, &mut out);
        out
    }

    /// A strong validator of [`BotView::public_json`] read at `now`.
    pub fn public_etag(&self, now: Timestamp) -> String {
        self.listing
            .rendered()
            .etag(self.vote_count, self.monthly.at(now), self.server_count)
    }
}

/// A bot as every public route shows it: owner-only fields (webhook settings, the token) have no
/// place here to leak from.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Bot)]
pub struct PublicBot<'a> {
    /// Listing UUID of the bot
    #[schema(value_type = BotId)]
    pub id: BotId,
    #[schema(value_type = BotName)]
    pub name: &'a BotName,
    #[schema(value_type = PlatformUsername)]
    pub username: &'a PlatformUsername,
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub avatar: Option<&'a HttpUrl>,
    #[schema(value_type = ShortDescription)]
    pub short_description: &'a ShortDescription,
    #[schema(value_type = Option<LongDescription>, required = true)]
    pub long_description: Option<&'a LongDescription>,
    #[schema(value_type = Tags)]
    pub tags: &'a Tags,
    #[schema(value_type = Option<LanguageCode>, required = true)]
    pub language_code: Option<&'a LanguageCode>,
    #[schema(value_type = Option<Prefix>, required = true)]
    pub prefix: Option<&'a Prefix>,
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub invite_url: Option<&'a HttpUrl>,
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub website_url: Option<&'a HttpUrl>,
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub support_server_url: Option<&'a HttpUrl>,
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub github_url: Option<&'a HttpUrl>,
    #[schema(value_type = Vec<ProfileId>)]
    pub owner_ids: &'a [ProfileId],
    pub vote_count: u64,
    pub monthly_vote_count: u64,
    /// Left out until the bot first posts stats
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = u64, required = false, maximum = 9_007_199_254_740_991_u64)]
    pub server_count: Option<ServerCount>,
    pub certified: bool,
    pub featured: bool,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

impl<'a> PublicBot<'a> {
    pub fn of(
        l: &'a Listing,
        vote_count: u64,
        monthly_vote_count: u64,
        server_count: Option<ServerCount>,
    ) -> Self {
        PublicBot {
            id: l.id,
            name: &l.name,
            username: &l.username,
            avatar: l.avatar.as_ref(),
            short_description: &l.short_description,
            long_description: l.long_description.as_ref(),
            tags: &l.tags,
            language_code: l.language_code.as_ref(),
            prefix: l.prefix.as_ref(),
            invite_url: l.invite_url.as_ref(),
            website_url: l.website_url.as_ref(),
            support_server_url: l.support_server_url.as_ref(),
            github_url: l.github_url.as_ref(),
            owner_ids: &l.owner_ids,
            vote_count,
            monthly_vote_count,
            server_count,
            certified: l.certified,
            featured: l.featured,
            created_at: l.created_at,
        }
    }
}

/// The body of `POST /bots` (a profile with a `bots` token submits a listing): `POST
/// /admin/bots`'s without `certified` and `featured`, which are the operator's to set.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    pub platform_id: Snowflake,
    pub name: BotName,
    pub username: PlatformUsername,
    pub short_description: ShortDescription,
    #[serde(default)]
    pub avatar: Option<HttpUrl>,
    #[serde(default)]
    pub long_description: Option<LongDescription>,
    #[serde(default)]
    pub tags: Tags,
    #[serde(default)]
    pub language_code: Option<LanguageCode>,
    #[serde(default)]
    pub prefix: Option<Prefix>,
    #[serde(default)]
    pub invite_url: Option<HttpUrl>,
    #[serde(default)]
    pub website_url: Option<HttpUrl>,
    #[serde(default)]
    pub support_server_url: Option<HttpUrl>,
    #[serde(default)]
    pub github_url: Option<HttpUrl>,
    /// Co-owners, profiles that exist (400 `bad_request` naming one that does not); the
    /// submitter is always the first owner
    #[serde(default, deserialize_with = "at_most")]
    #[schema(max_items = 20)]
    pub owner_ids: Vec<ProfileId>,
    #[serde(default)]
    pub webhook_url: Option<HttpUrl>,
    #[serde(default)]
    pub webhook_secret: Option<WebhookSecret>,
    /// `signed` (default), `legacy`, `v1` or `standard`; `v1` and `standard` require `webhook_secret` (400 without one: their receivers verify every delivery), a `whsec_` one for `standard`
    #[serde(default)]
    pub webhook_format: WebhookFormat,
    /// The kinds of event the webhook is sent; default `["vote.create"]`
    #[serde(default)]
    pub webhook_events: EventSet,
}

impl From<Submission> for NewBot {
    fn from(s: Submission) -> Self {
        NewBot {
            platform_id: s.platform_id,
            name: s.name,
            username: s.username,
            short_description: s.short_description,
            avatar: s.avatar,
            long_description: s.long_description,
            tags: s.tags,
            language_code: s.language_code,
            prefix: s.prefix,
            invite_url: s.invite_url,
            website_url: s.website_url,
            support_server_url: s.support_server_url,
            github_url: s.github_url,
            owner_ids: s.owner_ids,
            certified: false,
            featured: false,
            webhook_url: s.webhook_url,
            webhook_secret: s.webhook_secret,
            webhook_format: s.webhook_format,
            webhook_events: s.webhook_events,
        }
    }
}

/// The body of `PUT /bots/{id}/owners`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnersPut {
    /// The owners, first owner first (1 to 20 ids of profiles that exist: 400 `bad_request`
    /// naming one that does not)
    #[serde(deserialize_with = "at_most")]
    #[schema(min_items = 1, max_items = 20)]
    pub owner_ids: Vec<ProfileId>,
}
