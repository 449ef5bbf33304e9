//! Compression of answers, done here rather than by actix-http's encoder. That encoder hands
//! every chunk over 1 KiB to the blocking thread pool (up to 512 threads, each with its own
//! allocator arena that keeps what it once held: 200 connections asking `openapi.json` in `br`
//! left the resident memory at 334 MB, and it never came back), uses a 4 MiB brotli window
//! whatever the body, and sends the body as chunks after the head, which on a reused
//! connection met the client's delayed ACK (41 ms; docs/PERFORMANCE.md, "Compression").
//!
//! Here a dynamic body (always whole bytes: only a vote stream streams, and it is never
//! compressed) is compressed at once on the worker's thread, with a window no larger than the
//! body and a low quality, and goes out with its `Content-Length` in one piece; the encoder's
//! memory is freed before the next request on that thread. A static document (the OpenAPI
//! document, the API reference's files) is [`Precompressed`]: compressed once, on a thread of
//! its own, the first time a client asks for it compressed, and answered from memory after.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use actix_web::http::header::{
    AcceptEncoding, ContentEncoding, Encoding, Header, HeaderValue, CONTENT_ENCODING, CONTENT_TYPE,
    ETAG, IF_NONE_MATCH, VARY,
};
use actix_web::http::Method;
use actix_web::web::Bytes;
use actix_web::{HttpMessage, HttpRequest, HttpResponse};
use sha2::{Digest, Sha256};

/// The encodings a client may be answered in, identity first: what a client that ranks them
/// all the same gets.
pub const OFFERED: [Encoding; 4] = [
    Encoding::identity(),
    Encoding::brotli(),
    Encoding::gzip(),
    Encoding::deflate(),
];

/// Brotli's quality for answers made per request: level 2 hashes into a table of 64 Ki
/// entries (256 KiB) whatever the window, about as fast as gzip's fastest level for a body
/// about as small; levels from 4 on take tables several times that, zeroed for every answer.
const DYNAMIC_BROTLI_QUALITY: i32 = 2;
/// The largest brotli window (log2 bytes) for answers made per request: a page of 100 bots is
/// under it, so nothing is lost, and the encoder's ring buffer stays at 256 KiB at most.
const DYNAMIC_BROTLI_WINDOW: i32 = 18;
/// The smallest window brotli takes.
const MIN_BROTLI_WINDOW: i32 = 10;
/// Static documents are compressed once, so as small as brotli and gzip make them within a
/// second or so for the 1.45 MB Swagger bundle.
const STATIC_BROTLI_QUALITY: i32 = 9;
const STATIC_BROTLI_WINDOW: i32 = 22;

/// A client's `Accept-Encoding` refuses every encoding offered (identity included).
#[derive(Debug)]
pub struct RefusesEvery;

/// The encoding `request` is answered in: `None` for identity (or a header that does not
/// parse, which is as if it were not there), `Err` when the client refuses every encoding.
pub fn negotiate(request: &impl HttpMessage) -> Result<Option<ContentEncoding>, RefusesEvery> {
    let Ok(accepted) = AcceptEncoding::parse(request) else {
        return Ok(None);
    };
    match accepted.negotiate(OFFERED.iter()) {
        Some(Encoding::Known(ContentEncoding::Identity)) | Some(Encoding::Unknown(_)) => Ok(None),
        Some(Encoding::Known(encoding)) => Ok(Some(encoding)),
        None => Err(RefusesEvery),
    }
}

/// How dearly to compress: per request (cheap, small window) or once (small output).
#[derive(Clone, Copy)]
enum Effort {
    PerRequest,
    Once,
}

/// `body` in `encoding`; `None` for an encoding not compressed here (identity).
pub fn compress(encoding: ContentEncoding, body: &[u8]) -> Option<io::Result<Vec<u8>>> {
    encode(encoding, body, Effort::PerRequest)
}

