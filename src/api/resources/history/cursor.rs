//! History cursors: the bot and the position of the last vote shown, signed with a key that
//! start-up hands in (read from the data directory, or shared by the cluster's nodes), so that
//! a client cannot make one up or carry one over to another bot.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::api::error::{ApiError, Code};
use crate::domain::ids::BotId;

/// Makes and reads cursors with one key.
pub struct Cursors {
    key: [u8; 32],
}

impl Cursors {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    fn mac(&self, body: &[u8]) -> [u8; 16] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(body);
        let mut out = [0; 16];
        out.copy_from_slice(&mac.finalize().into_bytes()[..16]);
        out
    }

    /// A cursor: the bot, the position of the last vote shown, and a MAC over both.
    pub fn cursor(&self, bot: BotId, position: u64) -> String {
        let mut bytes = Vec::with_capacity(40);
        bytes.extend_from_slice(&bot.as_u128().to_be_bytes());
        bytes.extend_from_slice(&position.to_be_bytes());
        let mac = self.mac(&bytes);
        bytes.extend_from_slice(&mac);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position a cursor stands at, if this service made it for this bot.
    pub fn read_cursor(&self, bot: BotId, cursor: &str) -> Result<u64, ApiError> {
        let refused = || {
            Code::BadRequest.with(
                "`cursor` is not a cursor this service gave for this bot's history; \
                 use the `next` of the previous page"
                    .into(),
            )
        };
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| refused())?;
        if bytes.len() != 40 {
            return Err(refused());
        }
        let (body, mac) = bytes.split_at(24);
        let expected = self.mac(body);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(&expected[..], mac)) {
            return Err(refused());
        }
        if body[..16] != bot.as_u128().to_be_bytes() {
            return Err(refused());
        }
        let mut position = [0; 8];
        position.copy_from_slice(&body[16..]);
        Ok(u64::from_be_bytes(position))
    }
}
