//! The Hindsight client (REST API of hindsight-api 1.1.0, checked against the real server in
//! tests/backends.rs).
//!
//! - Banks are ensured before their first retain: created with a name if missing, and given
//!   ovmem's retain and reflect missions once, only where the bank has none of its own (a team
//!   that wrote its missions keeps them). A marker file per bank under the state directory means
//!   later hooks skip this. A server that refuses the bank config API still gets the turn.
//! - Retain is asynchronous (`async: true`, answered in a few ms; the fact is recallable after a
//!   worker picks it up, ~0.3-2 s). Each turn is one document with a stable `document_id`: the
//!   server replaces a document retained again, and an unchanged one keeps its memories, so a
//!   replay never duplicates. The `operation_id` is derived from bank, document and content, so a
//!   replayed request is recognised as the operation already accepted and not even re-processed.
//! - Recall asks for `world` and `experience` facts with a token cap; a bank that does not exist
//!   yet has no memories (not an error).
//! - `Authorization: Bearer <token>` when a token is configured.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use ureq::http::Method;

use super::http::{encode, Deadline, HeaderValue, Http, Reply};
use super::{clip, iso8601, parse_iso8601, Remote, RemoteError, RemoteHit, Result, Secret, Turn};

const SERVER: &str = "Hindsight";

/// What ovmem asks Hindsight to extract from coding-agent turns, and how to answer from them.
pub const RETAIN_MISSION: &str = "These are turns between a developer and a coding agent. Extract durable knowledge: \
technical decisions and their reasons, project conventions, architecture, build and deploy facts, debugging outcomes, \
and the developer's stated preferences. Skip greetings, tool noise and details that only mattered for one step.";
pub const REFLECT_MISSION: &str = "You are the long-term memory of a software project's coding agents, shared by the \
people working on it. Answer from what was decided and learned before, prefer the most recent when facts conflict, \
and say when memory has nothing on a question.";

/// The longest recall query sent (Hindsight refuses queries over 500 tokens).
const MAX_QUERY_BYTES: usize = 800;

pub struct Options {
    pub url: String,
    pub token: Option<Secret>,
    /// The most tokens of memories one recall returns.
    pub max_tokens: u32,
    /// Where to remember which banks are ensured (e.g. `$OVMEM_HOME/state`); `None`: per process.
    pub state_dir: Option<PathBuf>,
}

pub struct Hindsight {
    http: Http,
    has_token: bool,
    max_tokens: u32,
    state_dir: Option<PathBuf>,
    ensured: Mutex<HashSet<String>>,
}

/// Where an asynchronous retain stands (`pending`, `processing`, `completed`, `failed`).
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub status: String,
    pub error: Option<String>,
}

impl Hindsight {
    pub fn new(opts: Options) -> Result<Self> {
        let mut headers = Vec::new();
        if let Some(t) = &opts.token {
            headers.push(("Authorization", HeaderValue::Secret(Secret::new(format!("Bearer {}", t.expose())))));
        }
        Ok(Self {
            http: Http::new(SERVER, &opts.url, headers)?,
            has_token: opts.token.is_some(),
            max_tokens: opts.max_tokens.max(64),
            state_dir: opts.state_dir,
            ensured: Mutex::new(HashSet::new()),
        })
    }

    fn bank_path(bank: &str) -> String {
        format!("/v1/default/banks/{}", encode(bank))
    }

