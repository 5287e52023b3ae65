//! Codex (and its fork TRAE CLI) run a hook only once it is trusted by hash, and skip untrusted
//! ones silently. ovmem trusts exactly its own hooks the way Codex's `/hooks` UI does: through
//! `codex app-server` (`hooks/list`, then `config/batchWrite` of `hooks.state."<key>".trusted_hash`),
//! then lists again to confirm. Nobody else's hooks are ever trusted.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use crate::fsx;
use crate::harness;
use crate::receipt::TrustRecord;

const TIMEOUT: Duration = Duration::from_secs(20);

/// One hook as `hooks/list` reports it.
#[derive(Debug, Clone)]
pub struct ListedHook {
    pub key: String,
    pub command: String,
    pub source_path: PathBuf,
    pub current_hash: String,
    pub trust_status: String,
}

struct AppServer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    deadline: Instant,
}

impl AppServer {
    fn start(binary: &Path, args: &[&str], cwd: &Path) -> Result<Self> {
        let mut child = Command::new(binary)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("could not start `{} {}`", binary.display(), args.join(" ")))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Self { child, stdin, lines, next_id: 1, deadline: Instant::now() + TIMEOUT };
        s.call("initialize", json!({"clientInfo": {"name": "ovmem", "version": env!("CARGO_PKG_VERSION")}}))?;
        s.send(&json!({"jsonrpc": "2.0", "method": "initialized"}))?;
        Ok(s)
    }

    fn send(&mut self, v: &Value) -> Result<()> {
        writeln!(self.stdin, "{v}").context("the app-server closed its input")?;
        self.stdin.flush()?;
        Ok(())
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .map_err(|_| anyhow!("no answer to `{method}` within {}s", TIMEOUT.as_secs()))?;
            let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
            if v.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(e) = v.get("error") {
                bail!("`{method}` failed: {}", e.get("message").and_then(Value::as_str).unwrap_or(&e.to_string()));
            }
            return Ok(v.get("result").cloned().unwrap_or(Value::Null));
        }
    }

    fn list(&mut self, cwd: &Path) -> Result<(Vec<ListedHook>, Vec<String>)> {
        let r = self.call("hooks/list", json!({"cwds": [cwd]}))?;
        let mut hooks = Vec::new();
        let mut problems = Vec::new();
        for layer in r.get("data").and_then(Value::as_array).into_iter().flatten() {
            for h in layer.get("hooks").and_then(Value::as_array).into_iter().flatten() {
                let s = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                hooks.push(ListedHook {
                    key: s("key"),
                    command: s("command"),
                    source_path: PathBuf::from(s("sourcePath")),
                    current_hash: s("currentHash"),
                    trust_status: s("trustStatus"),
                });
            }
            for k in ["warnings", "errors"] {
                for w in layer.get(k).and_then(Value::as_array).into_iter().flatten() {
                    problems.push(w.as_str().map(String::from).unwrap_or_else(|| w.to_string()));
                }
            }
        }
        Ok((hooks, problems))
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The app-server arguments for a harness's trust mechanism.
fn server_args(mechanism: &str) -> Result<&'static [&'static str]> {
    match mechanism {
        "codex-app-server" => Ok(&["app-server"]),
        other => bail!("unknown trust mechanism `{other}` in a manifest"),
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((fsx::resolve(a), fsx::resolve(b)), (Ok(x), Ok(y)) if x == y)
}

fn ours<'a>(hooks: &'a [ListedHook], harness_id: &str, hooks_file: &Path) -> Vec<&'a ListedHook> {
    hooks
        .iter()
        .filter(|h| {
            same_file(&h.source_path, hooks_file) && harness::is_ovmem_hook_command(&h.command, harness_id, None)
        })
        .collect()
}

#[derive(Debug, Default)]
pub struct TrustOutcome {
    /// Trust records written now.
    pub written: Vec<TrustRecord>,
    /// ovmem hooks still not trusted after the attempt (keys).
    pub pending: Vec<String>,
    /// ovmem hooks found trusted.
    pub trusted: usize,
    pub problems: Vec<String>,
}

/// Trusts every ovmem hook of `hooks_file` that Codex lists for `cwd` and does not trust yet.
pub fn trust(binary: &Path, mechanism: &str, harness_id: &str, hooks_file: &Path, cwd: &Path) -> Result<TrustOutcome> {
    let mut server = AppServer::start(binary, server_args(mechanism)?, cwd)?;
    let (hooks, problems) = server.list(cwd)?;
    let todo: Vec<&ListedHook> =
        ours(&hooks, harness_id, hooks_file).into_iter().filter(|h| h.trust_status != "trusted").collect();
    let mut out = TrustOutcome { problems, ..Default::default() };
    if !todo.is_empty() {
        let edits: Vec<Value> = todo
            .iter()
            .map(|h| {
                json!({"keyPath": format!("hooks.state.\"{}\"", h.key), "mergeStrategy": "upsert",
                       "value": {"trusted_hash": h.current_hash}})
            })
            .collect();
        let r = server.call("config/batchWrite", json!({"edits": edits}))?;
        let config = r.get("filePath").and_then(Value::as_str).map(PathBuf::from).unwrap_or_default();
        out.written = todo
            .iter()
            .map(|h| TrustRecord { config: config.clone(), key: h.key.clone(), hash: h.current_hash.clone() })
            .collect();
    }
    let (hooks, _) = server.list(cwd)?;
    for h in ours(&hooks, harness_id, hooks_file) {
        if h.trust_status == "trusted" {
            out.trusted += 1;
        } else {
            out.pending.push(h.key.clone());
        }
    }
    Ok(out)
}