fn encode(encoding: ContentEncoding, body: &[u8], effort: Effort) -> Option<io::Result<Vec<u8>>> {
    let level = match effort {
        Effort::PerRequest => flate2::Compression::fast(),
        Effort::Once => flate2::Compression::best(),
    };
    let mut out = Vec::with_capacity(body.len() / 3 + 64);
    let written = match encoding {
        ContentEncoding::Brotli => brotli_into(body, &mut out, effort),
        ContentEncoding::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(&mut out, level);
            encoder
                .write_all(body)
                .and_then(|()| encoder.finish().map(drop))
        }
        ContentEncoding::Deflate => {
            let mut encoder = flate2::write::ZlibEncoder::new(&mut out, level);
            encoder
                .write_all(body)
                .and_then(|()| encoder.finish().map(drop))
        }
        _ => return None,
    };
    Some(written.map(|()| out))
}

fn brotli_into(body: &[u8], out: &mut Vec<u8>, effort: Effort) -> io::Result<()> {
    let (quality, largest) = match effort {
        Effort::PerRequest => (DYNAMIC_BROTLI_QUALITY, DYNAMIC_BROTLI_WINDOW),
        Effort::Once => (STATIC_BROTLI_QUALITY, STATIC_BROTLI_WINDOW),
    };
    let params = brotli::enc::BrotliEncoderParams {
        quality,
        lgwin: window_for(body.len(), largest),
        size_hint: body.len(),
        ..Default::default()
    };
    brotli::BrotliCompress(&mut &body[..], out, &params).map(drop)
}

/// The smallest brotli window that holds `len` bytes, within brotli's range and `largest`:
/// the encoder's buffers are sized by it.
fn window_for(len: usize, largest: i32) -> i32 {
    let bits = usize::BITS - len.max(1).saturating_sub(1).leading_zeros();
    i32::try_from(bits)
        .unwrap_or(largest)
        .clamp(MIN_BROTLI_WINDOW, largest)
}

/// A static document with its compressed forms, made once.
pub struct Precompressed {
    content_type: HeaderValue,
    /// Extra headers every representation carries (the docs' `Cache-Control`).
    extra: Vec<(actix_web::http::header::HeaderName, HeaderValue)>,
    identity: Bytes,
    /// The identity body's strong tag; the compressed ones carry it weakened.
    etag: HeaderValue,
    weak_etag: HeaderValue,
    encoded: OnceLock<Encoded>,
    started: AtomicBool,
}

struct Encoded {
    gzip: Bytes,
    brotli: Bytes,
}

impl Precompressed {
    pub fn new(content_type: HeaderValue, identity: Bytes) -> Arc<Self> {
        let digest = Sha256::digest(&identity);
        let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        let etag = HeaderValue::from_str(&format!("\"{hex}\""))
            .unwrap_or(HeaderValue::from_static("\"\""));
        let weak_etag = HeaderValue::from_str(&format!("W/\"{hex}\""))
            .unwrap_or(HeaderValue::from_static("W/\"\""));
        Arc::new(Self {
            content_type,
            extra: Vec::new(),
            identity,
            etag,
            weak_etag,
            encoded: OnceLock::new(),
            started: AtomicBool::new(false),
        })
    }

    /// The same document, answered with `header` too.
    pub fn with_header(
        mut self: Arc<Self>,
        header: (actix_web::http::header::HeaderName, HeaderValue),
    ) -> Arc<Self> {
        if let Some(this) = Arc::get_mut(&mut self) {
            this.extra.push(header);
        }
        self
    }

    /// Whether the compressed forms are made (tests wait for it).
    pub fn is_compressed(&self) -> bool {
        self.encoded.get().is_some()
    }

