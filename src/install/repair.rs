//! A receipt rebuilt from what is on disk, for when the real one is lost (`rm -rf ~/.ovmem`, a
//! second `OVMEM_HOME`) or damaged: ovmem's entries are found by exact marker, and the pristine
//! `.ovmem.bak` copy beside each file says what was there before ovmem (no copy: ovmem created the
//! file). That is enough for uninstall to give back the original bytes. Used by `ovmem repair`,
//! and by install and uninstall whenever no receipt exists.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::editor::read_text;
use super::found;
use super::json_hooks::parse;
use super::marker::{self, Owner};
use super::mcp::NAME as MCP_NAME;
use super::plugin_file;
use super::script_dir::script_runtime;
use super::Target;
use crate::edit::json::Document;
use crate::fsx;
use crate::harness::{InstallKind, McpFormat};
use crate::receipt::{self, EmptyContainer, Entry, FileRecord, Receipt};

/// The pristine copy of `real`, parsed, when there is one.
fn pristine(real: &Path) -> Option<Document> {
    Document::parse(&super::editor::pristine_text(real)?).ok()
}

/// Keys (dotted paths) present in `now` that `before` lacks, and containers empty in `before`
/// with their inner text.
fn diff_keys(now: &Document, before: Option<&Document>, paths: &[Vec<&str>]) -> (Vec<String>, Vec<EmptyContainer>) {
    let mut created = Vec::new();
    let mut empty = Vec::new();
    for p in paths {
        if now.node_at(p).is_none() {
            continue;
        }
        match before.and_then(|b| b.node_at(p).map(|n| (b, n))) {
            None => created.push(p.join(".")),
            Some((b, n)) => {
                let inner = b.inner(n);
                if n.members().is_empty()
                    && n.elements().is_empty()
                    && (n.is_object() || n.is_array())
                    && !inner.is_empty()
                {
                    empty.push(EmptyContainer { key_path: p.join("."), inner: inner.to_string() });
                }
            }
        }
    }
    if let Some(b) = before {
        let inner = b.inner(&b.root);
        if b.root.members().is_empty() && !inner.is_empty() {
            empty.push(EmptyContainer { key_path: String::new(), inner: inner.to_string() });
        }
    }
    (created, empty)
}

fn json_record(
    path: &Path,
    doc: &Document,
    before: Option<&Document>,
    entries: Vec<Entry>,
    keys: &[Vec<&str>],
) -> FileRecord {
    let (created_keys, empty) = diff_keys(doc, before, keys);
    FileRecord {
        path: path.to_path_buf(),
        format: "json".into(),
        created: before.is_none(),
        created_dirs: Vec::new(),
        created_keys,
        entries,
        backup_hash: None,
        empty,
        replaced: Vec::new(),
    }
}

/// The owned files and array members of `t` (see `extra.rs`) that are ovmem's: an owned file
/// whose bytes are what ovmem writes, a member the pristine copy lacks (or in a file ovmem made).
/// Their only marker is their content, which a user may have too, so they count only where
/// ovmem's hooks of the target are on disk (ovmem installed here before).
fn extras(t: &Target, files: &mut Vec<FileRecord>) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let spec = t.harness.scope(t.scope)?;
    let bin = t.env.runtime_bin();
    let home = t.env.ovmem_home();
    let none = crate::harness::HookSpec { event: "file".into(), matcher: None, timeout: None };
    let ph = t.placeholders(&bin, &home, &none);
    for f in &spec.owned_files {
        let path = t.env.expand(&f.path, t.project.as_deref())?;
        let content = crate::harness::render(&f.template, &ph)?;
        if read_text(t, &path)?.1.as_deref() == Some(content.as_str()) {
            files.push(FileRecord {
                path: path.clone(),
                format: "owned".into(),
                created: true,
                entries: vec![Entry {
                    event: "file".into(),
                    key_path: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                    sha256: fsx::sha256_hex(content.as_bytes()),
                    ..Entry::default()
                }],
                ..FileRecord::default()
            });
        }
    }
    for a in &spec.array_members {
        let path = t.env.expand(&a.file, t.project.as_deref())?;
        let value = serde_json::Value::String(crate::harness::render_str(&a.value, &ph)?);
        let (real, text) = read_text(t, &path)?;
        let Some(text) = text else { continue };
        let doc = parse(&path, &text)?;
        let keys: Vec<&str> = a.key.split('.').collect();
        let has = |d: &Document| {
            d.node_at(&keys).is_some_and(|n| n.elements().iter().any(|e| d.value(e).as_ref() == Some(&value)))
        };
        if !has(&doc) {
            continue;
        }
        let before = pristine(&real);
        let had_backup = std::fs::symlink_metadata(fsx::sibling(&real, ".ovmem.bak")).is_ok_and(|m| m.is_file());
        // With a pristine copy that already allowed it, it is the user's; without any copy,
        // ovmem made the file.
        if before.as_ref().is_some_and(has) || (had_backup && before.is_none()) {
            continue;
        }
        let paths: Vec<Vec<&str>> = (0..keys.len()).map(|i| keys[..=i].to_vec()).collect();
        let entry = Entry {
            event: "member".into(),
            key_path: a.key.clone(),
            sha256: receipt::hash_value(&value),
            ..Entry::default()
        };
        files.push(json_record(&path, &doc, before.as_ref(), vec![entry], &paths));
    }
    Ok(())
}

