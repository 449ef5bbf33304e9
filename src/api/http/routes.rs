//! Routes declared once, with all their properties: each resource module lists its handlers,
//! each handler's `#[utoipa::path]` gives its method, its path and its OpenAPI entry, and the
//! list says what else the route is (rate limited, tagged with an `ETag`, about a bot or a
//! profile, admin, matched early). The router ([`super::routes`]), the rate limits, the `ETag`
//! middleware and the OpenAPI document ([`super::openapi::document`]) are all built from these
//! lists, so adding a route is one edit, and no path is matched anywhere else to find out what
//! it is.

use std::collections::BTreeSet;
use std::sync::Mutex;

use actix_web::dev::{
    Handler, Service as ActixService, ServiceFactory, ServiceRequest, ServiceResponse,
};
use actix_web::http::Method;
use actix_web::{
    web, FromRequest, HttpMessage, HttpRequest, HttpResponse, Responder, Route as Service,
};
use futures_util::future::{join_all, LocalBoxFuture};
use utoipa::openapi::path::{HttpMethod, Operation, Paths};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;

use super::error::{ApiError, Code};
use crate::telemetry;

/// The schemas an operation refers to, by name.
pub type Schemas = Vec<(String, RefOr<Schema>)>;

/// What `#[utoipa::path]` generates for a handler: its path, method, operation, tags and the
/// schemas it refers to.
pub trait Declared:
    utoipa::Path + utoipa::__dev::SchemaReferences + utoipa::__dev::Tags<'static>
{
}

impl<D> Declared for D where
    D: utoipa::Path + utoipa::__dev::SchemaReferences + utoipa::__dev::Tags<'static>
{
}

/// The rate limit a route draws from: the router puts the routes of one limit in a scope of
/// their own (the fixed start of their paths), so that a path below that scope which no route
/// has is limited too.
pub use super::limits::Limit;

/// What the id in a route's path names: its 404 in the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    Bot,
    Profile,
}

/// The classic form of a route about the token's own bot: its path without `/{id}`.
#[derive(Clone, Copy)]
pub struct Classic {
    /// The OpenAPI `operationId` of the classic form.
    pub operation_id: &'static str,
    /// Its summary.
    pub summary: &'static str,
}

/// What a route is, beside its method, path and handler. The document and the middleware read
/// it from here.
#[derive(Clone, Copy, Default)]
pub struct Properties {
    pub limit: Option<Limit>,
    /// A GET whose 200 carries an `ETag` and that answers a matching `If-None-Match` with 304.
    pub etag: bool,
    pub subject: Option<Subject>,
    /// Takes the admin token; 404 when the server has none.
    pub admin: bool,
    /// Served outside the base path (health and metrics), and reads no parameter.
    pub operational: bool,
    /// Served on the metrics listener instead when the operator sets `--metrics-bind`.
    pub metrics: bool,
    /// Served on a cluster node only, and left out of the OpenAPI document, which describes
    /// what every deployment serves.
    pub cluster: bool,
    /// Tried before the other routes with parameters: bots call it all day.
    pub early: bool,
    /// Takes a bot's API token.
    pub token: bool,
    /// The bot in the path must be the token's own (403 otherwise).
    pub own_bot: bool,
    /// A route of the project API: `Authorization: Bearer`, errors as problem details.
    pub project: bool,
    /// Set on the classic form of a route (see [`Route::own_bot`]).
    classic: Option<Classic>,
    /// What the route adds to its OpenAPI entry that its annotation cannot say.
    amend: Option<fn(&mut Operation)>,
}

/// One method on one path: the handler that serves it, what it is, and the OpenAPI entry that
/// documents it.
pub struct Route {
    pub method: Method,
    /// As documented: under the base path for the API, from the root for the operational routes.
    pub path: String,
    pub properties: Properties,
    /// The errors only this route gives, each with when it gives it (the status and code are
    /// the error table's).
    pub refusals: Vec<(Code, &'static str)>,
    service: Service,
    /// `None` for a route the document leaves out (see [`Properties::cluster`]).
    operation: Option<fn(&mut Schemas) -> Operation>,
}

impl Route {
    /// `doc` is the unit struct `#[utoipa::path]` generates beside `handler` (`__path_handler`).
    pub fn new<D, F, Args>(_doc: D, handler: F) -> Self
    where
        D: Declared,
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        Self::build::<D, F, Args>(handler)
    }

