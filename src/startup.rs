//! Building and running the application; tests call [`Application::build`] with port 0.

use std::net::{SocketAddr, TcpListener};
use std::num::NonZeroUsize;
use std::sync::Arc;

use actix::{Actor, Addr, Arbiter};
use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};

use crate::actors::directory::Directory;
use crate::actors::registry::{BotSpawner, Registry};
use crate::api::error::envelope_errors;
use crate::api::health::{count_requests, Metrics};
use crate::api::{openapi, routes, AppState};
use crate::config::ServeArgs;
use crate::demo::{self, DemoInfo, DemoSize};
use crate::domain::ids::TokenHash;
use crate::domain::time::Clock;

/// What the server needs, whether it came from the command line or a test.
#[derive(Clone, Debug)]
pub struct Settings {
    pub bind: SocketAddr,
    pub base_path: String,
    pub admin_token: Option<String>,
    pub demo: bool,
    pub workers: usize,
    /// 0 runs bot actors on the registry's thread.
    pub actor_threads: usize,
}

impl Settings {
    pub fn from_args(args: &ServeArgs) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        Self {
            bind: args.bind,
            base_path: args.base_path.clone(),
            admin_token: args.admin_token.clone(),
            demo: args.demo,
            workers: args.workers.map_or(cores, NonZeroUsize::get),
            actor_threads: args.actor_threads.map_or(cores, NonZeroUsize::get),
        }
    }
}

pub struct Application {
    address: SocketAddr,
    base_path: String,
    server: Server,
    pub registry: Addr<Registry>,
    pub directory: Arc<Directory>,
    /// Set when the demo directory was loaded.
    pub demo: Option<DemoInfo>,
    /// The admin token in force (the demo's when `--demo` ran without one).
    pub admin_token: Option<String>,
    _arbiters: Vec<Arbiter>,
}

impl Application {
    /// Binds the listener and starts the actors; serving begins with [`Self::run_until_stopped`].
    pub async fn build(settings: Settings, clock: Arc<dyn Clock>) -> std::io::Result<Self> {
        let arbiters: Vec<Arbiter> = (0..settings.actor_threads)
            .map(|_| Arbiter::new())
            .collect();
        let directory = Arc::new(Directory::default());
        let spawner = BotSpawner::new(arbiters.iter().map(Arbiter::handle).collect());
        let registry = Registry::new(Arc::clone(&directory), Arc::clone(&clock), spawner).start();

        let mut admin_token = settings.admin_token.clone();
        let mut demo_info = None;
        if settings.demo && directory.is_empty() {
            let demo = demo::build(clock.now(), &DemoSize::default());
            registry
                .send(demo.load)
                .await
                .map_err(|e| std::io::Error::other(format!("loading the demo failed: {e}")))?;
            admin_token.get_or_insert_with(|| demo::DEMO_ADMIN_TOKEN.to_owned());
            demo_info = Some(demo.info);
        }

        let listener = TcpListener::bind(settings.bind)?;
        let address = listener.local_addr()?;
        let openapi_json = serde_json::to_vec(&openapi::document(&settings.base_path))
            .map_err(std::io::Error::other)?;
        let state = web::Data::new(AppState {
            directory: Arc::clone(&directory),
            registry: registry.clone(),
            clock,
            admin_token: admin_token.as_deref().map(TokenHash::of),
            metrics: Metrics::default(),
            openapi_json: openapi_json.into(),
        });
        let base_path = settings.base_path.clone();
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .wrap(from_fn(envelope_errors))
                .wrap(from_fn(count_requests))
                .configure(routes(&base_path))
        })
        .listen(listener)?
        .workers(settings.workers)
        .run();

        Ok(Self {
            address,
            base_path: settings.base_path,
            server,
            registry,
            directory,
            demo: demo_info,
            admin_token,
            _arbiters: arbiters,
        })
    }

    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// `http://HOST:PORT/api/v1`, with the real bound port.
    pub fn base_url(&self) -> String {
        format!("http://{}{}", self.address, self.base_path)
    }

    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}
