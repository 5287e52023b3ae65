//! Which memory backend is configured, where each value came from, and the one place that writes
//! that choice: `[backend]` in `$OVMEM_HOME/config.toml`, tokens in `$OVMEM_HOME/credentials.toml`.
//!
//! Precedence, per value: the environment (`HINDSIGHT_API_URL`, `HINDSIGHT_API_TOKEN`,
//! `OPENVIKING_URL`, `OPENVIKING_API_KEY`, and `OVMEM_BACKEND` for the kind), then the files, then
//! defaults. The environment wins because it is the explicit, per-process choice (CI, direnv, a
//! shell started for one server), and because Hindsight's and OpenViking's own clients let it win
//! too, so a user who exported those variables for them gets the same server from ovmem. Server
//! variables only apply to their own kind: `HINDSIGHT_API_URL` never switches a local or
//! OpenViking setup to Hindsight.
//!
//! credentials.toml is created with mode 0600 from its first byte (a temporary file opened 0600,
//! then renamed), its directory 0700; a credentials file that others can read is refused, and no
//! error message ever quotes its contents.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::Secret;
use crate::cmd::Refusal;
use crate::env::Env;

/// Where memories go beyond this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Only the embedded store (the default).
    #[default]
    Local,
    Hindsight,
    Openviking,
}

impl Kind {
    pub fn id(self) -> &'static str {
        match self {
            Kind::Local => "local",
            Kind::Hindsight => "hindsight",
            Kind::Openviking => "openviking",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Local => "local",
            Kind::Hindsight => "Hindsight",
            Kind::Openviking => "OpenViking",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "local" => Some(Kind::Local),
            "hindsight" => Some(Kind::Hindsight),
            "openviking" => Some(Kind::Openviking),
            _ => None,
        }
    }

    /// The environment variable that overrides this kind's URL.
    pub fn url_env(self) -> Option<&'static str> {
        match self {
            Kind::Local => None,
            Kind::Hindsight => Some("HINDSIGHT_API_URL"),
            Kind::Openviking => Some("OPENVIKING_URL"),
        }
    }

    /// The environment variable that overrides this kind's token.
    pub fn token_env(self) -> Option<&'static str> {
        match self {
            Kind::Local => None,
            Kind::Hindsight => Some("HINDSIGHT_API_TOKEN"),
            Kind::Openviking => Some("OPENVIKING_API_KEY"),
        }
    }

    /// The table and key of this kind's token in credentials.toml.
    fn credential_key(self) -> Option<(&'static str, &'static str)> {
        match self {
            Kind::Local => None,
            Kind::Hindsight => Some(("hindsight", "api_token")),
            Kind::Openviking => Some(("openviking", "api_key")),
        }
    }
}

/// `[backend]` in config.toml.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackendConfig {
    pub kind: Kind,
    /// The server's root URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Hindsight: one fixed bank for everything. Unset: each project's team bank, derived from
    /// its git remote (see `backend::team_bank`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bank: Option<String>,
    /// OpenViking: the user (dev and trusted modes; in api_key mode the key decides).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// OpenViking: the account (dev and trusted modes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// How long a hook waits for a recall before it answers from the local store.
    pub recall_budget_ms: u64,
    /// How long a hook waits to send a turn before leaving it queued.
    pub send_budget_ms: u64,
    /// Hindsight: the most tokens of memories one recall returns.
    pub recall_max_tokens: u32,
    /// Keys of config.toml's `[backend]` that decide where memories go and could not be used
    /// (see [`decides_where`]): while one applies to the kind in force, the server is not used.
    /// Set by [`crate::config::Config::load_lenient`], never read from or written to the file.
    #[serde(skip)]
    pub unusable: Vec<crate::config::Problem>,
}

impl Default for BackendConfig {
    fn default() -> Self {
        Self {
            kind: Kind::Local,
            url: None,
            bank: None,
            user: None,
            account: None,
            recall_budget_ms: 1500,
            send_budget_ms: 1500,
            recall_max_tokens: 1024,
            unusable: Vec::new(),
        }
    }
}

