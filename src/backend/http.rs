//! The HTTP layer both backends share: a blocking ureq agent (no runtime, no thread pool; TLS is
//! set up lazily, so an `http://` URL never initialises it), one deadline per backend call that
//! bounds every request made for it, JSON in and out, and transport failures turned into
//! [`RemoteError`]s that carry the server's name and a credential-free URL.

use std::time::{Duration, Instant};

use serde_json::Value;
use ureq::http::{self, Method};

use super::{RemoteError, Result, Secret};

pub(crate) const USER_AGENT: &str = concat!("ovmem/", env!("CARGO_PKG_VERSION"));
/// Largest answer read from a server (recall answers are a few kB).
const MAX_BODY: u64 = 8 * 1024 * 1024;

/// The time left for one backend call, shared by the requests it makes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    end: Instant,
    budget: Duration,
}

impl Deadline {
    pub fn after(budget: Duration) -> Self {
        Self { end: Instant::now() + budget, budget }
    }

    pub fn remaining(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now())
    }

    pub fn budget(&self) -> Duration {
        self.budget
    }
}

/// A header value, kept as a [`Secret`] when it carries a credential.
#[derive(Debug, Clone)]
pub(crate) enum HeaderValue {
    Plain(String),
    Secret(Secret),
}

/// What a server answered, before the backend reads it.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }
}

pub(crate) struct Http {
    agent: ureq::Agent,
    base: String,
    shown: String,
    server: &'static str,
    headers: Vec<(&'static str, HeaderValue)>,
}

impl Http {
    /// `base` is the server's root URL (`http://host:port[/prefix]`).
    pub fn new(server: &'static str, base: &str, headers: Vec<(&'static str, HeaderValue)>) -> Result<Self> {
        let base = base.trim().trim_end_matches('/').to_string();
        let scheme_ok = base.starts_with("http://") || base.starts_with("https://");
        let parsed: Option<http::Uri> = base.parse().ok();
        let host_ok = parsed.as_ref().and_then(|u| u.host()).is_some_and(|h| !h.is_empty());
        if !scheme_ok || !host_ok {
            return Err(RemoteError::Config(format!(
                "`{}` is not a {server} URL: it must look like http://host:port or https://host",
                redact_url(&base)
            )));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(USER_AGENT)
            .max_idle_connections(2)
            .max_idle_connections_per_host(2)
            .build();
        Ok(Self { agent: config.into(), shown: redact_url(&base), base, server, headers })
    }

    /// The base URL as it may be shown (no user:password part).
    pub fn shown_url(&self) -> &str {
        &self.shown
    }

    /// One request; `body` is sent as JSON. Fails only on transport problems and timeouts: any
    /// HTTP status comes back as a [`Reply`] for the backend to judge.
    pub fn call(&self, method: Method, path: &str, body: Option<&Value>, deadline: &Deadline) -> Result<Reply> {
        let left = deadline.remaining();
        if left.is_zero() {
            return Err(self.timeout(deadline));
        }
        let url = format!("{}{}", self.base, path);
        let mut req = http::Request::builder().method(method).uri(&url).header("Accept", "application/json");
        for (name, value) in &self.headers {
            req = req.header(
                *name,
                match value {
                    HeaderValue::Plain(v) => v.as_str(),
                    HeaderValue::Secret(s) => s.expose(),
                },
            );
        }
        let bytes = match body {
            Some(v) => {
                req = req.header("Content-Type", "application/json");
                serde_json::to_vec(v).expect("a JSON value serialises")
            }
            None => Vec::new(),
        };
        let req = req.body(bytes).map_err(|e| RemoteError::Config(format!("bad request to {}: {e}", self.shown)))?;
        let req = self.agent.configure_request(req).timeout_global(Some(left)).build();
        let result = self.agent.run(req).and_then(|mut resp| {
            let status = resp.status().as_u16();
            let body = resp.body_mut().with_config().limit(MAX_BODY).read_to_string()?;
            Ok(Reply { status, body })
        });
        match result {
            Ok(reply) if (300..400).contains(&reply.status) => Err(RemoteError::Config(format!(
                "{} at {} redirected the request (HTTP {}); set the backend URL to where it points",
                self.server, self.shown, reply.status
            ))),
            Ok(reply) => Ok(reply),
            Err(e) => Err(self.transport(e, deadline)),
        }
    }

    fn timeout(&self, deadline: &Deadline) -> RemoteError {
        RemoteError::Timeout { server: self.server, url: self.shown.clone(), budget: deadline.budget() }
    }

    fn transport(&self, e: ureq::Error, deadline: &Deadline) -> RemoteError {
        use std::io::ErrorKind;
        let reason = match e {
            ureq::Error::Timeout(_) => return self.timeout(deadline),
            ureq::Error::Io(ref io) if matches!(io.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => {
                return self.timeout(deadline)
            }
            ureq::Error::Io(ref io) if io.kind() == ErrorKind::ConnectionRefused => {
                "connection refused (is the server running, and is the port right?)".to_string()
            }
            ureq::Error::HostNotFound => "the host name does not resolve".to_string(),
            ureq::Error::ConnectionFailed => "the connection failed".to_string(),
            ureq::Error::BodyExceedsLimit(n) => format!("the answer is larger than {n} bytes"),
            other => other.to_string(),
        };
        RemoteError::Unreachable { server: self.server, url: self.shown.clone(), reason }
    }
}

/// A URL without its `user:password@` part.
pub(crate) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// Percent-encodes one path segment or query value (RFC 3986 unreserved characters stay).
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_credentials() {
        assert_eq!(redact_url("https://bob:pw@mem.example.com/api"), "https://***@mem.example.com/api");
        assert_eq!(redact_url("http://127.0.0.1:8888"), "http://127.0.0.1:8888");
        assert_eq!(redact_url("http://h/p?q=a@b"), "http://h/p?q=a@b");
    }

    #[test]
    fn credential_headers_print_redacted() {
        let h = HeaderValue::Secret(Secret::new("Bearer tok-abc"));
        assert!(!format!("{h:?}").contains("tok-abc"));
    }

    #[test]
    fn encoding() {
        assert_eq!(encode("a::b/c d"), "a%3A%3Ab%2Fc%20d");
        assert_eq!(encode("viking://user/x"), "viking%3A%2F%2Fuser%2Fx");
        assert_eq!(encode("ok-._~9"), "ok-._~9");
    }

    #[test]
    fn bad_urls_are_refused_with_the_reason() {
        for bad in ["", "localhost:8888", "ftp://x", "http://"] {
            let err = Http::new("Hindsight", bad, vec![]).err().expect(bad).to_string();
            assert!(err.contains("must look like http://host:port"), "{bad}: {err}");
        }
        assert!(Http::new("Hindsight", "http://127.0.0.1:1/", vec![]).is_ok());
    }

    #[test]
    fn an_expired_deadline_fails_without_a_request() {
        let http = Http::new("Hindsight", "http://127.0.0.1:9", vec![]).unwrap();
        let d = Deadline::after(Duration::ZERO);
        let err = http.call(Method::GET, "/health", None, &d).unwrap_err();
        assert!(matches!(err, RemoteError::Timeout { .. }), "{err}");
    }
}
