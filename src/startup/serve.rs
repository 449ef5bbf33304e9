//! The HTTP side of start-up: the application's state as handlers see it, the router with its
//! middleware, the API's listener and the metrics listener.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::http::header::HeaderValue;
use actix_web::middleware::from_fn;
use actix_web::{web, App};

use super::actors::Started;
use crate::api::admin::snapshot::TakeSnapshot;
use crate::api::admin_failures::AdminFailures;
use crate::api::around::Optional;
use crate::api::cluster::{self, ClusterHttp};
use crate::api::compress::Precompressed;
use crate::api::connection::{self, ServerOptions};
use crate::api::error::envelope_errors;
use crate::api::history::History;
use crate::api::http::{self, AllowedMethods};
use crate::api::layer::Layer;
use crate::api::limits::{self, ClientAddress, RateLimiter};
use crate::api::{self, openapi, routes, AppState};
use crate::config::Settings;
use crate::domain::ids::TokenHash;
use crate::domain::time::Clock;
use crate::shutdown::Shutdown;
use crate::telemetry;

/// The metrics listener, when there is one: its address and its server.
type MetricsServer = Option<(SocketAddr, Server)>;

/// What [`serve`] adds: the metrics listener and the telemetry threads.
pub(super) type Served = (MetricsServer, telemetry::Threads);

/// The API's server, running before anything is loaded: its address, and its workers, whose
/// threads the bot actors live on.
pub(super) struct Api {
    pub address: SocketAddr,
    pub serving: connection::Serving<AppParts>,
}

/// What each HTTP worker builds its app from once the state is loaded.
#[derive(Clone)]
pub(super) struct AppParts {
    state: web::Data<AppState>,
    layer: Layer,
}

/// Starts the API's server on `listener`: actix-web's HttpServer, but over connections that
/// stop reading a refused body; signals are ours: actix's own would stop the whole actor system
/// before the last snapshot. Its workers run and accept at once; requests wait until [`serve`]
/// opens it over the loaded state.
pub(super) async fn start_api(
    settings: &Settings,
    listener: TcpListener,
    cluster: Option<web::Data<ClusterHttp>>,
) -> std::io::Result<Api> {
    let address = listener.local_addr()?;
    let base_path = settings.base_path.clone();
    let classic_base_path = settings.classic_base_path.clone();
    let cors_origins = settings.cors_origins.clone();
    let cors_on = !cors_origins.is_empty();
    let cluster_on = cluster.is_some();
    let metrics_on_api = settings.metrics_bind.is_none();
    let serving = connection::serve(
        listener,
        ServerOptions {
            workers: settings.workers,
            max_connections: (settings.max_connections / settings.workers.max(1)).max(1),
            client_request_timeout: settings.request_timeout,
            client_disconnect_timeout: Duration::from_secs(1),
            keep_alive: settings.keep_alive,
        },
        move |parts: &AppParts| {
            // Innermost first: each `wrap` goes around all the ones before it.
            App::new()
                .app_data(parts.state.clone())
                .wrap(cluster::Consistency::new(cluster.clone()))
                .wrap(Optional::new(cors_on, || {
                    http::cors(&cors_origins).unwrap_or_default()
                }))
                .wrap(Optional::new(cors_on, || from_fn(http::cors_refusals)))
                .wrap(cluster::ForwardWrites::new(cluster.clone()))
                .wrap(parts.layer.clone())
                .configure(|cfg| {
                    if let Some(cluster) = &cluster {
                        cfg.app_data(cluster.clone());
                    }
                })
                .configure(routes(
                    &base_path,
                    &classic_base_path,
                    metrics_on_api,
                    cluster_on,
                ))
        },
    )
    .await?;
    Ok(Api { address, serving })
}