/// Whether a bad value of this setting must keep memories off the server rather than fall back to
/// its default, as every other setting does. Each of these says where memories go: without
/// `bank` a Hindsight server gets them in a per-project team bank instead of the one the user
/// named (shared with other people), without `user`/`account` an OpenViking server files them
/// under the key's or the server's default user, and a `url` of the wrong type must never turn
/// into another server (an `HINDSIGHT_API_URL` left in the shell). A bad `kind` (or
/// `OVMEM_BACKEND`) is not here: its default, `local`, sends nothing anywhere, and the budgets
/// only decide how long a hook waits.
pub fn decides_where(key: &str) -> bool {
    matches!(key, "backend.url" | "backend.bank" | "backend.user" | "backend.account")
}

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Config(PathBuf),
    Credentials(PathBuf),
    Env(&'static str),
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Config(p) | Source::Credentials(p) => write!(f, "{}", p.display()),
            Source::Env(name) => write!(f, "${name}"),
            Source::Default => f.write_str("default"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    pub from: Source,
}

/// The backend settings in force, each with its origin.
#[derive(Debug, Clone)]
pub struct Settings {
    pub kind: Sourced<Kind>,
    pub url: Option<Sourced<String>>,
    pub bank: Option<Sourced<String>>,
    pub user: Option<Sourced<String>>,
    pub account: Option<Sourced<String>>,
    pub token: Option<Sourced<Secret>>,
    pub recall_budget: Duration,
    pub send_budget: Duration,
    pub recall_max_tokens: u32,
    /// Environment variables for another kind that are set and therefore ignored (for `show`).
    pub ignored_env: Vec<&'static str>,
    /// Why the server must not be used (a junk `OVMEM_BACKEND`, a `bank` of the wrong type, …):
    /// while any, [`super::connect`] refuses and memories stay in the local store.
    pub unusable: Vec<String>,
    /// The config keys among those (`backend.bank`, …), so that `backend show` describes the key
    /// as invalid rather than as unset (an unset `bank` means a team bank per project).
    pub invalid: Vec<crate::config::Problem>,
    /// The config's problems that concern the backend (its `[backend]` keys, `OVMEM_BACKEND`, a
    /// file that is not TOML), for the commands that show the backend ([`Settings::load`] only).
    pub problems: Vec<crate::config::Problem>,
}

pub fn config_path(env: &Env) -> PathBuf {
    env.ovmem_home().join("config.toml")
}

pub fn credentials_path(env: &Env) -> PathBuf {
    env.ovmem_home().join("credentials.toml")
}

impl Settings {
    /// Reads config.toml's `[backend]` (key by key, as the hooks do: see
    /// [`crate::config::Config::load_lenient`]) and credentials.toml, then applies the
    /// environment. A setting it cannot use is in [`Settings::problems`], not an error.
    pub fn load(env: &Env) -> Result<Self> {
        let (cfg, problems) = crate::config::Config::load_lenient(env);
        let mut s = Self::resolve(env, &cfg.backend)?;
        s.problems = problems
            .into_iter()
            .filter(|p| {
                p.key.as_deref().is_none_or(|k| k == "backend" || k.starts_with("backend.") || k == "OVMEM_BACKEND")
            })
            .collect();
        Ok(s)
    }

    /// The settings for an already-parsed `[backend]` table (e.g. from `Config::load`).
    pub fn resolve(env: &Env, cfg: &BackendConfig) -> Result<Self> {
        let config = config_path(env);
        let from_file = |v: &Option<String>| {
            v.as_ref()
                .filter(|s| !s.trim().is_empty())
                .map(|s| Sourced { value: s.trim().to_string(), from: Source::Config(config.clone()) })
        };
        let mut unusable = Vec::new();
        let from_env = env.var("OVMEM_BACKEND").and_then(|k| {
            let parsed = Kind::parse(k);
            if parsed.is_none() {
                // Not the file's kind in its place: a shell that says "not this server" (a
                // mistyped `local`) must not get the configured one.
                unusable.push("`OVMEM_BACKEND` is not one of local, hindsight, openviking".to_string());
            }
            parsed
        });
        let kind = match from_env {
            Some(value) => Sourced { value, from: Source::Env("OVMEM_BACKEND") },
            None if cfg.kind != Kind::Local => Sourced { value: cfg.kind, from: Source::Config(config.clone()) },
            None => Sourced { value: Kind::Local, from: Source::Default },
        };
        let k = kind.value;
        let ignored_env: Vec<&'static str> = [Kind::Hindsight, Kind::Openviking]
            .into_iter()
            .filter(|other| *other != k)
            .flat_map(|other| [other.url_env(), other.token_env()])
            .flatten()
            .filter(|n| env.var(n).is_some())
            .collect();
        if k == Kind::Local {
            return Ok(Self::local(kind, cfg, ignored_env, unusable));
        }
        let env_value = |name: Option<&'static str>| {
            name.and_then(|n| env.var(n).map(|v| Sourced { value: v.trim().to_string(), from: Source::Env(n) }))
        };
        let mut invalid = Vec::new();
        for p in &cfg.unusable {
            let applies = match p.key.as_deref() {
                Some("backend.url") => env_value(k.url_env()).is_none(),
                Some("backend.bank") => k == Kind::Hindsight,
                Some("backend.user" | "backend.account") => k == Kind::Openviking,
                _ => true,
            };
            if applies {
                unusable.push(format!("{} {}", p.place, p.what));
                invalid.push(p.clone());
            }
        }
        let url = env_value(k.url_env()).or_else(|| from_file(&cfg.url));
        let token = match k.token_env().and_then(|n| env.var(n).map(|v| (n, v))) {
            Some((n, v)) => Some(Sourced { value: Secret::new(v.trim()), from: Source::Env(n) }),
            None => read_token(&credentials_path(env), k)?,
        };
        Ok(Self {
            url,
            bank: if k == Kind::Hindsight { from_file(&cfg.bank) } else { None },
            user: if k == Kind::Openviking { from_file(&cfg.user) } else { None },
            account: if k == Kind::Openviking { from_file(&cfg.account) } else { None },
            token,
            recall_budget: Duration::from_millis(cfg.recall_budget_ms),
            send_budget: Duration::from_millis(cfg.send_budget_ms),
            recall_max_tokens: cfg.recall_max_tokens,
            ignored_env,
            unusable,
            invalid,
            problems: Vec::new(),
            kind,
        })
    }
}