    fn build<D, F, Args>(handler: F) -> Self
    where
        D: Declared,
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        let method = match D::methods().first() {
            Some(HttpMethod::Post) => Method::POST,
            Some(HttpMethod::Patch) => Method::PATCH,
            Some(HttpMethod::Put) => Method::PUT,
            Some(HttpMethod::Delete) => Method::DELETE,
            _ => Method::GET,
        };
        Self {
            service: web::route().method(method.clone()).to(handler),
            method,
            path: D::path(),
            properties: Properties::default(),
            refusals: Vec::new(),
            operation: Some(operation::<D>),
        }
    }

    /// A route with no OpenAPI entry: cluster mode's (see [`Properties::cluster`]).
    pub fn undocumented<F, Args>(method: Method, path: &str, handler: F) -> Self
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        Self {
            service: web::route().method(method.clone()).to(handler),
            method,
            path: path.to_owned(),
            properties: Properties::default(),
            refusals: Vec::new(),
            operation: None,
        }
    }

    /// A route about a bot the token must own (its handler takes [`super::extract::OwnBot`]),
    /// declared at `/bots/{id}/...`, and its classic form without `/{id}`, which the classic
    /// client libraries call: the same handler, about the token's own bot.
    pub fn own_bot<D, F, Args>(_doc: D, handler: F, classic: Classic) -> [Self; 2]
    where
        D: Declared,
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        let by_id = Self::build::<D, F, Args>(handler.clone()).set(|p| {
            p.token = true;
            p.subject = Some(Subject::Bot);
            p.own_bot = true;
        });
        let mut own = Self::build::<D, F, Args>(handler).set(|p| {
            p.token = true;
            p.classic = Some(classic);
        });
        own.path = own.path.replacen("/{id}", "", 1);
        [by_id, own]
    }

    fn set(mut self, set: impl FnOnce(&mut Properties)) -> Self {
        set(&mut self.properties);
        self
    }

    pub fn limited(self, limit: Limit) -> Self {
        self.set(|p| p.limit = Some(limit))
    }

    /// A route of the project API (`api/resources/projects.rs`).
    pub fn project(self) -> Self {
        self.set(|p| p.project = true)
    }

    pub fn etag(self) -> Self {
        self.set(|p| p.etag = true)
    }

    /// The first parameter of the path names a bot or a profile.
    pub fn about(self, subject: Subject) -> Self {
        self.set(|p| p.subject = Some(subject))
    }

    pub fn admin(self) -> Self {
        self.set(|p| p.admin = true)
    }

    pub fn operational(self) -> Self {
        self.set(|p| p.operational = true)
    }

    pub fn on_metrics_listener(self) -> Self {
        self.set(|p| p.metrics = true)
    }

    pub fn cluster(self) -> Self {
        self.set(|p| p.cluster = true)
    }

    pub fn early(self) -> Self {
        self.set(|p| p.early = true)
    }

    pub fn amend(self, amend: fn(&mut Operation)) -> Self {
        self.set(|p| p.amend = Some(amend))
    }

    /// An error only this route gives, and when: for its OpenAPI entry.
    pub fn refuses(mut self, code: Code, when: &'static str) -> Self {
        self.refusals.push((code, when));
        self
    }

    /// Adds this route's OpenAPI entry, at its path under `base_path` (operational routes at
    /// theirs), and the schemas it refers to.
    pub fn document(&self, base_path: &str, paths: &mut Paths, schemas: &mut Schemas) {
        let Some(operation) = self.operation else {
            return;
        };
        let mut operation = operation(schemas);
        if let Some(amend) = self.properties.amend {
            amend(&mut operation);
        }
        if let Some(classic) = self.properties.classic {
            operation.operation_id = Some(classic.operation_id.into());
            operation.summary = Some(classic.summary.into());
        }
        super::openapi::complete(self, &mut operation);
        let path = if self.properties.operational {
            self.path.clone()
        } else {
            format!("{base_path}{}", self.path)
        };
        let method = match self.method {
            Method::POST => HttpMethod::Post,
            Method::PATCH => HttpMethod::Patch,
            Method::PUT => HttpMethod::Put,
            Method::DELETE => HttpMethod::Delete,
            _ => HttpMethod::Get,
        };
        paths.add_path_operation(path, vec![method], operation);
    }

    /// What actix serves, for the router: the handler, behind the `ETag` middleware when the
    /// route tags its answers.
    pub fn into_service(self) -> Service {
        if self.properties.etag {
            self.service
                .wrap(super::around::Wrap::new(super::semantics::Tagged))
        } else {
            self.service
        }
    }
}

