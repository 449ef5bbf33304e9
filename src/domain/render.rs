//! A bot's public JSON, rendered once per listing instead of once per request.
//!
//! Of a bot's public object only three values change without its listing changing: its vote
//! count, its monthly count (which also depends on the month it is read in) and its server
//! count. Every other value (the strings and their escaping, the tags, the owners, the
//! timestamp) is rendered once, when the listing is made or first read, by the plain serializer;
//! the keys, the same for every bot, are not kept per bot. An answer is then the constant keys,
//! the listing's values and three integers, copied in order. The property test `tests/render.rs` holds the result byte-for-byte to
//! `serde_json::to_vec` of [`PublicBot`] over random bots.
//!
//! The bytes also give the answer's validator without hashing it: the listing's digest (taken
//! once, with its rendering) and the three integers say exactly what the body is.

use std::fmt;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::bot::{Listing, PublicBot, ServerCount};
use super::profile::Profile;

/// The keys of the fields before the counts, in the order `PublicBot` declares them, each with
/// what the compact serializer writes before it. They are the same for every bot, so only the
/// values are kept.
const KEYS: [&[u8]; 14] = [
    b"{\"id\":",
    b",\"name\":",
    b",\"username\":",
    b",\"avatar\":",
    b",\"short_description\":",
    b",\"long_description\":",
    b",\"tags\":",
    b",\"language_code\":",
    b",\"prefix\":",
    b",\"invite_url\":",
    b",\"website_url\":",
    b",\"support_server_url\":",
    b",\"github_url\":",
    b",\"owner_ids\":",
];

/// A listing's public JSON values, rendered once.
pub struct RenderedListing {
    /// The values of the [`KEYS`] back to back, then `created_at`'s.
    values: Box<[u8]>,
    /// Where each value of the [`KEYS`] ends in `values`.
    ends: [u32; KEYS.len()],
    certified: bool,
    featured: bool,
    /// The first 128 bits of the SHA-256 of the values and flags: names the listing's part of
    /// a body.
    digest: u128,
}

impl RenderedListing {
    /// The listing's part of every answer that shows it, as 128 bits: what an answer's
    /// validator names it by.
    pub fn digest(&self) -> u128 {
        self.digest
    }

    fn of(listing: &Listing) -> Self {
        let bot = PublicBot::of(listing, 0, 0, None);
        let mut values = Vec::with_capacity(256);
        let mut ends = [0; KEYS.len()];
        // Each value as the serializer writes it inside the object: the same bytes.
        let value = |values: &mut Vec<u8>, value: &dyn erased::Value| {
            value.write(values);
            values.len() as u32
        };
        ends[0] = value(&mut values, &bot.id);
        ends[1] = value(&mut values, &bot.name);
        ends[2] = value(&mut values, &bot.username);
        ends[3] = value(&mut values, &bot.avatar);
        ends[4] = value(&mut values, &bot.short_description);
        ends[5] = value(&mut values, &bot.long_description);
        ends[6] = value(&mut values, &bot.tags);
        ends[7] = value(&mut values, &bot.language_code);
        ends[8] = value(&mut values, &bot.prefix);
        ends[9] = value(&mut values, &bot.invite_url);
        ends[10] = value(&mut values, &bot.website_url);
        ends[11] = value(&mut values, &bot.support_server_url);
        ends[12] = value(&mut values, &bot.github_url);
        ends[13] = value(&mut values, &bot.owner_ids);
        value(&mut values, &bot.created_at);
        let mut hasher = Sha256::new();
        hasher.update(&values);
        hasher.update([u8::from(bot.certified), u8::from(bot.featured)]);
        let digest = hasher.finalize();
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest[..16]);
        Self {
            values: values.into_boxed_slice(),
            ends,
            certified: bot.certified,
            featured: bot.featured,
            digest: u128::from_be_bytes(first),
        }
    }

    /// The bot's public object with these counts, appended to `out`: the same bytes as
    /// `serde_json::to_vec(&PublicBot)`.
    pub fn write(
        &self,
        out: &mut Vec<u8>,
        vote_count: u64,
        monthly_vote_count: u64,
        server_count: Option<ServerCount>,
    ) {
        let mut start = 0;
        for (key, &end) in KEYS.iter().zip(&self.ends) {
            out.extend_from_slice(key);
            out.extend_from_slice(&self.values[start..end as usize]);
            start = end as usize;
        }
        let mut digits = itoa::Buffer::new();
        out.extend_from_slice(b",\"vote_count\":");
        out.extend_from_slice(digits.format(vote_count).as_bytes());
        out.extend_from_slice(b",\"monthly_vote_count\":");
        out.extend_from_slice(digits.format(monthly_vote_count).as_bytes());
        if let Some(servers) = server_count {
            out.extend_from_slice(b",\"server_count\":");
            out.extend_from_slice(digits.format(servers.get()).as_bytes());
        }
        out.extend_from_slice(if self.certified {
            b",\"certified\":true"
        } else {
            b",\"certified\":false"
        });
        out.extend_from_slice(if self.featured {
            b",\"featured\":true"
        } else {
            b",\"featured\":false"
        });
        out.extend_from_slice(b",\"created_at\":");
        out.extend_from_slice(&self.values[start..]);
        out.push(b'}');
    }

    /// About how many bytes [`RenderedListing::write`] appends.
    pub fn len(&self) -> usize {
        self.values.len() + 400
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// A strong validator of the object [`RenderedListing::write`] makes with these counts:
    /// equal exactly when the bytes are (up to a 128-bit digest of the listing's part).
    pub fn etag(
        &self,
        vote_count: u64,
        monthly_vote_count: u64,
        server_count: Option<ServerCount>,
    ) -> String {
        let mut tag = String::with_capacity(72);
        tag.push('"');
        push_hex(&mut tag, self.digest, 32);
        for count in [vote_count, monthly_vote_count] {
            tag.push('-');
            push_hex(&mut tag, count.into(), 0);
        }
        tag.push('-');
        match server_count {
            Some(servers) => push_hex(&mut tag, servers.get().into(), 0),
            None => tag.push('n'),
        }
        tag.push('"');
        tag
    }
}

