//! Validated text: every string field the API takes, with its limits.
//!
//! A value of one of these types has passed its checks; the limits are listed in docs/API.md.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{KnownFormat, RefOr};

/// The OpenAPI schema of a string with limits, shared by every validated text type.
pub(crate) fn string_schema(
    description: &str,
    min: Option<usize>,
    max: Option<usize>,
    pattern: Option<&str>,
    format: Option<KnownFormat>,
) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .min_length(min)
        .max_length(max)
        .pattern(pattern)
        .format(format.map(SchemaFormat::KnownFormat))
        .into()
}

/// Implements `ToSchema` for a type that is a string on the wire.
macro_rules! string_to_schema {
    ($name:ident, $description:expr, $min:expr, $max:expr, $pattern:expr, $format:expr) => {
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $crate::domain::text::string_schema($description, $min, $max, $pattern, $format)
            }
        }

        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn schemas(
                schemas: &mut Vec<(
                    String,
                    utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
                )>,
            ) {
                schemas.push((
                    stringify!($name).to_string(),
                    <$name as utoipa::PartialSchema>::schema(),
                ));
            }
        }
    };
}
pub(crate) use string_to_schema;

/// Serde for a type that is a string on the wire and validated by `parse(String)`.
macro_rules! string_serde {
    ($name:ident) => {
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Self::parse(text).map_err(serde::de::Error::custom)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// Serde for free text: like [`string_serde`], but stored files (MessagePack, not
/// human-readable) are read without the rules added since they were written, so text a
/// previous build accepted still loads; every value taken from a client is checked in full.
macro_rules! text_serde {
    ($name:ident, $min:expr, $max:expr, $multiline:expr) => {
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let stored = !deserializer.is_human_readable();
                let text = String::deserialize(deserializer)?;
                let rules = if stored { Rules::Stored } else { Rules::All };
                check_text(&text, $min, $max, $multiline, rules)
                    .map_err(serde::de::Error::custom)?;
                Ok(Self(text))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// Which rules a text is checked against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rules {
    /// Everything: text from a client.
    All,
    /// What every build has checked (length, blank, control characters): text read back from
    /// the data directory, written when it passed the rules of its time.
    Stored,
}

/// Free text with a length range in characters; `multiline` allows line breaks and tabs.
macro_rules! bounded_text {
    ($(#[$doc:meta])* $name:ident, $min:expr, $max:expr, multiline: $multiline:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            pub const MIN: usize = $min;
            pub const MAX: usize = $max;

            pub fn parse(text: String) -> Result<Self, String> {
                check_text(&text, $min, $max, $multiline, Rules::All)?;
                Ok(Self(text))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        text_serde!($name, $min, $max, $multiline);
        string_to_schema!(
            $name,
            concat!(
                stringify!($name),
                ": ",
                stringify!($min),
                " to ",
                stringify!($max),
                " characters"
            ),
            Some($min),
            Some($max),
            Some(text_pattern($min, $multiline)),
            None
        );
    };
}

/// The pattern of what [`check_text`] accepts besides its length, for the OpenAPI document:
/// no control characters (but line breaks and tabs in multiline text), no format characters in
/// single-line text (those of the Basic Multilingual Plane, which a pattern without the `u` flag
/// can name), and not blank when the text may not be empty.
const fn text_pattern(min: usize, multiline: bool) -> &'static str {
    match (min > 0, multiline) {
        (false, false) => {
            r"^[^\u0000-\u001F\u007F-\u009F\u00AD\u0600-\u0605\u061C\u06DD\u070F\u0890\u0891\u08E2\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFEFF\uFFF9-\uFFFB]*$"
        }
        (false, true) => r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$",
        (true, false) => {
            r"^[^\u0000-\u001F\u007F-\u009F\u00AD\u0600-\u0605\u061C\u06DD\u070F\u0890\u0891\u08E2\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFEFF\uFFF9-\uFFFB]*[^\s\u0000-\u001F\u007F-\u009F\u00AD\u0600-\u0605\u061C\u06DD\u070F\u0890\u0891\u08E2\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFEFF\uFFF9-\uFFFB][^\u0000-\u001F\u007F-\u009F\u00AD\u0600-\u0605\u061C\u06DD\u070F\u0890\u0891\u08E2\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFEFF\uFFF9-\uFFFB]*$"
        }
        (true, true) => {
            r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$"
        }
    }
}

fn check_text(
    text: &str,
    min: usize,
    max: usize,
    multiline: bool,
    rules: Rules,
) -> Result<(), String> {
    let chars = text.chars().count();
    if chars < min || chars > max {
        return Err(format!("must be {min} to {max} characters, got {chars}"));
    }
    if min > 0 && text.trim().is_empty() {
        return Err("must not be blank".into());
    }
    let allowed_control = |c: char| multiline && matches!(c, '\n' | '\r' | '\t');
    if text.chars().any(|c| c.is_control() && !allowed_control(c)) {
        return Err("must not contain control characters".into());
    }
    // A name shown on one line must read as what it is: a right-to-left override turns
    // `admin\u{202E}gnp.exe` into "adminexe.png", zero-width characters make look-alikes.
    if !multiline && rules == Rules::All {
        if let Some(c) = text.chars().find(|&c| is_format_character(c)) {
            return Err(format!(
                "must not contain invisible formatting characters (Unicode category Cf), got U+{:04X}",
                u32::from(c)
            ));
        }
    }
    Ok(())
}

/// Unicode general category Cf (format characters), from the Unicode Character Database 16.0
/// (`DerivedGeneralCategory.txt`). Twenty-one ranges that change rarely, so a table here beats a
/// crate; a test checks it against regex-syntax's own table of the same category.
const FORMAT_CHARACTERS: [(char, char); 21] = [
    ('\u{00AD}', '\u{00AD}'),
    ('\u{0600}', '\u{0605}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{06DD}', '\u{06DD}'),
    ('\u{070F}', '\u{070F}'),
    ('\u{0890}', '\u{0891}'),
    ('\u{08E2}', '\u{08E2}'),
    ('\u{180E}', '\u{180E}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{2064}'),
    ('\u{2066}', '\u{206F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFF9}', '\u{FFFB}'),
    ('\u{110BD}', '\u{110BD}'),
    ('\u{110CD}', '\u{110CD}'),
    ('\u{13430}', '\u{1343F}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0001}', '\u{E0001}'),
    ('\u{E0020}', '\u{E007F}'),
];

/// Whether `c` is a format character (general category Cf).
pub fn is_format_character(c: char) -> bool {
    FORMAT_CHARACTERS
        .binary_search_by(|&(low, high)| {
            if high < c {
                std::cmp::Ordering::Less
            } else if low > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

bounded_text!(
    /// A bot's display name.
    BotName, 1, 64, multiline: false);
bounded_text!(
    /// A bot's or a voter's platform username.
    PlatformUsername, 1, 64, multiline: false);
bounded_text!(
    /// The short description shown on listings.
    ShortDescription, 1, 300, multiline: false);
bounded_text!(
    /// The full description, Markdown.
    LongDescription, 0, 20_000, multiline: true);
bounded_text!(
    /// A bot's command prefix.
    Prefix, 1, 32, multiline: false);
bounded_text!(
    /// A profile's presentation name.
    DisplayName, 1, 64, multiline: false);
bounded_text!(
    /// A profile's short bio, Markdown-safe.
    Bio, 0, 1024, multiline: true);
bounded_text!(
    /// Free-form pronouns.
    Pronouns, 1, 40, multiline: false);
bounded_text!(
    /// What a profile token is for, as its holder names it (shown when tokens are listed).
    TokenLabel, 1, 100, multiline: false);
bounded_text!(
    /// Why a listing was denied or delisted, shown to its owners.
    DecisionReason, 1, 500, multiline: true);
/// The secret a bot's webhook receiver shares with botlist: 1 to 256 printable ASCII characters,
/// spaces only inside. It travels as a header in the legacy format, where surrounding spaces are
/// stripped and non-ASCII bytes are read differently by different receivers.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct WebhookSecret(String);

/// A secret never reaches a log line or a panic message through `Debug`.
impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(redacted)")
    }
}

impl WebhookSecret {
    pub fn parse(text: String) -> Result<Self, String> {
        if text.is_empty() || text.len() > 256 {
            return Err(format!(
                "must be 1 to 256 characters, got {}",
                text.chars().count()
            ));
        }
        if !text.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
            return Err("must be printable ASCII (it is sent as an HTTP header)".into());
        }
        if text.starts_with(' ') || text.ends_with(' ') {
            return Err("must not start or end with a space".into());
        }
        Ok(Self(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

string_serde!(WebhookSecret);
string_to_schema!(
    WebhookSecret,
    "1 to 256 printable ASCII characters, spaces only inside",
    Some(1),
    Some(256),
    Some("^[!-~]([ -~]{0,254}[!-~])?$"),
    None
);

/// The username a voter had when voting.
pub type VoterName = PlatformUsername;

/// An absolute http or https URL with a host, at most 2048 characters, kept as given.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HttpUrl(String);

impl HttpUrl {
    pub const MAX: usize = 2048;

    pub fn parse(text: String) -> Result<Self, String> {
        if text.len() > Self::MAX {
            return Err(format!("must be at most {} characters", Self::MAX));
        }
        let url = url::Url::parse(&text).map_err(|e| format!("is not a URL ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("must be an http or https URL".into());
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err("must name a host".into());
        }
        if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err("must not contain spaces or control characters".into());
        }
        Ok(Self(text))
    }

    /// A URL read back from the data directory (snapshot or journal, MessagePack): it passed
    /// [`HttpUrl::parse`] when it was written, and the file's crc32 checks it arrived unchanged,
    /// so only the cheap checks run again. Parsing every avatar and webhook URL with the `url`
    /// crate was ~9% of start-up at 100k bots and 5M votes; a file that is corrupted but still
    /// matches its checksum is not a case we defend against beyond that checksum.
    pub fn from_stored(text: String) -> Result<Self, String> {
        if text.len() > Self::MAX {
            return Err(format!("must be at most {} characters", Self::MAX));
        }
        if !(text.starts_with("http://") || text.starts_with("https://"))
            || text.chars().any(|c| c.is_control() || c.is_whitespace())
        {
            return Err("must be an http or https URL without spaces".into());
        }
        Ok(Self(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for HttpUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// JSON (a client, human-readable) is checked in full; MessagePack is only ever read from the
/// data directory or a peer of the cluster, which wrote what passed the full check.
impl<'de> Deserialize<'de> for HttpUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = !deserializer.is_human_readable();
        let text = String::deserialize(deserializer)?;
        let url = if stored {
            Self::from_stored(text)
        } else {
            Self::parse(text)
        };
        url.map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
string_to_schema!(
    HttpUrl,
    "An absolute http or https URL, at most 2048 characters",
    Some(1),
    Some(HttpUrl::MAX),
    None,
    Some(KnownFormat::Uri)
);

/// Text made of a fixed alphabet with a length range.
macro_rules! slug_text {
    ($(#[$doc:meta])* $name:ident, $min:expr, $max:expr, $allowed:expr, $pattern:literal, $rule:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub fn parse(text: String) -> Result<Self, String> {
                let allowed: fn(u8) -> bool = $allowed;
                let ok = (($min)..=($max)).contains(&text.len()) && text.bytes().all(allowed);
                if ok { Ok(Self(text)) } else { Err(format!("`{text}` is not {}", $rule)) }
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        string_serde!($name);
        string_to_schema!($name, $rule, Some($min), Some($max), Some($pattern), None);
    };
}

slug_text!(
    /// A category tag slug.
    Tag, 1, 32, |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-',
    "^[a-z0-9-]{1,32}$", "a tag slug (1 to 32 of a-z, 0-9 and -)");
slug_text!(
    /// An ISO 639-1 language code.
    LanguageCode, 2, 2, |b| b.is_ascii_lowercase(),
    "^[a-z]{2}$", "a language code (two lowercase letters, ISO 639-1)");
slug_text!(
    /// A profile's unique username.
    ProfileUsername, 2, 32, |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.',
    "^[a-z0-9_.]{2,32}$", "a username (2 to 32 of a-z, 0-9, _ and .)");

/// A bot's category tags: at most 20 as sent (a duplicate counts, as the document's `maxItems`
/// says: schemathesis found 21 with one twice accepted), each kept once, in the order given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Tags(Vec<Tag>);

impl Tags {
    pub const MAX: usize = 20;

    pub fn new(tags: Vec<Tag>) -> Result<Self, String> {
        if tags.len() > Self::MAX {
            return Err(format!("at most {} tags, got {}", Self::MAX, tags.len()));
        }
        let mut unique: Vec<Tag> = Vec::with_capacity(tags.len());
        for tag in tags {
            if !unique.contains(&tag) {
                unique.push(tag);
            }
        }
        Ok(Self(unique))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Tag> {
        self.0.iter()
    }
}

impl<'de> Deserialize<'de> for Tags {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let tags = Vec::<Tag>::deserialize(deserializer)?;
        Self::new(tags).map_err(serde::de::Error::custom)
    }
}

impl utoipa::PartialSchema for Tags {
    fn schema() -> RefOr<Schema> {
        utoipa::openapi::schema::ArrayBuilder::new()
            .items(<Tag as utoipa::PartialSchema>::schema())
            .max_items(Some(Self::MAX))
            .description(Some(
                "Category tag slugs, at most 20 as sent, duplicates dropped",
            ))
            .into()
    }
}

impl utoipa::ToSchema for Tags {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Tags")
    }
}

/// The kinds of social link a profile may show.
pub const SOCIAL_TYPES: &[&str] = &[
    "bluesky",
    "discord",
    "github",
    "gitlab",
    "instagram",
    "linkedin",
    "mastodon",
    "reddit",
    "tiktok",
    "twitch",
    "twitter",
    "website",
    "x",
    "youtube",
];

/// One of [`SOCIAL_TYPES`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SocialType(String);

impl SocialType {
    pub fn parse(text: String) -> Result<Self, String> {
        if SOCIAL_TYPES.contains(&text.as_str()) {
            Ok(Self(text))
        } else {
            Err(format!(
                "`{text}` is not a social type (one of {})",
                SOCIAL_TYPES.join(", ")
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

string_serde!(SocialType);

impl utoipa::PartialSchema for SocialType {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some("The kind of social link"))
            .enum_values(Some(SOCIAL_TYPES.iter().copied()))
            .into()
    }
}

impl utoipa::ToSchema for SocialType {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("SocialType")
    }
}

/// Lowercases letter by letter, with final sigma as sigma. `str::to_lowercase` picks the form of
/// sigma by position, so the lowercase of a substring would not always be a substring of the
/// lowercase, and `ς` would never find `σ`.
pub fn fold_case(text: &str) -> String {
    text.chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c == 'ς' { 'σ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_character_table_is_unicode_category_cf() {
        let cf = match regex_syntax::Parser::new()
            .parse(r"\p{Cf}")
            .expect("a class")
            .into_kind()
        {
            regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class)) => class,
            other => panic!("{other:?}"),
        };
        let theirs: Vec<(char, char)> = cf.ranges().iter().map(|r| (r.start(), r.end())).collect();
        assert_eq!(theirs, FORMAT_CHARACTERS);
        for c in [
            '\u{202E}',
            '\u{200B}',
            '\u{FEFF}',
            '\u{2066}',
            '\u{2069}',
            '\u{E0041}',
        ] {
            assert!(is_format_character(c), "{c:?}");
        }
        for c in [
            'a',
            ' ',
            '\u{200A}',
            '\u{2065}',
            '\u{FE0F}',
            '\u{1F3B5}',
            '\u{E0000}',
        ] {
            assert!(!is_format_character(c), "{c:?}");
        }
    }

    #[test]
    fn single_line_text_refuses_format_characters_and_stored_text_still_loads() {
        for text in ["admin\u{202E}gnp.exe", "zero\u{200B}width", "\u{FEFF}bom"] {
            let refusal = BotName::parse(text.into()).expect_err("refused");
            assert!(
                refusal.contains("Cf") && refusal.contains("U+"),
                "{refusal}"
            );
            assert!(serde_json::from_value::<BotName>(serde_json::json!(text)).is_err());
            // A snapshot written before the rule still loads.
            let stored = rmp_serde::to_vec(text).expect("encoded");
            let read: BotName = rmp_serde::from_slice(&stored).expect("read back");
            assert_eq!(read.as_str(), text);
        }
        // Multi-line text is not a name: it keeps them.
        assert!(LongDescription::parse("a\u{200B}b".into()).is_ok());
    }

    #[test]
    fn a_stored_url_reads_back_and_a_client_url_is_checked_in_full() {
        for url in ["https://example.com/a.png", "http://host:8080/hook?x=1"] {
            let stored =
                rmp_serde::to_vec(&HttpUrl::parse(url.into()).expect("valid")).expect("encoded");
            let read: HttpUrl = rmp_serde::from_slice(&stored).expect("read back");
            assert_eq!(read.as_str(), url);
        }
        // The cheap checks still run on stored text; the full parse runs on a client's JSON.
        for bad in [
            "ftp://example.com",
            "https://a b",
            &"h".repeat(HttpUrl::MAX + 1),
        ] {
            let stored = rmp_serde::to_vec(bad).expect("encoded");
            assert!(rmp_serde::from_slice::<HttpUrl>(&stored).is_err(), "{bad}");
        }
        assert!(serde_json::from_value::<HttpUrl>(serde_json::json!("https://")).is_err());
        assert!(serde_json::from_value::<HttpUrl>(serde_json::json!("https://[::1")).is_err());
    }

    #[test]
    fn a_webhook_secret_is_never_printed() {
        let secret = WebhookSecret::parse("hunter2 webhook secret".into()).expect("valid");
        assert_eq!(format!("{secret:?}"), "WebhookSecret(redacted)");
        assert_eq!(
            format!("{:?}", Some(&secret)),
            "Some(WebhookSecret(redacted))"
        );
    }

    #[test]
    fn text_limits_count_characters() {
        assert!(BotName::parse("é".repeat(64)).is_ok());
        assert!(BotName::parse("é".repeat(65)).is_err());
        assert!(BotName::parse(String::new()).is_err());
        assert!(BotName::parse("   ".into()).is_err());
        assert!(BotName::parse("a\u{0}b".into()).is_err());
        assert!(LongDescription::parse("line\nline".into()).is_ok());
        assert!(LongDescription::parse(String::new()).is_ok());
    }

    #[test]
    fn urls_are_http_with_a_host() {
        assert!(HttpUrl::parse("https://example.com/a?b=c".into()).is_ok());
        for bad in [
            "ftp://example.com",
            "javascript:alert(1)",
            "https://",
            "/relative",
            "http://a b",
        ] {
            assert!(HttpUrl::parse(bad.into()).is_err(), "{bad}");
        }
    }

    #[test]
    fn slugs_follow_their_alphabet() {
        assert!(Tag::parse("music-bot".into()).is_ok());
        assert!(Tag::parse("Music".into()).is_err());
        assert!(Tag::parse("x".repeat(33)).is_err());
        assert!(LanguageCode::parse("en".into()).is_ok());
        assert!(LanguageCode::parse("EN".into()).is_err());
        assert!(LanguageCode::parse("eng".into()).is_err());
        assert!(ProfileUsername::parse("a.b_c9".into()).is_ok());
        assert!(ProfileUsername::parse("a".into()).is_err());
    }

    #[test]
    fn webhook_secrets_survive_being_a_header() {
        assert!(WebhookSecret::parse("s3cret with-inner space!".into()).is_ok());
        for bad in [
            "",
            " padded",
            "padded ",
            "pässwort",
            "tab\there",
            &"x".repeat(257),
        ] {
            assert!(WebhookSecret::parse(bad.to_string()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tags_drop_duplicates_and_cap_at_twenty() {
        let tag = |s: &str| Tag::parse(s.into()).expect("valid");
        let tags = Tags::new(vec![tag("a"), tag("b"), tag("a")]).expect("valid");
        assert_eq!(tags.iter().count(), 2);
        let many = (0..21).map(|i| tag(&format!("t{i}"))).collect();
        assert!(Tags::new(many).is_err());
    }
}
bounded_text!(
    /// A review's text (CONTRACT section 14); may be empty: a rating alone is a review.
    ReviewContent, 0, 2000, multiline: true);
bounded_text!(
    /// An owner's reply to a review.
    ReplyContent, 1, 2000, multiline: true);