fn operation<D: Declared>(schemas: &mut Schemas) -> Operation {
    let mut operation = D::operation();
    let tags = D::tags();
    if !tags.is_empty() {
        operation
            .tags
            .get_or_insert_with(Vec::new)
            .extend(tags.into_iter().map(String::from));
    }
    D::schemas(schemas);
    operation
}

/// The order routes are matched in: paths without parameters first (so `/bots/stats` is
/// never read as a bot id), then the routes declared [`early`](Route::early) (the check
/// route, which bots call all day: docs/PERFORMANCE.md, "The check route first"), then the
/// rest as declared. The patterns do not overlap otherwise, so the order changes nothing but
/// speed.
pub fn matching_order(routes: &mut [Route]) {
    routes.sort_by_key(|route| {
        if !route.path.contains('{') {
            0
        } else if route.properties.early {
            1
        } else {
            2
        }
    });
}

/// The scope a group of routes shares: the segments at the start of every path that are
/// written out, up to the first parameter (`/bots` for `/bots` and `/bots/{id}/check`).
pub fn common_scope<'a>(paths: impl IntoIterator<Item = &'a str>) -> String {
    let fixed = |path: &str| -> Vec<String> {
        path.split('/')
            .skip(1)
            .take_while(|segment| !segment.contains('{'))
            .map(String::from)
            .collect()
    };
    let mut common: Option<Vec<String>> = None;
    for path in paths {
        let segments = fixed(path);
        common = Some(match common {
            None => segments,
            Some(known) => known
                .into_iter()
                .zip(segments)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    common
        .unwrap_or_default()
        .iter()
        .map(|segment| format!("/{segment}"))
        .collect()
}

/// Mounts `routes` (all under `prefix`, served under `base`) on a scope's `cfg`, in the order
/// given, as one [`RouteTable`]: the scope's default service, which matches each path segment
/// by segment and answers [`no_route`] when none fits. actix would try a resource per path in
/// turn, each with a regex when it has a parameter (docs/PERFORMANCE.md, "check10: the check
/// path"). A path the table cannot read (a parameter with a regex of its own) is left to
/// actix as a resource.
pub fn mount(cfg: &mut web::ServiceConfig, base: &str, prefix: &str, routes: Vec<Route>) {
    let mut table = RouteTable::default();
    let mut others = Vec::new();
    for route in routes {
        let path = route.path.strip_prefix(prefix).unwrap_or(&route.path);
        match Shape::of(path) {
            Some(shape) => {
                let pattern = format!("{base}{}", route.path);
                table.add(shape, &pattern, route.method.clone(), route.into_service());
            }
            None => others.push(route),
        }
    }
    resources(cfg, prefix, others);
    cfg.default_service(table);
}

/// Mounts `routes` (all under `prefix`) on `cfg` as actix resources, one per path, in the order
/// given: for the operational routes, matched before anything else.
pub fn resources(cfg: &mut web::ServiceConfig, prefix: &str, routes: Vec<Route>) {
    let mut resources: Vec<(String, Vec<Service>)> = Vec::new();
    for route in routes {
        let path = route
            .path
            .strip_prefix(prefix)
            .unwrap_or(&route.path)
            .to_owned();
        match resources.iter_mut().find(|(known, _)| *known == path) {
            Some((_, services)) => services.push(route.into_service()),
            None => resources.push((path, vec![route.into_service()])),
        }
    }
    for (path, services) in resources {
        let resource = services
            .into_iter()
            .fold(web::resource(path), |resource, service| {
                resource.route(service)
            });
        cfg.service(resource);
    }
}

/// The answer to a path no route has: 404 with the envelope.
pub async fn no_route(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    let error = Code::NotFound.with(format!(
        "no route for {} {}",
        request.method(),
        request.path()
    ));
    // Below the project API's paths, its rendering (problem details).
    if super::problem::is_project_path(request.path()) {
        return Ok(super::problem::render(&error));
    }
    Err(error)
}

/// One segment of a route's path below its scope.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    /// Matched as written (against the path as actix decoded it, as its own patterns are).
    Fixed(Box<str>),
    /// `{name}`: any segment that is not empty, as actix's `[^/]+`.
    Param(&'static str),
    /// `{name}` and then fixed text, as `{kind}.svg`: a segment that ends with the text after
    /// at least one character, which is the parameter (actix's `([^/]+)\.svg`).
    ParamThen(&'static str, Box<str>),
}

/// A path below its scope made of whole segments, each fixed or a plain `{name}`; no segment
/// at all is the scope's own path.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Shape(Vec<Segment>);

/// No route of the table has more segments than this below its scope, nor more parameters.
const MAX_SEGMENTS: usize = 8;
const MAX_PARAMS: usize = 4;

/// A path's segments below the scope, into `parts`: `None` when it has more than
/// [`MAX_SEGMENTS`] (no shape has), and none for the scope's own path.
fn segments<'a, 'p>(
    path: &'p str,
    parts: &'a mut [&'p str; MAX_SEGMENTS],
) -> Option<&'a [&'p str]> {
    let Some(path) = path.strip_prefix('/') else {
        return path.is_empty().then_some(&parts[..0]);
    };
    let mut count = 0;
    for part in path.split('/') {
        *parts.get_mut(count)? = part;
        count += 1;
    }
    Some(&parts[..count])
}

impl Shape {
    /// `None` for a path with a parameter that is not a whole segment or that has a regex of
    /// its own (`{file:.*}`): those are left to actix.
    fn of(path: &str) -> Option<Self> {
        let Some(path) = path.strip_prefix('/') else {
            return path.is_empty().then(|| Self(Vec::new()));
        };
        let segments = path.split('/').map(|segment| {
            let plain = |name: &str| !name.is_empty() && !name.contains([':', '{', '}']);
            match segment.strip_prefix('{').and_then(|s| s.split_once('}')) {
                Some((name, "")) if plain(name) => Some(Segment::Param(interned(name))),
                Some((name, then)) if plain(name) && !then.contains(['{', '}']) => {
                    Some(Segment::ParamThen(interned(name), then.into()))
                }
                Some(_) => None,
                None if segment.contains(['{', '}']) => None,
                None => Some(Segment::Fixed(segment.into())),
            }
        });
        let shape = segments.collect::<Option<_>>().map(Self)?;
        // A longer path is left to actix, which has no such bound.
        (shape.0.len() <= MAX_SEGMENTS && shape.param_count() <= MAX_PARAMS).then_some(shape)
    }

    /// Whether a path (what is left of the request's path below the scope, cut into its
    /// segments by [`segments`]) has this shape.
    fn fits(&self, parts: &[&str]) -> bool {
        self.0.len() == parts.len()
            && self
                .0
                .iter()
                .zip(parts)
                .all(|(segment, part)| match segment {
                    Segment::Fixed(fixed) => **fixed == **part,
                    Segment::Param(_) => !part.is_empty(),
                    Segment::ParamThen(_, then) => {
                        part.len() > then.len() && part.ends_with(&**then)
                    }
                })
    }

    /// The parameters of a path that [`fits`](Self::fits), by name.
    fn params<'a>(
        &'a self,
        parts: &'a [&'a str],
    ) -> impl Iterator<Item = (&'static str, &'a str)> + 'a {
        self.0
            .iter()
            .zip(parts)
            .filter_map(|(segment, part)| match segment {
                Segment::Param(name) => Some((*name, *part)),
                Segment::ParamThen(name, then) => {
                    Some((*name, part.get(..part.len().saturating_sub(then.len()))?))
                }
                Segment::Fixed(_) => None,
            })
    }

    fn param_count(&self) -> usize {
        self.0
            .iter()
            .filter(|segment| !matches!(segment, Segment::Fixed(_)))
            .count()
    }
}

