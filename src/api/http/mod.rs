//! The HTTP machinery every resource is served through: the connections and the one layer
//! around every request, route declarations and the router's table, rate limits, reading
//! requests and writing replies, the error envelope, the OpenAPI document, and cluster mode's
//! middleware. Nothing here knows a resource by name but the router's list of them
//! (`api/mod.rs`) and the extractors that find a bot or a profile.

pub mod admin_failures;
pub mod around;
pub mod cluster;
pub mod compress;
pub mod connection;
pub mod error;
pub mod extract;
pub mod give_back;
pub mod guard;
pub mod kept;
pub mod layer;
pub mod limits;
pub mod openapi;
pub mod problem;
pub mod reply;
pub mod routes;
pub mod semantics;
pub mod staff;

pub use semantics::{cors, cors_refusals, AllowedMethods, Tagged};
