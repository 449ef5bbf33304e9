//! The HTTP API in two halves: the resources (`resources/`, one module each, declaring their
//! routes) and the HTTP machinery they are served through (`http/`). This module holds what
//! joins them: the state every handler reaches and the router built from every declaration.

pub mod http;
pub mod resources;

// The paths the rest of the crate, the tests and the benchmarks name.
pub use http::{
    admin_failures, around, cluster, compress, connection, error, extract, guard, kept, layer,
    limits, openapi, reply, routes,
};
pub use resources::{
    admin, badge, bots, classic, docs, growth, health, history, owners, profile_votes, staff,
    stats, suggest, users, votes, weekend,
};

use std::sync::Arc;

use actix::Addr;
use actix_web::{web, HttpRequest, HttpResponse};

use crate::actors::directory::Directory;
use crate::actors::registry::Registry;
use crate::domain::ids::TokenHash;
use crate::domain::time::Clock;
use routes::{Limit, Route};

/// What every handler can reach.
pub struct AppState {
    pub directory: Arc<Directory>,
    pub registry: Addr<Registry>,
    pub clock: Arc<dyn Clock>,
    /// `None`: the admin API answers 404.
    pub admin_token: Option<TokenHash>,
    /// The OpenAPI document, rendered once.
    pub openapi_json: Arc<compress::Precompressed>,
    /// The API reference's files, each compressed once for every worker.
    pub docs: Arc<docs::Docs>,
    /// `None` when the service keeps its state in memory only.
    pub snapshots: Option<Arc<dyn admin::snapshot::TakeSnapshot>>,
    /// `None` with `--rate-limit 0`.
    pub limiter: Option<Arc<limits::RateLimiter>>,
    /// Where rate limits and failed admin authentications find the client's address.
    pub client_address: limits::ClientAddress,
    /// Failed admin authentications per client address.
    pub admin_failures: admin_failures::AdminFailures,
    /// How long a client has to send a body once its headers are in.
    pub request_timeout: std::time::Duration,
    pub allow_private_webhooks: bool,
    /// Vote history and stream settings, and the key that signs history cursors.
    pub history: Arc<history::History>,
    /// The application's access log, which also counts the requests in flight.
    pub access_log: Arc<crate::telemetry::AccessLog>,
    /// Whether the journal takes writes (`GET /readyz`).
    pub journal_health: Arc<dyn health::JournalHealth>,
    /// Search pages kept for the index's current version, by query string.
    pub search_pages: http::kept::Kept<u64>,
    /// Classic search pages kept for the index's and the profiles' current versions, by query
    /// string (a classic bot names its owners by their profiles).
    pub classic_pages: http::kept::Kept<(u64, u64)>,
    /// Badges kept for their bot's current listing and count, by URL.
    pub badges: http::kept::Kept<resources::badge::Mark>,
    /// Classic bots (`GET {classic}/bots/:id`) kept for what they show, by path.
    pub classic_bots: http::kept::Kept<resources::classic::Mark>,
    /// Growth histories kept for their bot's current history and range, by URL.
    pub growth_pages: http::kept::Kept<resources::growth::Mark>,
}