/// One string kept for the life of the process, once per distinct value: route patterns and
/// parameter names, of which there are a few dozen, whatever the number of apps built. Both
/// must be `'static` for a request to carry them without an allocation or a reference count:
/// actix takes a parameter's name as `Cow<'static, str>` (`Path::add_static`), and the access
/// log's line (`telemetry::RoutePattern`) holds its pattern until the log's thread writes it.
/// The patterns come from `#[utoipa::path]` as `String`s and include the run-time base path.
fn interned(text: &str) -> &'static str {
    static KNOWN: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut known = KNOWN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(found) = known.get(text) {
        return found;
    }
    let leaked: &'static str = Box::leak(text.into());
    known.insert(leaked);
    leaked
}

/// One path with parameters and the methods it answers.
struct Entry {
    shape: Shape,
    /// The route pattern as documented (base path included), for logs, metrics and `Allow`.
    pattern: &'static str,
    routes: Vec<(Method, Service)>,
}

/// The routes of a scope, matched segment by segment without a regex, in the order they were
/// added. A path no entry fits goes to [`no_route`]; a path that fits with a method its entry
/// does not answer is 405, as actix answers it for a resource (the `Allow` header is added
/// from the route pattern by [`super::layer`]).
#[derive(Default)]
pub struct RouteTable {
    entries: Vec<Entry>,
}

