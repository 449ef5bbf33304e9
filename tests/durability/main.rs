//! Durability: the real binary, killed and restarted on the same data directory.

mod connections;
mod corruption;
mod crash;
mod damage;
mod exits;
mod hardening;
mod history;
mod lifecycle;
mod ordering;
mod ownership;
mod process;
mod refused;
mod replay;
mod stop;
mod webhooks;
