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
use crate::store::{self, Store};

const PROTOCOL: &str = "2025-06-18";

fn tools() -> Value {
    json!([
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
    ])
}

struct Server {
    env: Env,
    cfg: Config,
    bank: String,
}

impl Server {
    fn store(&self) -> Result<Store> {
        Store::open(&self.env.ovmem_home().join("memory.db"), std::time::Duration::from_secs(2))
    }

    fn call(&self, name: &str, args: &Value) -> Result<String> {
        let limit =
            args.get("limit").and_then(Value::as_u64).map_or(self.cfg.recall_limit, |l| l.clamp(1, 50) as usize);
        match name {
            "memory_search" => {
                let q = args.get("query").and_then(Value::as_str).unwrap_or_default();
                let hits = self.store()?.recall(&self.bank, q, limit)?;
                Ok(runtime::render(&hits, 40_000).unwrap_or_else(|| "No memories match.".into()))
            }
            "memory_recent" => {
                let hits = self.store()?.recent(&self.bank, limit)?;
                Ok(runtime::render(&hits, 40_000).unwrap_or_else(|| "No memories yet in this project.".into()))
            }
            "memory_add" => {
                let text =
                    runtime::capture::strip_injected(args.get("text").and_then(Value::as_str).unwrap_or_default());
                anyhow::ensure!(!text.is_empty(), "`text` is empty");
                Ok(match self.store()?.add(&self.bank, &text, Some("mcp"), None, store::now())? {
                    Some(id) => format!("Remembered (memory #{id})."),
                    None => "Already remembered.".into(),
                })
            }
            other => anyhow::bail!("unknown tool `{other}`"),
        }
    }

    fn handle(&self, msg: &Value) -> Option<Value> {
        let id = msg.get("id")?.clone();
        let method = msg.get("method").and_then(Value::as_str).unwrap_or_default();
        let result = match method {
            "initialize" => {
                let version = msg.pointer("/params/protocolVersion").and_then(Value::as_str).unwrap_or(PROTOCOL);
                json!({"protocolVersion": version, "capabilities": {"tools": {}},
                       "serverInfo": {"name": "ovmem", "version": env!("CARGO_PKG_VERSION")}})
            }
            "tools/list" => json!({"tools": tools()}),
            "tools/call" => {
                let name = msg.pointer("/params/name").and_then(Value::as_str).unwrap_or_default();
                let args = msg.pointer("/params/arguments").cloned().unwrap_or(json!({}));
                match self.call(name, &args) {
                    Ok(text) => json!({"content": [{"type": "text", "text": text}]}),
                    Err(e) => json!({"content": [{"type": "text", "text": format!("ovmem: {e:#}")}], "isError": true}),
                }
            }
            "resources/list" => json!({"resources": []}),
            "prompts/list" => json!({"prompts": []}),
            "ping" => json!({}),
            _ => {
                return Some(
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("unknown method `{method}`")}}),
                )
            }
        };
        Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }
}

/// Serves MCP on stdin/stdout until stdin closes.
pub fn serve() -> Result<i32> {
    let env = Env::from_process()?;
    let cfg = Config::load(&env)?;
    let dir = ["CLAUDE_PROJECT_DIR", "CURSOR_PROJECT_DIR"]
        .iter()
        .find_map(|k| env.var(k).map(PathBuf::from))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    let bank = crate::project::bank(cfg.bank, &dir, "mcp", "mcp");
    let server = Server { env, cfg, bank };
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(msg) => server.handle(&msg),
            Err(e) => Some(
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("parse error: {e}")}}),
            ),
        };
        if let Some(r) = reply {
            writeln!(out, "{r}")?;
            out.flush()?;
        }
    }
    Ok(0)
}
