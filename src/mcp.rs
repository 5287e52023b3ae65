//! `ovmem mcp`: a stdio MCP server (newline-delimited JSON-RPC) with memory tools, so agents can
//! also search and add memories on demand. It matters most where hooks cannot inject (the Cline
//! CLI runs its start and prompt hooks fire-and-forget). The bank is the project of the directory
//! the harness names (`CLAUDE_PROJECT_DIR`, `CURSOR_PROJECT_DIR`, else the working directory).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::Result;
use serde_json::{json, Value};

use crate::config::Config;
use crate::env::Env;
use crate::runtime;
use crate::runtime::remote;
use crate::runtime::render::{render, Item};
use crate::store::{self, Store};

const PROTOCOL: &str = "2025-06-18";

/// The tools: `memory_read` only when a memory server is configured (it reads from the server).
fn tools(remote: bool) -> Value {
    let mut list = json!([
        {
            "name": "memory_search",
            "description": "Search ovmem's long-term memory of earlier sessions in this project (facts, decisions, conventions the user stated). Returns the most relevant memories.",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string", "description": "What to look for, in words"},
                "limit": {"type": "integer", "description": "At most this many memories (default 5)"}
            }, "required": ["query"]}
        },
        {
            "name": "memory_add",
            "description": "Remember a fact about this project for later sessions (in any coding agent that uses ovmem).",
            "inputSchema": {"type": "object", "properties": {
                "text": {"type": "string", "description": "The fact, stated on its own"}
            }, "required": ["text"]}
        },
        {
            "name": "memory_recent",
            "description": "The most recent memories of this project.",
            "inputSchema": {"type": "object", "properties": {
                "limit": {"type": "integer", "description": "At most this many memories (default 5)"}
            }}
        }
    ]);
    if remote {
        list.as_array_mut().expect("a list").push(json!({
            "name": "memory_read",
            "description": "The full text of one memory from the memory server, by the id or viking:// URI a search showed. Local file tools cannot open viking:// URIs; this tool can.",
            "inputSchema": {"type": "object", "properties": {
                "id": {"type": "string", "description": "The memory's id or viking:// URI"}
            }, "required": ["id"]}
        }));
    }
    list
}

struct Server {
    env: Env,
    cfg: Config,
    bank: String,
    /// Older names of the project's bank, carried over into it when the store is opened.
    carried: Vec<String>,
    /// The project directory the harness named (for the remote backend's bank).
    dir: PathBuf,
    /// The remote backend, when one is configured (looked up once).
    link: std::cell::OnceCell<Option<remote::Link>>,
}

impl Server {
    fn store(&self) -> Result<Store> {
        let store = Store::open(&self.env.ovmem_home().join("memory.db"), std::time::Duration::from_secs(2))?;
        if let Err(e) = store.carry_over(&self.bank, &self.carried) {
            eprintln!("ovmem mcp: could not carry older banks over into `{}`: {e:#}", self.bank);
        }
        Ok(store)
    }

    fn link(&self) -> Option<&remote::Link> {
        self.link
            .get_or_init(|| match remote::link(&self.env, &self.cfg) {
                Some(Ok(l)) => Some(l),
                Some(Err(e)) => {
                    eprintln!("ovmem mcp: the remote backend is not usable: {e:#}; using the local store");
                    None
                }
                None => None,
            })
            .as_ref()
    }

