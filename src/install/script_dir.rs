//! One executable file per event in a directory (Cline). A file is ovmem's when its `exec` line
//! is ovmem's marker; a file of the user's own at the primary name sends ovmem to the fallback
//! directory the harness also reads, or leaves that event out.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::editor::{read_text, Edit, Editor, TargetPlan};
use super::marker::{self, Owner};
use super::{still_ours, Action, EntryNote, Options, Refused};
use crate::fsx::{self, journal::Mode};
use crate::receipt::{Entry, FileRecord};

/// The line of a PowerShell hook file (`<Event>.ps1`) that runs ovmem, before its command.
pub const PS1_PIPE: &str = "[Console]::In.ReadToEnd() | ";

/// The runtime a hook script runs, when it is ovmem's for `harness`/`event`: its `exec` line
/// (sh), or its `[Console]::In.ReadToEnd() | & '…' hook …` line (a `.ps1` file).
pub fn script_runtime(text: &str, harness: &str, event: &str) -> Option<PathBuf> {
    text.lines()
        .find_map(|l| l.strip_prefix("exec ").or_else(|| l.strip_prefix(PS1_PIPE)))
        .and_then(|c| marker::hook_runtime(c, harness, Some(event)))
}

pub fn plan(p: &mut TargetPlan, install: bool, opts: Options) -> Result<()> {
    let t = p.target;
    let dir = t.location()?;
    let fallback = t.fallback()?;
    let ours = t.env.runtime_bin();
    let id = t.harness.id();
    if install {
        for d in t.desired()? {
            let mut path = dir.join(&d.event);
            let mut note = None;
            // A file of the user's own at the primary name: use the fallback location, which the
            // harness also reads, or leave the event out.
            let (_, existing) = read_text(t, &path)?;
            if existing.as_deref().is_some_and(|e| script_runtime(e, id, &d.event).is_none()) {
                match &fallback {
                    Some((fb, why)) => {
                        note = Some(format!(
                            "`{}` belongs to someone else and was left alone; installed at `{}` instead ({why})",
                            path.display(),
                            fb.join(&d.event).display()
                        ));
                        path = fb.join(&d.event);
                    }
                    None => note = Some(format!("`{}` belongs to someone else", path.display())),
                }
            }
            // A Windows host also gets `<Event>.ps1` beside it (all the VS Code extension runs there).
            let ps1 = windows_script(t, &d.event)?.map(|(suffix, text)| {
                let mut name = path.file_name().unwrap_or_default().to_os_string();
                name.push(&suffix);
                (path.with_file_name(name), text)
            });
            let record = p.record(&path);
            let editor = Install {
                harness: id.to_string(),
                path: path.clone(),
                event: d.event.clone(),
                content: d.text.clone(),
                command: d.command.clone(),
                record,
                force: opts.force,
                ours: ours.clone(),
                note,
            };
            p.file(path, Mode::Keep { new: 0o755 }, Box::new(editor))?;
            if let Some((path, content)) = ps1 {
                let editor = Install {
                    harness: id.to_string(),
                    path: path.clone(),
                    event: d.event.clone(),
                    content,
                    command: d.command.clone(),
                    record: p.record(&path),
                    force: opts.force,
                    ours: ours.clone(),
                    note: None,
                };
                p.file(path, Mode::Keep { new: 0o755 }, Box::new(editor))?;
            }
        }
        return Ok(());
    }
    let mut paths: Vec<PathBuf> = p
        .base
        .as_ref()
        .map(|r| r.files.iter().filter(|f| f.format == "script").map(|f| f.path.clone()).collect())
        .unwrap_or_default();
    // Older installs: ovmem's scripts found by their marker. Another home's are left alone.
    let mut foreign: std::collections::BTreeMap<PathBuf, Vec<String>> = Default::default();
    let suffixes: Vec<String> = std::iter::once(String::new())
        .chain(t.harness.manifest.script_windows.iter().map(|w| w.suffix.clone()))
        .collect();
    for d in std::iter::once(dir.clone()).chain(fallback.iter().map(|f| f.0.clone())) {
        for (hook, suffix) in t.harness.manifest.hooks.iter().flat_map(|h| suffixes.iter().map(move |s| (h, s))) {
            let path = d.join(format!("{}{suffix}", hook.event));
            if paths.contains(&path) {
                continue;
            }
            let (_, text) = read_text(t, &path)?;
            let Some(runtime) = text.as_deref().and_then(|x| script_runtime(x, id, &hook.event)) else { continue };
            match marker::owner(&runtime, &ours) {
                Owner::Other { home, .. } if !opts.force => foreign.entry(home).or_default().push(hook.event.clone()),
                _ => paths.push(path),
            }
        }
    }
    for (home, events) in foreign {
        p.warnings.push(format!(
            "{} hook files of another ovmem home (`{}`) were left in place ({}); remove them with \
             `OVMEM_HOME={} ovmem uninstall --harness {id} --yes` (or --force here)",
            t.harness.manifest.name,
            home.display(),
            events.join(", "),
            home.display()
        ));
    }
    for path in paths {
        let record = p.record(&path);
        let editor =
            Uninstall { harness: id.to_string(), path: path.clone(), record, force: opts.force, ours: ours.clone() };
        p.file(path, Mode::Keep { new: 0o755 }, Box::new(editor))?;
    }
    Ok(())
}

/// The event a hook file is for: its name, without a `.ps1` suffix.
fn event_of(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_suffix(".ps1").map(String::from).unwrap_or(name)
}