    /// Sends a request and returns the JSON of a 2xx answer; any other status becomes an error.
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
        if (200..300).contains(&reply.status) {
            return reply.json().ok_or_else(|| RemoteError::Protocol {
                server: SERVER,
                url: self.http.shown_url().to_string(),
                what: what.to_string(),
                reason: "the body is not JSON".into(),
            });
        }
        let message = detail(&reply);
        if reply.status == 401 || reply.status == 403 {
            let hint = if self.has_token {
                "the token was refused: check HINDSIGHT_API_TOKEN or the [hindsight] api_token in credentials.toml"
            } else {
                "no token is configured: set HINDSIGHT_API_TOKEN or run `ovmem install --backend hindsight --api-url URL --api-token TOKEN`"
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
            status: reply.status,
            message,
        })
    }

    /// Creates the bank if needed and gives it ovmem's missions where it has none of its own.
    /// Cheap after the first time: a marker (in memory, and under the state directory) skips it.
    pub fn ensure_bank(&self, bank: &str, name: &str, budget: Duration) -> Result<()> {
        self.ensure_bank_within(bank, name, &Deadline::after(budget))
    }

    fn ensure_bank_within(&self, bank: &str, name: &str, deadline: &Deadline) -> Result<()> {
        if self.ensured.lock().map(|s| s.contains(bank)).unwrap_or(false) {
            return Ok(());
        }
        let marker = self.marker(bank);
        if marker.as_ref().is_some_and(|m| m.exists()) {
            self.remember(bank);
            return Ok(());
        }
        let path = Self::bank_path(bank);
        let reply = self.http.call(Method::GET, &format!("{path}/config"), None, deadline)?;
        let overrides = if reply.status == 404 {
            let name = if name.trim().is_empty() { bank } else { name.trim() };
            self.request(Method::PUT, &path, Some(&json!({ "name": name })), "creating the bank", deadline)?;
            serde_json::Map::new()
        } else {
            let config = self.judge(reply, "reading the bank config")?;
            config.get("overrides").and_then(Value::as_object).cloned().unwrap_or_default()
        };
        let mut updates = serde_json::Map::new();
        for (key, mission) in [("retain_mission", RETAIN_MISSION), ("reflect_mission", REFLECT_MISSION)] {
            let set = overrides.get(key).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty());
            if !set {
                updates.insert(key.to_string(), Value::from(mission));
            }
        }
        if !updates.is_empty() {
            let body = json!({ "updates": updates });
            self.request(Method::PATCH, &format!("{path}/config"), Some(&body), "setting the bank missions", deadline)?;
        }
        self.remember(bank);
        if let Some(m) = marker {
            if let Some(dir) = m.parent() {
                let _ = crate::sys::dir_mode(std::fs::DirBuilder::new().recursive(true), 0o700).create(dir);
            }
            let _ = std::fs::write(&m, format!("{bank}\n"));
        }
        Ok(())
    }

    fn remember(&self, bank: &str) {
        if let Ok(mut s) = self.ensured.lock() {
            s.insert(bank.to_string());
        }
    }

    fn marker(&self, bank: &str) -> Option<PathBuf> {
        let dir = self.state_dir.as_ref()?;
        let key = format!("{}\n{bank}", self.http.shown_url());
        let hash: String = Sha256::digest(key.as_bytes()).iter().take(12).map(|b| format!("{b:02x}")).collect();
        Some(dir.join("hindsight-banks").join(hash))
    }

    /// Where an asynchronous retain stands.
    pub fn operation(&self, bank: &str, operation_id: &str, budget: Duration) -> Result<Operation> {
        let path = format!("{}/operations/{}", Self::bank_path(bank), encode(operation_id));
        let v = self.request(Method::GET, &path, None, "reading an operation", &Deadline::after(budget))?;
        Ok(Operation {
            status: v.get("status").and_then(Value::as_str).unwrap_or("unknown").to_string(),
            error: v.get("error_message").and_then(Value::as_str).map(String::from),
        })
    }

    /// Retains a turn and returns the operation id (deterministic for the turn's content).
    pub fn retain_turn(&self, turn: &Turn, budget: Duration) -> Result<String> {
        let deadline = Deadline::after(budget);
        match self.ensure_bank_within(turn.bank, turn.project, &deadline) {
            // Missions are a nicety: a server without the bank config API (or a token not allowed
            // to use it) still takes the turn, and retain creates a missing bank by itself.
            Err(RemoteError::Status { .. }) => self.remember(turn.bank),
            other => other?,
        }
        let content = turn_text(turn);
        let op = operation_id(turn.bank, turn.doc_id, &content);
        let mut tags =
            vec!["ovmem".to_string(), format!("harness:{}", turn.harness), format!("status:{}", turn.status)];
        if !turn.project.is_empty() {
            tags.push(format!("project:{}", turn.project));
        }
        if !turn.session.is_empty() {
            tags.push(format!("session:{}", turn.session));
        }
        let body = json!({
            "items": [{
                "content": content,
                "context": turn.harness,
                "document_id": turn.doc_id,
                "timestamp": iso8601(turn.at),
                "tags": tags,
                "metadata": {
                    "source": "ovmem",
                    "project": turn.project,
                    "session": turn.session,
                    "harness": turn.harness,
                    "status": turn.status,
                },
            }],
            "async": true,
            "operation_id": op,
        });
        let path = format!("{}/memories", Self::bank_path(turn.bank));
        let v = self.request(Method::POST, &path, Some(&body), "retaining a turn", &deadline)?;
        if v.get("success").and_then(Value::as_bool) == Some(false) {
            return Err(RemoteError::Protocol {
                server: SERVER,
                url: self.http.shown_url().to_string(),
                what: "retaining a turn".into(),
                reason: format!("the server says it did not succeed: {}", clip(&v.to_string(), 300)),
            });
        }
        Ok(v.get("operation_id").and_then(Value::as_str).unwrap_or(&op).to_string())
    }
}

