//! Everything a memory server sends back is untrusted text: it is injected into prompts, returned
//! over MCP and printed by `status`, `backend test`, `doctor` and `sync`. [`Guarded`] wraps every
//! backend [`super::connect`] builds, so no caller can forget: each string that comes from the
//! server (memories, health lines, error messages, ids) has its terminal control sequences
//! dropped ([`crate::termsafe`]), the configured token and the URL's password (echoed back by a
//! server or a proxy in a 401 body) replaced, and secrets scrubbed ([`crate::redact`]).

use std::time::Duration;

use super::{Remote, RemoteError, RemoteHit, Result, Turn};

/// A backend whose every answer and error is made safe to show.
pub struct Guarded {
    inner: Box<dyn Remote>,
    /// The credentials this process sends (the token, the URL's userinfo), to be cut out of
    /// anything that comes back.
    secrets: Vec<String>,
}

impl Guarded {
    pub fn new(inner: Box<dyn Remote>, secrets: Vec<String>) -> Self {
        // A very short secret would cut ordinary words out of messages; real tokens are longer.
        let mut secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= 4).collect();
        // Longest first, so a token is replaced whole before a part of it could be.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { inner, secrets }
    }

    /// A server-supplied string as it may be shown, injected or stored.
    pub fn text(&self, s: &str) -> String {
        scrub_text(s, &self.secrets)
    }

    /// An error with the server's words in it made safe; ovmem's own words (the URL as shown,
    /// what was asked, the hint) only lose what cannot be shown, so no rule rewrites them.
    fn error(&self, e: RemoteError) -> RemoteError {
        let t = |s: String| self.text(&s);
        let own = |s: String| scrub_own(&s, &self.secrets);
        match e {
            RemoteError::Timeout { server, url, budget } => RemoteError::Timeout { server, url: own(url), budget },
            RemoteError::Unreachable { server, url, reason } => {
                RemoteError::Unreachable { server, url: own(url), reason: t(reason) }
            }
            RemoteError::Auth { server, url, status, message, hint } => {
                RemoteError::Auth { server, url: own(url), status, message: t(message), hint: own(hint) }
            }
            RemoteError::Status { server, url, what, status, message } => {
                RemoteError::Status { server, url: own(url), what: own(what), status, message: t(message) }
            }
            RemoteError::Protocol { server, url, what, reason } => {
                RemoteError::Protocol { server, url: own(url), what: own(what), reason: t(reason) }
            }
            RemoteError::Config(m) => RemoteError::Config(own(m)),
        }
    }
}

/// `s` with terminal controls dropped, every one of `secrets` replaced and secrets scrubbed.
pub(crate) fn scrub_text(s: &str, secrets: &[String]) -> String {
    crate::redact::scrub(&scrub_own(s, secrets)).into_owned()
}

/// `s` with terminal controls dropped and every one of `secrets` replaced.
fn scrub_own(s: &str, secrets: &[String]) -> String {
    let mut out = crate::termsafe::clean(s).into_owned();
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), "[REDACTED:token]");
        }
    }
    out
}

impl Remote for Guarded {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn health(&self, budget: Duration) -> Result<String> {
        self.inner.health(budget).map(|h| self.text(&h)).map_err(|e| self.error(e))
    }

    fn retain(&self, turn: &Turn, budget: Duration) -> Result<()> {
        self.inner.retain(turn, budget).map_err(|e| self.error(e))
    }

    fn recall(&self, bank: &str, session: &str, query: &str, limit: usize, budget: Duration) -> Result<Vec<RemoteHit>> {
        let hits = self.inner.recall(bank, session, query, limit, budget).map_err(|e| self.error(e))?;
        Ok(hits
            .into_iter()
            .map(|h| RemoteHit {
                text: self.text(&h.text),
                // An id is sent back to the server as it came (`memory_read`): only controls go.
                id: crate::termsafe::clean(&h.id).into_owned(),
                kind: h.kind.map(|k| self.text(&k)),
                ..h
            })
            .collect())
    }

    fn end_session(&self, bank: &str, harness: &str, session: &str, budget: Duration) -> Result<()> {
        self.inner.end_session(bank, harness, session, budget).map_err(|e| self.error(e))
    }

    fn read(&self, bank: &str, id: &str, budget: Duration) -> Result<String> {
        self.inner.read(bank, id, budget).map(|t| self.text(&t)).map_err(|e| self.error(e))
    }
}

/// The credentials a URL carries in its userinfo (`user:password@`): the password and the
/// whole userinfo, as written and percent-decoded.
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
    let Some((_, rest)) = url.split_once("://") else { return Vec::new() };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let Some(at) = authority.rfind('@') else { return Vec::new() };
    let userinfo = &authority[..at];
    let mut out = vec![userinfo.to_string()];
    if let Some((_, pass)) = userinfo.split_once(':') {
        out.push(pass.to_string());
        out.push(percent_decode(pass));
    }
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_text_loses_controls_tokens_and_secrets() {
        let secrets = vec!["tok-0123456789abcdef".to_string()];
        let s = "\x1b]52;c;ZWNobyBwd25lZA==\x07denied: Authorization: Bearer tok-0123456789abcdef \x1b[2Jx";
        let out = scrub_text(s, &secrets);
        assert!(!out.contains("tok-0123456789abcdef") && !out.contains('\x1b'), "{out}");
        assert!(out.starts_with("denied: Authorization: "), "{out}");
        let out = scrub_text("echo: tok-0123\x1b[0m456789abcdef", &secrets);
        assert!(!out.contains("tok-0123456789abcdef"), "{out}");
    }

    #[test]
    fn url_userinfo_is_a_secret() {
        assert_eq!(url_secrets("http://bob:p%40ss@h:1/x"), ["bob:p%40ss", "p%40ss", "p@ss"]);
        assert_eq!(url_secrets("http://tok@h"), ["tok"]);
        assert!(url_secrets("http://h/p?a=b@c").is_empty());
    }
}