impl Settings {
    fn local(kind: Sourced<Kind>, cfg: &BackendConfig, ignored_env: Vec<&'static str>, unusable: Vec<String>) -> Self {
        Self {
            kind,
            url: None,
            bank: None,
            user: None,
            account: None,
            token: None,
            recall_budget: Duration::from_millis(cfg.recall_budget_ms),
            send_budget: Duration::from_millis(cfg.send_budget_ms),
            recall_max_tokens: cfg.recall_max_tokens,
            ignored_env,
            unusable,
            invalid: Vec::new(),
            problems: Vec::new(),
        }
    }
}

/// `[backend]` as config.toml has it, without the environment: what the user configured, key by
/// key (a key ovmem cannot use keeps its default, and is in [`BackendConfig::unusable`] when it
/// decides where memories go).
pub fn configured(env: &Env) -> BackendConfig {
    crate::config::Config::load_lenient(env).0.backend
}

fn read_opt(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("could not read `{}`", path.display())),
    }
}

/// The token for `kind` in credentials.toml, refusing a file others can read. Errors never quote
/// the file (a parse error points at a line, nothing more).
fn read_token(path: &Path, kind: Kind) -> Result<Option<Sourced<Secret>>> {
    let Some((table, key)) = kind.credential_key() else { return Ok(None) };
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("could not read `{}`", path.display())),
    };
    check_private(path, &meta)?;
    let bytes = read_opt(path)?.unwrap_or_default();
    let text = String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("`{}` is not UTF-8 text", path.display()))?;
    let doc: toml::Table = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        anyhow::anyhow!(
            "`{}` is not valid TOML{}; fix it or run `ovmem install --backend ...` again after moving it away",
            path.display(),
            line.map(|l| format!(" (line {l})")).unwrap_or_default()
        )
    })?;
    let value = doc.get(table).and_then(|t| t.get(key));
    match value {
        None => Ok(None),
        Some(toml::Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(toml::Value::String(s)) => {
            Ok(Some(Sourced { value: Secret::new(s.trim()), from: Source::Credentials(path.to_path_buf()) }))
        }
        Some(_) => bail!("`{}`: [{table}] {key} must be a string", path.display()),
    }
}

fn check_private(path: &Path, meta: &fs::Metadata) -> Result<()> {
    if meta.file_type().is_symlink() {
        bail!("`{}` is a symlink; ovmem reads and writes credentials only as a regular file", path.display());
    }
    if !crate::sys::has_modes() {
        // No Unix modes or owners to check (Windows: the profile directory's ACLs).
        return Ok(());
    }
    let mode = crate::sys::mode(meta) & 0o777;
    if mode & 0o077 != 0 {
        bail!(
            "`{}` can be read by other users (mode {mode:04o}); run `chmod 600 {}` and try again",
            path.display(),
            path.display()
        );
    }
    if let (Some(me), Some((uid, _))) = (crate::sys::euid(), crate::sys::owner(meta)) {
        if uid != me {
            bail!("`{}` belongs to another user (uid {uid}); it must be yours", path.display());
        }
    }
    Ok(())
}

