//! End-to-end tests: the real server on port 0, a real HTTP client.

mod admin;
mod auth;
mod badge;
mod bots;
mod compat;
mod docs;
mod errors;
mod growth;
mod helpers;
mod history;
mod http;
mod isolation;
mod limits;
mod logs;
mod openapi;
mod operations;
mod routing;
mod search;
mod search_concurrency;
mod search_options;
mod stats;
mod time_rules;
mod users;
mod votes;
mod webhooks;
mod weekend;
