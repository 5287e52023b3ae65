//! The OpenViking client (REST API of openviking 0.5.2, checked against the real server in
//! tests/backends.rs).
//!
//! - One OpenViking session per harness session (`ovmem-<harness>-<session>`). A turn is added as
//!   one batch of two messages (user, assistant) carrying the turn id, so it is never half-sent.
//! - The session is committed at Stop and at SessionEnd ([`Remote::end_session`]): committing
//!   archives the pending messages and extracts memories in the background (~10 s, OpenViking's
//!   batching window); a commit with nothing pending is skipped by the server. Committing at each
//!   Stop makes a turn recallable from other harnesses and machines seconds later, and strands
//!   nothing in a session whose harness never sends SessionEnd.
//! - OpenViking 0.5.2 has no idempotency key: adding a message with a turn id already present
//!   adds it again. So a replayed turn ([`Turn::replay`]) is first looked for in the session's
//!   pending messages and in its newest archives, and sent only if absent.
//! - Recall searches the caller's own memories (`viking://~/memories`; in dev mode every caller is
//!   root, so an unscoped search would see other users' memories) and leaves out the directory
//!   overviews.
//! - Identity: `X-API-Key` in api_key mode (the key decides the user); `X-OpenViking-Account` and
//!   `X-OpenViking-User` when configured (dev and trusted modes).

use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use ureq::http::Method;

use super::http::{encode, Deadline, HeaderValue, Http, Reply};
use super::{clip, iso8601, Remote, RemoteError, RemoteHit, Result, Secret, Turn};

const SERVER: &str = "OpenViking";
/// Archives searched for a replayed turn, newest first.
const ARCHIVES_CHECKED: usize = 8;
const MAX_QUERY_BYTES: usize = 1000;

pub struct Options {
    pub url: String,
    pub api_key: Option<Secret>,
    pub account: Option<String>,
    pub user: Option<String>,
}

pub struct OpenViking {
    http: Http,
    has_key: bool,
}

/// What a commit did.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    /// `accepted` (memories are being extracted) or `skipped` (nothing was pending).
    pub status: String,
    pub task_id: Option<String>,
}

/// A background task (a commit's memory extraction).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// `pending`, `running`, `completed` or `failed`.
    pub status: String,
    /// Memories written, when completed.
    pub memories: u64,
    pub error: Option<String>,
}

impl Task {
    pub fn done(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }
}

impl OpenViking {
    pub fn new(opts: Options) -> Result<Self> {
        let mut headers = Vec::new();
        if let Some(k) = &opts.api_key {
            headers.push(("X-API-Key", HeaderValue::Secret(k.clone())));
        }
        for (name, value) in [("X-OpenViking-Account", &opts.account), ("X-OpenViking-User", &opts.user)] {
            if let Some(v) = value.as_ref().map(|v| v.trim()).filter(|v| !v.is_empty()) {
                headers.push((name, HeaderValue::Plain(v.to_string())));
            }
        }
        Ok(Self { http: Http::new(SERVER, &opts.url, headers)?, has_key: opts.api_key.is_some() })
    }

    /// The OpenViking session for a harness session: `ovmem-<harness>-<session>`, limited to
    /// `[A-Za-z0-9._-]`; an id that had to be changed gets a hash so that two never meet.
    pub fn session_id(harness: &str, session: &str) -> String {
        let raw = format!("{harness}-{session}");
        let clean: String = raw
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
            .collect();
        if clean == raw && raw.len() <= 96 {
            format!("ovmem-{raw}")
        } else {
            let hash: String = Sha256::digest(raw.as_bytes()).iter().take(5).map(|b| format!("{b:02x}")).collect();
            format!("ovmem-{}-{hash}", clip(&clean, 80))
        }
    }