/// What `ovmem install --backend ...` asks for.
#[derive(Debug, Clone)]
pub enum Choice {
    Local,
    Hindsight { url: String, token: Option<Secret>, bank: Option<String> },
    Openviking { url: String, api_key: Option<Secret>, user: Option<String>, account: Option<String> },
}

impl Choice {
    pub fn kind(&self) -> Kind {
        match self {
            Choice::Local => Kind::Local,
            Choice::Hindsight { .. } => Kind::Hindsight,
            Choice::Openviking { .. } => Kind::Openviking,
        }
    }
}

/// What [`configure`] wrote.
#[derive(Debug, Clone)]
pub struct Configured {
    pub config: PathBuf,
    /// Set when a token was written.
    pub credentials: Option<PathBuf>,
}

/// Saves a backend choice: `[backend]` in config.toml (every other byte of the file, comments
/// included, stays as it was) and the token, if one is given, in credentials.toml (0600).
///
/// Only what the choice names changes: a Hindsight choice without a bank keeps a bank set before,
/// a choice without a token keeps the saved token, `local` keeps the URL for switching back.
/// A Hindsight choice drops OpenViking's keys (user, account), an OpenViking choice Hindsight's
/// (bank). A config.toml that does not parse is left untouched and refused ([`Refusal`]).
pub fn configure(env: &Env, choice: &Choice) -> Result<Configured> {
    validate(choice)?;
    let home = env.ovmem_home();
    create_private_dir(&home)?;
    let config = config_path(env);
    let mut doc = match read_opt(&config)? {
        None => toml_edit::DocumentMut::new(),
        Some(bytes) => String::from_utf8(bytes)
            .map_err(|_| Refusal(format!("`{}` is not UTF-8 text; nothing was changed", config.display())))?
            .parse::<toml_edit::DocumentMut>()
            .map_err(|e| {
                Refusal(format!(
                    "`{}` does not parse as TOML ({}); fix it first, nothing was changed",
                    config.display(),
                    e.message()
                ))
            })?,
    };
    let item = doc.entry("backend").or_insert_with(toml_edit::table);
    let Some(table) = item.as_table_mut() else {
        return Err(Refusal(format!(
            "`{}`: `backend` is not a table; make it `[backend]` first, nothing was changed",
            config.display()
        ))
        .into());
    };
    set(table, "kind", choice.kind().id());
    match choice {
        Choice::Local => {}
        Choice::Hindsight { url, bank, .. } => {
            set(table, "url", url.trim());
            if let Some(b) = bank {
                set(table, "bank", b.trim());
            }
            table.remove("user");
            table.remove("account");
        }
        Choice::Openviking { url, user, account, .. } => {
            set(table, "url", url.trim());
            if let Some(u) = user {
                set(table, "user", u.trim());
            }
            if let Some(a) = account {
                set(table, "account", a.trim());
            }
            table.remove("bank");
        }
    }
    let text = doc.to_string();
    // The result must still be a [backend] ovmem can read.
    #[derive(Deserialize)]
    struct Only {
        #[serde(default)]
        #[allow(dead_code)]
        backend: BackendConfig,
    }
    toml::from_str::<Only>(&text).map_err(|e| {
        Refusal(format!("`{}` [backend] would not be valid ({}); nothing was changed", config.display(), e.message()))
    })?;
    let target = crate::fsx::resolve(&config)?;
    crate::fsx::write_atomic(&target, text.as_bytes(), Some(0o600))
        .with_context(|| format!("could not write `{}`", config.display()))?;

    let token = match choice {
        Choice::Hindsight { token, .. } => token.as_ref(),
        Choice::Openviking { api_key, .. } => api_key.as_ref(),
        Choice::Local => None,
    };
    let credentials = match token {
        Some(t) => Some(write_token(env, choice.kind(), t)?),
        None => None,
    };
    Ok(Configured { config, credentials })
}