    /// The answer to `request`: the form its `Accept-Encoding` prefers among those made, or the
    /// identity while they are still being made (the first ask starts that, on its own thread);
    /// 304 for a matching `If-None-Match`. Never compresses anything on the request's thread.
    pub fn respond(self: &Arc<Self>, request: &HttpRequest) -> HttpResponse {
        // A refusal of every encoding was answered 406 before the handler.
        let wanted = negotiate(request).ok().flatten();
        let body = match wanted {
            Some(encoding) => self.encoded(encoding),
            None => None,
        };
        let (encoding, body, etag) = match body {
            Some((encoding, body)) => (Some(encoding), body, &self.weak_etag),
            None => (None, self.identity.clone(), &self.etag),
        };
        let matches = request
            .headers()
            .get(IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|tags| {
                let ours = self
                    .weak_etag
                    .as_bytes()
                    .strip_prefix(b"W/")
                    .unwrap_or_default();
                tags.split(',')
                    .map(|tag| tag.trim().trim_start_matches("W/").as_bytes())
                    .any(|tag| tag == ours || tag == b"*")
            });
        let mut response = if matches && matches!(*request.method(), Method::GET | Method::HEAD) {
            HttpResponse::NotModified()
        } else {
            HttpResponse::Ok()
        };
        response
            .insert_header((VARY, HeaderValue::from_static("accept-encoding")))
            .insert_header((ETAG, etag.clone()));
        for header in &self.extra {
            response.insert_header(header.clone());
        }
        if matches {
            return response.finish();
        }
        response.insert_header((CONTENT_TYPE, self.content_type.clone()));
        match encoding {
            Some(encoding) => response
                .insert_header((CONTENT_ENCODING, encoding.to_header_value()))
                .body(body),
            // Marked so that the layer leaves it as it is; the mark is taken off there.
            None => response
                .insert_header((CONTENT_ENCODING, HeaderValue::from_static("identity")))
                .body(body),
        }
    }

    /// The body in `encoding` if it is made; starts making it otherwise.
    fn encoded(self: &Arc<Self>, encoding: ContentEncoding) -> Option<(ContentEncoding, Bytes)> {
        let Some(encoded) = self.encoded.get() else {
            self.start();
            return None;
        };
        match encoding {
            ContentEncoding::Brotli => Some((encoding, encoded.brotli.clone())),
            ContentEncoding::Gzip => Some((encoding, encoded.gzip.clone())),
            _ => None,
        }
    }

    /// Compresses the document on a thread of its own, once.
    fn start(self: &Arc<Self>) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let document = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("precompress".into())
            .spawn(move || {
                let made = |encoding| encode(encoding, &document.identity, Effort::Once);
                match (made(ContentEncoding::Gzip), made(ContentEncoding::Brotli)) {
                    (Some(Ok(gzip)), Some(Ok(brotli))) => {
                        let _ = document.encoded.set(Encoded {
                            gzip: gzip.into(),
                            brotli: brotli.into(),
                        });
                    }
                    _ => tracing::error!("a static document could not be compressed"),
                }
            });
        if let Err(error) = spawned {
            // Answered uncompressed; a later ask tries again.
            tracing::warn!(%error, "no thread to compress a static document on");
            self.started.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_window_fits_the_body_within_brotlis_range_and_the_cap() {
        assert_eq!(window_for(0, 18), 10);
        assert_eq!(window_for(1024, 18), 10);
        assert_eq!(window_for(1025, 18), 11);
        assert_eq!(window_for(100_000, 18), 17);
        assert_eq!(window_for(10_000_000, 18), 18);
        assert_eq!(window_for(10_000_000, 22), 22);
    }

    #[test]
    fn every_encoding_round_trips() {
        let body: Vec<u8> = (0..50_000u32)
            .flat_map(|n| (n % 251).to_le_bytes())
            .collect();
        for effort in [Effort::PerRequest, Effort::Once] {
            let br = encode(ContentEncoding::Brotli, &body, effort)
                .expect("offered")
                .expect("compressed");
            let mut back = Vec::new();
            brotli::Decompressor::new(br.as_slice(), 4096)
                .read_to_end(&mut back)
                .expect("valid brotli");
            assert_eq!(back, body);
            let gz = encode(ContentEncoding::Gzip, &body, effort)
                .expect("offered")
                .expect("compressed");
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(gz.as_slice())
                .read_to_end(&mut back)
                .expect("valid gzip");
            assert_eq!(back, body);
            let zlib = encode(ContentEncoding::Deflate, &body, effort)
                .expect("offered")
                .expect("compressed");
            let mut back = Vec::new();
            flate2::read::ZlibDecoder::new(zlib.as_slice())
                .read_to_end(&mut back)
                .expect("valid deflate");
            assert_eq!(back, body);
        }
        assert!(compress(ContentEncoding::Identity, &body).is_none());
    }
}
