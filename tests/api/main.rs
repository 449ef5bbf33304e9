//! End-to-end tests: the real server on port 0, a real HTTP client.

mod admin;
mod auth;
mod bots;
mod compat;
mod errors;
mod helpers;
mod http;
mod limits;
mod logs;
mod operations;
mod search;
mod stats;
mod time_rules;
mod users;
mod votes;
mod webhooks;