/// Refuses a choice [`configure`] would refuse (a URL that is not http(s)://host, a bank id
/// Hindsight would not take), without writing anything: for `--dry-run`.
pub fn validate(choice: &Choice) -> Result<()> {
    let (url, kind) = match choice {
        Choice::Local => return Ok(()),
        Choice::Hindsight { url, .. } | Choice::Openviking { url, .. } => (url.trim(), choice.kind()),
    };
    let parsed: Option<ureq::http::Uri> = url.parse().ok();
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && parsed.as_ref().and_then(|u| u.host()).is_some_and(|h| !h.is_empty());
    if !ok {
        return Err(Refusal(format!(
            "`{}` is not a {} URL: give it as http://host:port or https://host",
            super::http::redact_url(url),
            kind.name()
        ))
        .into());
    }
    // A password in the URL would be saved in config.toml (and shown by every tool that prints
    // the config): refused, with where the credential goes instead.
    if let Some(bare) = without_userinfo(url) {
        let (flag, env) = match kind {
            Kind::Openviking => ("--api-key", "OPENVIKING_API_KEY"),
            _ => ("--api-token", "HINDSIGHT_API_TOKEN"),
        };
        return Err(Refusal(format!(
            "`{}` carries a user name or password, and ovmem never saves credentials in config.toml; \
             give the URL as `{bare}` and the credential with `{flag} -` (read from stdin, kept in \
             credentials.toml, mode 0600) or ${env}; nothing was changed",
            super::http::redact_url(url),
        ))
        .into());
    }
    if let Choice::Hindsight { bank: Some(b), .. } = choice {
        if super::bank_id(b.trim()) != b.trim() {
            return Err(Refusal(format!(
                "`{b}` is not a bank id ovmem uses: letters, digits, `.`, `_`, `:` and `-`, starting with a letter or digit, at most 100 characters"
            ))
            .into());
        }
    }
    Ok(())
}

/// `url` without its `user:password@` part, when it has one.
pub fn without_userinfo(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    Some(format!("{scheme}://{}", &rest[at + 1..]))
}

/// What to say when a token would travel in clear text: over `http://` to a host that is not
/// this machine, anyone on the path can read it (and every memory).
pub fn plain_http_warning(url: &str, has_token: bool) -> Option<String> {
    let url = url.trim();
    if !has_token || !url.starts_with("http://") {
        return None;
    }
    let parsed: ureq::http::Uri = url.parse().ok()?;
    let host = parsed.host()?.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let loopback = host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    (!loopback).then(|| {
        format!(
            "the token is sent over plain http to `{host}`, which is not this machine: anyone on the \
             network path can read it and every memory; use https://"
        )
    })
}

/// Replaces a key's value, keeping the comments and spacing around it.
fn set(table: &mut toml_edit::Table, key: &str, value: &str) {
    match table.get_mut(key).and_then(|i| i.as_value_mut()) {
        Some(v) => {
            let decor = v.decor().clone();
            *v = value.into();
            *v.decor_mut() = decor;
        }
        None => {
            table.insert(key, toml_edit::value(value));
        }
    }
}

const CREDENTIALS_HEADER: &str =
    "# ovmem: tokens for the memory servers. Private to you (mode 0600); never commit or share it.\n";

fn write_token(env: &Env, kind: Kind, token: &Secret) -> Result<PathBuf> {
    let (table_name, key) = kind.credential_key().expect("a remote kind has a credential");
    let path = credentials_path(env);
    let mut doc = match fs::symlink_metadata(&path) {
        Ok(meta) => {
            if meta.file_type().is_symlink() {
                bail!("`{}` is a symlink; ovmem writes credentials only as a regular file", path.display());
            }
            let text = String::from_utf8(read_opt(&path)?.unwrap_or_default())
                .map_err(|_| Refusal(format!("`{}` is not UTF-8 text; nothing was changed", path.display())))?;
            text.parse::<toml_edit::DocumentMut>().map_err(|_| {
                Refusal(format!(
                    "`{}` does not parse as TOML; fix or remove it first, nothing was changed",
                    path.display()
                ))
            })?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            CREDENTIALS_HEADER.parse::<toml_edit::DocumentMut>().expect("the header parses")
        }
        Err(e) => return Err(e).with_context(|| format!("could not read `{}`", path.display())),
    };
    let item = doc.entry(table_name).or_insert_with(toml_edit::table);
    let Some(table) = item.as_table_mut() else {
        return Err(Refusal(format!("`{}`: `{table_name}` is not a table; nothing was changed", path.display())).into());
    };
    set(table, key, token.expose());
    write_private(&path, doc.to_string().as_bytes())?;
    Ok(path)
}

fn create_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    crate::fsx::create_dirs(dir, Some(0o700)).map(drop).with_context(|| format!("could not create `{}`", dir.display()))
}