/// ovmem's hooks of `hooks_file` as Codex lists them: (trusted, pending keys).
pub fn status(
    binary: &Path,
    mechanism: &str,
    harness_id: &str,
    hooks_file: &Path,
    cwd: &Path,
) -> Result<(usize, Vec<String>)> {
    let mut server = AppServer::start(binary, server_args(mechanism)?, cwd)?;
    let (hooks, _) = server.list(cwd)?;
    let mine = ours(&hooks, harness_id, hooks_file);
    let pending: Vec<String> = mine.iter().filter(|h| h.trust_status != "trusted").map(|h| h.key.clone()).collect();
    Ok((mine.len() - pending.len(), pending))
}

/// Saves `config` as it is before ovmem's first trust write, so uninstall can give back the
/// exact bytes (Codex's own writer moves comments around when it adds a table).
pub fn snapshot(ovmem_home: &Path, config: &Path) -> Result<Option<PathBuf>> {
    let Some(bytes) = fsx::read_opt(config)? else { return Ok(None) };
    let dir = ovmem_home.join("backups");
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create `{}`", dir.display()))?;
    let path = dir.join(format!("trust-{}.toml", &fsx::sha256_hex(config.to_string_lossy().as_bytes())[..12]));
    if !path.exists() {
        fsx::write_atomic(&path, &bytes, Some(0o600))?;
    }
    Ok(Some(path))
}

/// Comment lines of a TOML text, sorted: a cheap check that nobody added or changed a comment.
fn comments(text: &str) -> Vec<String> {
    let mut c: Vec<String> = text.lines().filter_map(|l| l.find('#').map(|i| l[i..].trim().to_string())).collect();
    c.sort();
    c
}

/// Removes trust records ovmem wrote (only those whose hash is still the one ovmem wrote),
/// editing the config TOML in place; when what is left equals the pre-trust `snapshot` in values
/// and comments, the snapshot's exact bytes are written back. Returns how many were removed.
pub fn untrust(records: &[TrustRecord], snapshot: Option<&Path>) -> Result<usize> {
    let mut removed = 0;
    let mut by_file: Vec<&Path> = records.iter().map(|r| r.config.as_path()).collect();
    by_file.sort();
    by_file.dedup();
    for file in by_file {
        let real = fsx::resolve(file)?;
        let Some(bytes) = fsx::read_opt(&real)? else { continue };
        let text = String::from_utf8(bytes).with_context(|| format!("`{}` is not UTF-8", real.display()))?;
        let mut doc: toml_edit::DocumentMut = text
            .parse()
            .map_err(|e| anyhow!("`{}` does not parse ({e}); its trust records were left in place", real.display()))?;
        let mut changed = false;
        if let Some(state) = doc.get_mut("hooks").and_then(|h| h.get_mut("state")).and_then(|s| s.as_table_like_mut()) {
            for r in records.iter().filter(|r| r.config == file) {
                let matches = state.get(&r.key).and_then(|t| t.get("trusted_hash")).and_then(|h| h.as_str())
                    == Some(r.hash.as_str());
                if matches {
                    state.remove(&r.key);
                    removed += 1;
                    changed = true;
                }
            }
        }
        if !changed {
            continue;
        }
        let state_empty =
            doc.get("hooks").and_then(|h| h.get("state")).and_then(|s| s.as_table_like()).is_some_and(|t| t.is_empty());
        if state_empty {
            if let Some(h) = doc.get_mut("hooks").and_then(|h| h.as_table_like_mut()) {
                h.remove("state");
            }
            if doc.get("hooks").and_then(|h| h.as_table_like()).is_some_and(|t| t.is_empty()) {
                doc.remove("hooks");
            }
        }
        let mut out = doc.to_string();
        if let Some(snap) =
            snapshot.and_then(|p| fsx::read_opt(p).ok().flatten()).and_then(|b| String::from_utf8(b).ok())
        {
            let same_values = snap.parse::<toml::Table>().ok() == out.parse::<toml::Table>().ok();
            if same_values && comments(&snap) == comments(&out) {
                out = snap;
            }
        }
        fsx::write_atomic(&real, out.as_bytes(), None)?;
    }
    Ok(removed)
}
