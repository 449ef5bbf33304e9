//! Routes declared once: each resource module lists its handlers, and each handler's
//! `#[utoipa::path]` gives its method, its path and its OpenAPI entry. The router
//! ([`super::routes`]) and the OpenAPI document ([`super::openapi::document`]) are both built
//! from these lists, so a route cannot be served undocumented or documented unserved.

use actix_web::dev::Handler;
use actix_web::http::Method;
use actix_web::{web, FromRequest, Responder, Route as Service};
use utoipa::openapi::path::{HttpMethod, Paths};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;

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

/// One method on one path: the handler that serves it and the OpenAPI entry that documents it.
pub struct Route {
    pub method: Method,
    /// As documented: under the base path for the API, from the root for the operational routes.
    pub path: String,
    service: Service,
    document: fn(&mut Paths, &mut Schemas),
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
            document: document::<D>,
        }
    }

    /// Adds this route's OpenAPI entry and the schemas it refers to.
    pub fn document(&self, paths: &mut Paths, schemas: &mut Schemas) {
        (self.document)(paths, schemas)
    }

    /// What actix serves, for the router.
    pub fn into_service(self) -> Service {
        self.service
    }
}

fn document<D: Declared>(paths: &mut Paths, schemas: &mut Schemas) {
    let mut operation = D::operation();
    let tags = D::tags();
    if !tags.is_empty() {
        operation
            .tags
            .get_or_insert_with(Vec::new)
            .extend(tags.into_iter().map(String::from));
    }
    paths.add_path_operation(D::path(), D::methods(), operation);
    D::schemas(schemas);
}

/// The order routes are matched in. actix tries the patterns of a scope in order and each one
/// with a `{param}` is a regex: paths without parameters come first (so `/bots/stats` is never
/// read as a bot id), then the check route, which bots call all day (docs/PERFORMANCE.md, "The
/// check route first"), then the rest as declared. The patterns do not overlap otherwise, so
/// the order changes nothing but speed.
pub fn matching_order(routes: &mut [Route]) {
    routes.sort_by_key(|route| {
        if !route.path.contains('{') {
            0
        } else if route.path.ends_with("/{id}/check") {
            1
        } else {
            2
        }
    });
}

/// Mounts `routes` (all under `prefix`) on `cfg`, one resource per path, in the order given.
/// The routes below `{prefix}/{id}` go into one scope: a single regex match selects the bot,
/// and its sub-resources are then told apart by plain comparisons.
pub fn mount(cfg: &mut web::ServiceConfig, prefix: &str, routes: Vec<Route>) {
    let by_id = format!("{prefix}/{{id}}");
    let (under_id, direct): (Vec<Route>, Vec<Route>) = routes.into_iter().partition(|route| {
        route
            .path
            .strip_prefix(&by_id)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    mount_resources(cfg, prefix, direct);
    if !under_id.is_empty() {
        cfg.service(web::scope("/{id}").configure(|cfg| mount_resources(cfg, &by_id, under_id)));
    }
}

fn mount_resources(cfg: &mut web::ServiceConfig, prefix: &str, routes: Vec<Route>) {
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

#[cfg(test)]
mod tests {
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
