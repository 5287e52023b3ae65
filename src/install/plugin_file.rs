//! One whole file ovmem owns: a plugin module the harness loads in-process (opencode, Kilo Code, Pi,
//! Amp), which runs `ovmem hook <harness> <event>` itself. A file is ovmem's only by its exact
//! marker: the first line `// ovmem-plugin <harness>` and a line `const OVMEM_BIN = "<runtime>";`
//! whose literal is exactly the JSON string of an absolute `…/bin/ovmem`. A file of anyone else at
//! the same name is never overwritten; uninstall deletes ovmem's file (and the directories made for
//! it), so the tree is given back byte for byte.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::editor::{read_text, Edit, Editor, TargetPlan};
use super::marker::{self, Owner};
use super::{still_ours, Action, EntryNote, Options, Refused};
use crate::fsx::{self, journal::Mode};
use crate::harness::{self, HookSpec};
use crate::receipt::{Entry, FileRecord};

/// The receipt format of a plugin file.
pub const FORMAT: &str = "plugin";
/// The entry name a plugin file is recorded under (it serves every event).
pub const EVENT: &str = "plugin";
const BIN_PREFIX: &str = "const OVMEM_BIN = ";

/// The marker line a plugin file of `harness` starts with.
pub fn marker_line(harness: &str) -> String {
    format!("// ovmem-plugin {harness}")
}

/// The runtime a plugin file runs, when it is ovmem's plugin for `harness` (by exact marker).
pub fn plugin_runtime(text: &str, harness: &str) -> Option<PathBuf> {
    let mut lines = text.lines();
    if lines.next()?.trim_end_matches('\r') != marker_line(harness) {
        return None;
    }
    let literal = lines.find_map(|l| l.trim_end_matches('\r').strip_prefix(BIN_PREFIX))?.strip_suffix(';')?;
    let path: String = serde_json::from_str(literal).ok()?;
    // Only the canonical spelling of the literal: no escapes a different writer would produce.
    if serde_json::to_string(&path).ok()? != literal {
        return None;
    }
    let runtime = PathBuf::from(path);
    marker::is_runtime_path(&runtime).then_some(runtime)
}

/// The plugin file as ovmem would write it for `t`.
pub fn desired(t: &super::Target) -> Result<String> {
    let bin = t.env.runtime_bin();
    let home = t.env.ovmem_home();
    let hook = HookSpec { event: String::new(), matcher: None, timeout: None };
    harness::render(&t.harness.manifest.template, &t.placeholders(&bin, &home, &hook))
}

pub fn plan(p: &mut TargetPlan, install: bool, opts: Options) -> Result<()> {
    let t = p.target;
    let path = t.location()?;
    let id = t.harness.id().to_string();
    let ours = t.env.runtime_bin();
    let record = p.record(&path);
    if install {
        let editor = Install { harness: id, path: path.clone(), content: desired(t)?, record, force: opts.force, ours };
        return p.file(path, Mode::Keep { new: 0o644 }, Box::new(editor));
    }
    // Uninstall: the recorded file, or one found by its marker (an install whose receipt is lost);
    // and the file the receipt names, when the environment places it elsewhere now (an install
    // made under another `XDG_CONFIG_HOME` or `PI_CODING_AGENT_DIR`).
    let recorded = p.recorded(|f| f.format == FORMAT, std::slice::from_ref(&path));
    for path in std::iter::once(path).chain(recorded) {
        uninstall_file(p, path, opts)?;
    }
    Ok(())
}

