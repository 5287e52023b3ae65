//! Remote memory backends: Hindsight and OpenViking servers, for memory shared across machines
//! and harnesses. The embedded store stays the default and the source of truth on each machine;
//! a [`Remote`] is where captured turns are also sent and where recall looks first, always within
//! a hard time budget per call so that a slow or dead server can only cost that budget.

pub mod bank;
pub mod guard;
pub mod hindsight;
mod http;
pub mod legacy;
pub mod openviking;
pub mod secret;
pub mod settings;

use std::path::Path;
use std::time::Duration;

pub(crate) use crate::dates::{iso8601, parse_iso8601};

pub use bank::{bank_id, machine_id, private_bank, team_bank};
pub use hindsight::Hindsight;
pub(crate) use http::redact_url;
pub use openviking::OpenViking;
pub use secret::Secret;
pub use settings::{configure, BackendConfig, Choice, Kind, Settings, Source, Sourced};

/// One captured turn, as the hook runtime hands it to a backend.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// Stable per turn: sending the same turn again (an outbox replay) must never duplicate it.
    pub doc_id: &'a str,
    /// The Hindsight bank (ignored by OpenViking, whose memories belong to the authenticated user).
    pub bank: &'a str,
    /// The harness's own session id.
    pub session: &'a str,
    pub harness: &'a str,
    /// The project identity (normalised git remote or directory name), for tags and display.
    pub project: &'a str,
    /// What the user said.
    pub user: &'a str,
    /// What the agent answered (may be empty for a cancelled turn).
    pub assistant: &'a str,
    /// When the turn happened, unix seconds.
    pub at: i64,
    /// `completed` or `cancelled`.
    pub status: &'a str,
    /// True when the turn may have reached the server before (a replay after a timeout or an
    /// unknown outcome). OpenViking has no idempotency key, so its client then checks the session
    /// for the turn before adding it; Hindsight is idempotent either way.
    pub replay: bool,
}

/// A memory recalled from a server.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteHit {
    pub text: String,
    /// Hindsight: the memory unit id; OpenViking: its `viking://` URI.
    pub id: String,
    /// When the memory was mentioned (unix seconds), where the server says.
    pub at: Option<i64>,
    pub score: Option<f64>,
    /// Hindsight: `world`, `experience` or `observation`; OpenViking: the memory type
    /// (`preferences`, `entities`, `events`, ...).
    pub kind: Option<String>,
}

/// What a remote backend can do. Every call takes its own budget and returns within it (plus
/// scheduling noise): the budget bounds connecting, sending and reading together.
pub trait Remote: Send + Sync {
    /// `hindsight` or `openviking`.
    fn kind(&self) -> &'static str;
    /// The server's version and health, as one line.
    fn health(&self, budget: Duration) -> Result<String>;
    /// Stores a turn. Idempotent: replaying the same `doc_id` never duplicates it.
    fn retain(&self, turn: &Turn, budget: Duration) -> Result<()>;
    /// Memories relevant to `query`, best first, at most `limit`.
    fn recall(&self, bank: &str, session: &str, query: &str, limit: usize, budget: Duration) -> Result<Vec<RemoteHit>>;
    /// Marks the end of a harness session (or of a turn, at Stop): OpenViking commits the session,
    /// which archives it and extracts memories in the background; Hindsight has nothing to do.
    fn end_session(&self, bank: &str, harness: &str, session: &str, budget: Duration) -> Result<()>;
    /// The full text of one recalled memory (`RemoteHit::id`), for the MCP tools.
    fn read(&self, bank: &str, id: &str, budget: Duration) -> Result<String>;
}

pub type Result<T, E = RemoteError> = std::result::Result<T, E>;