/// Atomically replaces `path` with `bytes`, mode 0600 from the moment the file exists (a temp
/// file is created 0600). Root writing another user's credentials (`sudo ovmem backend …` with
/// their HOME): the file stays theirs, or is theirs when new, so their hooks can read it.
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().context("the credentials file has no directory")?;
    create_private_dir(dir)?;
    crate::fsx::write_atomic_with_mode(path, bytes, 0o600)
}

#[cfg(all(test, unix))]
mod tests {
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn env_in(home: &Path, vars: &[(&str, &str)]) -> Env {
        let mut map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        map.insert("HOME".into(), home.to_string_lossy().into_owned());
        Env::from_vars(map).unwrap()
    }

    fn hindsight(url: &str, token: Option<&str>, bank: Option<&str>) -> Choice {
        Choice::Hindsight { url: url.into(), token: token.map(Secret::new), bank: bank.map(String::from) }
    }

    #[test]
    fn nothing_configured_means_local() {
        let t = tempfile::tempdir().unwrap();
        let s = Settings::load(&env_in(t.path(), &[])).unwrap();
        assert_eq!(s.kind, Sourced { value: Kind::Local, from: Source::Default });
        assert!(s.url.is_none() && s.token.is_none());
        assert_eq!(s.recall_budget, Duration::from_millis(1500));
    }

    #[test]
    fn configure_writes_both_files_privately_and_keeps_comments() {
        let t = tempfile::tempdir().unwrap();
        let env = env_in(t.path(), &[]);
        let home = env.ovmem_home();
        fs::create_dir_all(&home).unwrap();
        let original = "# my settings\nbank = \"agent\" # per agent\n\n[backend]\n# where memories go\nkind = \"local\" # for now\n";
        fs::write(home.join("config.toml"), original).unwrap();
        let done = configure(&env, &hindsight("http://127.0.0.1:8888", Some("tok-123"), Some("team-x"))).unwrap();
        let text = fs::read_to_string(&done.config).unwrap();
        assert!(text.starts_with("# my settings\nbank = \"agent\" # per agent\n"), "{text}");
        assert!(text.contains("# where memories go\nkind = \"hindsight\" # for now\n"), "{text}");
        assert!(text.contains("url = \"http://127.0.0.1:8888\"") && text.contains("bank = \"team-x\""), "{text}");
        assert!(!text.contains("tok-123"), "the token stays out of config.toml");
        let cred = done.credentials.unwrap();
        let meta = fs::metadata(&cred).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert!(fs::read_to_string(&cred).unwrap().contains("[hindsight]\napi_token = \"tok-123\""));
        let s = Settings::load(&env).unwrap();
        assert_eq!(s.kind.value, Kind::Hindsight);
        assert_eq!(s.url.unwrap().from, Source::Config(home.join("config.toml")));
        assert_eq!(s.bank.unwrap().value, "team-x");
        let tok = s.token.unwrap();
        assert_eq!(tok.value.expose(), "tok-123");
        assert_eq!(tok.from, Source::Credentials(cred));
        // The whole config still loads as ovmem's config.
        crate::config::Config::load(&env).unwrap();
    }

    #[test]
    fn only_what_is_given_changes() {
        let t = tempfile::tempdir().unwrap();
        let env = env_in(t.path(), &[]);
        configure(&env, &hindsight("http://a:1", Some("t1"), Some("b1"))).unwrap();
        configure(&env, &hindsight("http://a:2", None, None)).unwrap();
        let s = Settings::load(&env).unwrap();
        assert_eq!((s.url.unwrap().value, s.bank.unwrap().value), ("http://a:2".into(), "b1".into()));
        assert_eq!(s.token.unwrap().value.expose(), "t1");
        configure(&env, &Choice::Local).unwrap();
        let s = Settings::load(&env).unwrap();
        assert_eq!(s.kind.value, Kind::Local);
        configure(
            &env,
            &Choice::Openviking {
                url: "http://o:3".into(),
                api_key: Some(Secret::new("k")),
                user: Some("ann".into()),
                account: None,
            },
        )
        .unwrap();
        let text = fs::read_to_string(config_path(&env)).unwrap();
        assert!(!text.contains("bank"), "switching kinds drops the other kind's keys: {text}");
        let s = Settings::load(&env).unwrap();
        assert_eq!(s.user.unwrap().value, "ann");
        assert_eq!(s.token.unwrap().value.expose(), "k");
        let cred = fs::read_to_string(credentials_path(&env)).unwrap();
        assert!(cred.contains("api_token = \"t1\"") && cred.contains("api_key = \"k\""), "{cred}");
    }

