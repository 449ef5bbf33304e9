//! A request as the one middleware sees it: its id, its method and route pattern, and what
//! its line and counts are made of once it is answered.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::http::Method;
use actix_web::{HttpMessage, HttpRequest};

use super::access_log::{AccessLog, AnsweredRequest};

/// The request id header, read from the client and echoed back.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// A client's request id is used as sent when it is at most this long and visible ASCII.
pub const MAX_REQUEST_ID: usize = 128;

/// The pattern of the route a request was matched to, when the API's own table of routes with
/// parameters matched it (`api::routes::ParamTable`); actix's router keeps its own.
#[derive(Clone, Copy, Debug)]
pub struct RoutePattern(pub &'static str);

/// The pattern of the route that answered `request`, as declared (base path included).
pub fn route_pattern(request: &HttpRequest) -> Option<Cow<'static, str>> {
    if let Some(pattern) = request.extensions().get::<RoutePattern>() {
        return Some(Cow::Borrowed(pattern.0));
    }
    request.match_pattern().map(Cow::Owned)
}

/// The rate-limit key kind a request was counted under, in its extensions.
#[derive(Clone, Copy, Debug)]
pub struct RateKeyKind(pub &'static str);

/// The client's id when it is short visible ASCII, else a fresh one. Public for
/// `benches/layer.rs`, which states its cost per request.
#[doc(hidden)]
pub fn request_id(headers: &HeaderMap) -> HeaderValue {
    headers
        .get(&REQUEST_ID)
        .filter(|v| {
            let bytes = v.as_bytes();
            !bytes.is_empty()
                && bytes.len() <= MAX_REQUEST_ID
                && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
        })
        .cloned()
        .unwrap_or_else(generated_id)
}

/// 32 hex digits: a random half drawn once per process, then the thread's number and a count
/// of the thread's own. Unique without a system call per request, and without a counter the
/// workers share (whose cache line would move between them on every request); ids need not be
/// secret, only distinct. Each thread writes the first 20 digits once and then only its count.
fn generated_id() -> HeaderValue {
    static PROCESS: OnceLock<u64> = OnceLock::new();
    static THREADS: AtomicU64 = AtomicU64::new(0);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    fn hex_into(digits: &mut [u8], mut word: u64) {
        for digit in digits.iter_mut().rev() {
            *digit = HEX[(word & 0xf) as usize];
            word >>= 4;
        }
    }
    thread_local! {
        /// This thread's next id, and its count so far.
        static NEXT: std::cell::RefCell<([u8; 32], u64)> = std::cell::RefCell::new({
            let process = *PROCESS.get_or_init(|| {
                let mut seed = [0u8; 8];
                if getrandom::fill(&mut seed).is_err() {
                    let nanos = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos());
                    seed = (nanos as u64 ^ u64::from(std::process::id())).to_le_bytes();
                }
                u64::from_le_bytes(seed)
            });
            let mut id = [b'0'; 32];
            hex_into(&mut id[..16], process);
            hex_into(&mut id[16..20], THREADS.fetch_add(1, Ordering::Relaxed));
            (id, 0)
        });
    }
    NEXT.with_borrow_mut(|(id, count)| {
        hex_into(&mut id[20..], *count);
        *count = (*count + 1) & ((1 << 48) - 1);
        HeaderValue::from_bytes(id.as_slice()).unwrap_or(HeaderValue::from_static("unknown"))
    })
}

fn known_method(method: &Method) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE",
    ];
    KNOWN
        .into_iter()
        .find(|known| *known == method.as_str())
        .unwrap_or("other")
}

/// A request seen as it arrives: what its log line and metrics need once it is answered
/// (`api::layer`, the one middleware, holds it). The line holds no header, path or query as
/// sent: only the route pattern.
pub struct Observation {
    started: Instant,
    id: HeaderValue,
    method: &'static str,
}

impl Observation {
    /// Gives the request its id (the client's, when it is a usable one).
    pub fn begin(request: &ServiceRequest) -> Self {
        Self {
            started: Instant::now(),
            id: request_id(request.headers()),
            method: known_method(request.method()),
        }
    }

    /// The request's id, as its answer and its log line carry it.
    pub fn id(&self) -> &str {
        self.id.to_str().unwrap_or_default()
    }

    /// Writes the request's one log line and its metrics, and gives its answer the id.
    pub fn end<B>(
        self,
        log: &AccessLog,
        result: Result<ServiceResponse<B>, actix_web::Error>,
    ) -> Result<ServiceResponse<B>, actix_web::Error> {
        let (status, route, key) = match &result {
            Ok(response) => {
                let request = response.request();
                (
                    response.status(),
                    route_pattern(request),
                    request.extensions().get::<RateKeyKind>().map(|k| k.0),
                )
            }
            Err(error) => (error.as_response_error().status_code(), None, None),
        };
        let at = Instant::now();
        log.answered(AnsweredRequest {
            method: self.method,
            route: route.unwrap_or(Cow::Borrowed("unmatched")),
            status,
            latency: at.saturating_duration_since(self.started),
            at,
            id: &self.id,
            key,
        });
        let id = self.id;
        match result {
            Ok(mut response) => {
                response.headers_mut().insert(REQUEST_ID.clone(), id);
                Ok(response)
            }
            // An error still unrendered (from a layer inside) gets the id when it is.
            Err(mut error) => {
                error.add_response_mapper(move |mut response| {
                    response
                        .headers_mut()
                        .insert(REQUEST_ID.clone(), id.clone());
                    response
                });
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_id_is_the_process_half_then_the_thread_and_its_count_in_hex() {
        let first = generated_id();
        let second = generated_id();
        let (first, second) = (
            first.to_str().expect("ascii"),
            second.to_str().expect("ascii"),
        );
        assert_eq!(first.len(), 32);
        assert!(first
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(first[..16], second[..16]);
        let count = |id: &str| u64::from_str_radix(&id[16..], 16).expect("hex");
        assert_eq!(count(second), count(first) + 1);
        // Another thread counts on its own, under another number: no id is made twice.
        let elsewhere = std::thread::spawn(|| generated_id().to_str().map(str::to_owned))
            .join()
            .expect("joined")
            .expect("ascii");
        assert_eq!(elsewhere[..16], first[..16]);
        assert_ne!(count(&elsewhere) >> 48, count(first) >> 48);
    }
}
