//! The leaf every install editor builds on: the [`Editor`] trait (a file's current text in, the
//! text it should hold out), the [`Edit`] it returns, [`Chain`] for two editors of one file, and
//! the [`FilePlan`]/[`TargetPlan`] they are collected in. Editors import this module, never
//! `plan.rs`, which dispatches to them: so the editors and the planner do not import each other.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{EntryNote, FileReport, Refused, Target, Verb};
use crate::fsx::{self, journal, reads, Blob, Text};
use crate::receipt::{FileRecord, Receipt};

/// Computes a file's new text from its current text (`None`: the file does not exist).
pub trait Editor {
    fn edit(&self, current: Option<&str>) -> Result<Edit>;
}

/// Several editors of one file, run in order, each on what the one before left: how two
/// concerns sharing a file make one change of it (Codex's `config.toml`: the MCP entry and the hook
/// trust records; Qwen Code's `settings.json`: hooks and MCP servers). Notes and warnings add up;
/// the receipt record holds what all of them own, and the file counts as ovmem's creation when it
/// did not exist before the chain.
pub struct Chain(pub Vec<Box<dyn Editor>>);

impl Editor for Chain {
    fn edit(&self, current: Option<&str>) -> Result<Edit> {
        let mut out = Edit::keep(current);
        for e in &self.0 {
            let next = e.edit(out.after.as_deref())?;
            out.after = next.after;
            out.record = merge_records(out.record.take(), next.record);
            out.notes.extend(next.notes);
            out.warnings.extend(next.warnings);
        }
        if let Some(r) = out.record.as_mut() {
            r.created |= current.is_none() && out.after.is_some();
        }
        Ok(out)
    }
}

/// Two receipt records of one file as one: what both own.
pub(crate) fn merge_records(a: Option<FileRecord>, b: Option<FileRecord>) -> Option<FileRecord> {
    match (a, b) {
        (Some(mut x), Some(y)) => {
            for k in y.created_keys {
                if !x.created_keys.contains(&k) {
                    x.created_keys.push(k);
                }
            }
            for e in y.empty {
                if !x.empty.iter().any(|z| z.key_path == e.key_path) {
                    x.empty.push(e);
                }
            }
            x.entries.extend(y.entries);
            x.replaced.extend(y.replaced);
            Some(x)
        }
        (x, y) => x.or(y),
    }
}

/// What an editor made of a file.
#[derive(Debug, Default, Clone)]
pub struct Edit {
    /// The new text; `None` deletes the file (or keeps it absent).
    pub after: Option<String>,
    /// What ovmem owns in the file afterwards (for the receipt).
    pub record: Option<FileRecord>,
    pub notes: Vec<EntryNote>,
    pub warnings: Vec<String>,
}

impl Edit {
    /// The file is left exactly as it is.
    pub fn keep(current: Option<&str>) -> Self {
        Self { after: current.map(String::from), ..Self::default() }
    }
}

/// A backup beside a shared file: its bytes now and after (the file's own bytes, shared).
#[derive(Debug, Clone)]
pub struct Backup {
    pub path: PathBuf,
    pub before: Option<Blob>,
    pub after: Option<Blob>,
}

/// How a backup of `real` is written: with that file's mode and owner (root's install into another
/// user's file leaves a `.bak` that user can read and remove), or private when it is gone.
pub fn backup_mode(real: &Path) -> journal::Mode {
    fsx::meta(real).map(journal::Mode::Like).unwrap_or(journal::Mode::Keep { new: 0o600 })
}

/// One shared file of a target, planned.
pub struct FilePlan {
    /// As the manifest names it (reports, receipts).
    pub path: PathBuf,
    /// Where writes go: `path` with every symlink followed.
    pub real: PathBuf,
    /// The text the plan was made from, shared with the backups and the transaction.
    pub before: Option<Text>,
    /// The text the file should hold (the editor's [`Edit::after`]).
    pub after: Option<Text>,
    /// The rest of what the editor made of it; its `after` is moved into [`FilePlan::after`]
    /// (see [`FilePlan::set_edit`]), so that the text is held once.
    pub edit: Edit,
    pub mode: journal::Mode,
    pub editor: Box<dyn Editor>,
    pub backups: Vec<Backup>,
    /// Hash of the `.bak` this plan writes.
    pub backup_hash: Option<String>,
    /// Directories writing the file creates, outermost first.
    pub new_dirs: Vec<PathBuf>,
}

impl FilePlan {
    /// Takes an editor's result: its text into [`FilePlan::after`], the rest into `edit`.
    pub fn set_edit(&mut self, mut edit: Edit) {
        self.after = edit.after.take().map(Text::from);
        self.edit = edit;
    }

    pub fn changed(&self) -> bool {
        self.before != self.after
            || matches!(self.mode, journal::Mode::Set(m) if fsx::meta(&self.real).is_some_and(|x| x.mode != m))
    }