    fn call(&self, name: &str, args: &Value) -> Result<String> {
        let limit =
            args.get("limit").and_then(Value::as_u64).map_or(self.cfg.recall_limit, |l| l.clamp(1, 50) as usize);
        match name {
            "memory_search" => {
                let q = args.get("query").and_then(Value::as_str).unwrap_or_default();
                let hits = self.store()?.recall(&self.bank, q, limit)?;
                // The memory server first (the team's memory), within its budget; else local only.
                let server = self.link().and_then(|link| {
                    let (bank, _) =
                        remote::target(&link.settings, self.cfg.bank, &self.bank, &self.dir, &self.env.ovmem_home());
                    remote::recall(link, &bank, "mcp", q, limit, link.settings.recall_budget).ok()
                });
                let (server, hits) = remote::merge(server.unwrap_or_default(), hits, limit);
                let terms: Vec<String> =
                    crate::store::rank::Query::parse(q).terms.into_iter().map(|t| t.text).collect();
                let items: Vec<Item> = server
                    .iter()
                    .map(|m| Item { memory: m, terms: &terms, superseded_by: None, with: &[] })
                    .chain(hits.iter().map(Item::from))
                    .collect();
                Ok(render(&items, 40_000).unwrap_or_else(|| "No memories match.".into()))
            }
            "memory_recent" => {
                let recent = self.store()?.recent(&self.bank, limit)?;
                let items: Vec<Item> = recent.iter().map(Item::plain).collect();
                Ok(render(&items, 40_000).unwrap_or_else(|| "No memories yet in this project.".into()))
            }
            "memory_add" => {
                // The limit the hooks store a prompt or a reply with: one huge fact must not slow
                // every prompt of the project.
                let raw = args.get("text").and_then(Value::as_str).unwrap_or_default();
                let max = self.cfg.max_memory_chars;
                let text = runtime::capture::clean(raw, max);
                anyhow::ensure!(!text.is_empty(), "`text` is empty");
                let cut = if raw.chars().count() > max {
                    format!(" It was cut to its first {max} characters (the limit of every stored memory).")
                } else {
                    String::new()
                };
                let store = self.store()?;
                let fact = store::NewMemory {
                    bank: &self.bank,
                    kind: store::Kind::Fact,
                    prompt: &text,
                    harness: Some("mcp"),
                    created_at: store::now(),
                    ..Default::default()
                };
                let added = match self.link() {
                    Some(link) => {
                        let (bank, project) = remote::target(
                            &link.settings,
                            self.cfg.bank,
                            &self.bank,
                            &self.dir,
                            &self.env.ovmem_home(),
                        );
                        let id = store.add_queued(&fact, &remote::outbound(&bank, &project, "completed"))?;
                        remote::flush(
                            &store,
                            link,
                            &self.env.ovmem_home(),
                            link.settings.send_budget,
                            remote::Wait::Never,
                        );
                        id
                    }
                    None => store.add(&fact)?,
                };
                Ok(match added {
                    Some(id) => format!("Remembered (memory #{id}).{cut}"),
                    None => "Already remembered.".into(),
                })
            }
            "memory_read" => {
                let id = args.get("id").and_then(Value::as_str).unwrap_or_default().trim();
                anyhow::ensure!(!id.is_empty(), "`id` is empty");
                let Some(link) = self.link() else {
                    anyhow::bail!("no memory server is configured; `memory_search` shows local memories whole")
                };
                let (bank, _) =
                    remote::target(&link.settings, self.cfg.bank, &self.bank, &self.dir, &self.env.ovmem_home());
                let text = link.remote.read(&bank, id, link.settings.recall_budget)?;
                Ok(runtime::tags::escape(&crate::redact::scrub(&text)).into_owned())
            }
            other => anyhow::bail!("unknown tool `{other}`"),
        }
    }

    /// The reply to one JSON-RPC message: `None` for notifications (and for responses a client
    /// sends back), an error object for anything that is not a valid request.
    fn handle(&self, msg: &Value) -> Option<Value> {
        let Some(obj) = msg.as_object() else {
            return Some(error(Value::Null, INVALID_REQUEST, "a request must be a JSON object"));
        };
        let id = match obj.get("id") {
            None => None,
            Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
            Some(_) => return Some(error(Value::Null, INVALID_REQUEST, "`id` must be a string or a number")),
        };
        let method = match obj.get("method") {
            Some(Value::String(m)) => m.as_str(),
            // A response to a request of ours (we send none) or a malformed message.
            None if obj.contains_key("result") || obj.contains_key("error") => return None,
            _ => return Some(error(id.unwrap_or(Value::Null), INVALID_REQUEST, "`method` must be a string")),
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return id.map(|id| error(id, INVALID_REQUEST, "`jsonrpc` must be \"2.0\""));
        }
        // Notifications get no reply, whatever their method.
        let id = id?;
        if obj.get("params").is_some_and(|p| !p.is_object() && !p.is_array() && !p.is_null()) {
            return Some(error(id, INVALID_PARAMS, "`params` must be an object or an array"));
        }
        let result = match method {
            "initialize" => {
                let version = msg.pointer("/params/protocolVersion").and_then(Value::as_str).unwrap_or(PROTOCOL);
                json!({"protocolVersion": version, "capabilities": {"tools": {}},
                       "serverInfo": {"name": "ovmem", "version": env!("CARGO_PKG_VERSION")}})
            }
            "tools/list" => json!({"tools": tools(self.link().is_some())}),
            "tools/call" => {
                let Some(name) = msg.pointer("/params/name").and_then(Value::as_str) else {
                    return Some(error(id, INVALID_PARAMS, "tools/call needs `params.name`"));
                };
                let args = msg.pointer("/params/arguments").cloned().unwrap_or(json!({}));
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.call(name, &args)))
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("internal error in `{name}`")));
                match outcome {
                    Ok(text) => json!({"content": [{"type": "text", "text": text}]}),
                    Err(e) => json!({"content": [{"type": "text", "text": format!("ovmem: {e:#}")}], "isError": true}),
                }
            }
            "resources/list" => json!({"resources": []}),
            "prompts/list" => json!({"prompts": []}),
            "ping" => json!({}),
            _ => return Some(error(id, METHOD_NOT_FOUND, &format!("unknown method `{method}`"))),
        };
        Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// The reply to one line: a message or a batch (an array of messages).
    fn reply(&self, line: &[u8]) -> Option<Value> {
        let Ok(text) = std::str::from_utf8(line) else {
            return Some(error(Value::Null, PARSE_ERROR, "parse error: the request is not UTF-8"));
        };
        let text = text.trim_start_matches('\u{feff}');
        match serde_json::from_str::<Value>(text) {
            Err(e) => Some(error(Value::Null, PARSE_ERROR, &format!("parse error: {e}"))),
            Ok(Value::Array(batch)) if batch.is_empty() => {
                Some(error(Value::Null, INVALID_REQUEST, "an empty batch is not a request"))
            }
            Ok(Value::Array(batch)) => {
                let replies: Vec<Value> = batch.iter().filter_map(|m| self.handle(m)).collect();
                (!replies.is_empty()).then_some(Value::Array(replies))
            }
            Ok(msg) => self.handle(&msg),
        }
    }
}

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Longest request line; a longer one is skipped to its newline and answered with an error.
const MAX_LINE: usize = 16 << 20;

