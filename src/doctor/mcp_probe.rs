//! The `ovmem` MCP server entry as the harness would start it: its command, arguments and
//! environment, over stdio, answering `initialize` and `tools/list` within a timeout.

use crate::sys::OwnGroup;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The stdio server an MCP entry describes.
#[derive(Debug, Clone)]
pub struct Server {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

impl Server {
    /// Reads an entry (`{"command", "args", "env"}`, as JSON or TOML made JSON, or opencode's
    /// `{"command": [program, args…], "environment"}`); `Err` says why it is not a stdio server
    /// the doctor can start.
    pub fn from_entry(v: &Value) -> Result<Self, String> {
        let strings = |a: &[Value], what: &str| {
            a.iter()
                .map(|x| x.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()
                .ok_or(format!("{what} is not a string"))
        };
        let (command, mut args) = match v.get("command") {
            Some(Value::String(c)) if !c.is_empty() => (c.clone(), Vec::new()),
            Some(Value::Array(a)) if !a.is_empty() => {
                let mut argv = strings(a, "a part of its `command`")?;
                let program = argv.remove(0);
                (program, argv)
            }
            Some(_) => return Err("its `command` is neither a string nor a list of strings".into()),
            None if v.get("url").is_some() => return Err("it is a remote (URL) server, not `ovmem mcp`".into()),
            None => return Err("it has no `command`".into()),
        };
        match v.get("args") {
            None => {}
            Some(Value::Array(a)) => args.extend(strings(a, "an argument")?),
            Some(_) => return Err("its `args` is not a list".into()),
        }
        let env = match v.get("env").or_else(|| v.get("environment")) {
            Some(Value::Object(m)) => {
                m.iter().filter_map(|(k, x)| Some((k.clone(), x.as_str()?.to_string()))).collect()
            }
            _ => BTreeMap::new(),
        };
        Ok(Self { command, args, env })
    }
}

#[derive(Debug, Default)]
pub struct Probe {
    pub tools: Vec<String>,
    pub elapsed: Duration,
    pub error: Option<String>,
}

/// Starts `s` in `cwd` with `extra` on top of the inherited environment (and the entry's own
/// `env` on top of that, as harnesses do), then asks `initialize` and `tools/list`.
pub fn probe(s: &Server, cwd: &Path, extra: &[(String, String)], timeout: Duration) -> Probe {
    let _pipe = crate::interrupt::PipeGuard::new();
    let started = Instant::now();
    let mut out = Probe::default();
    let path = Path::new(&s.command);
    if path.is_absolute() && !path.is_file() {
        out.error = Some(format!("its command `{}` does not exist", s.command));
        return out;
    }
    let mut child = match Command::new(&s.command)
        .args(&s.args)
        .current_dir(cwd)
        .envs(extra.iter().map(|(k, v)| (k, v)))
        .envs(&s.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .own_group()
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(format!("could not start `{}`: {e}", s.command));
            return out;
        }
    };
    let mut stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let errs = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(stderr, 64 * 1024), &mut s);
        s
    });
    let deadline = started + timeout;
    let ask = |stdin: &mut std::process::ChildStdin, id: u64, method: &str, params: Value| -> Result<Value, String> {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}")
            .and_then(|_| stdin.flush())
            .map_err(|_| format!("it exited without answering `{method}`"))?;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no answer to `{method}` within {} s", timeout.as_secs()));
            }
            let line = match rx.recv_timeout(left) {
                Ok(l) => l,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(format!("it exited without answering `{method}`"))
                }
            };
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                return Err(format!(
                    "it printed something that is not JSON-RPC: `{}`",
                    line.chars().take(100).collect::<String>()
                ));
            };
            if v.get("id") != Some(&json!(id)) {
                continue;
            }
            if let Some(e) = v.get("error") {
                return Err(format!("`{method}` failed: {e}"));
            }
            return Ok(v.get("result").cloned().unwrap_or(Value::Null));
        }
    };
    let result = (|| -> Result<Vec<String>, String> {
        let init = ask(
            &mut stdin,
            1,
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "ovmem-doctor", "version": env!("CARGO_PKG_VERSION")},
            }),
        )?;
        if init.get("protocolVersion").is_none() {
            return Err(format!("its `initialize` answer has no protocolVersion: {init}"));
        }
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        writeln!(stdin, "{note}").map_err(|_| "it exited without answering `tools/list`".to_string())?;
        let list = ask(&mut stdin, 2, "tools/list", json!({}))?;
        let tools: Vec<String> = list
            .get("tools")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|t| t.get("name")?.as_str().map(String::from)).collect())
            .unwrap_or_default();
        if tools.is_empty() {
            return Err("it lists no tools".into());
        }
        Ok(tools)
    })();
    out.elapsed = started.elapsed();
    drop(stdin);
    crate::sys::kill_tree(&mut child);
    let _ = child.wait();
    let _ = reader.join();
    let stderr = errs.join().unwrap_or_default();
    match result {
        Ok(t) => out.tools = t,
        Err(e) => {
            let tail = super::exec::excerpt(&stderr);
            out.error = Some(if tail.is_empty() { e } else { format!("{e} (stderr: {tail})") });
        }
    }
    out
}