/// The hash a rebuilt receipt records for an entry of an event this version of ovmem does not
/// write: it matches no entry, so that entry counts as edited (left in place, reported;
/// `--force` removes it). Without a receipt nothing says what another version wrote there.
const NOT_WRITTEN: &str = "not-written-by-this-version";

/// ovmem's entries of `t` on disk, as a receipt; `None` when there are none.
///
/// Each entry is recorded with the hash of the entry as this ovmem writes it now, never of what is
/// on disk: a marker says whose an entry is, not that it is as ovmem left it. So an entry the user
/// edited since (a key added, a value changed) is, without the receipt too, "edited since
/// install": install leaves it and uninstall leaves it, and both say so (`--force` replaces or
/// removes it). An entry an older ovmem wrote differently counts as edited the same way.
pub fn rebuild(t: &Target) -> Result<Option<Receipt>> {
    let ours = t.env.runtime_bin();
    let id = t.harness.id();
    let m = &t.harness.manifest;
    let desired = t.desired()?;
    let want = |event: &str| desired.iter().find(|d| d.event == event);
    let mut files = Vec::new();
    match m.kind {
        InstallKind::JsonHooks => {
            let events = t.events_key()?;
            let base = super::json_hooks::split_path(&events);
            for path in t.hook_files()? {
                let (real, text) = read_text(t, &path)?;
                let Some(text) = text else { continue };
                let doc = parse(&path, &text)?;
                let mut entries: Vec<Entry> = Vec::new();
                for f in found::in_json(&doc, &events, id) {
                    if marker::owner(&f.runtime, &ours) != Owner::Us || entries.iter().any(|e| e.event == f.event) {
                        continue;
                    }
                    // The whole entry and ovmem's handler in it (what a group shared with the
                    // user's handlers is judged by), as ovmem writes them.
                    let (sha256, handler) = match want(&f.event) {
                        Some(d) => {
                            let value = d.value()?;
                            let handler = marker::handlers(&value).first().map(|(_, h)| (*h).clone());
                            let handler = handler.unwrap_or_else(|| value.clone());
                            (receipt::hash_value(&value), receipt::hash_value(&handler))
                        }
                        None => (NOT_WRITTEN.to_string(), NOT_WRITTEN.to_string()),
                    };
                    entries.push(Entry {
                        event: f.event.clone(),
                        key_path: super::json_hooks::join_path(&base, &f.event),
                        sha256,
                        handler: Some(handler),
                        commands: vec![f.command],
                        text: None,
                    });
                }
                if entries.is_empty() {
                    continue;
                }
                let before = pristine(&real);
                let mut keys: Vec<Vec<String>> =
                    (0..base.len()).map(|i| base[..=i].iter().map(|s| s.to_string()).collect()).collect();
                for e in &entries {
                    let mut k: Vec<String> = base.iter().map(|s| s.to_string()).collect();
                    k.push(e.event.clone());
                    keys.push(k);
                }
                for k in m.root_defaults.keys() {
                    keys.push(vec![k.clone()]);
                }
                for k in m.set_keys.keys() {
                    let parts: Vec<String> = k.split('.').map(String::from).collect();
                    for i in 0..parts.len() {
                        keys.push(parts[..=i].to_vec());
                    }
                }
                let keys: Vec<Vec<&str>> = keys.iter().map(|k| k.iter().map(|s| &s[..]).collect()).collect();
                let mut rec = json_record(&path, &doc, before.as_ref(), entries, &keys);
                // Event keys that were there before but empty keep that text; the others ovmem made.
                rec.created_keys.sort();
                rec.created_keys.dedup();
                // A key ovmem set with --force (ZCode's `hooks.enabled`) that the pristine copy
                // held otherwise: uninstall gives that value back, as with the lost receipt.
                if let Some(b) = before.as_ref() {
                    for (dotted, value) in &m.set_keys {
                        let path: Vec<&str> = dotted.split('.').collect();
                        let (Some(was), Some(now)) = (b.node_at(&path), doc.node_at(&path)) else { continue };
                        let want = serde_json::to_value(value).ok();
                        if doc.value(now) == want && b.value(was) != want {
                            rec.replaced
                                .push(receipt::Replaced { key_path: dotted.clone(), before: b.slice(was).to_string() });
                        }
                    }
                }
                files.push(rec);
            }
        }
        InstallKind::TomlHooks => {
            let path = t.location()?;
            let (real, text) = read_text(t, &path)?;
            if let Some(text) = text {
                let key = t.events_key()?;
                let mut entries: Vec<Entry> = Vec::new();
                for f in found::in_toml(&text, &key, id) {
                    if marker::owner(&f.runtime, &ours) != Owner::Us || entries.iter().any(|e| e.event == f.event) {
                        continue;
                    }
                    let sha256 = match want(&f.event) {
                        Some(d) => receipt::hash_value(&super::toml_hooks::body_value(&d.text)?),
                        None => NOT_WRITTEN.to_string(),
                    };
                    entries.push(Entry {
                        event: f.event.clone(),
                        key_path: format!("{key}[event={}]", f.event),
                        sha256,
                        commands: vec![f.command],
                        ..Entry::default()
                    });
                }
                if !entries.is_empty() {
                    let had = std::fs::symlink_metadata(fsx::sibling(&real, ".ovmem.bak")).is_ok_and(|m| m.is_file());
                    files.push(FileRecord {
                        path: path.clone(),
                        format: "toml".into(),
                        created: !had,
                        entries,
                        ..FileRecord::default()
                    });
                }
            }
        }
        InstallKind::ScriptDir => {
            let dirs: Vec<PathBuf> = std::iter::once(t.location()?).chain(t.fallback()?.map(|f| f.0)).collect();
            let suffixes: Vec<String> =
                std::iter::once(String::new()).chain(m.script_windows.iter().map(|w| w.suffix.clone())).collect();
            for d in dirs {
                for (hook, suffix) in m.hooks.iter().flat_map(|h| suffixes.iter().map(move |s| (h, s))) {
                    let path = d.join(format!("{}{suffix}", hook.event));
                    let (_, text) = read_text(t, &path)?;
                    let Some(text) = text else { continue };
                    let Some(r) = script_runtime(&text, id, &hook.event) else { continue };
                    if marker::owner(&r, &ours) != Owner::Us {
                        continue;
                    }
                    let sha256 = match super::script_dir::expected(t, &hook.event, suffix)? {
                        Some(text) => fsx::sha256_hex(text.as_bytes()),
                        None => NOT_WRITTEN.to_string(),
                    };
                    files.push(FileRecord {
                        path: path.clone(),
                        format: "script".into(),
                        created: true,
                        created_dirs: Vec::new(),
                        created_keys: Vec::new(),
                        entries: vec![Entry {
                            event: hook.event.clone(),
                            key_path: format!("{}{suffix}", hook.event),
                            sha256,
                            handler: None,
                            commands: vec![marker::command(&ours, id, &hook.event)],
                            text: None,
                        }],
                        backup_hash: None,
                        empty: Vec::new(),
                        replaced: Vec::new(),
                    });
                }
            }
        }
        InstallKind::PluginFile => {
            let path = t.location()?;
            let (_, text) = read_text(t, &path)?;
            let mine = text.as_deref().and_then(|x| plugin_file::plugin_runtime(x, id));
            if let (Some(_), Some(r)) = (&text, mine) {
                if marker::owner(&r, &ours) == Owner::Us {
                    let sha256 = fsx::sha256_hex(plugin_file::desired(t)?.as_bytes());
                    files.push(plugin_file::record(&path, sha256, None));
                }
            }
        }
    }
    extras(t, &mut files)?;
    if let (Some(path), Some(key)) = (t.mcp_file()?, m.mcp_key.as_deref()) {
        let (real, text) = read_text(t, &path)?;
        if m.mcp_format == McpFormat::Toml {
            if let Some(text) = text {
                let want = t.desired_mcp()?.expect("a template");
                files.extend(super::mcp_toml::rebuild(&path, &real, &text, key, &ours, &want));
            }
        } else if let Some(text) = text {
            let doc = parse(&path, &text)?;
            let keys: Vec<&str> = key.split('.').collect();
            let mut full = keys.clone();
            full.push(MCP_NAME);
            let value = doc.node_at(&full).and_then(|n| doc.value(n));
            let mine =
                value.as_ref().and_then(marker::mcp_runtime).is_some_and(|r| marker::owner(&r, &ours) == Owner::Us);
            if let (true, Some(_)) = (mine, value) {
                let want = t.desired_mcp()?.expect("a template");
                let before = pristine(&real);
                let paths: Vec<Vec<&str>> = (0..keys.len()).map(|i| keys[..=i].to_vec()).collect();
                let entry = Entry {
                    event: "mcp".into(),
                    key_path: format!("{key}.{MCP_NAME}"),
                    sha256: receipt::hash_value(&want),
                    handler: None,
                    commands: Vec::new(),
                    text: None,
                };
                files.push(json_record(&path, &doc, before.as_ref(), vec![entry], &paths));
            }
        }
    }
    // Hooks and the MCP server in one file (Qwen Code, Auggie): one record, as install writes it.
    let mut merged: Vec<FileRecord> = Vec::new();
    for f in files {
        match merged.iter_mut().find(|m| m.path == f.path) {
            Some(m) => *m = super::editor::merge_records(Some(std::mem::take(m)), Some(f)).unwrap_or_default(),
            None => merged.push(f),
        }
    }
    let files = merged;
    if files.is_empty() {
        return Ok(None);
    }
    Ok(Some(Receipt {
        schema: receipt::SCHEMA,
        ovmem_version: env!("CARGO_PKG_VERSION").to_string(),
        harness: id.to_string(),
        scope: t.scope,
        project: t.project.clone(),
        runtime: ours,
        files,
        trust: Vec::new(),
        trust_config: None,
    }))
}
