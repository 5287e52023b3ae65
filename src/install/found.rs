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
    /// The runtime it runs (for an edited entry, the program as written).
    pub runtime: PathBuf,
    /// 1-based line of the entry.
    pub line: usize,
    /// Where it sits, for messages: `hooks.Stop[1]`, `hooks[3]`, `hooks.Stop[1].hooks[0]` (an
    /// edited handler in a group).
    pub entry: String,
    /// ovmem's exact command line ([`marker::handler_runtime`]); else a hand edit that still runs
    /// ovmem's hook ([`marker::runs_hook`]), which the harness runs all the same but which is not
    /// ovmem's to change.
    pub exact: bool,
}

/// A hook file as [`in_file`] reads it: a JSON document parsed once by the caller, or a TOML
/// text (whose `[[hooks]]` tables are read one by one).
#[derive(Clone, Copy)]
pub enum Parsed<'a> {
    Json(&'a Document),
    Toml(&'a str),
}

pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The entries of `harness` in a JSON document whose events object sits at `events`: ovmem's
/// exact entries only, or (`edited`) its hand-edited handlers too.
fn json(doc: &Document, events: &str, harness: &str, edited: bool) -> Vec<Found> {
    let base = split_path(events);
    let mut out = Vec::new();
    let Some(obj) = doc.node_at(&base).filter(|n| n.is_object()) else { return out };
    for m in obj.members() {
        let at = if events.is_empty() { m.key.clone() } else { format!("{events}.{}", m.key) };
        for (i, el) in m.value.elements().iter().enumerate() {
            let Some(v) = doc.value(el) else { continue };
            let handlers = marker::handlers(&v);
            let exact = handlers.iter().find_map(|(_, h)| {
                let (cmd, r) = marker::handler_runtime(h, harness, Some(&m.key))?;
                Some((cmd, (*h).clone(), r))
            });
            let found = |command, handler, runtime, entry, exact| Found {
                event: m.key.clone(),
                value: v.clone(),
                handler,
                command,
                runtime,
                line: line_of(doc.text(), el.start),
                entry,
                exact,
            };
            if let Some((command, handler, runtime)) = exact {
                out.push(found(command, handler, runtime, format!("{at}[{i}]"), true));
            }
            if !edited {
                continue;
            }
            for (slot, h) in &handlers {
                let Some(cmd) = h.get("command").and_then(Value::as_str) else { continue };
                if marker::handler_runtime(h, harness, Some(&m.key)).is_some() {
                    continue;
                }
                let Some(program) = marker::runs_hook(cmd, harness) else { continue };
                let entry = match slot {
                    Some((k, j)) => format!("{at}[{i}].{k}[{j}]"),
                    None => format!("{at}[{i}]"),
                };
                out.push(found(cmd.to_string(), (*h).clone(), PathBuf::from(program), entry, false));
            }
        }
    }
    out
}

/// ovmem's exact entries of `harness` in a JSON document whose events object sits at `events`.
pub fn in_json(doc: &Document, events: &str, harness: &str) -> Vec<Found> {
    json(doc, events, harness, false)
}

/// The entries of `harness` among the `[[key]]` tables of a TOML text.
fn toml(text: &str, key: &str, harness: &str, edited: bool) -> Vec<Found> {
    toml_hooks::tables(text, key)
        .into_iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let event = t.event()?.to_string();
            let command = t.command()?.to_string();
            let (runtime, exact) = match marker::hook_runtime(&command, harness, Some(&event)) {
                Some(r) => (r, true),
                None if edited => (PathBuf::from(marker::runs_hook(&command, harness)?), false),
                None => return None,
            };
            Some(Found {
                event,
                handler: t.value.clone(),
                value: t.value,
                command,
                runtime,
                line: t.line,
                entry: format!("{key}[{i}]"),
                exact,
            })
        })
        .collect()
}

/// ovmem's exact entries of `harness` among the `[[key]]` tables of a TOML text.
pub fn in_toml(text: &str, key: &str, harness: &str) -> Vec<Found> {
    toml(text, key, harness, false)
}

/// ovmem's exact entries for `t`'s harness in `file` (one of `t`'s hook files); none when the
/// harness keeps hooks as script files.
pub fn in_file(t: &Target, file: Parsed) -> Vec<Found> {
    of_file(t, file, false)
}

/// ovmem's entries for `t`'s harness in `file`, exact and edited by hand alike: every one the
/// harness runs (what `check` and `doctor` count and judge).
pub fn running_in_file(t: &Target, file: Parsed) -> Vec<Found> {
    of_file(t, file, true)
}

fn of_file(t: &Target, file: Parsed, edited: bool) -> Vec<Found> {
    let Ok(events) = t.events_key() else { return Vec::new() };
    match (t.harness.manifest.kind, file) {
        (InstallKind::JsonHooks, Parsed::Json(doc)) => json(doc, &events, t.harness.id(), edited),
        (InstallKind::TomlHooks, Parsed::Toml(text)) => toml(text, &events, t.harness.id(), edited),
        _ => Vec::new(),
    }
}

/// ovmem's exact entries for `t`'s harness in `text`; none when it does not parse.
pub fn in_text(t: &Target, text: &str) -> Vec<Found> {
    match t.harness.manifest.kind {
        InstallKind::JsonHooks => Document::parse(text).map(|d| in_file(t, Parsed::Json(&d))).unwrap_or_default(),
        _ => in_file(t, Parsed::Toml(text)),
    }
}
