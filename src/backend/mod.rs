//! Remote memory backends: Hindsight and OpenViking servers, for memory shared across machines
//! and harnesses. The embedded store stays the default and the source of truth on each machine;
//! a [`Remote`] is where captured turns are also sent and where recall looks first, always within
//! a hard time budget per call so that a slow or dead server can only cost that budget.

pub mod bank;
pub mod hindsight;
mod http;
pub mod legacy;
pub mod openviking;
pub mod secret;
pub mod settings;

use std::path::Path;
use std::time::Duration;

pub use bank::{bank_id, team_bank};
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
    Ok(match settings.kind.value {
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
    })
}

/// `2026-12-01T08:00:00Z` for unix seconds (UTC).
pub(crate) fn iso8601(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// Unix seconds for an RFC 3339 timestamp (`2026-12-01T08:00:00.123+00:00`, `...Z`); `None` if
/// it is not one.
pub(crate) fn parse_iso8601(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hh = rest.get(1..3)?.parse::<i64>().ok()?;
            let mm = rest.get(4..6).or_else(|| rest.get(3..5))?.parse::<i64>().ok()?;
            sign * (hh * 3600 + mm * 60)
        }
    };
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset)
}

// Howard Hinnant's civil-calendar algorithms.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// At most `max` bytes of `s`, cut at a character boundary.
pub(crate) fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        for t in [0, 1, 951_782_400, 1_796_114_923, 4_102_444_800, -86_401] {
            assert_eq!(parse_iso8601(&iso8601(t)), Some(t), "{}", iso8601(t));
        }
        assert_eq!(iso8601(1_796_114_923), "2026-12-01T08:48:43Z");
        assert_eq!(parse_iso8601("2026-12-01T08:48:43.934260+00:00"), Some(1_796_114_923));
        assert_eq!(parse_iso8601("2026-12-01T10:48:43+02:00"), Some(1_796_114_923));
        assert_eq!(parse_iso8601("2026-12-01T03:48:43-0500"), Some(1_796_114_923));
        assert_eq!(parse_iso8601("yesterday"), None);
        assert_eq!(parse_iso8601("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_iso8601("2026-12-01T00:00:00+xx"), None);
    }

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
