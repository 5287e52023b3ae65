//! The `ovmem` MCP server entry in a JSON object of servers (Claude Code's `~/.claude.json`,
//! Cursor's `mcp.json`, Cline's MCP settings), with the containers and the file ovmem created.
//! TOML configs (Codex, TRAE CLI) go to [`super::mcp_toml`].

use std::path::PathBuf;

use anyhow::Result;
use serde_json::Value;

use super::editor::{Chain, Edit, Editor, TargetPlan};
use super::json_hooks::{note_empty, parse, restore_empty};
use super::marker::{self, Owner};
use super::{still_ours, Action, EntryNote, Options, Refused};
use crate::fsx::journal::Mode;
use crate::harness::McpFormat;
use crate::receipt::{self, EmptyContainer, Entry, FileRecord};

/// The name ovmem's MCP server is registered under.
pub const NAME: &str = "ovmem";

/// The MCP entry of a file's record (a file can hold hooks and the server both: Qwen Code, Auggie).
fn mcp_entry(r: &FileRecord) -> Option<&Entry> {
    r.entries.iter().find(|e| e.event == "mcp")
}

pub fn plan(p: &mut TargetPlan, install: bool, opts: Options) -> Result<()> {
    let t = p.target;
    let Some(key) = t.harness.manifest.mcp_key.clone() else { return Ok(()) };
    let mut paths: Vec<PathBuf> = t.mcp_file()?.into_iter().collect();
    if !install {
        // The files the receipt names too: an install made under another `CODEX_HOME`,
        // `XDG_CONFIG_HOME`, `CLAUDE_CONFIG_DIR`, … is taken out where it was made.
        let more = p.recorded(|f| mcp_entry(f).is_some(), &paths);
        paths.extend(more);
    }
    for path in paths {
        plan_file(p, install, opts, path, key.clone())?;
    }
    Ok(())
}

fn plan_file(p: &mut TargetPlan, install: bool, opts: Options, path: PathBuf, key: String) -> Result<()> {
    let t = p.target;
    let record = p.record(&path);
    let editor: Box<dyn Editor> = if t.harness.manifest.mcp_format == McpFormat::Toml {
        super::mcp_toml::editor(t, install, opts, &path, key, record)?
    } else {
        let ours = t.env.runtime_bin();
        if install {
            let value = t.desired_mcp()?.expect("a template");
            Box::new(Install {
                path: path.clone(),
                key,
                value,
                record,
                force: opts.force,
                ours,
                harness: t.harness.id().into(),
            })
        } else {
            Box::new(Uninstall { path: path.clone(), key, record, force: opts.force, ours })
        }
    };
    // The hooks' own file (Qwen Code, Auggie): one plan, the hooks editor first, then this one.
    if let Some(i) = p.files.iter().position(|f| f.path == path) {
        let hooks = p.files.remove(i);
        let mode = hooks.mode;
        return p.file(path, mode, Box::new(Chain(vec![hooks.editor, editor])));
    }
    p.file(path, Mode::Keep { new: 0o600 }, editor)
}

pub struct Install {
    pub path: PathBuf,
    /// Dotted key of the servers object (`mcpServers`).
    pub key: String,
    pub value: Value,
    pub record: Option<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
    pub harness: String,
}

