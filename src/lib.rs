//! botlist: a self-hostable bot listing service.

pub mod actors;
pub mod api;
pub mod cluster;
pub mod config;
pub mod demo;
pub mod domain;
#[doc(hidden)]
pub mod fuzzing;
pub mod index;
pub mod parallel;
pub mod persist;
pub mod shutdown;
pub mod startup;
pub mod telemetry;
pub mod webhooks;
