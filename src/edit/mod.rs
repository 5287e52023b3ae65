//! Format-preserving editors for the files ovmem shares with the agents.

pub mod json;
pub mod toml;