    pub fn report(&self, with_diff: bool) -> FileReport {
        FileReport {
            path: self.path.clone(),
            change: change_kind(self.before.as_deref(), self.after.as_deref()),
            entries: self.edit.notes.clone(),
            diff: if with_diff { diff(&self.path, self.before.as_deref(), self.after.as_deref()) } else { None },
            backups: self
                .backups
                .iter()
                .filter(|b| b.after.is_some() && b.before != b.after)
                .map(|b| b.path.clone())
                .collect(),
        }
    }
}

/// How often a file that does not parse is read again.
pub(super) const SETTLE_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// How long a file that does not parse may stay so before it is refused: it may be caught in the
/// middle of another program's in-place write, and an empty one most likely is (truncated by a
/// writer that was descheduled).
pub(super) fn settle_budget(empty: bool) -> std::time::Duration {
    std::time::Duration::from_millis(if empty { 3000 } else { 300 })
}

fn is_unparseable(e: &anyhow::Error) -> bool {
    e.downcast_ref::<Refused>().is_some_and(|r| matches!(r, Refused::Unparseable { .. }))
}

/// Runs `editor` on `bytes` (what `real` held). A file that does not parse may be caught in the
/// middle of another program's in-place write: it is read again (from disk) until it parses or
/// stays the same for a while (then it really is broken, and refused).
fn edit_settled(path: &Path, real: &Path, editor: &dyn Editor, bytes: Option<Blob>) -> Result<(Option<Text>, Edit)> {
    let mut bytes = bytes;
    let mut since = std::time::Instant::now();
    for _ in 0..1000 {
        let attempt = bytes.as_ref().map(|b| utf8(path, b)).transpose().and_then(|t| {
            let e = editor.edit(t.as_deref())?;
            Ok((t, e))
        });
        let empty = bytes.as_deref().is_some_and(<[u8]>::is_empty);
        match attempt {
            Err(e) if is_unparseable(&e) => {
                if since.elapsed() >= settle_budget(empty) {
                    return Err(e);
                }
                std::thread::sleep(SETTLE_POLL);
                reads::forget(real);
                let again = fsx::read_opt(real)?.map(Blob::from);
                if again != bytes {
                    since = std::time::Instant::now();
                }
                bytes = again;
            }
            other => return other,
        }
    }
    anyhow::bail!("`{}` kept changing while ovmem read it; nothing was changed, try again", path.display())
}

impl journal::Redo for FilePlan {
    fn redo(&mut self, current: Option<&Blob>, over_ours: bool) -> Result<Option<Blob>> {
        let (text, mut edit) = edit_settled(&self.path, &self.real, self.editor.as_ref(), current.cloned())?;
        if over_ours {
            // `current` may hold ovmem's own earlier edit (or another program's copy of it): what
            // that edit created is still ovmem's, and what it did is what this run did.
            if let (Some(new), Some(old)) = (edit.record.as_mut(), self.edit.record.as_ref()) {
                inherit(new, old, text.as_deref().unwrap_or_default());
            }
            edit.notes = std::mem::take(&mut self.edit.notes);
        } else {
            self.before = text;
        }
        self.set_edit(edit);
        Ok(self.after.clone().map(Blob::from))
    }
}

/// What an earlier edit of this run (`old`) made ovmem's, carried into a redo of it on `text`
/// (another program's bytes that may hold a copy of that edit): the redo finds ovmem's keys
/// already there and would otherwise record them as the user's, so uninstall would leave them.
/// The file, keys and containers ovmem created, values it replaced, and the exact text it spliced
/// in (while `text` still holds it) stay recorded as ovmem's.
fn inherit(new: &mut FileRecord, old: &FileRecord, text: &str) {
    new.created |= old.created;
    for k in &old.created_keys {
        if !new.created_keys.contains(k) {
            new.created_keys.push(k.clone());
        }
    }
    for e in &old.empty {
        if !new.empty.iter().any(|x| x.key_path == e.key_path) {
            new.empty.push(e.clone());
        }
    }
    for r in &old.replaced {
        if !new.replaced.iter().any(|x| x.key_path == r.key_path) {
            new.replaced.push(r.clone());
        }
    }
    for e in new.entries.iter_mut().filter(|e| e.text.is_none()) {
        let spliced = old.entries.iter().find(|o| o.event == e.event && o.key_path == e.key_path);
        if let Some(t) = spliced.and_then(|o| o.text.as_ref()).filter(|t| text.contains(t.as_str())) {
            e.text = Some(t.clone());
        }
    }
}

/// Everything one target's install, uninstall or repair would do.
pub struct TargetPlan<'t> {
    pub target: &'t Target<'t>,
    pub verb: Verb,
    /// The receipt on disk.
    pub old: Option<Receipt>,
    /// What the editors worked from: the receipt, or one rebuilt from markers and backups.
    pub base: Option<Receipt>,
    pub files: Vec<FilePlan>,
    pub warnings: Vec<String>,
}

