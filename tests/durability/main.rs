//! Durability: the real binary, killed and restarted on the same data directory.

mod audit;
mod backup;
mod connections;
mod corruption;
mod crash;
mod damage;
mod exits;
mod expiry;
mod formats;
mod hardening;
mod history;
mod lifecycle;
mod metrics;
mod ordering;
mod ownership;
mod people;
mod process;
mod refused;
mod replay;
mod staff;
mod stop;
mod upgrade;
mod webhooks;
