//! `GET /docs`: an interactive reference of the API (Swagger UI) over `{base}/openapi.json`.
//!
//! Every file comes from the binary itself (the `vendored` Swagger UI), so the page works on a
//! machine with no internet access; the validator badge, the one thing Swagger UI would fetch
//! from elsewhere, is switched off.

use std::sync::Arc;

use actix_web::http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use actix_web::{web, HttpResponse};
use utoipa_swagger_ui::Config;

use crate::api::http::error::{ApiError, Code};

/// Where the page lives; its files are under it, relative to `index.html`.
pub const PATH: &str = "/docs";

/// What the page is set up with: the document it shows.
pub struct Docs {
    config: Arc<Config<'static>>,
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
        }
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
    docs: web::Data<Docs>,
    file: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let not_found = || Code::NotFound.with(format!("no file `{file}` in the API reference"));
    let served = utoipa_swagger_ui::serve(&file, Arc::clone(&docs.config)).map_err(|error| {
        tracing::error!(%error, "the API reference page could not be built");
        ApiError::internal()
    })?;
    let served = served.ok_or_else(not_found)?;
    let content_type = if served.content_type.starts_with("text/")
        || served.content_type == "application/javascript"
    {
        format!("{}; charset=utf-8", served.content_type)
    } else {
        served.content_type
    };
    Ok(HttpResponse::Ok()
        .insert_header((
            CONTENT_TYPE,
            HeaderValue::from_str(&content_type).map_err(|_| ApiError::internal())?,
        ))
        // The files change only with the binary; an hour spares reloads without pinning a
        // stale page for long after an upgrade.
        .insert_header((
            CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=3600"),
        ))
        .body(served.bytes.into_owned()))
}
