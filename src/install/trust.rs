//! Codex (and its fork TRAE CLI) run a hook only once it is trusted by hash, and skip untrusted
//! ones silently. ovmem asks the harness itself which hooks it sees (`codex app-server`:
//! `hooks/list`, and `config/read` for the config file it keeps trust in), picks exactly the
//! hooks whose command line is one ovmem wrote (from the receipt) in the file ovmem wrote, and
//! writes their `hooks.state."<key>".trusted_hash` into that TOML file as one more edit of the
//! install's transaction (journaled, byte-preserving, mode kept), then lists again to confirm.
//! A hook merely named like ovmem is never trusted.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use super::editor::{Chain, Edit, Editor, TargetPlan};
use super::{Action, EntryNote, Refused, Target};
use crate::edit::toml as layout;
use crate::env::Env;
use crate::fsx::{self, journal::Mode};
use crate::interrupt;
use crate::receipt::{Receipt, TrustConfig, TrustRecord};

/// How long install waits on the harness's app-server (it may start slowly on a cold machine).
const TIMEOUT: Duration = Duration::from_secs(20);
/// How long a report (status, check, doctor) waits: a hung app-server makes the trust state
/// "unknown", never a command that sits for 20 s.
const REPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// One hook as `hooks/list` reports it.
#[derive(Debug, Clone)]
pub struct ListedHook {
    pub key: String,
    pub command: String,
    pub source_path: PathBuf,
    pub current_hash: String,
    pub trust_status: String,
}

impl ListedHook {
    pub fn trusted(&self) -> bool {
        self.trust_status == "trusted"
    }
}

pub struct AppServer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    deadline: Instant,
    budget: Duration,
}

/// The app-server arguments for a harness's trust mechanism.
fn server_args(mechanism: &str) -> Result<&'static [&'static str]> {
    match mechanism {
        "codex-app-server" => Ok(&["app-server"]),
        other => bail!("unknown trust mechanism `{other}` in a manifest"),
    }
}

impl AppServer {
    /// Starts the harness's app-server in `cwd`, with a `PATH` of absolute directories only.
    pub fn start(env: &Env, binary: &Path, mechanism: &str, cwd: &Path, budget: Duration) -> Result<Self> {
        let args = server_args(mechanism)?;
        let mut child = Command::new(binary)
            .args(args)
            .current_dir(cwd)
            .env("PATH", env.safe_path())
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
        let mut s = Self { child, stdin, lines, next_id: 1, deadline: Instant::now() + budget, budget };
        s.call("initialize", json!({"clientInfo": {"name": "ovmem", "version": env!("CARGO_PKG_VERSION")}}))?;
        s.send(&json!({"jsonrpc": "2.0", "method": "initialized"}))?;
        Ok(s)
    }

    fn send(&mut self, v: &Value) -> Result<()> {
        let _pipe = crate::interrupt::PipeGuard::new();
        writeln!(self.stdin, "{v}").context("the app-server closed its input")?;
        self.stdin.flush()?;
        Ok(())
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            interrupt::check()?;
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("no answer to `{method}` within {}s", self.budget.as_secs());
            }
            let line = match self.lines.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(l) => l,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => bail!("the app-server exited before answering `{method}`"),
            };
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

    /// Every hook the harness sees for `cwd`, and the warnings and errors it reported.
    pub fn list(&mut self, cwd: &Path) -> Result<(Vec<ListedHook>, Vec<String>)> {
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

    /// The user config file the harness keeps trust in.
    pub fn user_config(&mut self) -> Result<Option<PathBuf>> {
        let r = self.call("config/read", json!({"includeLayers": true}))?;
        Ok(r.get("layers").and_then(Value::as_array).into_iter().flatten().find_map(|l| {
            let name = l.get("name")?;
            let file = name.get("file")?.as_str()?;
            (name.get("type")?.as_str()? == "user").then(|| PathBuf::from(file))
        }))
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((fsx::resolve_in(a, None), fsx::resolve_in(b, None)), (Ok(x), Ok(y)) if x == y)
}

/// The listed hooks that are exactly ovmem's: their command is one ovmem wrote, in the file it
/// wrote it to.
pub fn mine<'a>(hooks: &'a [ListedHook], hooks_file: &Path, commands: &BTreeSet<String>) -> Vec<&'a ListedHook> {
    hooks.iter().filter(|h| commands.contains(&h.command) && same_file(&h.source_path, hooks_file)).collect()
}

/// The exact command lines a receipt says ovmem wrote into `hooks_file`.
pub fn commands_in(r: &Receipt, hooks_file: &Path) -> BTreeSet<String> {
    r.files
        .iter()
        .filter(|f| f.path == hooks_file)
        .flat_map(|f| f.entries.iter().flat_map(|e| e.commands.clone()))
        .collect()
}