impl RouteTable {
    fn add(&mut self, shape: Shape, pattern: &str, method: Method, service: Service) {
        match self.entries.iter_mut().find(|entry| entry.shape == shape) {
            Some(entry) => entry.routes.push((method, service)),
            None => self.entries.push(Entry {
                shape,
                pattern: interned(pattern),
                routes: vec![(method, service)],
            }),
        }
    }
}

type RouteService = <Service as ServiceFactory<ServiceRequest>>::Service;

impl ServiceFactory<ServiceRequest> for RouteTable {
    type Response = ServiceResponse;
    type Error = actix_web::Error;
    type Config = ();
    type Service = RouteTableService;
    type InitError = ();
    type Future = LocalBoxFuture<'static, Result<RouteTableService, ()>>;

    fn new_service(&self, _: ()) -> Self::Future {
        let fallback = web::to(no_route).new_service(());
        let entries: Vec<_> = self
            .entries
            .iter()
            .map(|entry| {
                let routes = entry
                    .routes
                    .iter()
                    .map(|(method, service)| (method.clone(), service.new_service(())));
                let (methods, services): (Vec<Method>, Vec<_>) = routes.unzip();
                (
                    entry.shape.clone(),
                    entry.pattern,
                    methods,
                    join_all(services),
                )
            })
            .collect();
        Box::pin(async move {
            let mut built = Vec::with_capacity(entries.len());
            for (shape, pattern, methods, services) in entries {
                let services = services.await.into_iter().collect::<Result<Vec<_>, _>>()?;
                built.push(EntryService {
                    shape,
                    pattern,
                    routes: methods.into_iter().zip(services).collect(),
                });
            }
            Ok(RouteTableService {
                entries: built,
                fallback: fallback.await?,
            })
        })
    }
}

