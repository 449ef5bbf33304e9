//! What a search pays for a needle that only a reading of texts answers (`index::needles`): a
//! `q` of 4 bytes or more holding a space or punctuation (` and `, `wizard `), not read before.
//!
//! The reading is cut into slices of [`SLICE`](crate::index::needles::SLICE) candidates, each
//! within the 5 ms a request may cost before it yields (issue 39); between two slices the
//! handler yields, so the worker's other requests go on. The number of candidates is known
//! before any is read, so the client pays up front: one request from its rate-limit bucket for
//! every [`PAID_READ`] candidates (the first of them is the request itself). A reading larger
//! than the bucket can ever hold is refused with 400 and what to do instead; one the bucket
//! cannot pay now is a 429 like the limiter's own. A needle read once is remembered, so its
//! repeats cost what any search does (docs/API.md, "Needles with a space or punctuation").

use actix_web::{HttpMessage, HttpRequest, HttpResponse};

use crate::api::http::error::{ApiError, Code};
use crate::api::http::limits::{refused, RateKey};
use crate::api::AppState;
use crate::domain::search::Search;
use crate::index::needles::PAID_READ;

/// Reads what the search needs read, a slice at a time, once the client has paid for it.
/// `Ok(Some(..))` is the 429 to answer instead; `Err` the 400 of a reading too large to pay.
pub async fn read(
    state: &AppState,
    request: &HttpRequest,
    search: &Search,
) -> Result<Option<HttpResponse>, ApiError> {
    let left = state.directory.left_to_read(search);
    if left == 0 {
        return Ok(None);
    }
    let price = left.div_ceil(PAID_READ);
    let key = request.extensions().get::<RateKey>().copied();
    if let (Some(limiter), Some(key)) = (&state.limiter, key) {
        let limit = u64::from(limiter.limit());
        if price > limit {
            return Err(Code::BadRequest.with(too_large(left, price, limit)));
        }
        if price > 1 {
            // The request itself paid for the first share.
            let decision = limiter.take(key, (price - 1) as u32);
            if !decision.allowed {
                return Ok(Some(refused(&decision, request.path())));
            }
        }
    }
    while !state.directory.read_slice(search) {
        tokio::task::yield_now().await;
    }
    Ok(None)
}

fn too_large(left: u64, price: u64, limit: u64) -> String {
    format!(
        "q: a needle of 4 or more characters with a space or punctuation is found by reading \
         every bot that holds all of its 3-character pieces; this one needs {left} read, as \
         much as {price} requests, more than the {limit} a minute this server allows a \
         client; make q longer or rarer, or use match=words (each word of q, in any order)"
    )
}
