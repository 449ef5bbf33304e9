//! What no request may exceed before it is routed.

use actix_web::dev::ServiceRequest;

use super::error::{ApiError, Code};

/// Request headers, all together, at most this many bytes: what no client of this API needs.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Refuses requests whose headers are over [`MAX_HEADER_BYTES`] with 431 (run by
/// `layer`). The HTTP layer already bounds what it buffers; this keeps what reaches
/// the handlers small.
pub fn headers_within_limit(request: &ServiceRequest) -> Result<(), ApiError> {
    let bytes: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if bytes > MAX_HEADER_BYTES {
        let error = Code::HeadersTooLarge.with(format!(
            "request headers are {bytes} bytes, over {} KiB",
            MAX_HEADER_BYTES / 1024
        ));
        return Err(error);
    }
    Ok(())
}
