//! ovmem's library: everything the `ovmem` binary does, so that benches and integration tests
//! can reach the store, the editors and the runtime directly. Its docs are for the developers
//! who work on it (`cargo doc --document-private-items`), so a public item's docs may name the
//! private constant or helper that decides what it does.
#![allow(rustdoc::private_intra_doc_links)]

#[cfg(test)]
pub mod anytext;
pub mod backend;
pub mod cache;
pub mod child;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod cut;
pub mod dates;
pub mod doctor;
pub mod edit;
pub mod embed;
pub mod env;
pub mod fsx;
pub mod harness;
pub mod home;
pub mod install;
pub mod interrupt;
pub mod legacy;
pub mod mcp;
pub mod output;
pub mod project;
pub mod prompt;
pub mod receipt;
pub mod redact;
pub mod runtime;
pub mod script;
pub mod shell;
pub mod store;
pub mod sys;
pub mod termsafe;
pub mod ui;
pub mod upgrade;
pub mod version;
pub mod winshell;
