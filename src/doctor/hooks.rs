//! Which of an installed target's hooks the harness would run, read from its config as it is now
//! (not from the receipt): ovmem's exact entries, ovmem entries the user edited (a command that
//! still runs an `…/ovmem hook <harness>`), and entries of another runtime (drift). Hooks of other
//! tools are never run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::edit::json::Document;
use crate::harness::{Harness, InstallKind};
use crate::install::found;
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
    /// A program and its arguments, run without a shell (an argv-form entry, or the command a
    /// plugin module runs in-process).
    Argv(Vec<String>),
}

impl How {
    pub fn shown(&self) -> String {
        match self {
            How::Shell(c) => c.clone(),
            How::File(p) => p.display().to_string(),
            How::Argv(a) => a.iter().map(|w| crate::shell::quote(w)).collect::<Vec<_>>().join(" "),
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
}

/// The timeout the harness applies to a handler: its own field, else the harness default, else
/// what ovmem installs, within the harness's cap.
fn timeout_of(h: &Harness, event: &str, handler: Option<&Value>) -> Duration {
    let m = &h.manifest;
    let own = handler.and_then(|v| {
        ["timeout", "timeoutSec", "timeoutMs", "timeout_ms"].iter().find_map(|k| v.get(*k).and_then(Value::as_u64))
    });
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

fn read(t: &Target, path: &Path, errors: &mut Vec<(PathBuf, String)>) -> Option<crate::fsx::Text> {
    match crate::install::editor::read_text(t, path) {
        Ok((_, text)) => text,
        Err(e) => {
            errors.push((path.to_path_buf(), format!("{e:#}")));
            None
        }
    }
}

/// The hooks of `t` the harness would run, and the recorded ones that are gone.
pub fn find(t: &Target, receipt: Option<&Receipt>) -> Found {
    let mut f = Found::default();
    match t.harness.manifest.kind {
        InstallKind::JsonHooks | InstallKind::TomlHooks => {
            for file in t.hook_files().unwrap_or_default() {
                in_hook_file(t, &file, receipt, &mut f);
            }
        }
        InstallKind::ScriptDir => in_script_dir(t, receipt, &mut f),
        InstallKind::PluginFile => in_plugin(t, receipt, &mut f),
    }
    f
}

fn kind_of(runtime: &Path, ours: &Path) -> Kind {
    match marker::owner(runtime, ours) {
        Owner::Us => Kind::Ours,
        Owner::Other { runtime, .. } => Kind::OtherRuntime(runtime),
    }
}

/// The recorded events of `file` that have no hook any more.
fn missing(h: &Harness, file: &Path, receipt: Option<&Receipt>, f: &mut Found) {
    for e in receipt.iter().flat_map(|r| r.file(file)).flat_map(|r| &r.entries) {
        let hook_event = h.manifest.hooks.iter().any(|x| x.event == e.event);
        if hook_event && !f.hooks.iter().any(|x| x.file == file && x.event == e.event) {
            f.missing.push((e.event.clone(), file.to_path_buf()));
        }
    }
}

/// A JSON or TOML hooks file: ovmem's exact entries (by marker, in any form the harness runs),
/// and entries edited by hand that still run ovmem's hook.
fn in_hook_file(t: &Target, file: &Path, receipt: Option<&Receipt>, f: &mut Found) {
    let h = t.harness;
    let ours = t.env.runtime_bin();
    let Some(text) = read(t, file, &mut f.errors) else { return missing(h, file, receipt, f) };
    let parsed = if h.manifest.kind == InstallKind::JsonHooks {
        Document::parse(&text).map(Some).map_err(|e| e.to_string())
    } else {
        crate::edit::toml::parse(&text).map(|_| None).map_err(|e| format!("{e:#}"))
    };
    let doc = match parsed {
        Ok(d) => d,
        Err(e) => return f.errors.push((file.to_path_buf(), format!("does not parse ({e})"))),
    };
    let parsed = doc.as_ref().map_or(found::Parsed::Toml(&text), found::Parsed::Json);
    let wanted = |event: &str| h.manifest.hooks.iter().any(|x| x.event == event);
    for x in found::running_in_file(t, parsed).into_iter().filter(|x| wanted(&x.event)) {
        let run = match x.handler.get("args").and_then(Value::as_array) {
            Some(args) if x.exact => How::Argv(
                std::iter::once(x.runtime.to_string_lossy().into_owned())
                    .chain(args.iter().filter_map(|a| a.as_str().map(String::from)))
                    .collect(),
            ),
            _ => How::Shell(x.command.clone()),
        };
        f.hooks.push(Hook {
            timeout: timeout_of(h, &x.event, Some(&x.handler)),
            kind: if x.exact { kind_of(&x.runtime, &ours) } else { Kind::Edited },
            event: x.event,
            file: file.to_path_buf(),
            entry: x.entry,
            run,
        });
    }
    missing(h, file, receipt, f);
}

/// One executable per event (and the second directory the harness reads).
fn in_script_dir(t: &Target, receipt: Option<&Receipt>, f: &mut Found) {
    let h = t.harness;
    let ours = t.env.runtime_bin();
    let Ok(dir) = t.location() else { return };
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
                Some(r) => match kind_of(&r, &ours) {
                    Kind::Ours if !desired.iter().any(|(e, d)| e == event && d.as_str() == text.as_str()) => {
                        Kind::Edited
                    }
                    k => k,
                },
                // The file ovmem wrote there, edited since: still what the harness runs.
                None if rec || marker::runs_hook(&text, h.id()).is_some() => Kind::Edited,
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
}

/// A plugin module the harness loads in-process: it runs `<runtime> hook <harness> <event>` for
/// each of the manifest's events, so that is what the doctor runs (the module's own JavaScript is
/// the harness's to run). A module that is not byte for byte what ovmem writes is `Edited`.
fn in_plugin(t: &Target, receipt: Option<&Receipt>, f: &mut Found) {
    let h = t.harness;
    let Ok(path) = t.location() else { return };
    let Some(text) = read(t, &path, &mut f.errors) else { return missing(h, &path, receipt, f) };
    let Some(runtime) = crate::install::plugin_file::plugin_runtime(&text, h.id()) else {
        if receipt.and_then(|r| r.file(&path)).is_some() {
            f.errors.push((path.clone(), "no longer carries ovmem's plugin marker".into()));
        }
        return;
    };
    // The module is ovmem's own only as ovmem writes it, every byte: code added to it runs in
    // the harness, and the doctor (which runs the command the module would run) cannot judge it.
    let kind = match kind_of(&runtime, &t.env.runtime_bin()) {
        Kind::Ours if crate::install::plugin_file::desired(t).ok().as_deref() != Some(text.as_str()) => Kind::Edited,
        k => k,
    };
    for hook in &h.manifest.hooks {
        let argv = [runtime.to_string_lossy().as_ref(), "hook", h.id(), &hook.event].map(String::from).to_vec();
        f.hooks.push(Hook {
            event: hook.event.clone(),
            file: path.clone(),
            entry: format!("the plugin's {} handler", hook.event),
            run: How::Argv(argv),
            kind: kind.clone(),
            timeout: timeout_of(h, &hook.event, None),
        });
    }
}