/// The Windows hook file for `event` (suffix, text), when ovmem writes for a Windows host and the
/// manifest has one.
fn windows_script(t: &super::Target, event: &str) -> Result<Option<(String, String)>> {
    let Some(w) = t.harness.manifest.script_windows.as_ref().filter(|_| t.env.windows_host()) else { return Ok(None) };
    let bin = t.env.runtime_bin();
    let home = t.env.ovmem_home();
    let hook = crate::harness::HookSpec { event: event.to_string(), matcher: None, timeout: None };
    Ok(Some((w.suffix.clone(), crate::harness::render(&w.template, &t.placeholders(&bin, &home, &hook))?)))
}

/// The hook file for `event` with name suffix `suffix` (`""`, or the Windows file's `.ps1`) as
/// ovmem writes it now for `t`; `None` for an event or suffix this version does not write.
pub fn expected(t: &super::Target, event: &str, suffix: &str) -> Result<Option<String>> {
    if suffix.is_empty() {
        return Ok(t.desired()?.into_iter().find(|d| d.event == event).map(|d| d.text));
    }
    let Some(w) = t.harness.manifest.script_windows.as_ref().filter(|w| w.suffix == suffix) else { return Ok(None) };
    if !t.harness.manifest.hooks.iter().any(|h| h.event == event) {
        return Ok(None);
    }
    let bin = t.env.runtime_bin();
    let home = t.env.ovmem_home();
    let hook = crate::harness::HookSpec { event: event.to_string(), matcher: None, timeout: None };
    Ok(Some(crate::harness::render(&w.template, &t.placeholders(&bin, &home, &hook))?))
}

pub struct Install {
    pub harness: String,
    pub path: PathBuf,
    pub event: String,
    pub content: String,
    pub command: String,
    pub record: Option<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
    pub note: Option<String>,
}

impl Install {
    fn record(&self, sha: String, trusted: bool) -> FileRecord {
        FileRecord {
            path: self.path.clone(),
            format: "script".into(),
            created: true,
            created_dirs: self.record.as_ref().map(|r| r.created_dirs.clone()).unwrap_or_default(),
            created_keys: Vec::new(),
            entries: vec![Entry {
                event: self.event.clone(),
                key_path: self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                sha256: sha,
                handler: None,
                commands: if trusted { vec![self.command.clone()] } else { Vec::new() },
                text: None,
            }],
            backup_hash: self.record.as_ref().and_then(|r| r.backup_hash.clone()),
            empty: Vec::new(),
            replaced: Vec::new(),
        }
    }
}

impl Editor for Install {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let hash = fsx::sha256_hex(self.content.as_bytes());
        let done = |action, detail: Option<String>, after: &str, record| Edit {
            after: Some(after.to_string()),
            record,
            notes: vec![EntryNote { event: self.event.clone(), action, detail }],
            warnings: self.note.iter().cloned().collect(),
        };
        let Some(t) = text else { return Ok(done(Action::Added, None, &self.content, Some(self.record(hash, true)))) };
        if t == self.content {
            return Ok(done(Action::Unchanged, None, &self.content, Some(self.record(hash, true))));
        }
        let Some(runtime) = script_runtime(t, &self.harness, &self.event) else {
            let detail =
                format!("`{}` is not ovmem's; left alone, so this event is not installed", self.path.display());
            return Ok(done(Action::Conflict, Some(detail), t, None));
        };
        let current = fsx::sha256_hex(t.as_bytes());
        match marker::owner(&runtime, &self.ours) {
            Owner::Other { runtime, home, live: true } if !self.force => {
                Err(Refused::Foreign { path: self.path.clone(), runtime, home, harness: self.harness.clone() }.into())
            }
            Owner::Other { runtime, .. } => {
                let detail = format!("took over from `{}`", runtime.display());
                Ok(done(Action::Updated, Some(detail), &self.content, Some(self.record(hash, true))))
            }
            Owner::Us => {
                let recorded = self.record.as_ref().and_then(|r| r.entries.first()).map(|e| e.sha256.clone());
                if still_ours(self.force, recorded.as_deref(), &current) {
                    Ok(done(Action::Updated, None, &self.content, Some(self.record(hash, true))))
                } else {
                    let detail = "ovmem's hook file was edited since install; left as it is (--force replaces it)";
                    Ok(done(
                        Action::UserEdited,
                        Some(detail.into()),
                        t,
                        Some(self.record(recorded.unwrap_or(current), false)),
                    ))
                }
            }
        }
    }
}

pub struct Uninstall {
    pub harness: String,
    pub path: PathBuf,
    pub record: Option<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
}

impl Editor for Uninstall {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let event = event_of(&self.path);
        let Some(t) = text else { return Ok(Edit::keep(None)) };
        let recorded = self.record.as_ref().and_then(|r| r.entries.first()).map(|e| e.sha256.clone());
        let current = fsx::sha256_hex(t.as_bytes());
        let left = |detail: String| Edit {
            after: Some(t.to_string()),
            notes: vec![EntryNote::with(&event, Action::UserEdited, detail)],
            ..Edit::default()
        };
        let Some(runtime) = script_runtime(t, &self.harness, &event) else {
            return Ok(left(format!(
                "`{}` changed since install; left in place (--force removes it)",
                self.path.display()
            )));
        };
        let owner = marker::owner(&runtime, &self.ours);
        let gone = || Edit { after: None, notes: vec![EntryNote::new(&event, Action::Removed)], ..Edit::default() };
        Ok(super::uninstall_owned_file(&self.path, t, owner, self.force, (recorded.as_deref(), &current), left, gone))
    }
}
