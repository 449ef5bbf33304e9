//! The HTTP API: one module per resource, thin handlers that parse, ask an actor and reply.

pub mod admin;
pub mod bots;
pub mod connection;
pub mod docs;
pub mod error;
pub mod extract;
pub mod guard;
pub mod health;
pub mod history;
pub mod http;
pub mod limits;
pub mod openapi;
pub mod reply;
pub mod stats;
pub mod users;
pub mod votes;

use std::sync::Arc;

use actix::Addr;
use actix_web::http::header::{HeaderValue, CONTENT_TYPE};
use actix_web::middleware::from_fn;
use actix_web::{web, HttpRequest, HttpResponse};

use crate::actors::directory::Directory;
use crate::actors::registry::Registry;
use crate::domain::ids::TokenHash;
use crate::domain::time::Clock;
use crate::persist::Persistence;
use error::ApiError;

/// What every handler can reach.
pub struct AppState {
    pub directory: Arc<Directory>,
    pub registry: Addr<Registry>,
    pub clock: Arc<dyn Clock>,
    /// `None`: the admin API answers 404.
    pub admin_token: Option<TokenHash>,
    /// The OpenAPI document, rendered once.
    pub openapi_json: web::Bytes,
    /// `None` when the service keeps its state in memory only.
    pub persistence: Option<Arc<Persistence>>,
    /// `None` with `--rate-limit 0`.
    pub limiter: Option<Arc<limits::RateLimiter>>,
    pub trust_forwarded_for: bool,
    /// How long a client has to send a body once its headers are in.
    pub request_timeout: std::time::Duration,
    pub allow_private_webhooks: bool,
    /// Vote history and stream settings, and the key that signs history cursors.
    pub history: Arc<history::History>,
}

/// Every route. The classic routes without an id come before `/bots/{id}` so they win.
pub fn routes(base_path: &str) -> impl FnOnce(&mut web::ServiceConfig) + '_ {
    move |cfg| {
        cfg.service(web::resource("/healthz").get(health::healthz))
            .service(web::resource("/metrics").get(health::metrics))
            .service(web::resource(docs::PATH).get(docs::redirect))
            .service(
                web::resource(format!("{}/{{file:.*}}", docs::PATH))
                    .app_data(web::Data::new(docs::Docs::new(base_path)))
                    .get(docs::file),
            )
            .service(
                web::scope(base_path)
                    .service(web::resource("/openapi.json").get(openapi_json))
                    .service(
                        web::scope("/bots")
                            .wrap(from_fn(limits::limit_bots))
                            .service(web::resource("").get(bots::search))
                            .service(web::resource("/stats").post(stats::post_own_stats))
                            .service(web::resource("/check").get(votes::own_check))
                            .service(web::resource("/votes").get(votes::own_voters))
                            .service(web::resource("/votes/history").get(history::own_history))
                            .service(web::resource("/votes/stream").get(history::own_stream))
                            // The hot path first: each pattern with an `{id}` is a regex, tried
                            // in order, and bots call check all day. The patterns do not overlap,
                            // so their order changes nothing else.
                            .service(web::resource("/{id}/check").get(votes::check))
                            .service(web::resource("/{id}").get(bots::get_bot))
                            .service(
                                web::resource("/{id}/stats")
                                    .get(stats::get_stats)
                                    .post(stats::post_stats),
                            )
                            .service(web::resource("/{id}/votes").get(votes::voters))
                            .service(web::resource("/{id}/votes/history").get(history::history))
                            .service(web::resource("/{id}/votes/stream").get(history::stream))
                            .default_service(web::to(no_route)),
                    )
                    .service(
                        web::scope("/users")
                            .wrap(from_fn(limits::limit_users))
                            .service(web::resource("/{user_id}").get(users::get_user))
                            .default_service(web::to(no_route)),
                    )
                    .service(web::resource("/admin/users").post(admin::create_user))
                    .service(
                        web::resource("/admin/users/{id}")
                            .patch(admin::update_user)
                            .delete(admin::delete_user),
                    )
                    .service(web::resource("/admin/bots").post(admin::create_bot))
                    .service(
                        web::resource("/admin/bots/{id}")
                            .patch(admin::update_bot)
                            .delete(admin::delist_bot),
                    )
                    .service(web::resource("/admin/bots/{id}/token").post(admin::rotate_token))
                    .service(web::resource("/admin/bots/{id}/votes").post(admin::record_vote))
                    .service(web::resource("/admin/bots/{id}/webhook/test").post(admin::send_test))
                    .service(
                        web::resource("/admin/bots/{id}/webhook/deliveries").get(admin::deliveries),
                    )
                    .service(
                        web::resource(
                            "/admin/bots/{id}/webhook/deliveries/{delivery_id}/redeliver",
                        )
                        .post(admin::redeliver),
                    )
                    .service(web::resource("/admin/snapshot").post(admin::snapshot)),
            )
            .default_service(web::to(no_route));
    }
}

async fn openapi_json(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, HeaderValue::from_static(reply::JSON_UTF8)))
        .body(state.openapi_json.clone())
}

async fn no_route(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!(
        "no route for {} {}",
        request.method(),
        request.path()
    )))
}
