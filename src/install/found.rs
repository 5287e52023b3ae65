//! ovmem's hook entries as they are on disk, found by marker in any hook-file format (a JSON
//! events object at any path, `[[hooks]]` tables in TOML): what `status`, `check` and `repair`
//! read, so each format is parsed for them in one place.

use std::path::PathBuf;

use serde_json::Value;

use super::json_hooks::split_path;
use super::{marker, toml_hooks, Target};
use crate::edit::json::Document;
use crate::harness::InstallKind;

/// One ovmem hook entry in a file.
#[derive(Debug, Clone)]
pub struct Found {
    pub event: String,
    /// The whole entry (a group, a flat entry, a TOML table as JSON).
    pub value: Value,
    /// ovmem's handler inside it (the object with the command).
    pub handler: Value,
    pub command: String,
    pub runtime: PathBuf,
    /// 1-based line of the entry.
    pub line: usize,
    /// Where it sits, for messages: `hooks.Stop[1]`, `hooks[3]`.
    pub entry: String,
}

pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The entries of `harness` in a JSON document whose events object sits at `events`.
pub fn in_json(doc: &Document, events: &str, harness: &str) -> Vec<Found> {
    let base = split_path(events);
    let mut out = Vec::new();
    let Some(obj) = doc.node_at(&base).filter(|n| n.is_object()) else { return out };
    for m in obj.members() {
        for (i, el) in m.value.elements().iter().enumerate() {
            let Some(v) = doc.value(el) else { continue };
            let found = marker::handlers(&v).into_iter().find_map(|(_, h)| {
                let (cmd, r) = marker::handler_runtime(h, harness, Some(&m.key))?;
                Some((cmd, h.clone(), r))
            });
            if let Some((command, handler, runtime)) = found {
                let at = if events.is_empty() { m.key.clone() } else { format!("{events}.{}", m.key) };
                out.push(Found {
                    event: m.key.clone(),
                    value: v,
                    handler,
                    command,
                    runtime,
                    line: line_of(doc.text(), el.start),
                    entry: format!("{at}[{i}]"),
                });
            }
        }
    }
    out
}

/// The entries of `harness` among the `[[key]]` tables of a TOML text.
pub fn in_toml(text: &str, key: &str, harness: &str) -> Vec<Found> {
    toml_hooks::tables(text, key)
        .into_iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let event = t.event()?.to_string();
            let command = t.command()?.to_string();
            let runtime = marker::hook_runtime(&command, harness, Some(&event))?;
            Some(Found {
                event,
                handler: t.value.clone(),
                value: t.value,
                command,
                runtime,
                line: t.line,
                entry: format!("{key}[{i}]"),
            })
        })
        .collect()
}

/// ovmem's entries for `t`'s harness in `text` (one of `t`'s hook files); none when the file
/// does not parse or the harness keeps hooks as script files.
pub fn in_file(t: &Target, text: &str) -> Vec<Found> {
    let Ok(events) = t.events_key() else { return Vec::new() };
    match t.harness.manifest.kind {
        InstallKind::JsonHooks => {
            Document::parse(text).map(|d| in_json(&d, &events, t.harness.id())).unwrap_or_default()
        }
        InstallKind::TomlHooks => in_toml(text, &events, t.harness.id()),
        InstallKind::ScriptDir | InstallKind::PluginFile => Vec::new(),
    }
}