    #[test]
    fn environment_wins_but_only_for_its_own_kind() {
        let t = tempfile::tempdir().unwrap();
        let env = env_in(t.path(), &[]);
        configure(&env, &hindsight("http://file:1", Some("file-token"), None)).unwrap();
        let env = env_in(
            t.path(),
            &[
                ("HINDSIGHT_API_URL", "http://env:2"),
                ("HINDSIGHT_API_TOKEN", "env-token"),
                ("OPENVIKING_URL", "http://ov:3"),
            ],
        );
        let s = Settings::load(&env).unwrap();
        assert_eq!(s.url.as_ref().unwrap().value, "http://env:2");
        assert_eq!(s.url.unwrap().from, Source::Env("HINDSIGHT_API_URL"));
        assert_eq!(s.token.unwrap().value.expose(), "env-token");
        assert_eq!(s.ignored_env, vec!["OPENVIKING_URL"]);
        let local = env_in(t.path(), &[("OVMEM_BACKEND", "local"), ("HINDSIGHT_API_URL", "http://env:2")]);
        let s = Settings::load(&local).unwrap();
        assert_eq!(s.kind.from, Source::Env("OVMEM_BACKEND"));
        assert!(s.url.is_none(), "a Hindsight URL does not switch a local setup to Hindsight");
        assert_eq!(s.ignored_env, vec!["HINDSIGHT_API_URL"]);
        // A junk kind is named, and keeps the configured server from being used.
        let s = Settings::load(&env_in(t.path(), &[("OVMEM_BACKEND", "redis")])).unwrap();
        assert_eq!(s.problems[0].key.as_deref(), Some("OVMEM_BACKEND"));
        assert!(super::super::connect(&s, None).is_err());
    }

    /// One junk key of `[backend]` costs only itself: the valid keys apply and the bad one is
    /// named. A bad key that decides where memories go (a bank, a URL) keeps them off the server
    /// instead of sending them to its default, and a junk `OVMEM_BACKEND` never falls back to the
    /// configured server.
    #[test]
    fn a_bad_backend_setting_is_named_and_fails_closed_where_it_decides_where_memories_go() {
        let t = tempfile::tempdir().unwrap();
        let env = env_in(t.path(), &[]);
        let home = env.ovmem_home();
        fs::create_dir_all(&home).unwrap();
        let write = |text: &str| fs::write(home.join("config.toml"), text).unwrap();
        let server = "[backend]\nkind = \"hindsight\"\nurl = \"http://127.0.0.1:9\"\n";
        // A budget of the wrong type and an unknown key: defaults, and the server still used.
        write(&format!("{server}bank = \"team\"\nsend_budget_ms = \"fast\"\ncolour = 1\n"));
        let s = Settings::load(&env).unwrap();
        assert_eq!((s.kind.value, s.bank.as_ref().unwrap().value.as_str()), (Kind::Hindsight, "team"));
        assert_eq!(s.send_budget, Duration::from_millis(1500));
        let keys: Vec<_> = s.problems.iter().map(|p| p.key.clone().unwrap()).collect();
        assert_eq!(keys, ["backend.colour", "backend.send_budget_ms"]);
        assert!(s.problems.iter().all(|p| !p.to_string().contains("fast")));
        assert!(s.unusable.is_empty() && super::super::connect(&s, None).unwrap().is_some());
        // A bank of the wrong type: not the per-project team bank in its place, no server at all.
        write(&format!("{server}bank = [\"team\"]\n"));
        let s = Settings::load(&env).unwrap();
        let err = super::super::connect(&s, None).err().unwrap().to_string();
        assert!(err.contains("backend.bank") && err.contains("local store"), "{err}");
        // The same for the hooks, which read the whole config key by key.
        let (cfg, _) = crate::config::Config::load_lenient(&env);
        assert!(!Settings::resolve(&env, &cfg.backend).unwrap().unusable.is_empty());
        // A bank of OpenViking's kind does not matter to it.
        write("[backend]\nkind = \"openviking\"\nurl = \"http://127.0.0.1:9\"\nbank = 3\n");
        assert!(Settings::load(&env).unwrap().unusable.is_empty());
        // A URL of the wrong type: no server, unless the environment names one.
        write("[backend]\nkind = \"hindsight\"\nurl = 8888\n");
        assert!(!Settings::load(&env).unwrap().unusable.is_empty());
        let named = env_in(t.path(), &[("HINDSIGHT_API_URL", "http://127.0.0.1:9")]);
        assert!(Settings::load(&named).unwrap().unusable.is_empty());
        // A junk kind is local (nothing is sent anywhere), and named.
        write("[backend]\nkind = \"hindsigth\"\nurl = \"http://127.0.0.1:9\"\n");
        let s = Settings::load(&env).unwrap();
        assert_eq!((s.kind.value, s.problems.len()), (Kind::Local, 1));
        // A junk OVMEM_BACKEND does not fall back to the configured server.
        write(server);
        let s = Settings::load(&env_in(t.path(), &[("OVMEM_BACKEND", "locl")])).unwrap();
        assert_eq!(s.kind.value, Kind::Hindsight);
        assert!(super::super::connect(&s, None).is_err());
        // A file that is not TOML: local, named as the whole file.
        write("[backend\nkind = \"hindsight\"\n");
        let s = Settings::load(&env).unwrap();
        assert!(s.kind.value == Kind::Local && s.problems[0].whole_file);
    }