impl Editor for Install {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let record = self.record.as_ref();
        let created = text.is_none() || record.is_some_and(|r| r.created);
        let mut doc = parse(&self.path, text.unwrap_or("{}\n"))?;
        let mut created_keys: Vec<String> = record.map(|r| r.created_keys.clone()).unwrap_or_default();
        let mut empty: Vec<EmptyContainer> = record.map(|r| r.empty.clone()).unwrap_or_default();
        let keys: Vec<&str> = self.key.split('.').collect();
        for i in 0..keys.len() {
            match doc.node_at(&keys[..=i]) {
                None => {
                    if text.is_some() {
                        note_empty(&doc, &keys[..i], &mut empty);
                    }
                    doc.insert_member(&keys[..i], keys[i], &Value::Object(Default::default()))
                        .map_err(|e| anyhow::anyhow!(e))?;
                    let k = keys[..=i].join(".");
                    if !created_keys.contains(&k) {
                        created_keys.push(k);
                    }
                }
                Some(n) if !n.is_object() => {
                    return Err(Refused::Unparseable {
                        path: self.path.clone(),
                        detail: format!("`{}` is not an object", keys[..=i].join(".")),
                    }
                    .into());
                }
                Some(_) => {}
            }
        }
        let hash = receipt::hash_value(&self.value);
        let recorded = record.and_then(mcp_entry).map(|e| e.sha256.clone());
        let mut full = keys.clone();
        full.push(NAME);
        let (action, sha, detail) = match doc.node_at(&full).cloned() {
            None => {
                note_empty(&doc, &keys, &mut empty);
                doc.insert_member(&keys, NAME, &self.value).map_err(|e| anyhow::anyhow!(e))?;
                (Action::Added, hash, None)
            }
            Some(node) => {
                let current = doc.value(&node).unwrap_or(Value::Null);
                let current_hash = receipt::hash_value(&current);
                let owner = marker::mcp_runtime(&current).map(|r| marker::owner(&r, &self.ours));
                match owner {
                    _ if current == self.value => (Action::Unchanged, hash, None),
                    None if !self.force => (
                        Action::Conflict,
                        current_hash,
                        Some(format!("an MCP server named `{NAME}` that is not ovmem's is already there; left alone")),
                    ),
                    Some(Owner::Other { runtime, home, live: true }) if !self.force => {
                        return Err(Refused::Foreign {
                            path: self.path.clone(),
                            runtime,
                            home,
                            harness: self.harness.clone(),
                        }
                        .into());
                    }
                    Some(Owner::Other { runtime, .. }) => {
                        doc.replace_value(&node, &self.value).map_err(|e| anyhow::anyhow!(e))?;
                        (Action::Updated, hash, Some(format!("took over from `{}`", runtime.display())))
                    }
                    _ if still_ours(self.force, recorded.as_deref(), &current_hash) => {
                        doc.replace_value(&node, &self.value).map_err(|e| anyhow::anyhow!(e))?;
                        (Action::Updated, hash, None)
                    }
                    _ => (
                        Action::UserEdited,
                        recorded.unwrap_or(current_hash),
                        Some("edited since install; left as it is (--force replaces it)".into()),
                    ),
                }
            }
        };
        let ours = action != Action::Conflict;
        Ok(Edit {
            after: Some(doc.into_string()),
            record: ours.then(|| FileRecord {
                path: self.path.clone(),
                format: "json".into(),
                created,
                created_dirs: record.map(|r| r.created_dirs.clone()).unwrap_or_default(),
                created_keys,
                entries: vec![Entry {
                    event: "mcp".into(),
                    key_path: format!("{}.{NAME}", self.key),
                    sha256: sha,
                    handler: None,
                    commands: Vec::new(),
                    text: None,
                }],
                backup_hash: record.and_then(|r| r.backup_hash.clone()),
                empty,
                replaced: Vec::new(),
            }),
            notes: vec![EntryNote { event: "mcp".into(), action, detail }],
            warnings: Vec::new(),
        })
    }
}

pub struct Uninstall {
    pub path: PathBuf,
    pub key: String,
    pub record: Option<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
}

impl Editor for Uninstall {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let Some(text) = text else { return Ok(Edit::keep(None)) };
        let record = self.record.as_ref();
        let mut doc = parse(&self.path, text)?;
        let keys: Vec<&str> = self.key.split('.').collect();
        let mut full = keys.clone();
        full.push(NAME);
        let mut notes = Vec::new();
        let mut warnings = Vec::new();
        if let Some(node) = doc.node_at(&full).cloned() {
            let current = doc.value(&node).unwrap_or(Value::Null);
            let recorded = record.and_then(mcp_entry).map(|e| e.sha256.clone());
            match marker::mcp_runtime(&current).map(|r| marker::owner(&r, &self.ours)) {
                // Someone else's server under the same name, never ovmem's: not touched.
                None if !(self.force && record.is_some()) => {}
                Some(Owner::Other { home, .. }) if !self.force => warnings.push(format!(
                    "`{}`: the `{NAME}` MCP server of another ovmem home (`{}`) was left in place",
                    self.path.display(),
                    home.display()
                )),
                Some(Owner::Us) if !still_ours(self.force, recorded.as_deref(), &receipt::hash_value(&current)) => {
                    notes.push(EntryNote::with(
                        "mcp",
                        Action::UserEdited,
                        "edited since install; left in place (--force removes it)",
                    ));
                }
                _ => {
                    let idx = doc.member_index(&keys, NAME).expect("member");
                    doc.remove_child(&keys, idx).map_err(|e| anyhow::anyhow!(e))?;
                    notes.push(EntryNote::new("mcp", Action::Removed));
                }
            }
        }
        let created_keys: &[String] = record.map(|r| r.created_keys.as_slice()).unwrap_or(&[]);
        let empty: &[EmptyContainer] = record.map(|r| r.empty.as_slice()).unwrap_or(&[]);
        for i in (0..keys.len()).rev() {
            let here = keys[..=i].join(".");
            if doc.node_at(&keys[..=i]).is_some_and(|n| n.members().is_empty()) {
                if created_keys.contains(&here) {
                    let idx = doc.member_index(&keys[..i], keys[i]).expect("member");
                    doc.remove_child(&keys[..i], idx).map_err(|e| anyhow::anyhow!(e))?;
                } else {
                    restore_empty(&mut doc, &keys[..=i], empty)?;
                }
            }
        }
        restore_empty(&mut doc, &[], empty)?;
        let created = record.is_some_and(|r| r.created);
        let out = doc.into_string();
        let after = if created && super::json_hooks::bare(&out) { None } else { Some(out) };
        Ok(Edit { after, record: None, notes, warnings })
    }
}
