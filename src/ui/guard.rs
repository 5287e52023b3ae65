//! Who may talk to the viewer: a request must name a loopback `Host` (no DNS rebinding), carry
//! the per-run token (`?token=`, `Authorization: Bearer`, or a form posted to the page; never a
//! cookie, which a browser sends to every port of 127.0.0.1), and a change (DELETE, POST, PUT)
//! must carry the token as a Bearer header, which a cross-site page cannot send, with a loopback
//! `Origin` when the browser sends one. Posting the token to the page reads the page and changes
//! nothing: it is how a browser opens it without the token in an address (which its history keeps).

use std::io::Read;

/// Why a request is refused, with the status it gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the Host header must be 127.0.0.1:{0}, localhost:{0} or [::1]:{0}")]
    Host(u16),
    #[error("the token is missing or wrong: open the URL `ovmem ui` printed (it carries ?token=)")]
    Token,
    #[error("changes need `Authorization: Bearer <token>`")]
    Bearer,
    #[error("changes are accepted only from the viewer's own page (Origin {0:?} is not it)")]
    Origin(String),
}

impl Refused {
    pub fn status(&self) -> u16 {
        match self {
            Refused::Token => 401,
            _ => 403,
        }
    }
}

/// How the request proved it knows the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    Query,
    Bearer,
    /// A form posted to the page (`token=…`): read as the page, never as a change.
    Form,
}

/// What the guard reads of a request.
pub struct Seen<'a> {
    pub method: &'a str,
    pub host: Option<&'a str>,
    pub origin: Option<&'a str>,
    pub authorization: Option<&'a str>,
    /// The `token` query parameter, decoded.
    pub query_token: Option<&'a str>,
    /// The `token` field of a form posted to the page itself (`POST /`), decoded; `None` for any
    /// other request.
    pub form_token: Option<&'a str>,
}

/// The per-run secret and the port it guards.
pub struct Guard {
    token: String,
    port: u16,
}

impl Guard {
    pub fn new(token: String, port: u16) -> Self {
        Self { token, port }
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    fn loopback(&self, authority: &str) -> bool {
        let a = authority.to_ascii_lowercase();
        let port = self.port;
        a == format!("127.0.0.1:{port}") || a == format!("localhost:{port}") || a == format!("[::1]:{port}")
    }

    fn same(&self, candidate: &str) -> bool {
        same(candidate, &self.token)
    }

    /// Lets the request through (saying how it proved the token) or says why not.
    pub fn check(&self, r: &Seen) -> Result<Proof, Refused> {
        if !r.host.is_some_and(|h| self.loopback(h.trim())) {
            return Err(Refused::Host(self.port));
        }
        let bearer = r.authorization.and_then(|a| a.trim().strip_prefix("Bearer ")).map(str::trim);
        let proof = if bearer.is_some_and(|t| self.same(t)) {
            Proof::Bearer
        } else if r.query_token.is_some_and(|t| self.same(t)) {
            Proof::Query
        } else if r.method == "POST" && r.form_token.is_some_and(|t| self.same(t)) {
            // The page only: its Origin is the opener's file (`null`) or the page's own reload.
            return Ok(Proof::Form);
        } else {
            return Err(Refused::Token);
        };
        if !matches!(r.method, "GET" | "HEAD") {
            if proof != Proof::Bearer {
                return Err(Refused::Bearer);
            }
            if let Some(o) = r.origin {
                let authority = o.strip_prefix("http://").unwrap_or("");
                if !self.loopback(authority) {
                    return Err(Refused::Origin(o.to_string()));
                }
            }
        }
        Ok(proof)
    }
}

/// Constant time in the candidate's bytes: no early exit on the first difference.
fn same(candidate: &str, secret: &str) -> bool {
    let (a, b) = (candidate.as_bytes(), secret.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A new random token: 32 bytes of the kernel's randomness, as hex.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen<'a>(method: &'a str, host: &'a str) -> Seen<'a> {
        Seen { method, host: Some(host), origin: None, authorization: None, query_token: None, form_token: None }
    }

    #[test]
    fn every_rule() {
        let g = Guard::new("abc123".into(), 4100);
        let ok_host = "127.0.0.1:4100";
        assert_eq!(g.check(&Seen { query_token: Some("abc123"), ..seen("GET", ok_host) }), Ok(Proof::Query));
        for host in ["localhost:4100", "LOCALHOST:4100", "[::1]:4100"] {
            assert!(g.check(&Seen { query_token: Some("abc123"), ..seen("GET", host) }).is_ok(), "{host}");
        }
        for host in ["evil.example:4100", "127.0.0.1:4101", "127.0.0.1", "localhost.evil:4100"] {
            assert_eq!(g.check(&Seen { query_token: Some("abc123"), ..seen("GET", host) }), Err(Refused::Host(4100)));
        }
        assert_eq!(g.check(&seen("GET", ok_host)), Err(Refused::Token));
        assert_eq!(g.check(&Seen { query_token: Some("abc124"), ..seen("GET", ok_host) }), Err(Refused::Token));
        assert_eq!(g.check(&Seen { query_token: Some("abc12"), ..seen("GET", ok_host) }), Err(Refused::Token));
        // Changes: Bearer only, and a loopback Origin when one is sent.
        assert_eq!(g.check(&Seen { query_token: Some("abc123"), ..seen("POST", ok_host) }), Err(Refused::Bearer));
        let bearer = Some("Bearer abc123");
        assert_eq!(g.check(&Seen { authorization: bearer, ..seen("DELETE", ok_host) }), Ok(Proof::Bearer));
        let origin = Some("http://localhost:4100");
        assert!(g.check(&Seen { authorization: bearer, origin, ..seen("PUT", ok_host) }).is_ok());
        for o in ["http://evil.example", "null", "https://127.0.0.1:4100", "http://127.0.0.1:4100.evil"] {
            assert_eq!(
                g.check(&Seen { authorization: bearer, origin: Some(o), ..seen("DELETE", ok_host) }),
                Err(Refused::Origin(o.into()))
            );
        }
        // The page posted to with its token: a read whatever the Origin; a wrong one is refused,
        // and a form token proves nothing for any other method.
        for o in [None, Some("null"), Some("http://127.0.0.1:4100")] {
            let posted = Seen { form_token: Some("abc123"), origin: o, ..seen("POST", ok_host) };
            assert_eq!(g.check(&posted), Ok(Proof::Form), "{o:?}");
        }
        assert_eq!(g.check(&Seen { form_token: Some("abc124"), ..seen("POST", ok_host) }), Err(Refused::Token));
        assert_eq!(g.check(&Seen { form_token: Some("abc123"), ..seen("DELETE", ok_host) }), Err(Refused::Token));
        let foreign_host = Seen { form_token: Some("abc123"), ..seen("POST", "evil.example:4100") };
        assert_eq!(g.check(&foreign_host), Err(Refused::Host(4100)));
        assert_eq!(Refused::Token.status(), 401);
        assert_eq!(Refused::Host(1).status(), 403);
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