    #[test]
    fn a_credentials_file_others_can_read_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let env = env_in(t.path(), &[]);
        configure(&env, &hindsight("http://h:1", Some("secret-value-9"), None)).unwrap();
        let cred = credentials_path(&env);
        fs::set_permissions(&cred, fs::Permissions::from_mode(0o644)).unwrap();
        let err = format!("{:#}", Settings::load(&env).unwrap_err());
        assert!(err.contains("chmod 600") && !err.contains("secret-value-9"), "{err}");
        // Writing again makes it private again.
        configure(&env, &hindsight("http://h:1", Some("secret-value-9"), None)).unwrap();
        assert_eq!(fs::metadata(&cred).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_broken_credentials_file_is_reported_without_its_contents() {
        let t = tempfile::tempdir().unwrap();
        let env = env_in(t.path(), &[]);
        configure(&env, &hindsight("http://h:1", None, None)).unwrap();
        let cred = credentials_path(&env);
        fs::write(&cred, "[hindsight]\napi_token = \"leaky-token-77\nmore").unwrap();
        fs::set_permissions(&cred, fs::Permissions::from_mode(0o600)).unwrap();
        let err = format!("{:#}", Settings::load(&env).unwrap_err());
        assert!(err.contains("line 2") && !err.contains("leaky-token-77"), "{err}");
        let err = format!("{:#}", configure(&env, &hindsight("http://h:1", Some("new"), None)).unwrap_err());
        assert!(!err.contains("leaky-token-77"), "{err}");
        assert!(fs::read_to_string(&cred).unwrap().contains("leaky-token-77"), "a broken file is not overwritten");
    }

    #[test]
    fn refusals_leave_files_untouched() {
        let t = tempfile::tempdir().unwrap();
        let env = env_in(t.path(), &[]);
        let home = env.ovmem_home();
        fs::create_dir_all(&home).unwrap();
        let broken = "[backend\nkind = 1\n";
        fs::write(home.join("config.toml"), broken).unwrap();
        let err = configure(&env, &hindsight("http://h:1", None, None)).unwrap_err();
        assert!(err.downcast_ref::<Refusal>().is_some(), "{err:#}");
        assert_eq!(fs::read_to_string(home.join("config.toml")).unwrap(), broken);
        fs::write(home.join("config.toml"), "backend = 3\n").unwrap();
        assert!(configure(&env, &hindsight("http://h:1", None, None)).unwrap_err().downcast_ref::<Refusal>().is_some());
        for bad in ["localhost:8888", "ftp://x", ""] {
            let err = configure(&env, &hindsight(bad, None, None)).unwrap_err();
            assert!(err.to_string().contains("http://host:port"), "{err}");
        }
        let err = configure(&env, &hindsight("http://h:1", None, Some("a/b"))).unwrap_err();
        assert!(err.to_string().contains("not a bank id"), "{err}");
        assert!(!credentials_path(&env).exists());
    }

    #[test]
    fn created_files_and_dirs_are_private() {
        let t = tempfile::tempdir().unwrap();
        let env = env_in(t.path(), &[("OVMEM_HOME", &t.path().join("fresh").to_string_lossy())]);
        let done = configure(&env, &hindsight("http://h:1", Some("x"), None)).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&t.path().join("fresh")), 0o700);
        assert_eq!(mode(&done.config), 0o600);
        assert_eq!(mode(&done.credentials.unwrap()), 0o600);
    }
}
