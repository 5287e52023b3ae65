//! Where the doctor's hooks run: a throwaway `OVMEM_HOME` holding a copy of the user's
//! `config.toml` (without `[backend]`) and one seeded memory per harness, so that every hook runs
//! its exact command line and real code path (recall, injection, capture, the guard) while the
//! user's memories, spool, logs and memory server see nothing of it. The directory is private
//! (0700) and removed when the check ends.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::config::Config;
use crate::env::Env;
use crate::harness::{Adapter, Canonical};
use crate::store::Store;

pub struct Sandbox {
    _dir: tempfile::TempDir,
    /// The `OVMEM_HOME` the hooks get.
    pub home: PathBuf,
    /// A project directory (a git work tree) for user-scope hooks to run in.
    pub project: PathBuf,
    /// The user's config (with the environment's overrides), as the hooks read it: a setting they
    /// cannot use has its default here too (the doctor reports it as a finding of its own).
    pub cfg: Config,
    /// Where synthetic transcripts go.
    pub scratch: PathBuf,
}

impl Sandbox {
    pub fn new(env: &Env) -> Result<Self> {
        let path = Config::path(env);
        let (cfg, _) = Config::load_lenient(env);
        // The file as the hooks read it (lossy UTF-8), without `[backend]`: memories the doctor's
        // hooks capture must never reach the user's memory server. One that is not TOML is not
        // copied: the hooks then run on the defaults, as the user's own hooks do meanwhile.
        let copy = crate::fsx::read_opt(&path).ok().flatten().and_then(|bytes| {
            let mut doc = crate::edit::toml::parse(&String::from_utf8_lossy(&bytes)).ok()?;
            doc.remove("backend");
            Some(doc.to_string())
        });
        let dir = tempfile::Builder::new()
            .prefix("ovmem-doctor-")
            .tempdir()
            .context("could not create a temporary directory")?;
        let home = dir.path().join("ovmem-home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&home)?;
        crate::home::mark(&home);
        std::fs::create_dir_all(project.join(".git"))?;
        if let Some(c) = copy {
            crate::fsx::write_atomic(&home.join("config.toml"), c.as_bytes(), Some(0o600))?;
        }
        let home = std::fs::canonicalize(&home)?;
        let project = std::fs::canonicalize(&project)?;
        let scratch = std::fs::canonicalize(dir.path())?;
        Ok(Self { _dir: dir, home, project, cfg, scratch })
    }

    /// What the doctor's hook processes get on top of the user's environment.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("OVMEM_HOME".into(), self.home.to_string_lossy().into_owned()),
            // `OVMEM_BACKEND` in the user's environment would win over the config copy.
            ("OVMEM_BACKEND".into(), "local".into()),
        ]
    }

    fn store(&self) -> Result<Store> {
        Store::open(&self.home.join("memory.db"), Duration::from_secs(2))
    }

    /// Stores one memory in `bank`, for the start and prompt hooks to recall.
    pub fn seed(&self, bank: &str, harness: &str, text: &str) -> Result<()> {
        self.store()?.add_fact(bank, text, Some(harness), crate::store::now())?;
        Ok(())
    }

    /// Whether a memory holding `needle` was stored in `bank` (what a stop hook captured).
    pub fn stored(&self, bank: &str, needle: &str) -> bool {
        self.store()
            .and_then(|s| s.list(Some(bank), None))
            .is_ok_and(|ms| ms.iter().any(|m| m.content().contains(needle)))
    }

    fn log(&self) -> PathBuf {
        self.home.join("logs").join("hook.log")
    }

    /// How far the hook log is written now.
    pub fn log_mark(&self) -> u64 {
        std::fs::metadata(self.log()).map(|m| m.len()).unwrap_or(0)
    }

    /// The errors the runtime logged since `mark` (each hook answers with a no-op on an error and
    /// says why only there), but for the config's problems: every hook logs those, and the doctor
    /// reports each once, as a finding of its own.
    pub fn logged_errors(&self, mark: u64) -> Vec<String> {
        let Ok(bytes) = std::fs::read(self.log()) else { return Vec::new() };
        let from = (mark as usize).min(bytes.len());
        String::from_utf8_lossy(&bytes[from..])
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["level"] == "error")
            .filter_map(|v| v["msg"].as_str().map(String::from))
            .filter(|m| !crate::config::Problem::is_log_message(m))
            .collect()
    }
}

/// Sets a dotted path in a JSON object (see `cmd::demo`).
fn put(v: &mut Value, aliases: &[String], value: Value) {
    if let Some(path) = aliases.iter().find(|p| *p != ".") {
        crate::cmd::demo::set(v, path, value);
    }
}

/// A synthetic payload for `native`, in the harness's own field names (its adapter's first
/// aliases): the session, the working directory, the prompt (prompt events) or the reply (stop
/// events), and a harmless tool call for a tool guard.
pub fn payload(
    a: &Adapter,
    native: &str,
    session: &str,
    cwd: &Path,
    (prompt, reply): (&str, &str),
    scratch: &Path,
) -> Value {
    let kind = a.events.get(native).copied();
    // A stop carries the reply; its prompt comes from the prompt hook's buffer, as in a session.
    let prompt = matches!(kind, Some(Canonical::Prompt)).then_some(prompt);
    let reply = matches!(kind, Some(Canonical::Stop)).then_some(reply);
    let mut v = crate::cmd::demo::payload(a, session, cwd, prompt, reply, scratch);
    if kind == Some(Canonical::PreTool) {
        let file = cwd.join("README.md").to_string_lossy().into_owned();
        let input = json!({"file_path": file, "path": file, "command": format!("ls {}", cwd.display())});
        if !a.tool_by_event.contains_key(native) {
            let tool = a.guard_tools.first().cloned().unwrap_or_else(|| "Read".into());
            put(&mut v, &a.fields.tool, Value::String(tool));
        }
        if a.fields.tool_input.iter().any(|p| p != ".") {
            put(&mut v, &a.fields.tool_input, input);
        } else if let (Some(obj), Value::Object(m)) = (v.as_object_mut(), input) {
            obj.extend(m);
        }
    }
    v
}
