//! Directory user profiles.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ids::{ProfileId, Snowflake};
use super::patch::{at_most, present, some_at_most, ListItem, Patch};
use super::people::ProfileToken;
use super::render::{ProfileRender, RenderedProfile};
use super::text::{Bio, DisplayName, HttpUrl, ProfileUsername, Pronouns, SocialType};
use super::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Social {
    #[serde(rename = "type")]
    pub kind: SocialType,
    pub url: HttpUrl,
}

pub const MAX_SOCIALS: usize = 10;

impl ListItem for Social {
    const MAX: usize = MAX_SOCIALS;
    const PLURAL: &'static str = "socials";
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub id: ProfileId,
    pub username: ProfileUsername,
    pub display_name: Option<DisplayName>,
    pub avatar: Option<HttpUrl>,
    pub banner: Option<HttpUrl>,
    pub bio: Option<Bio>,
    pub pronouns: Option<Pronouns>,
    pub platform_id: Option<Snowflake>,
    pub socials: Vec<Social>,
    pub admin: bool,
    pub moderator: bool,
    pub created_at: Timestamp,
    /// Its public JSON, rendered on first use (see [`super::render`]).
    #[serde(skip)]
    pub rendered: ProfileRender,
    /// Its API tokens (CONTRACT section 13), each as a hash; never shown in a public answer.
    /// Last, and empty in records and snapshots of builds before them.
    #[serde(default)]
    pub tokens: Vec<ProfileToken>,
    /// Its ban from voting, set by staff (CONTRACT section 14); never in a public answer.
    /// Last, and none in files of builds before it.
    #[serde(default)]
    pub vote_ban: Option<crate::domain::staff::VoteBan>,
}

/// The body of `POST /admin/users`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewProfile {
    pub username: ProfileUsername,
    #[serde(default)]
    pub display_name: Option<DisplayName>,
    #[serde(default)]
    pub avatar: Option<HttpUrl>,
    #[serde(default)]
    pub banner: Option<HttpUrl>,
    #[serde(default)]
    pub bio: Option<Bio>,
    #[serde(default)]
    pub pronouns: Option<Pronouns>,
    #[serde(default)]
    pub platform_id: Option<Snowflake>,
    #[serde(default, deserialize_with = "at_most")]
    #[schema(max_items = 10)]
    pub socials: Vec<Social>,
    #[serde(default)]
    pub admin: bool,
    #[serde(default, rename = "mod")]
    pub moderator: bool,
}

/// The body of `PATCH /admin/users/:id`: fields left out are kept, `null` clears a field that may
/// be null; the fields that may not be null refuse it.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfilePatch {
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = ProfileUsername)]
    pub username: Option<ProfileUsername>,
    #[serde(default)]
    #[schema(value_type = Option<DisplayName>)]
    pub display_name: Patch<DisplayName>,
    #[serde(default)]
    #[schema(value_type = Option<HttpUrl>)]
    pub avatar: Patch<HttpUrl>,
    #[serde(default)]
    #[schema(value_type = Option<HttpUrl>)]
    pub banner: Patch<HttpUrl>,
    #[serde(default)]
    #[schema(value_type = Option<Bio>)]
    pub bio: Patch<Bio>,
    #[serde(default)]
    #[schema(value_type = Option<Pronouns>)]
    pub pronouns: Patch<Pronouns>,
    #[serde(default)]
    #[schema(value_type = Option<Snowflake>)]
    pub platform_id: Patch<Snowflake>,
    #[serde(default, deserialize_with = "some_at_most")]
    #[schema(value_type = Vec<Social>, max_items = 10)]
    pub socials: Option<Vec<Social>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = bool)]
    pub admin: Option<bool>,
    #[serde(default, rename = "mod", deserialize_with = "present")]
    #[schema(value_type = bool)]
    pub moderator: Option<bool>,
}

impl Profile {
    pub fn create(id: ProfileId, new: NewProfile, now: Timestamp) -> Self {
        Self {
            id,
            username: new.username,
            display_name: new.display_name,
            avatar: new.avatar,
            banner: new.banner,
            bio: new.bio,
            pronouns: new.pronouns,
            platform_id: new.platform_id,
            socials: new.socials,
            admin: new.admin,
            moderator: new.moderator,
            created_at: now,
            rendered: ProfileRender::default(),
            tokens: Vec::new(),
            vote_ban: None,
        }
    }

    /// Its public JSON and validator, rendered once.
    pub fn rendered(&self) -> &RenderedProfile {
        self.rendered.get(self)
    }

    pub fn apply(&mut self, patch: ProfilePatch) {
        if let Some(v) = patch.username {
            self.username = v;
        }
        if let Some(v) = patch.socials {
            self.socials = v;
        }
        if let Some(v) = patch.admin {
            self.admin = v;
        }
        if let Some(v) = patch.moderator {
            self.moderator = v;
        }
        self.display_name = patch.display_name.apply(self.display_name.take());
        self.avatar = patch.avatar.apply(self.avatar.take());
        self.banner = patch.banner.apply(self.banner.take());
        self.bio = patch.bio.apply(self.bio.take());
        self.pronouns = patch.pronouns.apply(self.pronouns.take());
        self.platform_id = patch.platform_id.apply(self.platform_id.take());
        // Edited in place: whatever was rendered describes the profile before.
        self.rendered = ProfileRender::default();
    }

    pub fn public(&self) -> PublicProfile<'_> {
        PublicProfile {
            id: self.id,
            username: &self.username,
            display_name: self.display_name.as_ref(),
            avatar: self.avatar.as_ref(),
            banner: self.banner.as_ref(),
            bio: self.bio.as_ref(),
            pronouns: self.pronouns.as_ref(),
            platform_id: self.platform_id,
            socials: &self.socials,
            admin: self.admin,
            moderator: self.moderator,
            supporter: false,
            certified: false,
            created_at: self.created_at,
        }
    }
}

/// A public profile: `avatar` is left out when unset, the other optional fields are `null`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = UserProfile)]
pub struct PublicProfile<'a> {
    #[schema(value_type = ProfileId)]
    pub id: ProfileId,
    #[schema(value_type = ProfileUsername)]
    pub username: &'a ProfileUsername,
    #[schema(value_type = Option<DisplayName>, required = true)]
    pub display_name: Option<&'a DisplayName>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = HttpUrl, required = false)]
    pub avatar: Option<&'a HttpUrl>,
    #[schema(value_type = Option<HttpUrl>, required = true)]
    pub banner: Option<&'a HttpUrl>,
    #[schema(value_type = Option<Bio>, required = true)]
    pub bio: Option<&'a Bio>,
    #[schema(value_type = Option<Pronouns>, required = true)]
    pub pronouns: Option<&'a Pronouns>,
    #[schema(value_type = Option<Snowflake>, required = true)]
    pub platform_id: Option<Snowflake>,
    #[schema(value_type = Vec<Social>)]
    pub socials: &'a [Social],
    pub admin: bool,
    #[serde(rename = "mod")]
    pub moderator: bool,
    /// Reserved for a future tier; always false
    pub supporter: bool,
    /// Reserved for a future flag; always false
    pub certified: bool,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}
