//! The classic shapes, from the same records `{base}` renders: a bot, a profile and a bot's
//! stats as the released client libraries read them (docs/API.md, "The classic surface", says
//! what each field holds where botlist's data differs).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::actors::directory::Directory;
use crate::domain::bot::BotView;
use crate::domain::ids::Snowflake;
use crate::domain::profile::Profile;
use crate::domain::time::Timestamp;

/// What botlist has no value for and the libraries read as text: the classic API's
/// discriminator of a user without one is `"0"`, which top.py's `int()` takes.
const DISCRIMINATOR: &str = "0";

/// Declares the classic bot's fields: each row is a [`BotField`], its name in the classic
/// shape (and in `fields=`) and its value, anything serde serializes (`None` leaves it out).
/// Parsing `fields=`, the order of the output and the rendering are all made from the rows, so
/// a field is one row. Each value is written straight into the answer, never built as a
/// `serde_json::Value` first (an allocation or more a field, 23 fields a bot).
macro_rules! classic_bot_fields {
    ($ctx:ident; $( $field:ident = $name:literal => $value:expr; )*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum BotField {
            $($field,)*
        }

        impl BotField {
            pub const ALL: [BotField; [$(BotField::$field),*].len()] = [$(BotField::$field),*];

            /// Its name in the classic shape and in `fields=`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$field => $name,)*
                }
            }

            /// Writes `"name":value` to `out` (after a comma unless `first`); `false`, writing
            /// nothing, for a field the bot leaves out.
            fn write(self, $ctx: &Context<'_>, first: bool, out: &mut Vec<u8>) -> bool {
                match self {
                    $(Self::$field => write_field(out, first, $name, $value),)*
                }
            }
        }
    };
}

/// What a classic bot is rendered from.
pub struct Context<'a> {
    pub bot: &'a BotView,
    pub directory: &'a Directory,
    pub now: Timestamp,
}

fn write_field<T: Serialize>(out: &mut Vec<u8>, first: bool, name: &str, value: Option<T>) -> bool {
    let Some(value) = value else {
        return false;
    };
    if !first {
        out.push(b',');
    }
    out.push(b'"');
    // Names are plain ASCII literals: nothing to escape.
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    if serde_json::to_writer(&mut *out, &value).is_err() {
        // Our own types always serialize; told without internals, the answer stays JSON.
        tracing::error!(field = name, "a classic field did not serialize");
        out.extend_from_slice(b"null");
    }
    true
}

fn json<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The empty text the classic shape has where botlist keeps nothing.
const EMPTY: &str = "";

classic_bot_fields! {
    ctx;
    Id = "id" => Some(&ctx.bot.listing.platform_id);
    Username = "username" => Some(&ctx.bot.listing.username);
    Discriminator = "discriminator" => Some(DISCRIMINATOR);
    Avatar = "avatar" => Some(&ctx.bot.listing.avatar);
    DefAvatar = "defAvatar" => Some(EMPTY);
    Lib = "lib" => Some(EMPTY);
    Prefix = "prefix" => Some(ctx.bot.listing.prefix.as_ref().map_or(EMPTY, |p| p.as_str()));
    Shortdesc = "shortdesc" => Some(&ctx.bot.listing.short_description);
    Longdesc = "longdesc" => Some(ctx.bot.listing.long_description.as_ref().map_or(EMPTY, |d| d.as_str()));
    Tags = "tags" => Some(&ctx.bot.listing.tags);
    Website = "website" => Some(&ctx.bot.listing.website_url);
    Support = "support" => Some(&ctx.bot.listing.support_server_url);
    Github = "github" => Some(&ctx.bot.listing.github_url);
    Owners = "owners" => Some(owners(ctx));
    Guilds = "guilds" => Some([(); 0]);
    Invite = "invite" => Some(&ctx.bot.listing.invite_url);
    Date = "date" => Some(&ctx.bot.listing.created_at);
    CertifiedBot = "certifiedBot" => Some(ctx.bot.listing.certified);
    Vanity = "vanity" => Some(());
    Points = "points" => Some(ctx.bot.vote_count);
    MonthlyPoints = "monthlyPoints" => Some(ctx.bot.monthly.at(ctx.now));
    Donatebotguildid = "donatebotguildid" => Some(EMPTY);
    ServerCount = "server_count" => ctx.bot.server_count.map(|count| count.get());
}

impl BotField {
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|field| field.name() == name)
    }
}

/// The owners' platform ids, in the listing's order: a profile without one is left out, since
/// every library reads an owner as a snowflake (top.py and topggpy with `int()`).
fn owners(ctx: &Context<'_>) -> Vec<Snowflake> {
    ctx.bot
        .listing
        .owner_ids
        .iter()
        .filter_map(|owner| ctx.directory.profile(*owner)?.platform_id)
        .collect()
}

/// The classic bot with the fields `fields` picks (`None`: all), appended to `out` as a JSON
/// object.
pub fn write_bot(ctx: &Context<'_>, fields: Option<&[BotField]>, out: &mut Vec<u8>) {
    out.push(b'{');
    let mut first = true;
    for field in fields.unwrap_or(&BotField::ALL) {
        if field.write(ctx, first, out) {
            first = false;
        }
    }
    out.push(b'}');
}