impl Remote for Hindsight {
    fn kind(&self) -> &'static str {
        "hindsight"
    }

    fn health(&self, budget: Duration) -> Result<String> {
        let deadline = Deadline::after(budget);
        let reply = self.http.call(Method::GET, "/health", None, &deadline)?;
        let status = reply.status;
        let v = self.judge(reply, "the health check").map_err(|e| match e {
            RemoteError::Status { message, .. } if status == 503 => RemoteError::Status {
                server: SERVER,
                url: self.http.shown_url().to_string(),
                what: "the health check".into(),
                status,
                message: format!("the server is up but unhealthy: {message}"),
            },
            other => other,
        })?;
        let health = v.get("status").and_then(Value::as_str).unwrap_or("unknown").to_string();
        let database = v.get("database").and_then(Value::as_str).map(|d| format!(", database {d}")).unwrap_or_default();
        let version = self
            .request(Method::GET, "/version", None, "the version", &deadline)
            .ok()
            .and_then(|v| v.get("api_version").and_then(Value::as_str).map(String::from));
        Ok(match version {
            Some(ver) => format!("Hindsight {ver}: {health}{database}"),
            None => format!("Hindsight: {health}{database}"),
        })
    }

    fn retain(&self, turn: &Turn, budget: Duration) -> Result<()> {
        self.retain_turn(turn, budget).map(drop)
    }

    fn recall(
        &self,
        bank: &str,
        _session: &str,
        query: &str,
        limit: usize,
        budget: Duration,
    ) -> Result<Vec<RemoteHit>> {
        let query = clip(query.trim(), MAX_QUERY_BYTES);
        if query.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let body = json!({
            "query": query,
            "max_tokens": self.max_tokens,
            "budget": "mid",
            "types": ["world", "experience"],
        });
        let path = format!("{}/memories/recall", Self::bank_path(bank));
        let v = match self.request(Method::POST, &path, Some(&body), "a recall", &Deadline::after(budget)) {
            Err(RemoteError::Status { status: 404, .. }) => return Ok(Vec::new()), // no bank yet: nothing to recall
            other => other?,
        };
        let results = v.get("results").and_then(Value::as_array).cloned().unwrap_or_default();
        Ok(results
            .iter()
            .filter_map(|r| {
                let text = r.get("text").and_then(Value::as_str)?.trim().to_string();
                if text.is_empty() {
                    return None;
                }
                let at = ["mentioned_at", "occurred_start"]
                    .iter()
                    .find_map(|k| r.get(*k).and_then(Value::as_str).and_then(parse_iso8601));
                Some(RemoteHit {
                    text,
                    id: r.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
                    at,
                    score: r.get("scores").and_then(|s| s.get("final")).and_then(Value::as_f64),
                    kind: r.get("type").and_then(Value::as_str).map(String::from),
                })
            })
            .take(limit)
            .collect())
    }

    fn end_session(&self, _bank: &str, _harness: &str, _session: &str, _budget: Duration) -> Result<()> {
        Ok(())
    }

    fn read(&self, bank: &str, id: &str, budget: Duration) -> Result<String> {
        let path = format!("{}/memories/{}", Self::bank_path(bank), encode(id));
        let v = self.request(Method::GET, &path, None, "reading a memory", &Deadline::after(budget))?;
        v.get("text").and_then(Value::as_str).map(String::from).ok_or_else(|| RemoteError::Protocol {
            server: SERVER,
            url: self.http.shown_url().to_string(),
            what: "reading a memory".into(),
            reason: "the answer has no text".into(),
        })
    }
}