/// ovmem's hooks of `hooks_file` as the harness lists them: (trusted, pending keys).
pub fn status(env: &Env, t: &Target, binary: &Path, receipt: &Receipt) -> Result<(usize, Vec<String>)> {
    let mechanism = t.harness.manifest.trust.as_deref().unwrap_or_default();
    let hooks_file = t.location()?;
    let commands = commands_in(receipt, &hooks_file);
    let cwd = t.project.clone().unwrap_or_else(|| env.home.clone());
    let mut server = AppServer::start(env, binary, mechanism, &cwd, REPORT_TIMEOUT)?;
    let (hooks, _) = server.list(&cwd)?;
    let mine = mine(&hooks, &hooks_file, &commands);
    let pending: Vec<String> = mine.iter().filter(|h| !h.trusted()).map(|h| h.key.clone()).collect();
    Ok((mine.len() - pending.len(), pending))
}

fn parse_toml(path: &Path, text: &str) -> Result<toml_edit::DocumentMut> {
    layout::parse(text).map_err(|e: layout::Unreadable| {
        Refused::Unparseable { path: path.to_path_buf(), detail: e.to_string().trim().to_string() }.into()
    })
}

/// Adds `hooks.state."<key>".trusted_hash` for each record.
pub struct Trust {
    pub path: PathBuf,
    pub records: Vec<TrustRecord>,
}

impl Editor for Trust {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let mut doc = parse_toml(&self.path, text.unwrap_or(""))?;
        let hooks = doc.entry("hooks").or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        });
        let hooks = hooks
            .as_table_like_mut()
            .ok_or_else(|| Refused::Unparseable { path: self.path.clone(), detail: "`hooks` is not a table".into() })?;
        if hooks.get("state").is_none() {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            hooks.insert("state", toml_edit::Item::Table(t));
        }
        let state = hooks.get_mut("state").and_then(|s| s.as_table_like_mut()).ok_or_else(|| Refused::Unparseable {
            path: self.path.clone(),
            detail: "`hooks.state` is not a table".into(),
        })?;
        for r in &self.records {
            let mut t = toml_edit::Table::new();
            t.insert("trusted_hash", toml_edit::value(r.hash.clone()));
            state.insert(&r.key, toml_edit::Item::Table(t));
        }
        Ok(Edit { after: Some(layout::render(text.unwrap_or(""), &doc)), ..Edit::default() })
    }
}

/// Removes the trust records ovmem wrote (only those whose hash is still the one it wrote); when
/// what is left equals the config as it was before ovmem's first record in values, and the file
/// has the same comments as then, those exact bytes come back (the file goes when ovmem created
/// it).
pub struct Untrust {
    pub path: PathBuf,
    pub records: Vec<TrustRecord>,
    pub before: Option<TrustConfig>,
}

impl Editor for Untrust {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let Some(text) = text else { return Ok(Edit::keep(None)) };
        let mut doc = parse_toml(&self.path, text)?;
        let mut removed = 0;
        if let Some(state) = doc.get_mut("hooks").and_then(|h| h.get_mut("state")).and_then(|s| s.as_table_like_mut()) {
            for r in &self.records {
                let matches = state.get(&r.key).and_then(|t| t.get("trusted_hash")).and_then(|h| h.as_str())
                    == Some(r.hash.as_str());
                if matches {
                    state.remove(&r.key);
                    removed += 1;
                }
            }
        }
        if removed == 0 {
            return Ok(Edit::keep(Some(text)));
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
        let out = layout::render(text, &doc);
        let before = self.before.as_ref().filter(|b| b.path == self.path);
        let after = match before.map(|b| b.before.as_deref()) {
            Some(Some(snap)) => {
                let same_values = layout::values(snap).is_some() && layout::values(snap) == layout::values(&out);
                // Comments as the user left them (ovmem's records have none): `toml_edit` drops a
                // comment that sits above a removed table, the snapshot still has it.
                Some(if same_values && layout::comments(snap) == layout::comments(text) {
                    snap.to_string()
                } else {
                    out
                })
            }
            Some(None) if layout::strip_bom(&out).0.trim().is_empty() => None,
            _ => Some(out),
        };
        let note = EntryNote::with("trust", Action::Removed, format!("{removed} trust record(s)"));
        Ok(Edit { after, notes: vec![note], ..Edit::default() })
    }
}

