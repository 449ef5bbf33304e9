//! `GET /docs`: an interactive reference of the API (Swagger UI) over `{base}/openapi.json`.
//!
//! Every file comes from the binary itself (the `vendored` Swagger UI), so the page works on a
//! machine with no internet access; the validator badge, the one thing Swagger UI would fetch
//! from elsewhere, is switched off. Each file is built once and kept with its compressed forms
//! (`http/compress.rs`): the Swagger bundle is 1.45 MB, and compressing it per request cost
//! some 20 ms of CPU a request and memory that was never given back.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::header::{HeaderValue, CACHE_CONTROL, LOCATION};
use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use parking_lot::Mutex;
use utoipa_swagger_ui::Config;

use crate::api::compress::Precompressed;
use crate::api::http::error::{ApiError, Code};
use crate::api::AppState;

/// Where the page lives; its files are under it, relative to `index.html`.
pub const PATH: &str = "/docs";

/// What the page is set up with (the document it shows), and its files as served so far.
pub struct Docs {
    config: Arc<Config<'static>>,
    /// Only names of files that exist are kept: a dozen at most, whatever clients ask.
    files: Mutex<HashMap<String, Arc<Precompressed>>>,
}

impl Docs {
    pub fn new(base_path: &str) -> Self {
        let config = Config::new([format!("{base_path}/openapi.json")])
            .validator_url("none")
            .try_it_out_enabled(true)
            .persist_authorization(false)
            .display_request_duration(true)
            .deep_linking(true)
            .filter(true);
        Self {
            config: Arc::new(config),
            files: Mutex::new(HashMap::new()),
        }
    }

    /// The file named `name`, built the first time it is asked for; `None` if there is none.
    fn file(&self, name: &str) -> Result<Option<Arc<Precompressed>>, ApiError> {
        if let Some(file) = self.files.lock().get(name) {
            return Ok(Some(Arc::clone(file)));
        }
        let served = utoipa_swagger_ui::serve(name, Arc::clone(&self.config)).map_err(|error| {
            tracing::error!(%error, "the API reference page could not be built");
            ApiError::internal()
        })?;
        let Some(served) = served else {
            return Ok(None);
        };
        let content_type = if served.content_type.starts_with("text/")
            || served.content_type == "application/javascript"
        {
            format!("{}; charset=utf-8", served.content_type)
        } else {
            served.content_type
        };
        let content_type =
            HeaderValue::from_str(&content_type).map_err(|_| ApiError::internal())?;
        let file = Precompressed::new(content_type, Bytes::from(served.bytes.into_owned()))
            // The files change only with the binary; an hour spares reloads without pinning
            // a stale page for long after an upgrade.
            .with_header((
                CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ));
        let mut files = self.files.lock();
        Ok(Some(Arc::clone(
            files.entry(name.to_owned()).or_insert(file),
        )))
    }
}

/// `GET /docs`: the page's files are relative to it, so it lives at `/docs/`.
pub async fn redirect() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((LOCATION, HeaderValue::from_static("/docs/")))
        .finish()
}

/// `GET /docs/{file}`: `index.html` for the directory itself, else one of the page's files.
pub async fn file(
    state: web::Data<AppState>,
    file: web::Path<String>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let served = state
        .docs
        .file(&file)?
        .ok_or_else(|| Code::NotFound.with(format!("no file `{file}` in the API reference")))?;
    Ok(served.respond(&request))
}
