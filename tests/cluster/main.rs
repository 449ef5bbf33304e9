//! Cluster mode: three nats-servers and three botlist nodes on loopback, as real processes,
//! killed, stopped and restarted. See harness.rs for how a missing nats-server is handled.

mod backup;
mod chaos;
mod damage;
mod followers;
mod harness;
mod lease;
mod load;
mod moderation;
mod outages;
mod people;
mod scenarios;
mod writer_known;
