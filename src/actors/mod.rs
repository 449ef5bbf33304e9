//! Actors: one per bot, and the registry that owns the directory.

pub mod bot;
pub mod directory;
pub mod registry;