/// The document text of one turn.
fn turn_text(turn: &Turn) -> String {
    let mut s = format!("user: {}", turn.user.trim());
    if !turn.assistant.trim().is_empty() {
        s.push_str("\nassistant: ");
        s.push_str(turn.assistant.trim());
    }
    s
}

/// A UUID (version 8, RFC 9562) from the bank, the document id and the content: the same turn
/// sent twice is the same operation, a changed turn a new one.
fn operation_id(bank: &str, doc_id: &str, content: &str) -> String {
    let mut h = Sha256::new();
    for part in ["ovmem-retain", bank, doc_id, content] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    let mut b: [u8; 16] = h.finalize()[..16].try_into().expect("16 bytes");
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// The server's own words: FastAPI's `detail` (a string, or a list of validation errors), else
/// the start of the body.
fn detail(reply: &Reply) -> String {
    let from_json = reply.json().and_then(|v| match v.get("detail") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .filter_map(|i| {
                    let msg = i.get("msg").and_then(Value::as_str)?;
                    let loc = i.get("loc").and_then(Value::as_array).map(|l| {
                        l.iter()
                            .map(|p| p.as_str().map(String::from).unwrap_or_else(|| p.to_string()))
                            .collect::<Vec<_>>()
                            .join(".")
                    });
                    Some(match loc {
                        Some(l) => format!("{l}: {msg}"),
                        None => msg.to_string(),
                    })
                })
                .collect::<Vec<_>>()
                .join("; "),
        ),
        _ => None,
    });
    from_json.unwrap_or_else(|| {
        let body = reply.body.trim();
        if body.is_empty() {
            "no details".to_string()
        } else {
            clip(body, 200).to_string()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_uuids_stable_per_content() {
        let a = operation_id("b", "turn-1", "user: x");
        assert_eq!(a, operation_id("b", "turn-1", "user: x"));
        assert_ne!(a, operation_id("b", "turn-1", "user: y"));
        assert_ne!(a, operation_id("c", "turn-1", "user: x"));
        assert_ne!(operation_id("ab", "c", "x"), operation_id("a", "bc", "x"), "parts are length-prefixed");
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), vec![8, 4, 4, 4, 12]);
        assert!(parts[2].starts_with('8'), "version 8: {a}");
        assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'), "RFC variant: {a}");
    }

    #[test]
    fn turn_text_leaves_out_an_empty_answer() {
        let mut t = Turn {
            doc_id: "d",
            bank: "b",
            session: "s",
            harness: "cline",
            project: "p",
            user: " Stop the build ",
            assistant: "",
            at: 0,
            status: "cancelled",
            replay: false,
        };
        assert_eq!(turn_text(&t), "user: Stop the build");
        t.assistant = "Stopped.";
        assert_eq!(turn_text(&t), "user: Stop the build\nassistant: Stopped.");
    }

    #[test]
    fn details_from_fastapi_answers() {
        let r = |body: &str| Reply { status: 422, body: body.into() };
        assert_eq!(detail(&r(r#"{"detail":"Bank 'x' not found"}"#)), "Bank 'x' not found");
        assert_eq!(
            detail(&r(r#"{"detail":[{"loc":["body","operation_id"],"msg":"must be a valid UUID"}]}"#)),
            "body.operation_id: must be a valid UUID"
        );
        assert_eq!(detail(&r("")), "no details");
        assert_eq!(detail(&r("<html>bad gateway</html>")), "<html>bad gateway</html>");
    }
}
