//! Which of an installed target's hooks the harness would run, read from its config as it is now
//! (not from the receipt): ovmem's exact entries, ovmem entries the user edited (a command that
//! still runs an `…/ovmem hook <harness>`), and entries of another runtime (drift). Hooks of other
//! tools are never run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::edit::json::Document;
use crate::harness::{Harness, InstallKind};
use crate::install::marker::{self, Owner};
use crate::install::script_dir::script_runtime;
use crate::install::Target;
use crate::receipt::Receipt;

/// Whose a hook is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Exactly what this ovmem home installs.
    Ours,
    /// ovmem's exact command, for another runtime (another home, or one that is gone).
    OtherRuntime(PathBuf),
    /// A command that still runs ovmem's hook, edited by hand.
    Edited,
}

/// One hook, as the harness would run it.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: String,
    /// The config file (or the hook file itself).
    pub file: PathBuf,
    /// `hooks.Stop[0]`, or the file name.
    pub entry: String,
    pub run: How,
    pub kind: Kind,
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
pub enum How {
    /// A command line, run through `sh -c`.
    Shell(String),
    /// The hook file itself.
    File(PathBuf),
}

impl How {
    pub fn shown(&self) -> String {
        match self {
            How::Shell(c) => c.clone(),
            How::File(p) => p.display().to_string(),
        }
    }
}

/// What was found for a target.
#[derive(Debug, Default)]
pub struct Found {
    pub hooks: Vec<Hook>,
    /// Events the receipt records that have no ovmem hook any more.
    pub missing: Vec<(String, PathBuf)>,
    /// Files that could not be read or parsed.
    pub errors: Vec<(PathBuf, String)>,
    /// Whether the doctor can run this kind of install at all.
    pub runnable: bool,
}

/// Whether `cmd` still runs ovmem's hook runtime for `harness`: one of its simple commands is
/// `…/ovmem hook <harness> …`.
fn runs_ovmem_hook(cmd: &str, harness: &str) -> bool {
    crate::shell::commands(cmd, true).iter().any(|w| {
        w.len() >= 3 && Path::new(&w[0]).file_name().is_some_and(|n| n == "ovmem") && w[1] == "hook" && w[2] == harness
    })
}

/// The timeout the harness applies to a handler: its own field, else the harness default, else
/// what ovmem installs, within the harness's cap.
fn timeout_of(h: &Harness, event: &str, handler: Option<&Value>) -> Duration {
    let m = &h.manifest;
    let own = handler.and_then(|v| v.get("timeout")).and_then(Value::as_u64);
    let installed = m.hooks.iter().find(|x| x.event == event).and_then(|x| x.timeout).map(u64::from);
    let mut n = own.or(m.default_timeout.map(u64::from)).or(installed).unwrap_or(match m.timeout_unit {
        crate::harness::TimeoutUnit::Seconds => 30,
        crate::harness::TimeoutUnit::Milliseconds => 30_000,
    });
    if let Some(cap) = m.timeout_caps.get(event) {
        n = n.min(u64::from(*cap));
    }
    m.timeout_unit.duration(n.max(1))
}

fn read(t: &Target, path: &Path, errors: &mut Vec<(PathBuf, String)>) -> Option<String> {
    match crate::install::plan::read_text(t, path) {
        Ok((_, text)) => text,
        Err(e) => {
            errors.push((path.to_path_buf(), format!("{e:#}")));
            None
        }
    }
}

