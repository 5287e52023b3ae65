//! The viewer's JSON API under `/api/` (docs/ui.md lists it): banks, memories page by page or by
//! search (recall's own ranking), one session's turns and what was injected into its prompts,
//! forget, pin, edit, and the backend's state. Plain functions of a request, so they are tested
//! without a socket; the server (`mod.rs`) has already checked who is asking.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use crate::env::Env;
use crate::runtime::render;
use crate::store::curate::Edited;
use crate::store::{Exported, Hit, Kind, Memory, Store};

/// Memories per page when the request does not say.
const PAGE: usize = 200;
/// The most one request may ask for.
const MAX_PAGE: usize = 1000;
/// Characters of a matched passage.
const PASSAGE: usize = 320;

/// An answer: a status and a JSON body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

impl Reply {
    fn ok(body: Value) -> Self {
        Self { status: 200, body }
    }

    fn error(status: u16, message: impl Into<String>) -> Self {
        Self { status, body: json!({ "error": message.into() }) }
    }
}

pub struct Api<'a> {
    pub store: &'a Store,
    pub env: &'a Env,
    /// The bank listed first (`--project`, else the current directory's).
    pub default_bank: Option<String>,
}

/// A request as the API reads it.
pub struct Request<'a> {
    pub method: &'a str,
    /// The path, percent-decoded per segment.
    pub segments: Vec<String>,
    pub query: HashMap<String, String>,
    pub body: &'a [u8],
}

