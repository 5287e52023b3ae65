//! `$OVMEM_HOME/config.toml` and its `OVMEM_*` environment overrides: how memories are banked
//! and recalled. Every field has a default, so no config file is needed.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::env::Env;

/// Which memories are shared: per project (default), per agent within a project, per session,
/// or one bank for everything the user does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BankMode {
    #[default]
    Project,
    Agent,
    Session,
    User,
}

/// Bounds of a hook's deadline (`deadline_ms`, `guard_deadline_ms`).
const MIN_DEADLINE_MS: u64 = 100;
const MAX_DEADLINE_MS: u64 = 60_000;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub bank: BankMode,
    /// Memories injected per recall.
    pub recall_limit: usize,
    /// Prompts shorter than this (in characters) trigger no recall.
    pub min_prompt_chars: usize,
    /// Virtual memory URI schemes local file tools may not open.
    pub uri_schemes: Vec<String>,
    /// Longest prompt or reply stored, in characters: turns are stored whole; this only stops a
    /// pasted log or dump from filling the store (the cut is marked).
    pub max_memory_chars: usize,
    /// Hook deadline in milliseconds; past it the hook answers with a no-op.
    pub deadline_ms: u64,
    /// Deadline for tool guards, which sit in front of every tool call.
    pub guard_deadline_ms: u64,
    /// `[backend]`: where memories go beyond the local store (see `backend::settings`).
    pub backend: crate::backend::BackendConfig,
    /// Extra secret patterns to redact (regexes, or `{ name, pattern }` tables), on top of the
    /// built-in rules. A bad one is logged and ignored.
    pub redact_patterns: Vec<crate::redact::Pattern>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bank: BankMode::Project,
            recall_limit: 5,
            min_prompt_chars: 5,
            uri_schemes: vec!["viking://".into(), "ovmem://".into()],
            max_memory_chars: 100_000,
            deadline_ms: 4000,
            guard_deadline_ms: 1500,
            backend: crate::backend::BackendConfig::default(),
            redact_patterns: Vec::new(),
        }
    }
}

impl Config {
    pub fn path(env: &Env) -> std::path::PathBuf {
        env.ovmem_home().join("config.toml")
    }

    pub fn load(env: &Env) -> Result<Self> {
        let path = Self::path(env);
        let mut cfg = Self::from_file(&path)?;
        if let Some(b) = env.var("OVMEM_BANK") {
            cfg.bank = match b {
                "project" => BankMode::Project,
                "agent" => BankMode::Agent,
                "session" => BankMode::Session,
                "user" => BankMode::User,
                other => bail!("OVMEM_BANK=`{other}` is not one of project, agent, session, user"),
            };
        }
        if let Some(n) = env.var("OVMEM_RECALL_LIMIT") {
            cfg.recall_limit = n.parse().with_context(|| format!("OVMEM_RECALL_LIMIT=`{n}` is not a number"))?;
        }
        if let Some(n) = env.var("OVMEM_DEADLINE_MS") {
            cfg.deadline_ms = n.parse().with_context(|| format!("OVMEM_DEADLINE_MS=`{n}` is not a number"))?;
        }
        // A hook answers within a minute whatever is asked (a harness waits no longer, and a
        // store's busy wait cannot be told more than `i32::MAX` ms).
        cfg.deadline_ms = cfg.deadline_ms.clamp(MIN_DEADLINE_MS, MAX_DEADLINE_MS);
        cfg.guard_deadline_ms = cfg.guard_deadline_ms.clamp(MIN_DEADLINE_MS, MAX_DEADLINE_MS);
        Ok(cfg)
    }

    fn from_file(path: &Path) -> Result<Self> {
        match crate::fsx::read_opt(path)? {
            None => Ok(Self::default()),
            Some(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                toml::from_str(&text).with_context(|| format!("`{}` is not a valid ovmem config", path.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deadline past any harness's patience (or past what the store's busy wait can be told)
    /// is held to a minute, and one too short to do anything to a tenth of a second.
    #[test]
    fn a_deadline_is_held_within_bounds() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().display().to_string();
        let load = |ms: &str| {
            let vars = [("HOME", home.as_str()), ("OVMEM_HOME", home.as_str()), ("OVMEM_DEADLINE_MS", ms)];
            let env = Env::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()).unwrap();
            Config::load(&env).unwrap().deadline_ms
        };
        assert_eq!(load("2684354559"), MAX_DEADLINE_MS);
        assert_eq!(load("1"), MIN_DEADLINE_MS);
        assert_eq!(load("2500"), 2500);
    }
}