/// Every route the resource modules declare.
fn declared() -> Vec<Route> {
    [
        health::routes(),
        bots::routes(),
        votes::routes(),
        history::routes(),
        stats::routes(),
        users::routes(),
        admin::routes(),
        weekend::routes(),
        badge::routes(),
        growth::routes(),
        suggest::routes(),
        resources::cluster::routes(),
        owners::routes(),
        resources::audit::routes(),
        profile_votes::routes(),
        resources::projects::routes(),
        resources::reviews::routes(),
        staff::routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The operational routes every deployment serves, outside the base path.
pub fn root_routes() -> Vec<Route> {
    declared()
        .into_iter()
        .filter(|route| route.properties.operational && !route.properties.cluster)
        .collect()
}

/// The API's routes every deployment serves, under the base path, in the order they are
/// matched.
pub fn api_routes() -> Vec<Route> {
    let mut all: Vec<Route> = declared()
        .into_iter()
        .filter(|route| !route.properties.operational && !route.properties.cluster)
        .collect();
    routes::matching_order(&mut all);
    all
}

/// The classic surface's routes (`--classic-base-path`), in the order they are matched.
pub fn classic_routes() -> Vec<Route> {
    classic::routes()
}

/// The routes a cluster node serves beside the others, with their paths as served (the API's
/// under `base_path`).
fn cluster_routes(base_path: &str) -> Vec<Route> {
    declared()
        .into_iter()
        .filter(|route| route.properties.cluster)
        .map(|mut route| {
            if !route.properties.operational {
                route.path = format!("{base_path}{}", route.path);
            }
            route
        })
        .collect()
}

/// The metrics listener's router (`--metrics-bind`): the routes declared
/// [`on_metrics_listener`](Route::on_metrics_listener), and 404 for any other path.
pub fn metrics_listener(cfg: &mut web::ServiceConfig) {
    let metrics: Vec<Route> = root_routes()
        .into_iter()
        .filter(|route| route.properties.metrics)
        .collect();
    routes::resources(cfg, "", metrics);
    cfg.default_service(web::to(routes::no_route));
}

/// Whether `path` is `scope` or below it.
pub(crate) fn under(path: &str, scope: &str) -> bool {
    path.strip_prefix(scope)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The routes of each rate limit, in the order they first come, and the routes of none.
fn by_limit(routes: Vec<Route>) -> (Vec<(Limit, Vec<Route>)>, Vec<Route>) {
    let mut limited: Vec<(Limit, Vec<Route>)> = Vec::new();
    let mut rest = Vec::new();
    for route in routes {
        match route.properties.limit {
            None => rest.push(route),
            Some(limit) => match limited.iter_mut().find(|(known, _)| *known == limit) {
                Some((_, routes)) => routes.push(route),
                None => limited.push((limit, vec![route])),
            },
        }
    }
    (limited, rest)
}

/// The router, from the routes the resource modules declare. The routes of each rate limit
/// are a scope of their own (the start their paths share: `/bots`, `/users`), wrapped in that
/// limit, so that a path below it that no route has is limited too. The reference's files
/// (`{file:.*}`, a regex) are tried after the API when the API has a base path of its own, so
/// API requests never run it (and a base path under `/docs` is not taken for a file).
///
/// Without `metrics_on_api` (`--metrics-bind`), the routes of the metrics listener are served
/// there and not here. With `cluster_on`, the cluster's routes come first, each its own
/// resource at its full path.
pub fn routes<'a>(
    base_path: &'a str,
    classic_base_path: &'a str,
    metrics_on_api: bool,
    cluster_on: bool,
) -> impl FnOnce(&mut web::ServiceConfig) + 'a {
    move |cfg| {
        if cluster_on {
            routes::resources(cfg, "", cluster_routes(base_path));
        }
        let root: Vec<Route> = root_routes()
            .into_iter()
            .filter(|route| metrics_on_api || !route.properties.metrics)
            .collect();
        let docs_first = base_path.is_empty();
        // actix tries its services in the order they are added, and every API request is one
        // the operational routes would refuse first: the API goes first when no operational
        // route is under its base path (which only a base path like `/healthz` would do).
        let api_first = !base_path.is_empty()
            && root
                .iter()
                .all(|route| !under(route.path.as_str(), base_path));
        let mut root = Some(root);
        let mut operational = |cfg: &mut web::ServiceConfig| {
            if let Some(root) = root.take() {
                routes::resources(cfg, "", root);
            }
        };
        if !api_first {
            cfg.configure(&mut operational);
        }
        cfg.default_service(web::to(routes::no_route));
        if docs_first {
            cfg.configure(docs_routes);
        }
        // Of two surfaces one of which is under the other (`/api/v1` under `/api`), the one
        // below goes first: actix gives a request to the first scope its path is under.
        let classic_on = !classic_base_path.is_empty() && classic_base_path != base_path;
        let classic_first = classic_on && under(classic_base_path, base_path);
        if classic_first {
            cfg.configure(surface(classic_base_path, classic_routes(), false));
        }
        cfg.configure(surface(base_path, api_routes(), true));
        if classic_on && !classic_first {
            cfg.configure(surface(classic_base_path, classic_routes(), false));
        }
        if api_first {
            cfg.configure(&mut operational);
        }
        if !docs_first {
            cfg.configure(docs_routes);
        }
    }
}

/// One surface's routes under its base path: the routes of each rate limit in a scope of
/// their own, wrapped in that limit, then the rest (with the OpenAPI document on `{base}`).
fn surface(
    base_path: &str,
    routes: Vec<Route>,
    openapi: bool,
) -> impl FnOnce(&mut web::ServiceConfig) + '_ {
    move |cfg| {
        let (limited, rest) = by_limit(routes);
        let mut scope = web::scope(base_path).configure(|cfg| {
            for (limit, routes) in limited {
                let scope = routes::common_scope(routes.iter().map(|r| r.path.as_str()));
                cfg.service(
                    web::scope(&scope)
                        .wrap(limits::Limited::wrap(limit))
                        .configure(|cfg| routes::mount(cfg, base_path, &scope, routes)),
                );
            }
        });
        if openapi {
            scope = scope.service(web::resource("/openapi.json").get(openapi_json));
        }
        cfg.service(scope.configure(|cfg| routes::mount(cfg, base_path, "", rest)));
    }
}

/// `/docs` and the reference's files.
fn docs_routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(docs::PATH).get(docs::redirect))
        .service(web::resource(format!("{}/{{file:.*}}", docs::PATH)).get(docs::file));
}

/// Compressed once, when first asked for compressed (http/compress.rs).
async fn openapi_json(state: web::Data<AppState>, request: HttpRequest) -> HttpResponse {
    state.openapi_json.respond(&request)
}

#[cfg(test)]
mod tests {
    use super::{api_routes, cluster_routes, root_routes};

    #[test]
    fn the_cluster_routes_are_declared_with_the_others_and_served_at_their_full_paths() {
        let served: Vec<String> = cluster_routes("/api/v1")
            .into_iter()
            .map(|route| format!("{} {}", route.method, route.path))
            .collect();
        assert_eq!(
            served,
            [
                "GET /cluster",
                "GET /cluster/writer",
                "POST /api/v1/admin/cluster/step-down",
                "GET /api/v1/admin/cluster/digest",
            ]
        );
        let everywhere = root_routes().into_iter().chain(api_routes());
        assert!(everywhere
            .map(|route| route.path)
            .all(|path| !path.contains("cluster")));
    }
}