/// The bytes as text, without a copy.
fn utf8(path: &Path, b: &Blob) -> Result<Text> {
    b.text()
        .ok_or_else(|| Refused::Unparseable { path: path.to_path_buf(), detail: "it is not UTF-8 text".into() }.into())
}

/// The `.ovmem.bak` copy beside `real` (a regular file, UTF-8): the file before ovmem first
/// changed it.
pub fn pristine_text(real: &Path) -> Option<Text> {
    let p = fsx::sibling(real, ".ovmem.bak");
    if !std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
        return None;
    }
    reads::read(&p).ok()??.text()
}

/// Reads a file of `t` as text (confined to the project at project scope), once per run.
pub fn read_text(t: &Target, path: &Path) -> Result<(PathBuf, Option<Text>)> {
    let real = fsx::resolve_in(path, t.root())?;
    let text = reads::read(&real)?.map(|b| utf8(path, &b)).transpose()?;
    Ok((real, text))
}

/// Plans one file: reads it (confined to `root`, once per run), runs the editor.
pub fn file_plan(path: PathBuf, root: Option<&Path>, mode: journal::Mode, editor: Box<dyn Editor>) -> Result<FilePlan> {
    let real = fsx::resolve_in(&path, root)?;
    let (before, edit) = edit_settled(&path, &real, editor.as_ref(), reads::read(&real)?)?;
    let new_dirs = match (&before, &edit.after) {
        (None, Some(_)) => fsx::missing_dirs(real.parent().unwrap_or(Path::new("/"))),
        _ => Vec::new(),
    };
    let mut f = FilePlan {
        path,
        real,
        before,
        after: None,
        edit: Edit::default(),
        mode,
        editor,
        backups: Vec::new(),
        backup_hash: None,
        new_dirs,
    };
    f.set_edit(edit);
    Ok(f)
}

pub fn change_kind(before: Option<&str>, after: Option<&str>) -> &'static str {
    match (before, after) {
        (None, Some(_)) => "created",
        (Some(_), None) => "deleted",
        (Some(a), Some(b)) if a != b => "modified",
        _ => "unchanged",
    }
}

/// A unified diff of one file, as `--dry-run` prints it.
pub fn diff(path: &Path, before: Option<&str>, after: Option<&str>) -> Option<String> {
    if before == after {
        return None;
    }
    let name = path.display().to_string();
    let d = similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""));
    let old_name = if before.is_some() { format!("a{name}") } else { "/dev/null".into() };
    let new_name = if after.is_some() { format!("b{name}") } else { "/dev/null".into() };
    // Shown on a terminal: a file's bytes (a comment holding an escape sequence) are not let
    // clear the screen or set the window title.
    Some(
        crate::termsafe::clean(&d.unified_diff().context_radius(3).header(&old_name, &new_name).to_string())
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::{EmptyContainer, Entry, Replaced};

    /// A redo on a copy of ovmem's own edit finds ovmem's keys already there; what the earlier
    /// edit made ovmem's stays ovmem's, beside what the redo itself recorded.
    #[test]
    fn a_redo_on_a_copy_of_ovmems_edit_inherits_what_that_edit_made_ovmems() {
        let entry = |text: Option<&str>| Entry {
            event: "Stop".into(),
            key_path: "hooks[event=Stop]".into(),
            text: text.map(String::from),
            ..Entry::default()
        };
        let old = FileRecord {
            created: false,
            created_keys: vec!["hooks".into(), "hooks.Stop".into()],
            empty: vec![EmptyContainer { key_path: "".into(), inner: "\n  // settings\n".into() }],
            replaced: vec![Replaced { key_path: "hooks.enabled".into(), before: "false".into() }],
            entries: vec![entry(Some("\n[[hooks]]\nevent = \"Stop\"\n"))],
            ..FileRecord::default()
        };
        let mut new =
            FileRecord { created_keys: vec!["theirs".into()], entries: vec![entry(None)], ..Default::default() };
        inherit(&mut new, &old, "a = 1\n\n[[hooks]]\nevent = \"Stop\"\n");
        assert_eq!(new.created_keys, ["theirs", "hooks", "hooks.Stop"]);
        assert_eq!(new.empty, old.empty);
        assert_eq!(new.replaced, old.replaced);
        assert_eq!(new.entries[0].text, old.entries[0].text);
        assert!(!new.created);
        // The spliced text is ovmem's only while the file still holds it exactly.
        let mut new = FileRecord { entries: vec![entry(None)], ..Default::default() };
        inherit(&mut new, &old, "[[hooks]]\nevent = 'Stop'\n");
        assert_eq!(new.entries[0].text, None);
    }
}