impl Api<'_> {
    pub fn handle(&self, r: &Request) -> Reply {
        match self.route(r) {
            Ok(reply) => reply,
            Err(e) => Reply::error(500, format!("{e:#}")),
        }
    }

    fn route(&self, r: &Request) -> anyhow::Result<Reply> {
        let seg: Vec<&str> = r.segments.iter().map(String::as_str).collect();
        let id = |s: &str| s.parse::<i64>().ok();
        Ok(match (r.method, seg.as_slice()) {
            ("GET", ["api", "banks"]) => self.banks()?,
            ("GET", ["api", "memories"]) => self.memories(&r.query)?,
            ("GET", ["api", "memories", n]) => match id(n) {
                Some(n) => self.one(n)?,
                None => not_found(),
            },
            ("DELETE", ["api", "memories", n]) => match id(n) {
                Some(n) => {
                    let done = self.store.forget_many(&[n])?;
                    if done.missing.is_empty() {
                        Reply::ok(json!({ "forgotten": n, "not_scrubbed": done.not_scrubbed }))
                    } else {
                        Reply::error(404, format!("no memory {n}"))
                    }
                }
                None => not_found(),
            },
            ("POST", ["api", "forget"]) => self.forget(r.body)?,
            ("PUT", ["api", "memories", n]) => match id(n) {
                Some(n) => self.edit(n, r.body)?,
                None => not_found(),
            },
            (m @ ("POST" | "DELETE"), ["api", "memories", n, "pin"]) => match id(n) {
                Some(n) => {
                    let pinned = m == "POST"
                        && serde_json::from_slice::<Value>(r.body)
                            .ok()
                            .and_then(|v| v.get("pinned").and_then(Value::as_bool))
                            .unwrap_or(true);
                    if self.store.pin(n, pinned)? {
                        Reply::ok(json!({ "id": n, "pinned": pinned }))
                    } else {
                        Reply::error(404, format!("no memory {n}"))
                    }
                }
                None => not_found(),
            },
            // By query too: a browser reads a session named `.` or `..` in a path as a step up.
            ("GET", ["api", "sessions"]) if r.query.contains_key("id") => self.session(&r.query["id"])?,
            ("GET", ["api", "sessions"]) => {
                let bank = r.query.get("bank").filter(|b| !b.is_empty()).map(String::as_str);
                Reply::ok(json!({ "sessions": self.store.sessions(bank, limit(&r.query))? }))
            }
            ("GET", ["api", "sessions", s]) => self.session(s)?,
            ("GET", ["api", "backend"]) => Reply::ok(self.backend()?),
            (_, ["api", ..]) => Reply::error(404, format!("no such API: {} /{}", r.method, seg.join("/"))),
            _ => not_found(),
        })
    }

    fn banks(&self) -> anyhow::Result<Reply> {
        let stats = self.store.stats()?;
        let banks: Vec<Value> = stats
            .banks
            .iter()
            .map(|(name, n)| json!({ "name": name, "label": label(self.env, name), "memories": n }))
            .collect();
        Ok(Reply::ok(json!({ "banks": banks, "total": stats.memories, "default": self.default_bank })))
    }

    fn memories(&self, q: &HashMap<String, String>) -> anyhow::Result<Reply> {
        let bank = q.get("bank").filter(|b| !b.is_empty()).map(String::as_str);
        let limit = limit(q);
        let pinned = self.store.pinned_ids()?;
        if let Some(query) = q.get("q").map(|s| s.trim()).filter(|s| !s.is_empty()) {
            let banks: Vec<String> = match bank {
                Some(b) => vec![b.to_string()],
                None => self.store.stats()?.banks.into_iter().map(|(b, _)| b).collect(),
            };
            let mut hits: Vec<Hit> = Vec::new();
            for b in &banks {
                hits.extend(self.store.search(b, query, limit)?);
            }
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            hits.truncate(limit);
            let memories: Vec<Value> = hits.iter().map(|h| hit_json(h, &pinned)).collect();
            return Ok(Reply::ok(json!({ "memories": memories, "next": null, "query": query })));
        }
        let before = match q.get("before").filter(|s| !s.is_empty()) {
            Some(c) => match parse_cursor(c) {
                Some(c) => Some(c),
                None => return Ok(Reply::error(400, format!("`before` must be a `next` value, not {c:?}"))),
            },
            None => None,
        };
        let page = self.store.page(bank, before, limit)?;
        let next = (page.len() == limit).then(|| page.last().map(|m| format!("{}_{}", m.created_at, m.id))).flatten();
        let memories: Vec<Value> = page.iter().map(|m| memory_json(m, &pinned)).collect();
        Ok(Reply::ok(json!({ "memories": memories, "next": next })))
    }

    /// Forgets several memories at once (a search's results): one rewrite of the file for all.
    fn forget(&self, body: &[u8]) -> anyhow::Result<Reply> {
        let ids: Option<Vec<i64>> = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("ids").and_then(Value::as_array).cloned())
            .and_then(|ids| ids.iter().map(Value::as_i64).collect());
        let Some(ids) = ids.filter(|i| !i.is_empty()) else {
            return Ok(Reply::error(400, "the body must be {\"ids\": [1, 2, …]}"));
        };
        let done = self.store.forget_many(&ids)?;
        let forgotten: Vec<i64> = ids.iter().copied().filter(|i| !done.missing.contains(i)).collect();
        Ok(Reply::ok(json!({ "forgotten": forgotten, "missing": done.missing, "not_scrubbed": done.not_scrubbed })))
    }

    fn one(&self, id: i64) -> anyhow::Result<Reply> {
        Ok(match self.store.memory(id)? {
            Some(m) => Reply::ok(memory_json(&m, &self.store.pinned_ids()?)),
            None => Reply::error(404, format!("no memory {id}")),
        })
    }

    fn edit(&self, id: i64, body: &[u8]) -> anyhow::Result<Reply> {
        let Some(old) = self.store.memory(id)? else { return Ok(Reply::error(404, format!("no memory {id}"))) };
        let Ok(v) = serde_json::from_slice::<Value>(body) else {
            return Ok(Reply::error(400, "the body must be JSON: {\"text\": …} or {\"prompt\": …, \"reply\": …}"));
        };
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let (prompt, reply) = match (field("prompt"), field("reply"), field("text")) {
            (Some(p), r, _) => (p, r.unwrap_or_default()),
            (None, Some(r), _) => (String::new(), r),
            (None, None, Some(t)) if old.kind == Kind::Fact => (t, String::new()),
            (None, None, Some(t)) => {
                // A turn's text is `User: …` / `Assistant: …`, as the page shows it.
                let m = Exported { memory: Memory { kind: old.kind, ..Default::default() }, content: Some(t) }
                    .into_memory();
                (m.prompt, m.reply)
            }
            (None, None, None) => return Ok(Reply::error(400, "nothing to change: send {\"text\": …}")),
        };
        Ok(match self.store.edit(id, &prompt, &reply)? {
            Edited::Replaced(new) => match self.store.memory(new)? {
                Some(m) => Reply::ok(json!({ "replaced": id, "memory": memory_json(&m, &self.store.pinned_ids()?) })),
                None => Reply::error(500, format!("memory {new} vanished after the edit")),
            },
            Edited::Missing => Reply::error(404, format!("no memory {id}")),
            Edited::Duplicate(other) => {
                Reply::error(409, format!("memory {other} already says that; forget one of them instead"))
            }
            Edited::Empty => Reply::error(400, "the new text is empty; forget the memory instead"),
        })
    }

    fn session(&self, session: &str) -> anyhow::Result<Reply> {
        let pinned = self.store.pinned_ids()?;
        let turns: Vec<Value> = self.store.session_memories(session)?.iter().map(|m| memory_json(m, &pinned)).collect();
        let mut injections = self.store.injections(Some(session), None, 1000)?;
        injections.reverse();
        let mut known: HashMap<i64, Option<Memory>> = HashMap::new();
        let injected: Vec<Value> = injections
            .iter()
            .map(|i| {
                let memories: Vec<Value> = i
                    .memory_ids
                    .iter()
                    .enumerate()
                    .map(|(rank, id)| {
                        let m = known.entry(*id).or_insert_with(|| self.store.memory(*id).ok().flatten());
                        match m {
                            Some(m) => json!({
                                "rank": rank + 1,
                                "id": id,
                                "present": true,
                                "bank": m.bank,
                                "created_at": m.created_at,
                                "text": clip(&m.content(), PASSAGE),
                                "pinned": pinned.contains(id),
                            }),
                            None => json!({ "rank": rank + 1, "id": id, "present": false }),
                        }
                    })
                    .collect();
                json!({
                    "at": i.at,
                    "harness": i.harness,
                    "bank": i.bank,
                    "event": i.event,
                    "chars": i.chars,
                    "memories": memories,
                })
            })
            .collect();
        if turns.is_empty() && injected.is_empty() {
            return Ok(Reply::error(404, format!("no session {session:?} in the store")));
        }
        Ok(Reply::ok(json!({ "session": session, "turns": turns, "injections": injected })))
    }

    fn backend(&self) -> anyhow::Result<Value> {
        let backend = crate::cmd::status::backend_status(self.env);
        let queue = crate::cmd::status::queue_status(self.env);
        let items = self.store.outbox_items(200)?;
        let parked: Vec<_> = items.iter().filter(|i| i.state == "parked").collect();
        let failing: Vec<_> = items.iter().filter(|i| i.state != "parked" && i.last_error.is_some()).collect();
        let waiting = items.len() - parked.len();
        Ok(json!({ "backend": backend, "queue": queue, "failing": failing, "parked": parked, "waiting": waiting }))
    }
}