/// Why a call to a memory server failed. Every message names the server and its URL (never a
/// token) and, where there is one, what to do.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("{server} at {url} did not answer within {} ms", .budget.as_millis())]
    Timeout { server: &'static str, url: String, budget: Duration },
    #[error("cannot reach {server} at {url}: {reason}")]
    Unreachable { server: &'static str, url: String, reason: String },
    #[error("{server} at {url} refused the request (HTTP {status}: {message}); {hint}")]
    Auth { server: &'static str, url: String, status: u16, message: String, hint: String },
    #[error("{server} at {url} answered HTTP {status} to {what}: {message}")]
    Status { server: &'static str, url: String, what: String, status: u16, message: String },
    #[error("{server} at {url} sent an answer ovmem cannot read ({what}): {reason}")]
    Protocol { server: &'static str, url: String, what: String, reason: String },
    #[error("{0}")]
    Config(String),
}

impl RemoteError {
    /// Worth trying again later unchanged: the server was slow, down, overloaded or failing.
    /// A queued turn should stay queued on these (and on [`RemoteError::is_auth`], until the
    /// credentials are fixed); other errors mean the request itself was refused.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Timeout { .. } | Self::Unreachable { .. } => true,
            Self::Status { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            _ => false,
        }
    }

    pub fn is_auth(&self) -> bool {
        matches!(self, Self::Auth { .. })
    }
}

/// A backend built from the settings, or `None` for the local store.
pub fn connect(settings: &Settings, state_dir: Option<&Path>) -> Result<Option<Box<dyn Remote>>> {
    let url = || {
        settings.url.as_ref().map(|u| u.value.clone()).ok_or_else(|| {
            RemoteError::Config(format!(
                "the {} backend needs a URL: set `url` under [backend] in config.toml, or {}",
                settings.kind.value.name(),
                settings.kind.value.url_env().unwrap_or("--api-url")
            ))
        })
    };
    let token = settings.token.as_ref().map(|t| t.value.clone());
    // Whatever the server answers is shown, injected or stored: every backend is guarded.
    let mut secrets: Vec<String> = token.iter().map(|t| t.expose().to_string()).collect();
    secrets.extend(settings.url.as_ref().map(|u| guard::url_secrets(&u.value)).unwrap_or_default());
    let guarded = |r: Box<dyn Remote>| -> Box<dyn Remote> { Box::new(guard::Guarded::new(r, secrets.clone())) };
    // A setting that decides where memories go could not be used: no server rather than a
    // server (or a bank, a user) the user did not choose (see `settings::decides_where`).
    if settings.kind.value != Kind::Local && !settings.unusable.is_empty() {
        return Err(RemoteError::Config(format!(
            "{}; the {} server is not used until that is fixed (memories stay in the local store)",
            settings.unusable.join("; "),
            settings.kind.value.name()
        )));
    }
    let remote: Option<Box<dyn Remote>> = match settings.kind.value {
        Kind::Local => None,
        Kind::Hindsight => Some(Box::new(Hindsight::new(hindsight::Options {
            url: url()?,
            token,
            max_tokens: settings.recall_max_tokens,
            state_dir: state_dir.map(Path::to_path_buf),
        })?)),
        Kind::Openviking => Some(Box::new(OpenViking::new(openviking::Options {
            url: url()?,
            api_key: token,
            account: settings.account.as_ref().map(|a| a.value.clone()),
            user: settings.user.as_ref().map(|u| u.value.clone()),
        })?)),
    };
    Ok(remote.map(guarded))
}

/// At most `max` bytes of `s`, cut at a character boundary.
pub(crate) fn clip(s: &str, max: usize) -> &str {
    crate::cut::clip(s, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_characters_whole() {
        assert_eq!(clip("héllo", 2), "h");
        assert_eq!(clip("héllo", 3), "hé");
        assert_eq!(clip("abc", 10), "abc");
    }

    #[test]
    fn retryable_errors() {
        let status = |status| RemoteError::Status {
            server: "Hindsight",
            url: "u".into(),
            what: "w".into(),
            status,
            message: "m".into(),
        };
        assert!(status(503).is_retryable());
        assert!(status(429).is_retryable());
        assert!(!status(400).is_retryable());
        assert!(RemoteError::Timeout { server: "x", url: "u".into(), budget: Duration::from_millis(5) }.is_retryable());
        let auth =
            RemoteError::Auth { server: "x", url: "u".into(), status: 401, message: "m".into(), hint: "h".into() };
        assert!(!auth.is_retryable() && auth.is_auth());
    }
}