fn uninstall_file(p: &mut TargetPlan, path: PathBuf, opts: Options) -> Result<()> {
    let t = p.target;
    let id = t.harness.id().to_string();
    let ours = t.env.runtime_bin();
    let record = p.record(&path);
    let (_, text) = read_text(t, &path)?;
    let marked = text.as_deref().and_then(|x| plugin_runtime(x, &id));
    if record.is_none() && marked.is_none() {
        return Ok(());
    }
    if let Some(Owner::Other { home, .. }) = marked.as_ref().map(|r| marker::owner(r, &ours)) {
        if !opts.force && record.is_none() {
            p.warnings.push(format!(
                "`{}` is the {} plugin of another ovmem home (`{}`) and was left in place; remove it with \
                 `OVMEM_HOME={} ovmem uninstall --harness {id} --yes` (or --force here)",
                path.display(),
                t.harness.manifest.name,
                home.display(),
                home.display()
            ));
            return Ok(());
        }
    }
    let editor = Uninstall { harness: id, path: path.clone(), record, force: opts.force, ours };
    p.file(path, Mode::Keep { new: 0o644 }, Box::new(editor))
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

pub struct Install {
    pub harness: String,
    pub path: PathBuf,
    pub content: String,
    pub record: Option<FileRecord>,
    pub force: bool,
    pub ours: PathBuf,
}

/// The receipt record of a plugin file whose bytes hash to `sha`.
pub fn record(path: &Path, sha: String, prev: Option<&FileRecord>) -> FileRecord {
    FileRecord {
        path: path.to_path_buf(),
        format: FORMAT.into(),
        created: true,
        created_dirs: prev.map(|r| r.created_dirs.clone()).unwrap_or_default(),
        created_keys: Vec::new(),
        entries: vec![Entry {
            event: EVENT.into(),
            key_path: file_name(path),
            sha256: sha,
            handler: None,
            commands: Vec::new(),
            text: None,
        }],
        backup_hash: prev.and_then(|r| r.backup_hash.clone()),
        empty: Vec::new(),
        replaced: Vec::new(),
    }
}

impl Editor for Install {
    fn edit(&self, text: Option<&str>) -> Result<Edit> {
        let hash = fsx::sha256_hex(self.content.as_bytes());
        let prev = self.record.as_ref();
        let done = |action, detail: Option<String>, after: &str, record| Edit {
            after: Some(after.to_string()),
            record,
            notes: vec![EntryNote { event: EVENT.into(), action, detail }],
            warnings: Vec::new(),
        };
        let Some(t) = text else {
            return Ok(done(Action::Added, None, &self.content, Some(record(&self.path, hash, prev))));
        };
        if t == self.content {
            return Ok(done(Action::Unchanged, None, t, Some(record(&self.path, hash, prev))));
        }
        let Some(runtime) = plugin_runtime(t, &self.harness) else {
            let detail = format!(
                "`{}` is not ovmem's (a file of the same name that ovmem did not write); left alone, so the plugin \
                 is not installed. Move it aside and run ovmem again",
                self.path.display()
            );
            return Ok(done(Action::Conflict, Some(detail), t, None));
        };
        let current = fsx::sha256_hex(t.as_bytes());
        match marker::owner(&runtime, &self.ours) {
            Owner::Other { runtime, home, live: true } if !self.force => {
                Err(Refused::Foreign { path: self.path.clone(), runtime, home, harness: self.harness.clone() }.into())
            }
            Owner::Other { runtime, .. } => {
                let detail = format!("took over from `{}`", runtime.display());
                Ok(done(Action::Updated, Some(detail), &self.content, Some(record(&self.path, hash, prev))))
            }
            Owner::Us => {
                let recorded = prev.and_then(|r| r.entries.first()).map(|e| e.sha256.clone());
                if still_ours(self.force, recorded.as_deref(), &current) {
                    Ok(done(Action::Updated, None, &self.content, Some(record(&self.path, hash, prev))))
                } else {
                    let detail = "ovmem's plugin file was edited since install; left as it is (--force replaces it)";
                    let rec = record(&self.path, recorded.unwrap_or(current), prev);
                    Ok(done(Action::UserEdited, Some(detail.into()), t, Some(rec)))
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
        let Some(t) = text else { return Ok(Edit::keep(None)) };
        let recorded = self.record.as_ref().and_then(|r| r.entries.first()).map(|e| e.sha256.clone());
        let current = fsx::sha256_hex(t.as_bytes());
        let left = |detail: String| Edit {
            after: Some(t.to_string()),
            notes: vec![EntryNote::with(EVENT, Action::UserEdited, detail)],
            ..Edit::default()
        };
        let gone = || Edit { after: None, notes: vec![EntryNote::new(EVENT, Action::Removed)], ..Edit::default() };
        // Exactly what ovmem wrote: it goes, whatever the marker says.
        if recorded.as_deref() == Some(current.as_str()) {
            return Ok(gone());
        }
        let Some(runtime) = plugin_runtime(t, &self.harness) else {
            if self.force && self.record.is_some() {
                return Ok(gone());
            }
            return Ok(left(format!(
                "`{}` is no longer ovmem's plugin as installed; left in place (--force removes it)",
                self.path.display()
            )));
        };
        let owner = marker::owner(&runtime, &self.ours);
        Ok(super::uninstall_owned_file(&self.path, t, owner, self.force, (recorded.as_deref(), &current), left, gone))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_marker_is_ovmem_s() {
        let ok = "// ovmem-plugin opencode\nconst x = 1;\nconst OVMEM_BIN = \"/h/.ovmem/bin/ovmem\";\n";
        assert_eq!(plugin_runtime(ok, "opencode"), Some(PathBuf::from("/h/.ovmem/bin/ovmem")));
        assert_eq!(plugin_runtime(&ok.replace('\n', "\r\n"), "opencode"), Some(PathBuf::from("/h/.ovmem/bin/ovmem")));
        for not in [
            ok.replace("opencode\n", "kilo-code\n"),
            format!("\n{ok}"),
            ok.replace("\"/h/.ovmem/bin/ovmem\"", "\"/h/.ovmem/bin/ovmem2\""),
            ok.replace("\"/h/.ovmem/bin/ovmem\"", "\"relative/bin/ovmem\""),
            ok.replace("\"/h/.ovmem/bin/ovmem\";", "\"/h/.ovmem/bin/ovmem\""),
            ok.replace("\"/h/.ovmem/bin/ovmem\"", "\"/h/.ovmem/bin\\/ovmem\""),
            ok.replace("\"/h/.ovmem/bin/ovmem\"", "'/h/.ovmem/bin/ovmem'"),
            ok.replace("const OVMEM_BIN", "let OVMEM_BIN"),
            "// my own opencode plugin\nconst OVMEM_BIN = \"/h/.ovmem/bin/ovmem\";\n".into(),
        ] {
            assert_eq!(plugin_runtime(&not, "opencode"), None, "{not}");
        }
    }
}