/// Builds what handlers see over the started actors, starts the metrics listener, and opens
/// the API's server to requests.
pub(super) fn serve(
    settings: &Settings,
    started: &Started,
    clock: Arc<dyn Clock>,
    loops: Shutdown,
    history_key: [u8; 32],
    api: &Api,
) -> std::io::Result<Served> {
    let limiter = RateLimiter::new(settings.rate_limit, Arc::clone(&clock)).map(Arc::new);
    if let Some(limiter) = &limiter {
        limits::spawn_sweeper(Arc::clone(limiter), loops.clone());
    }
    let history = Arc::new(History::new(settings.vote_history.clone(), history_key));
    let address = api.address;
    // This application's access-log and metrics threads, which end when it stops.
    let access_log = Arc::new(telemetry::AccessLog::default());
    // The longest prefix names a request's surface: the project API lies under the base path.
    let mut surfaces = vec![
        (settings.base_path.clone(), telemetry::Surface::Base),
        (
            format!("{}/projects", settings.base_path.trim_end_matches('/')),
            telemetry::Surface::Project,
        ),
    ];
    if !settings.classic_base_path.is_empty() && settings.classic_base_path != settings.base_path {
        surfaces.push((
            settings.classic_base_path.clone(),
            telemetry::Surface::Classic,
        ));
    }
    access_log.set_surfaces(surfaces);
    let telemetry = telemetry::Threads::start(&access_log, address.port(), &loops);
    let openapi_document = serde_json::to_value(openapi::document(
        &settings.base_path,
        &settings.classic_base_path,
    ))
    .map_err(std::io::Error::other)?;
    let openapi_json = serde_json::to_vec(&openapi_document).map_err(std::io::Error::other)?;
    let layer = Layer::new(
        Arc::clone(&access_log),
        Arc::new(AllowedMethods::from_openapi(&openapi_document)),
    );
    let state = web::Data::new(AppState {
        directory: Arc::clone(&started.directory),
        registry: started.registry.clone(),
        clock: Arc::clone(&clock),
        admin_token: started
            .admin_token
            .as_ref()
            .map(|token| TokenHash::of(token.expose())),
        openapi_json: Precompressed::new(
            HeaderValue::from_static(crate::api::reply::JSON_UTF8),
            openapi_json.into(),
        ),
        docs: Arc::new(api::docs::Docs::new(&settings.base_path)),
        snapshots: started
            .persistence
            .clone()
            .map(|persistence| persistence as Arc<dyn TakeSnapshot>),
        limiter,
        client_address: ClientAddress::new(settings.trust_forwarded_for, settings.trusted_proxies),
        admin_failures: AdminFailures::new(Arc::clone(&clock), settings.admin_lockout),
        request_timeout: settings.request_timeout,
        allow_private_webhooks: settings.allow_private_webhooks,
        history,
        access_log,
        journal_health: Arc::new(JournalState {
            journal: started.journal.clone(),
            data_dir: settings.data_dir.clone(),
        }),
        search_pages: Default::default(),
        classic_pages: Default::default(),
        badges: Default::default(),
        classic_bots: Default::default(),
        growth_pages: Default::default(),
    });
    let metrics = match settings.metrics_bind {
        Some(bind) => Some(serve_metrics(bind, state.clone())?),
        None => None,
    };
    api.serving.opener.open(AppParts { state, layer });
    Ok((metrics, telemetry))
}

/// The journal as readiness sees it.
struct JournalState {
    journal: crate::persist::journal::Journal,
    data_dir: Option<std::path::PathBuf>,
}

impl crate::api::health::JournalHealth for JournalState {
    fn failure(&self) -> Option<(&'static str, String)> {
        let again = match (self.journal.disk_writable_again(), self.journal.restart_needed()) {
            (_, Some(why)) => format!("; writes cannot be taken again without a restart: {why}"),
            (true, None) => "; the disk takes writes again (a probe wrote and synced a file in the data directory): the durable state is being read back, then writes are taken again".to_owned(),
            (false, None) => String::new(),
        };
        self.journal
            .failure()
            .map(|error| (error.kind(), format!("{error}{again}")))
    }

    fn available_bytes(&self) -> Option<u64> {
        crate::persist::files::available_bytes(self.data_dir.as_deref()?)
    }
}

/// The routes declared for the metrics listener (`GET /metrics`) alone on their own address
/// (`--metrics-bind`), so an operator can keep them on a private interface; everything else
/// there is 404.
fn serve_metrics(
    bind: SocketAddr,
    state: web::Data<AppState>,
) -> std::io::Result<(SocketAddr, Server)> {
    let listener = TcpListener::bind(bind)?;
    let address = listener.local_addr()?;
    let server = actix_web::HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .configure(api::metrics_listener)
            .wrap(from_fn(envelope_errors))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)?
    .run();
    Ok((address, server))
}