/// Reads one line (without its `\n` or `\r\n`) into `buf`; `Ok(false)` at end of input. A line
/// longer than [`MAX_LINE`] is drained and reported as `Err(len)` so the server can answer it.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Result<bool, usize>> {
    buf.clear();
    let mut skipped = 0usize;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(if skipped > 0 { Err(skipped) } else { Ok(!buf.is_empty()) });
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if skipped > 0 || buf.len() + take > MAX_LINE + 1 {
            skipped += take + std::mem::take(buf).len();
        } else {
            buf.extend_from_slice(&chunk[..take]);
        }
        r.consume(take);
        if done {
            if skipped > 0 {
                return Ok(Err(skipped));
            }
            while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                buf.pop();
            }
            return Ok(Ok(true));
        }
    }
}

/// Serves MCP on stdin/stdout until stdin closes. Nothing a client sends stops it: malformed
/// JSON, bytes that are not UTF-8, a line too long, a panic in a tool all get an error reply.
pub fn serve() -> Result<i32> {
    crate::home::private_umask();
    let env = Env::from_process()?;
    match crate::home::prepare(&env) {
        Err(e) if crate::home::is_refused(&e) => return Err(crate::cmd::Refusal(e.to_string()).into()),
        Err(e) => eprintln!("ovmem mcp: could not prepare `{}`: {e}", env.ovmem_home().display()),
        Ok(crate::home::Prepared { note: Some(note), .. }) => eprintln!("ovmem mcp: {note}"),
        Ok(_) => {}
    }
    // Like a hook: a setting it cannot use costs only that setting.
    let (cfg, problems) = Config::load_lenient(&env);
    for problem in problems {
        eprintln!("ovmem mcp: config: {problem}");
    }
    for problem in crate::redact::configure(&cfg.redact_patterns) {
        eprintln!("ovmem mcp: {problem}");
    }
    let dir = ["CLAUDE_PROJECT_DIR", "CURSOR_PROJECT_DIR"]
        .iter()
        .find_map(|k| env.var(k).map(PathBuf::from))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    let bank = crate::runtime::bank_for(cfg.bank, &dir, "mcp", "mcp", &env.ovmem_home());
    let server = Server { env, cfg, bank: bank.key, carried: bank.carried, dir, link: std::cell::OnceCell::new() };
    let mut input = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let mut buf = Vec::new();
    loop {
        let reply = match read_line(&mut input, &mut buf)? {
            Ok(false) => break,
            Ok(true) if buf.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(true) => server.reply(&buf),
            Err(len) => Some(error(
                Value::Null,
                INVALID_REQUEST,
                &format!("request of {len} bytes is larger than {} MiB", MAX_LINE >> 20),
            )),
        };
        if let Some(r) = reply {
            writeln!(out, "{r}")?;
            out.flush()?;
        }
    }
    Ok(0)
}