struct EntryService {
    shape: Shape,
    pattern: &'static str,
    routes: Vec<(Method, RouteService)>,
}

pub struct RouteTableService {
    entries: Vec<EntryService>,
    fallback: RouteService,
}

impl ActixService<ServiceRequest> for RouteTableService {
    type Response = ServiceResponse;
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<ServiceResponse, actix_web::Error>>;

    actix_web::dev::always_ready!();

    fn call(&self, mut request: ServiceRequest) -> Self::Future {
        // The path is cut into segments once, and each shape compared with them.
        let mut params: [(&'static str, String); MAX_PARAMS] = Default::default();
        let found = {
            let mut parts = [""; MAX_SEGMENTS];
            match segments(request.match_info().unprocessed(), &mut parts) {
                Some(parts) => self
                    .entries
                    .iter()
                    .find(|entry| entry.shape.fits(parts))
                    .inspect(|entry| {
                        for (slot, (name, value)) in
                            params.iter_mut().zip(entry.shape.params(parts))
                        {
                            *slot = (name, value.to_owned());
                        }
                    }),
                None => None,
            }
        };
        let Some(entry) = found else {
            return self.fallback.call(request);
        };
        for (name, value) in params.into_iter().take(entry.shape.param_count()) {
            request.match_info_mut().add_static(name, value);
        }
        request
            .extensions_mut()
            .insert(telemetry::RoutePattern(entry.pattern));
        match entry
            .routes
            .iter()
            .find(|(method, _)| method == request.method())
        {
            Some((_, service)) => service.call(request),
            None => Box::pin(std::future::ready(Ok(
                request.into_response(HttpResponse::MethodNotAllowed())
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{common_scope, segments, Limit, Route, Segment, Shape, MAX_SEGMENTS};

    fn fits(shape: &Shape, path: &str) -> bool {
        let mut parts = [""; MAX_SEGMENTS];
        segments(path, &mut parts).is_some_and(|parts| shape.fits(parts))
    }

    fn params(shape: &Shape, path: &str) -> Vec<(&'static str, String)> {
        let mut parts = [""; MAX_SEGMENTS];
        let parts = segments(path, &mut parts).expect("a path that fits");
        shape
            .params(parts)
            .map(|(name, value)| (name, value.to_owned()))
            .collect()
    }

    #[test]
    fn a_shape_is_made_of_whole_segments_and_plain_parameters() {
        assert_eq!(
            Shape::of("/check"),
            Some(Shape(vec![Segment::Fixed("check".into())]))
        );
        assert_eq!(
            Shape::of(""),
            Some(Shape(Vec::new())),
            "the scope's own path"
        );
        assert_eq!(Shape::of("/{file:.*}"), None, "a regex of its own");
        assert_eq!(Shape::of("/file.{ext}"), None, "not a whole segment");
        assert_eq!(Shape::of("/{}"), None);
        assert_eq!(
            Shape::of("/a/b/c/d/e/f/g/h/i"),
            None,
            "longer than the table cuts"
        );
        assert_eq!(
            Shape::of("/{a}/{b}/{c}/{d}/{e}"),
            None,
            "more parameters than it keeps"
        );
        assert_eq!(
            Shape::of("/{id}/badge/{kind}.svg"),
            Some(Shape(vec![
                Segment::Param("id"),
                Segment::Fixed("badge".into()),
                Segment::ParamThen("kind", ".svg".into()),
            ]))
        );
        assert_eq!(Shape::of("/{kind}.{ext}"), None, "one parameter a segment");
        assert_eq!(
            Shape::of("/{id}/votes/history"),
            Some(Shape(vec![
                Segment::Param("id"),
                Segment::Fixed("votes".into()),
                Segment::Fixed("history".into()),
            ]))
        );
    }

    #[test]
    fn a_path_fits_a_shape_segment_by_segment() {
        let shape = Shape::of("/{id}/deliveries/{delivery_id}/redeliver").expect("a shape");
        assert!(fits(&shape, "/7/deliveries/x%2Fy/redeliver"));
        let params = params(&shape, "/7/deliveries/x%2Fy/redeliver");
        assert_eq!(
            params,
            [("id", "7".into()), ("delivery_id", "x%2Fy".into())]
        );
        for path in [
            "",
            "/",
            "7/deliveries/x/redeliver",
            "//deliveries/x/redeliver",
            "/7/deliveries//redeliver",
            "/7/deliveries/x/redeliver/",
            "/7/deliveries/x/redeliver/more",
            "/7/deliveries/x",
            "/7/Deliveries/x/redeliver",
            "/1/2/3/4/5/6/7/8/9",
        ] {
            assert!(!fits(&shape, path), "{path}");
        }
        let root = Shape::of("").expect("a shape");
        assert!(fits(&root, ""));
        assert!(!fits(&root, "/"));
        let check = Shape::of("/check").expect("a shape");
        assert!(fits(&check, "/check"));
        for path in ["", "/", "/check/", "//check", "/checks"] {
            assert!(!fits(&check, path), "{path}");
        }
    }

    #[test]
    fn a_parameter_then_fixed_text_fits_as_actix_matches_it() {
        let badge = Shape::of("/{id}/badge/{kind}.svg").expect("a shape");
        for (path, kind) in [
            ("/7/badge/servers.svg", "servers"),
            ("/7/badge/a.svg.svg", "a.svg"),
            ("/7/badge/x%2E.svg", "x%2E"),
        ] {
            assert!(fits(&badge, path), "{path}");
            let params = params(&badge, path);
            assert_eq!(params, [("id", "7".into()), ("kind", kind.into())]);
        }
        for path in [
            "/7/badge/.svg",
            "/7/badge/servers",
            "/7/badge/servers.svg/",
            "/7/badge/svg",
        ] {
            assert!(!fits(&badge, path), "{path}");
        }
    }

    #[test]
    fn each_rate_limit_is_the_scope_its_routes_share_and_no_other_route_is_in_it() {
        let routes = crate::api::api_routes();
        let mut limits: Vec<Limit> = Vec::new();
        for limit in routes.iter().filter_map(|route| route.properties.limit) {
            if !limits.contains(&limit) {
                limits.push(limit);
            }
        }
        assert!(limits.contains(&Limit::PerBot));
        let mut kinds: Vec<&str> = limits.iter().flat_map(|limit| limit.kinds()).collect();
        let count = kinds.len();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(
            kinds.len(),
            count,
            "two limits would share buckets: {kinds:?}"
        );
        for limit in limits {
            let (limited, others): (Vec<&Route>, Vec<&Route>) = routes
                .iter()
                .partition(|route| route.properties.limit == Some(limit));
            let scope = common_scope(limited.iter().map(|route| route.path.as_str()));
            assert!(!scope.is_empty(), "{limit:?}");
            for other in others {
                let inside = other
                    .path
                    .strip_prefix(&scope)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
                assert!(
                    !inside,
                    "{} is in the scope of {limit:?} ({scope}) but not limited so",
                    other.path
                );
            }
        }
        assert_eq!(
            common_scope(["/bots", "/bots/{id}/check", "/bots/check"]),
            "/bots"
        );
        assert_eq!(common_scope(["/users/{user_id}"]), "/users");
        assert_eq!(common_scope(["/a/b/c", "/a/b/{x}", "/a/b/d"]), "/a/b");
    }

    #[test]
    fn paths_without_parameters_then_the_check_route_are_matched_first() {
        let paths: Vec<String> = crate::api::api_routes()
            .into_iter()
            .map(|route| route.path)
            .filter(|path| path.starts_with("/bots"))
            .collect();
        let first = paths
            .iter()
            .position(|path| path.contains('{'))
            .expect("routes with an id");
        assert_eq!(paths[first], "/bots/{id}/check", "{paths:?}");
        assert!(paths[first..].iter().all(|path| path.contains('{')));
    }
}