/// A bot as the classic API shows it, for the OpenAPI document (the handler writes it from
/// [`BotField`]; a test holds the two to one list).
#[derive(ToSchema)]
#[schema(as = ClassicBot)]
#[allow(non_snake_case, dead_code)]
pub struct ClassicBotSchema {
    /// The bot's platform snowflake
    #[schema(value_type = Snowflake)]
    pub id: String,
    pub username: String,
    /// Always "0": botlist keeps no discriminator
    pub discriminator: String,
    /// Full URL of the avatar (not a hash); null when unset
    pub avatar: Option<String>,
    /// Always "": botlist keeps no default avatar hash
    pub defAvatar: String,
    /// Always "": botlist keeps no library
    pub lib: String,
    /// "" when unset
    pub prefix: String,
    pub shortdesc: String,
    /// "" when unset
    pub longdesc: String,
    pub tags: Vec<String>,
    pub website: Option<String>,
    /// The support server URL (not an invite code)
    pub support: Option<String>,
    pub github: Option<String>,
    /// Platform snowflakes of the owners that have one linked, in listing order
    #[schema(value_type = Vec<Snowflake>)]
    pub owners: Vec<String>,
    /// Always empty
    pub guilds: Vec<String>,
    pub invite: Option<String>,
    /// When the bot was listed, RFC 3339 UTC with milliseconds
    #[schema(format = DateTime)]
    pub date: String,
    pub certifiedBot: bool,
    /// Always null
    pub vanity: Option<String>,
    /// All-time vote count
    pub points: u64,
    /// Votes this UTC month
    pub monthlyPoints: u64,
    /// Always ""
    pub donatebotguildid: String,
    /// Left out until the bot first posts stats
    #[schema(required = false, maximum = 9_007_199_254_740_991_u64)]
    pub server_count: Option<u64>,
}

/// A page of classic search results.
#[derive(ToSchema)]
#[schema(as = ClassicBotList)]
#[allow(dead_code)]
pub struct ClassicBotListSchema {
    /// The bots, with only the fields `fields` names when it is sent
    #[schema(value_type = Vec<PickedClassicBot>)]
    pub results: Vec<ClassicBotSchema>,
    pub limit: u64,
    pub offset: u64,
    pub count: u64,
    pub total: u64,
}

/// A bot of a classic search page: a [`ClassicBotSchema`] with every field when `fields` is not
/// sent, and only the named ones when it is, so no field is required (schemathesis found the
/// document requiring fields that `fields=date` leaves out).
pub struct PickedClassicBot;

impl utoipa::PartialSchema for PickedClassicBot {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::Schema;
        use utoipa::openapi::RefOr;
        let mut schema = <ClassicBotSchema as utoipa::PartialSchema>::schema();
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            object.required.clear();
        }
        schema
    }
}

impl ToSchema for PickedClassicBot {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("ClassicPickedBot")
    }
}

/// A profile as the classic API shows it.
#[derive(Serialize, ToSchema)]
#[schema(as = ClassicUser)]
#[allow(non_snake_case)]
pub struct ClassicUser<'a> {
    /// The linked platform snowflake; the profile UUID when none is linked
    pub id: String,
    #[schema(value_type = String)]
    pub username: &'a str,
    /// Always "0"
    pub discriminator: &'static str,
    /// Full URL of the avatar; null when unset
    #[schema(value_type = Option<String>, required = true)]
    pub avatar: Option<&'a str>,
    /// Always ""
    pub defAvatar: &'static str,
    #[schema(value_type = Option<String>, required = true)]
    pub bio: Option<&'a str>,
    /// Banner URL; null when unset
    #[schema(value_type = Option<String>, required = true)]
    pub banner: Option<&'a str>,
    /// The profile's links of these five kinds, each its URL
    #[schema(value_type = Object)]
    pub social: serde_json::Map<String, Value>,
    /// Always ""
    pub color: &'static str,
    pub supporter: bool,
    pub certifiedDev: bool,
    #[serde(rename = "mod")]
    #[schema(rename = "mod")]
    pub moderator: bool,
    /// The same as `mod`
    pub webMod: bool,
    pub admin: bool,
}

/// The social kinds the classic shape has a key for.
const CLASSIC_SOCIALS: &[&str] = &["youtube", "reddit", "twitter", "instagram", "github"];

impl<'a> ClassicUser<'a> {
    pub fn of(profile: &'a Profile) -> Self {
        let social = profile
            .socials
            .iter()
            .filter(|social| CLASSIC_SOCIALS.contains(&social.kind.as_str()))
            .map(|social| (social.kind.as_str().to_owned(), json(&social.url)))
            .collect();
        Self {
            id: match profile.platform_id {
                Some(platform_id) => platform_id.to_string(),
                None => profile.id.to_string(),
            },
            username: profile.username.as_str(),
            discriminator: DISCRIMINATOR,
            avatar: profile.avatar.as_ref().map(|url| url.as_str()),
            defAvatar: "",
            bio: profile.bio.as_ref().map(|bio| bio.as_str()),
            banner: profile.banner.as_ref().map(|url| url.as_str()),
            social,
            color: "",
            supporter: false,
            certifiedDev: false,
            moderator: profile.moderator,
            webMod: profile.moderator,
            admin: profile.admin,
        }
    }
}

/// A bot's stats as the classic API shows them.
#[derive(Serialize, ToSchema)]
#[schema(as = ClassicStats)]
pub struct ClassicStats {
    /// 0 when the bot has never posted stats
    pub server_count: u64,
    /// Always empty: botlist shows the sum of a sharded bot's counts, not each shard's
    pub shards: Vec<u64>,
    /// Always null, for the same reason
    #[schema(value_type = Option<u64>, required = true)]
    pub shard_count: Option<u64>,
}
