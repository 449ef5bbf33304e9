//! The API's resources, one module each: thin handlers that parse, ask an actor and reply, and
//! the routes each declares (`routes()`), with their properties, for the router in `api/mod.rs`.

pub mod admin;
pub mod audit;
pub mod badge;
pub mod bots;
pub mod classic;
pub mod cluster;
pub mod docs;
pub mod growth;
pub mod health;
pub mod history;
pub mod needle_cost;
pub mod owners;
pub mod profile_votes;
pub mod projects;
pub mod reviews;
pub mod staff;
pub mod stats;
pub mod suggest;
pub mod users;
pub mod votes;
pub mod weekend;