/// Uninstall: the trust records the receipt lists come out of their config, and its mode back.
/// When another editor of this plan changes the same file (ovmem's `[mcp_servers.ovmem]` in
/// Codex's `config.toml`), both become one change, in a defined order: that editor first (it cuts
/// out its own bytes), then the trust records, whose "before" snapshot (taken after the MCP entry
/// went in) is passed through the same first editor, so the two removals give back the file as it
/// was before ovmem.
pub fn plan_untrust(p: &mut TargetPlan) -> Result<()> {
    let Some(base) = p.base.clone() else { return Ok(()) };
    let mut files: Vec<PathBuf> = base.trust.iter().map(|r| r.config.clone()).collect();
    files.sort();
    files.dedup();
    for file in files {
        let records: Vec<TrustRecord> = base.trust.iter().filter(|r| r.config == file).cloned().collect();
        let before = base.trust_config.clone();
        let mode = match before.as_ref().filter(|b| b.path == file).and_then(|b| b.mode) {
            Some(m) => Mode::Set(m),
            None => Mode::Keep { new: 0o644 },
        };
        // Trust lives in the user's harness config, never in the project.
        let real = fsx::resolve_in(&file, None)?;
        if let Some(shared) = p.files.iter_mut().find(|f| f.real == real) {
            let first = std::mem::replace(&mut shared.editor, Box::new(Keep));
            let chain = then_untrust(first, Untrust { path: file.clone(), records, before });
            shared.set_edit(chain.edit(shared.before.as_deref())?);
            shared.editor = Box::new(chain);
            if let Mode::Set(_) = mode {
                shared.mode = mode;
            }
            continue;
        }
        let text = fsx::read_opt(&real)?.map(|b| String::from_utf8_lossy(&b).into_owned());
        let editor = Untrust { path: file.clone(), records, before };
        let edit = editor.edit(text.as_deref())?;
        let mut f = super::editor::FilePlan {
            path: file,
            real,
            before: text.map(Into::into),
            after: None,
            edit: Default::default(),
            mode,
            editor: Box::new(editor),
            backups: Vec::new(),
            backup_hash: None,
            new_dirs: Vec::new(),
        };
        f.set_edit(edit);
        p.files.push(f);
    }
    Ok(())
}

/// `first`, then `untrust`, as one editor of their shared file; the trust config's snapshot is
/// taken through `first` (see [`plan_untrust`]).
pub fn then_untrust(first: Box<dyn Editor>, mut untrust: Untrust) -> Chain {
    if let Some(b) = untrust.before.as_mut().filter(|b| b.path == untrust.path) {
        if let Some(snap) = b.before.clone() {
            if let Ok(e) = first.edit(Some(&snap)) {
                b.before = e.after;
            }
        }
    }
    Chain(vec![first, Box::new(untrust)])
}

/// An editor that leaves a file as it is (a placeholder while editors are combined).
struct Keep;

impl Editor for Keep {
    fn edit(&self, current: Option<&str>) -> Result<Edit> {
        Ok(Edit::keep(current))
    }
}

/// The cwd the harness lists a target's hooks for.
pub fn cwd(t: &Target) -> PathBuf {
    t.project.clone().unwrap_or_else(|| t.env.home.clone())
}

pub fn manual_step(t: &Target) -> String {
    let h = t.harness;
    format!(
        "{} runs hooks only once they are trusted: start `{}`, open `/hooks`, and trust the ovmem entries",
        h.manifest.name,
        h.manifest.binaries.first().map(String::as_str).unwrap_or(h.id())
    )
}

/// What the first listing found: the config to write to, and what to trust.
pub struct Pending {
    pub server: AppServer,
    pub config: PathBuf,
    pub todo: Vec<TrustRecord>,
    pub already: usize,
    pub listed: usize,
    pub problems: Vec<String>,
}

/// Lists the harness's hooks and works out which of ovmem's still need trust.
pub fn prepare(t: &Target, binary: &Path, hooks_file: &Path, commands: &BTreeSet<String>) -> Result<Pending> {
    let mechanism = t.harness.manifest.trust.as_deref().unwrap_or_default();
    let cwd = cwd(t);
    let mut server = AppServer::start(t.env, binary, mechanism, &cwd, TIMEOUT)?;
    let (hooks, problems) = server.list(&cwd)?;
    let mine = mine(&hooks, hooks_file, commands);
    let config = match server.user_config()? {
        Some(c) => c,
        None => match &t.harness.manifest.trust_config {
            Some(c) => t.env.expand(c, None)?,
            None => return Err(anyhow!("{} did not say which config file keeps hook trust", t.harness.manifest.name)),
        },
    };
    let todo = mine
        .iter()
        .filter(|h| !h.trusted())
        .map(|h| TrustRecord { config: config.clone(), key: h.key.clone(), hash: h.current_hash.clone() })
        .collect();
    let already = mine.iter().filter(|h| h.trusted()).count();
    Ok(Pending { server, config, todo, already, listed: mine.len(), problems })
}

/// After the records are written: (trusted, pending) among ovmem's hooks.
pub fn confirm(p: &mut Pending, t: &Target, hooks_file: &Path, commands: &BTreeSet<String>) -> Result<(usize, usize)> {
    let (hooks, _) = p.server.list(&cwd(t))?;
    let mine = mine(&hooks, hooks_file, commands);
    let trusted = mine.iter().filter(|h| h.trusted()).count();
    Ok((trusted, mine.len() - trusted))
}