/// The hooks of `t` the harness would run, and the recorded ones that are gone.
pub fn find(t: &Target, receipt: Option<&Receipt>) -> Found {
    let h = t.harness;
    let ours = t.env.runtime_bin();
    let mut f = Found { runnable: true, ..Found::default() };
    let kind = h.manifest.kind;
    if kind == InstallKind::JsonHooks {
        let Ok(location) = t.location() else { return f };
        let Some(text) = read(t, &location, &mut f.errors) else {
            for e in receipt.iter().flat_map(|r| r.file(&location)).flat_map(|r| &r.entries) {
                f.missing.push((e.event.clone(), location.clone()));
            }
            return f;
        };
        let doc = match Document::parse(&text) {
            Ok(d) => d,
            Err(e) => {
                f.errors.push((location.clone(), format!("does not parse ({e})")));
                return f;
            }
        };
        let key = h.manifest.events_key.as_deref().unwrap_or("hooks");
        for hook in &h.manifest.hooks {
            let event = &hook.event;
            let before = f.hooks.len();
            let entries: Vec<Value> = doc
                .node_at(&[key, event])
                .map(|arr| arr.elements().iter().filter_map(|n| doc.value(n)).collect())
                .unwrap_or_default();
            for (i, entry) in entries.iter().enumerate() {
                for (slot, handler) in marker::handlers(entry) {
                    let Some(cmd) = handler.get("command").and_then(Value::as_str) else { continue };
                    let kind = match marker::hook_runtime(cmd, h.id(), Some(event)) {
                        Some(r) => match marker::owner(&r, &ours) {
                            Owner::Us => Kind::Ours,
                            Owner::Other { runtime, .. } => Kind::OtherRuntime(runtime),
                        },
                        None if runs_ovmem_hook(cmd, h.id()) => Kind::Edited,
                        None => continue,
                    };
                    let entry = match &slot {
                        Some((k, j)) => format!("{key}.{event}[{i}].{k}[{j}]"),
                        None => format!("{key}.{event}[{i}]"),
                    };
                    f.hooks.push(Hook {
                        event: event.clone(),
                        file: location.clone(),
                        entry,
                        run: How::Shell(cmd.to_string()),
                        kind,
                        timeout: timeout_of(h, event, Some(handler)),
                    });
                }
            }
            let recorded =
                receipt.and_then(|r| r.file(&location)).is_some_and(|r| r.entries.iter().any(|e| &e.event == event));
            if f.hooks.len() == before && recorded {
                f.missing.push((event.clone(), location.clone()));
            }
        }
    } else if kind == InstallKind::ScriptDir {
        let Ok(dir) = t.location() else { return f };
        let fallback = t.fallback().ok().flatten().map(|(d, _)| d);
        let desired: Vec<(String, String)> =
            t.desired().unwrap_or_default().into_iter().map(|d| (d.event, d.text)).collect();
        for hook in &h.manifest.hooks {
            let event = &hook.event;
            let before = f.hooks.len();
            let mut recorded = false;
            for d in std::iter::once(&dir).chain(fallback.as_ref()) {
                let path = d.join(event);
                let rec = receipt.and_then(|r| r.file(&path)).is_some();
                recorded |= rec;
                let Some(text) = read(t, &path, &mut f.errors) else { continue };
                let kind = match script_runtime(&text, h.id(), event) {
                    // A file is ovmem's own only as ovmem writes it, every line of it.
                    Some(r) => match marker::owner(&r, &ours) {
                        Owner::Us if desired.iter().any(|(e, d)| e == event && *d == text) => Kind::Ours,
                        Owner::Us => Kind::Edited,
                        Owner::Other { runtime, .. } => Kind::OtherRuntime(runtime),
                    },
                    // The file ovmem wrote there, edited since: still what the harness runs.
                    None if rec || runs_ovmem_hook(&text, h.id()) => Kind::Edited,
                    None => continue,
                };
                f.hooks.push(Hook {
                    event: event.clone(),
                    file: path.clone(),
                    entry: event.clone(),
                    run: How::File(path),
                    kind,
                    timeout: timeout_of(h, event, None),
                });
            }
            if f.hooks.len() == before && recorded {
                f.missing.push((event.clone(), dir.join(event)));
            }
        }
    } else {
        // An install kind the harness loads in-process (a plugin): nothing to run from outside.
        f.runnable = false;
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_command_that_still_runs_ovmem_is_found() {
        assert!(runs_ovmem_hook("/h/.ovmem/bin/ovmem hook codex Stop; echo garbage", "codex"));
        assert!(runs_ovmem_hook("sleep 5 && '/a b/bin/ovmem' hook codex Stop", "codex"));
        assert!(!runs_ovmem_hook("/usr/bin/other hook codex Stop", "codex"));
        assert!(!runs_ovmem_hook("/h/.ovmem/bin/ovmem hook cursor stop", "codex"));
        assert!(!runs_ovmem_hook("echo ovmem hook codex", "codex"));
    }
}