fn not_found() -> Reply {
    Reply::error(404, "not found")
}

fn limit(q: &HashMap<String, String>) -> usize {
    q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(PAGE).clamp(1, MAX_PAGE)
}

fn parse_cursor(c: &str) -> Option<(i64, i64)> {
    let (at, id) = c.split_once('_')?;
    Some((at.parse().ok()?, id.parse().ok()?))
}

/// A bank as people read it: a project's path (`~/…` under the home directory), or the key.
pub fn label(env: &Env, bank: &str) -> String {
    match bank.strip_prefix("project:") {
        Some(path) => crate::cmd::tilde(env, std::path::Path::new(path)),
        None => bank.to_string(),
    }
}

fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A memory as the API returns it.
pub fn memory_json(m: &Memory, pinned: &HashSet<i64>) -> Value {
    let text = m.content();
    let mut marks = Vec::new();
    if pinned.contains(&m.id) {
        marks.push("pinned");
    }
    if text.contains("[REDACTED:") {
        marks.push("redacted");
    }
    json!({
        "id": m.id,
        "bank": m.bank,
        "kind": m.kind,
        "text": text,
        "prompt": m.prompt,
        "reply": m.reply,
        "topic": m.topic,
        "harness": m.harness,
        "session": m.session,
        "created_at": m.created_at,
        "marks": marks,
    })
}

fn hit_json(h: &Hit, pinned: &HashSet<i64>) -> Value {
    let mut v = memory_json(&h.memory, pinned);
    let terms: HashSet<&str> = h.terms.iter().map(String::as_str).collect();
    v["score"] = json!(h.score);
    v["passage"] = json!(render::window(&h.memory.content(), &terms, PASSAGE));
    v["matched"] = json!(h.terms);
    if let Some((id, at)) = h.superseded_by {
        v["marks"].as_array_mut().expect("marks").push(json!("superseded"));
        v["superseded_by"] = json!({ "id": id, "created_at": at });
    }
    v
}