/// The rendering a value carries (a listing, a profile): made on first use, and never copied
/// with the value (a copy is made to be edited, and renders its own), so it can never describe
/// another value.
pub struct Rendering<T>(OnceLock<T>);

/// A listing's rendering.
pub type ListingRender = Rendering<RenderedListing>;
/// A profile's rendering.
pub type ProfileRender = Rendering<RenderedProfile>;

impl<T> Default for Rendering<T> {
    fn default() -> Self {
        Self(OnceLock::new())
    }
}

impl ListingRender {
    pub fn get(&self, listing: &Listing) -> &RenderedListing {
        self.0.get_or_init(|| RenderedListing::of(listing))
    }
}

impl ProfileRender {
    pub fn get(&self, profile: &Profile) -> &RenderedProfile {
        self.0.get_or_init(|| RenderedProfile::of(profile))
    }
}

/// A profile's public JSON, and its validator: made once per published profile, not per
/// request.
pub struct RenderedProfile {
    pub json: Vec<u8>,
    /// The first 128 bits of the JSON's SHA-256, quoted.
    pub etag: String,
}

impl RenderedProfile {
    fn of(profile: &Profile) -> Self {
        // Our own types always serialize (into memory, nothing can fail).
        let json = serde_json::to_vec(&profile.public()).unwrap_or_default();
        let digest = Sha256::digest(&json);
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest[..16]);
        let etag = format!("\"p{:032x}\"", u128::from_be_bytes(first));
        Self { json, etag }
    }
}

impl<T> Clone for Rendering<T> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// A rendering is derived from the value's other fields: it adds nothing to compare.
impl<T> PartialEq for Rendering<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> fmt::Debug for Rendering<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "rendered"
        } else {
            "not yet rendered"
        })
    }
}

/// Writing any one field's value the way the serializer does inside an object.
mod erased {
    pub trait Value {
        fn write(&self, out: &mut Vec<u8>);
    }

    impl<T: serde::Serialize + ?Sized> Value for T {
        fn write(&self, out: &mut Vec<u8>) {
            // Our own types always serialize (into memory, nothing can fail).
            let _ = serde_json::to_writer(&mut *out, self);
        }
    }
}

/// Appends `n` in lower-case hex, at least `width` digits: what `{:x}` (or `{:0width$x}`)
/// writes, without the formatting machinery, for the validators every read makes.
pub fn push_hex(out: &mut String, n: u128, width: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [b'0'; 32];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = HEX[(rest & 0xf) as usize];
        rest >>= 4;
        if rest == 0 {
            break;
        }
    }
    let start = at.min(digits.len() - width.min(digits.len()));
    out.push_str(std::str::from_utf8(&digits[start..]).unwrap_or_default());
}

#[cfg(test)]
mod hex_tests {
    use super::push_hex;

    #[test]
    fn hex_is_what_the_formatter_writes() {
        let numbers = [
            0_u128,
            1,
            9,
            10,
            15,
            16,
            255,
            4096,
            u64::MAX as u128,
            u128::MAX,
            0xabc_def,
        ];
        for n in numbers {
            for width in [0, 1, 16, 32] {
                let mut ours = String::new();
                push_hex(&mut ours, n, width);
                assert_eq!(ours, format!("{n:0width$x}"), "{n} at {width}");
            }
        }
    }
}