    /// Sends a request and returns the `result` of an `ok` answer.
    fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
        deadline: &Deadline,
    ) -> Result<Value> {
        let reply = self.http.call(method, path, body, deadline)?;
        self.judge(reply, what)
    }

    fn judge(&self, reply: Reply, what: &str) -> Result<Value> {
        let v = reply.json();
        let ok_envelope = v.as_ref().and_then(|v| v.get("status")).and_then(Value::as_str) != Some("error");
        if (200..300).contains(&reply.status) && ok_envelope {
            let v = v.ok_or_else(|| self.protocol(what, "the body is not JSON"))?;
            return Ok(v.get("result").cloned().unwrap_or(v));
        }
        let err = v.as_ref().and_then(|v| v.get("error"));
        let code = err.and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("").to_string();
        let message = err
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .map(String::from)
            .or_else(|| {
                v.as_ref().and_then(|v| v.get("detail")).map(|d| d.as_str().map(String::from).unwrap_or(d.to_string()))
            })
            .unwrap_or_else(|| clip(reply.body.trim(), 200).to_string());
        let message = if code.is_empty() { message } else { format!("{code}: {message}") };
        if reply.status == 401 || reply.status == 403 || code == "UNAUTHENTICATED" || code == "PERMISSION_DENIED" {
            let hint = if !self.has_key && (reply.status == 401 || code == "UNAUTHENTICATED") {
                "no API key is configured: set OPENVIKING_API_KEY or run `ovmem install --backend openviking --api-url URL --api-key KEY`"
            } else if code == "PERMISSION_DENIED" {
                "the key cannot read this space: use a user key (a root key cannot read memories)"
            } else {
                "the API key was refused: check OPENVIKING_API_KEY or the [openviking] api_key in credentials.toml"
            };
            return Err(RemoteError::Auth {
                server: SERVER,
                url: self.http.shown_url().to_string(),
                status: reply.status,
                message,
                hint: hint.to_string(),
            });
        }
        Err(RemoteError::Status {
            server: SERVER,
            url: self.http.shown_url().to_string(),
            what: what.to_string(),
            status: if reply.status < 300 { status_of(&code) } else { reply.status },
            message,
        })
    }

    fn protocol(&self, what: &str, reason: &str) -> RemoteError {
        RemoteError::Protocol {
            server: SERVER,
            url: self.http.shown_url().to_string(),
            what: what.to_string(),
            reason: reason.to_string(),
        }
    }

    /// Commits a session: archives what is pending and extracts memories in the background.
    pub fn commit(&self, session_id: &str, budget: Duration) -> Result<Commit> {
        let path = format!("/api/v1/sessions/{}/commit", encode(session_id));
        let v = self.request(Method::POST, &path, Some(&json!({})), "a commit", &Deadline::after(budget))?;
        Ok(Commit {
            status: v.get("status").and_then(Value::as_str).unwrap_or("unknown").to_string(),
            task_id: v.get("task_id").and_then(Value::as_str).map(String::from),
        })
    }

    /// Where a background task stands.
    pub fn task(&self, task_id: &str, budget: Duration) -> Result<Task> {
        let path = format!("/api/v1/tasks/{}", encode(task_id));
        let v = self.request(Method::GET, &path, None, "reading a task", &Deadline::after(budget))?;
        let memories = v
            .get("result")
            .and_then(|r| r.get("memories_extracted"))
            .and_then(Value::as_object)
            .map(|m| m.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0);
        Ok(Task {
            status: v.get("status").and_then(Value::as_str).unwrap_or("unknown").to_string(),
            memories,
            error: v
                .get("error")
                .and_then(|e| e.as_str().map(String::from).or_else(|| e.get("message")?.as_str().map(String::from))),
        })
    }

    /// Whether a message with this turn id is in the session, pending or in one of its newest
    /// archives.
    pub fn has_turn(&self, session_id: &str, turn_id: &str, budget: Duration) -> Result<bool> {
        self.has_turn_within(session_id, turn_id, &Deadline::after(budget))
    }

    fn has_turn_within(&self, session_id: &str, turn_id: &str, deadline: &Deadline) -> Result<bool> {
        let sid = encode(session_id);
        let meta = match self.request(
            Method::GET,
            &format!("/api/v1/sessions/{sid}?auto_create=false"),
            None,
            "reading a session",
            deadline,
        ) {
            Err(RemoteError::Status { status: 404, .. }) => return Ok(false),
            other => other?,
        };
        let context = self.request(
            Method::GET,
            &format!("/api/v1/sessions/{sid}/context?token_budget=100000000"),
            None,
            "reading a session",
            deadline,
        )?;
        let pending = context.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
        if pending.iter().any(|m| m.get("turn_id").and_then(Value::as_str) == Some(turn_id)) {
            return Ok(true);
        }
        let commits = meta.get("commit_count").and_then(Value::as_u64).unwrap_or(0);
        let Some(uri) = meta.get("uri").and_then(Value::as_str).filter(|_| commits > 0) else { return Ok(false) };
        let history = format!("{uri}/history");
        let listing = self.request(
            Method::GET,
            &format!("/api/v1/fs/ls?uri={}&output=original", encode(&history)),
            None,
            "listing a session's archives",
            deadline,
        )?;
        let mut archives: Vec<String> = listing
            .as_array()
            .map(|a| a.iter().filter_map(|e| e.get("name").and_then(Value::as_str).map(String::from)).collect())
            .unwrap_or_default();
        archives.retain(|n| n.starts_with("archive_"));
        archives.sort_by(|a, b| b.cmp(a));
        for name in archives.iter().take(ARCHIVES_CHECKED) {
            let file = format!("{history}/{name}/messages.jsonl");
            let text = match self.request(
                Method::GET,
                &format!("/api/v1/content/read?uri={}", encode(&file)),
                None,
                "reading an archive",
                deadline,
            ) {
                Err(RemoteError::Status { status: 404, .. }) => continue,
                other => other?,
            };
            let found = text.as_str().unwrap_or_default().lines().any(|line| {
                serde_json::from_str::<Value>(line)
                    .ok()
                    .and_then(|m| m.get("turn_id").and_then(Value::as_str).map(|t| t == turn_id))
                    == Some(true)
            });
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl OpenViking {
    /// When the file at a `viking://` URI was last written (`fs/stat`'s `modTime`).
    fn modified(&self, uri: &str, deadline: &Deadline) -> Option<i64> {
        let path = format!("/api/v1/fs/stat?uri={}", encode(uri));
        let v = self.request(Method::GET, &path, None, "reading a memory's date", deadline).ok()?;
        v.get("modTime").and_then(Value::as_str).and_then(super::parse_iso8601)
    }
}

/// The HTTP status OpenViking's error codes stand for (for an error inside a 2xx answer).
fn status_of(code: &str) -> u16 {
    match code {
        "INVALID_ARGUMENT" | "INVALID_URI" => 400,
        "NOT_FOUND" => 404,
        "CONFLICT" | "ABORTED" | "WRITE_CONFLICT" => 409,
        "SESSION_EXPIRED" => 410,
        "RESOURCE_EXHAUSTED" => 429,
        "UNAVAILABLE" => 503,
        "DEADLINE_EXCEEDED" => 504,
        _ => 500,
    }
}

impl Remote for OpenViking {
    fn kind(&self) -> &'static str {
        "openviking"
    }

    fn health(&self, budget: Duration) -> Result<String> {
        let deadline = Deadline::after(budget);
        let reply = self.http.call(Method::GET, "/health", None, &deadline)?;
        if !(200..300).contains(&reply.status) {
            return Err(self
                .judge(reply, "the health check")
                .err()
                .unwrap_or_else(|| self.protocol("the health check", "not healthy")));
        }
        let v = reply.json().ok_or_else(|| self.protocol("the health check", "the body is not JSON"))?;
        if v.get("healthy").and_then(Value::as_bool) == Some(false) {
            return Err(RemoteError::Status {
                server: SERVER,
                url: self.http.shown_url().to_string(),
                what: "the health check".into(),
                status: 503,
                message: "the server reports itself unhealthy".into(),
            });
        }
        let version = v.get("version").and_then(Value::as_str).unwrap_or("?");
        let mode = v.get("auth_mode").and_then(Value::as_str).unwrap_or("?");
        let user = self
            .request(Method::GET, "/api/v1/system/status", None, "the status", &deadline)
            .ok()
            .and_then(|s| s.get("user").and_then(Value::as_str).map(String::from));
        Ok(match user {
            Some(u) => format!("OpenViking {version}: healthy, auth mode {mode}, user {u}"),
            None => format!("OpenViking {version}: healthy, auth mode {mode}"),
        })
    }

    fn retain(&self, turn: &Turn, budget: Duration) -> Result<()> {
        let deadline = Deadline::after(budget);
        let sid = Self::session_id(turn.harness, turn.session);
        if turn.replay && self.has_turn_within(&sid, turn.doc_id, &deadline)? {
            return Ok(());
        }
        let at = iso8601(turn.at);
        let messages: Vec<Value> = [("user", turn.user), ("assistant", turn.assistant)]
            .into_iter()
            .filter(|(_, text)| !text.trim().is_empty())
            .map(|(role, text)| json!({ "role": role, "content": text.trim(), "turn_id": turn.doc_id, "created_at": at }))
            .collect();
        if messages.is_empty() {
            return Ok(());
        }
        let path = format!("/api/v1/sessions/{}/messages/batch", encode(&sid));
        self.request(Method::POST, &path, Some(&json!({ "messages": messages })), "adding a turn", &deadline).map(drop)
    }

    fn recall(
        &self,
        _bank: &str,
        _session: &str,
        query: &str,
        limit: usize,
        budget: Duration,
    ) -> Result<Vec<RemoteHit>> {
        let query = clip(query.trim(), MAX_QUERY_BYTES);
        if query.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        // Directory overviews come back too; ask for a few more and drop them.
        let body = json!({ "query": query, "target_uri": "viking://~/memories", "limit": limit + 4 });
        let deadline = Deadline::after(budget);
        let v = self.request(Method::POST, "/api/v1/search/find", Some(&body), "a search", &deadline)?;
        let memories = v.get("memories").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut hits: Vec<RemoteHit> = memories
            .iter()
            .filter_map(|m| {
                let uri = m.get("uri").and_then(Value::as_str)?;
                let name = uri.rsplit('/').next().unwrap_or_default();
                let leaf = m.get("level").and_then(Value::as_u64).map_or(!name.starts_with('.'), |l| l >= 2);
                if !leaf || name.starts_with('.') {
                    return None;
                }
                let text = m.get("abstract").and_then(Value::as_str)?.trim().to_string();
                if text.is_empty() {
                    return None;
                }
                let kind = m
                    .get("tags")
                    .and_then(Value::as_array)
                    .and_then(|tags| tags.iter().filter_map(Value::as_str).find_map(|t| t.strip_prefix("memory_type=")))
                    .map(String::from)
                    .or_else(|| {
                        uri.split("/memories/").nth(1).and_then(|rest| rest.split('/').next()).map(String::from)
                    });
                Some(RemoteHit {
                    text,
                    id: uri.to_string(),
                    at: None,
                    score: m.get("score").and_then(Value::as_f64),
                    kind,
                })
            })
            .take(limit)
            .collect();
        // A search answer carries no dates: each memory's own is its file's modification time
        // (when it was extracted or last updated), asked within what is left of the budget.
        for h in &mut hits {
            if deadline.remaining() < Duration::from_millis(30) {
                break;
            }
            h.at = self.modified(&h.id, &deadline);
        }
        Ok(hits)
    }

    fn end_session(&self, _bank: &str, harness: &str, session: &str, budget: Duration) -> Result<()> {
        self.commit(&Self::session_id(harness, session), budget).map(drop)
    }

    fn read(&self, _bank: &str, id: &str, budget: Duration) -> Result<String> {
        if !id.starts_with("viking://") {
            return Err(RemoteError::Config(format!("`{id}` is not a viking:// URI")));
        }
        let path = format!("/api/v1/content/read?uri={}", encode(id));
        let v = self.request(Method::GET, &path, None, "reading a memory", &Deadline::after(budget))?;
        Ok(v.as_str().map(String::from).unwrap_or_else(|| v.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids() {
        assert_eq!(OpenViking::session_id("claude-code", "3f2a-11"), "ovmem-claude-code-3f2a-11");
        let odd = OpenViking::session_id("cline", "a b/c");
        assert!(odd.starts_with("ovmem-cline-a-b-c-") && odd.len() == "ovmem-cline-a-b-c-".len() + 10, "{odd}");
        assert_ne!(odd, OpenViking::session_id("cline", "a-b-c"));
        assert_ne!(odd, OpenViking::session_id("cline", "a b c"));
        let long = OpenViking::session_id("codex", &"x".repeat(500));
        assert!(long.len() < 110, "{long}");
    }

    #[test]
    fn error_envelopes_become_actionable_errors() {
        let ov =
            OpenViking::new(Options { url: "http://127.0.0.1:9".into(), api_key: None, account: None, user: None })
                .unwrap();
        let reply = |status, body: &str| Reply { status, body: body.into() };
        let e = ov
            .judge(
                reply(401, r#"{"status":"error","error":{"code":"UNAUTHENTICATED","message":"Missing API Key"}}"#),
                "x",
            )
            .unwrap_err();
        assert!(e.is_auth() && e.to_string().contains("no API key is configured"), "{e}");
        let e = ov
            .judge(reply(400, r#"{"status":"error","error":{"code":"INVALID_URI","message":"bad"}}"#), "a search")
            .unwrap_err();
        assert_eq!(e.to_string(), "OpenViking at http://127.0.0.1:9 answered HTTP 400 to a search: INVALID_URI: bad");
        let e = ov
            .judge(reply(200, r#"{"status":"error","error":{"code":"NOT_FOUND","message":"gone"}}"#), "x")
            .unwrap_err();
        assert!(
            matches!(e, RemoteError::Status { status: 404, .. }),
            "an error in a 200 envelope is still an error: {e}"
        );
        assert_eq!(ov.judge(reply(200, r#"{"status":"ok","result":{"a":1}}"#), "x").unwrap(), json!({"a": 1}));
    }
}
