//! A bot's public JSON, rendered once per listing instead of once per request.
//!
//! Of a bot's public object only three values change without its listing changing: its vote
//! count, its monthly count (which also depends on the month it is read in) and its server
//! count. Everything else (the strings and their escaping, the tags, the owners, the timestamp)
//! is rendered once, the first time a listing is read or published, by the plain serializer, and
//! cut around those three values. An answer is then the listing's bytes with three integers
//! written between them. The property test `tests/render.rs` holds the result byte-for-byte to
//! `serde_json::to_vec` of [`PublicBot`] over random bots.
//!
//! The bytes also give the answer's validator without hashing it: the listing's digest (taken
//! once, with its rendering) and the three integers say exactly what the body is.

use std::fmt;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::bot::{Listing, PublicBot, ServerCount};

/// What separates the listing's bytes before and after the counts, in the plain serializer's
/// output of a bot with no votes and no server count. Every `"` inside a JSON string is escaped,
/// so these bytes occur only as the object's own keys.
const COUNTS: &[u8] = b"\"vote_count\":0,\"monthly_vote_count\":0,";

/// A listing's public JSON around its counts.
pub struct RenderedListing {
    /// `{"id":..., "owner_ids":[...],"vote_count":` then `,"certified":...}`.
    bytes: Box<[u8]>,
    /// Where the first part ends.
    head: usize,
    /// The first 128 bits of the SHA-256 of `bytes`: names the listing's part of a body.
    digest: u128,
}

impl RenderedListing {
    fn of(listing: &Listing) -> Self {
        let blank = PublicBot::of(listing, 0, 0, None);
        let mut bytes = serde_json::to_vec(&blank).unwrap_or_default();
        // The counts follow the owners and precede the flags and the timestamp, none of which
        // can hold these bytes: the last occurrence is the one.
        let head = match memchr::memmem::rfind(&bytes, COUNTS) {
            Some(at) => {
                let head = at + b"\"vote_count\":".len();
                // Keep `"vote_count":`, drop `0,"monthly_vote_count":0`, keep `,"certified"...`.
                bytes.drain(head..at + COUNTS.len() - 1);
                head
            }
            // Not reached: the serializer writes every field, in declaration order.
            None => bytes.len(),
        };
        let digest = Sha256::digest(&bytes);
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest[..16]);
        Self {
            bytes: bytes.into_boxed_slice(),
            head,
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
        let mut digits = itoa::Buffer::new();
        out.extend_from_slice(&self.bytes[..self.head]);
        out.extend_from_slice(digits.format(vote_count).as_bytes());
        out.extend_from_slice(b",\"monthly_vote_count\":");
        out.extend_from_slice(digits.format(monthly_vote_count).as_bytes());
        if let Some(servers) = server_count {
            out.extend_from_slice(b",\"server_count\":");
            out.extend_from_slice(digits.format(servers.get()).as_bytes());
        }
        out.extend_from_slice(&self.bytes[self.head..]);
    }

    /// About how many bytes [`RenderedListing::write`] appends.
    pub fn len(&self) -> usize {
        self.bytes.len() + 64
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// A strong validator of the object [`RenderedListing::write`] makes with these counts:
    /// equal exactly when the bytes are (up to a 128-bit digest of the listing's part).
    pub fn etag(
        &self,
        vote_count: u64,
        monthly_vote_count: u64,
        server_count: Option<ServerCount>,
    ) -> String {
        use fmt::Write;
        let mut tag = String::with_capacity(72);
        let _ = write!(
            tag,
            "\"{:032x}-{vote_count:x}-{monthly_vote_count:x}-",
            self.digest
        );
        match server_count {
            Some(servers) => {
                let _ = write!(tag, "{:x}\"", servers.get());
            }
            None => tag.push_str("n\""),
        }
        tag
    }
}

/// The rendering a listing carries: made on first use, and never copied with the listing (a
/// copy is made to be edited, and renders its own), so it can never describe another listing.
#[derive(Default)]
pub struct ListingRender(OnceLock<RenderedListing>);

impl ListingRender {
    pub fn get(&self, listing: &Listing) -> &RenderedListing {
        self.0.get_or_init(|| RenderedListing::of(listing))
    }
}

impl Clone for ListingRender {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// A rendering is derived from the listing's other fields: it adds nothing to compare.
impl PartialEq for ListingRender {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for ListingRender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "rendered"
        } else {
            "not yet rendered"
        })
    }
}
