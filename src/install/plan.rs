//! Step 2 of the pipeline: a pure plan. For each file of a target, an [`Editor`] turns the
//! file's current text into the text it should hold (and the receipt record that says what ovmem
//! put there); backups and directories follow from that. Nothing is written here: `--dry-run`
//! prints this plan, and the apply step writes exactly it (re-running an editor only when another
//! program rewrote its file meanwhile). The types the editors share live in `editor.rs`.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::editor::{file_plan, settle_budget, Backup, Editor, FilePlan, TargetPlan, SETTLE_POLL};
use super::{
    extra, json_hooks, mcp, plugin_file, repair, script_dir, toml_hooks, trust, Options, Refused, Target, Verb,
};
use crate::fsx::{self, journal};
use crate::harness::InstallKind;
use crate::receipt::{self, FileRecord, Receipt};

impl<'t> TargetPlan<'t> {
    /// Plans one more file of this target.
    pub fn file(&mut self, path: PathBuf, mode: journal::Mode, editor: Box<dyn Editor>) -> Result<()> {
        self.files.push(file_plan(path, self.target.root(), mode, editor)?);
        Ok(())
    }

    /// The base receipt's record of `path`.
    pub fn record(&self, path: &Path) -> Option<FileRecord> {
        self.base.as_ref().and_then(|r| r.file(path)).cloned()
    }

    /// The paths the base receipt records that `filter` owns and `known` (where today's
    /// environment places the files) lacks: an uninstall visits them too, so an install made
    /// under another `CODEX_HOME`, `XDG_CONFIG_HOME`, … or into a file since renamed is taken
    /// out where it was made.
    pub fn recorded(&self, filter: impl Fn(&FileRecord) -> bool, known: &[PathBuf]) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for f in self.base.iter().flat_map(|r| r.files.iter()).filter(|f| filter(f)) {
            if !known.contains(&f.path) && !out.contains(&f.path) {
                out.push(f.path.clone());
            }
        }
        out
    }
}

/// [`repair::rebuild`], run again while a file it reads does not parse, as
/// `editor::edit_settled` reads one again.
fn rebuild_settled(t: &Target) -> Result<Option<Receipt>> {
    let started = std::time::Instant::now();
    loop {
        let e = match repair::rebuild(t) {
            Err(e) => e,
            ok => return ok,
        };
        let Some(Refused::Unparseable { path, .. }) = e.downcast_ref::<Refused>() else { return Err(e) };
        let empty = std::fs::metadata(path).is_ok_and(|m| m.len() == 0);
        if started.elapsed() >= settle_budget(empty) {
            return Err(e);
        }
        std::thread::sleep(SETTLE_POLL);
    }
}

/// Plans `verb` for `t`.
pub fn plan<'t>(t: &'t Target<'t>, verb: Verb, opts: Options) -> Result<TargetPlan<'t>> {
    if verb == Verb::Install {
        if let Err(e) = t.harness.scope(t.scope) {
            return Err(Refused::NoScope(format!("{e:#}")).into());
        }
    }
    let old = match receipt::load(&t.receipt_path()) {
        Ok(r) => r,
        Err(e) if verb == Verb::Repair && e.downcast_ref::<receipt::Damaged>().is_some() => None,
        Err(e) => match e.downcast::<receipt::Damaged>() {
            Ok(mut d) => {
                d.project = t.project.as_ref().map(|p| format!(" --project {}", p.display())).unwrap_or_default();
                return Err(d.into());
            }
            Err(e) => return Err(e),
        },
    };
    let base = match (&old, verb) {
        (Some(r), Verb::Install | Verb::Uninstall) => Some(r.clone()),
        _ => rebuild_settled(t)?,
    };
    let mut p = TargetPlan { target: t, verb, old, base, files: Vec::new(), warnings: Vec::new() };
    if verb == Verb::Repair {
        return Ok(p);
    }
    let install = verb == Verb::Install;
    if install {
        super::check_unquoted(t)?;
    }
    match t.harness.manifest.kind {
        InstallKind::JsonHooks => json_hooks::plan(&mut p, install, opts)?,
        InstallKind::ScriptDir => script_dir::plan(&mut p, install, opts)?,
        InstallKind::PluginFile => plugin_file::plan(&mut p, install, opts)?,
        InstallKind::TomlHooks => toml_hooks::plan(&mut p, install, opts)?,
    }
    extra::plan(&mut p, install, opts)?;
    mcp::plan(&mut p, install, opts)?;
    if install {
        if let Some(note) = &t.harness.manifest.install_note {
            let (bin, home) = (t.env.runtime_bin(), t.env.ovmem_home());
            let none = crate::harness::HookSpec { event: String::new(), matcher: None, timeout: None };
            p.warnings.push(crate::harness::render_str(note, &t.placeholders(&bin, &home, &none))?);
        }
    }
    if !install {
        trust::plan_untrust(&mut p)?;
    }
    same_as_user(&mut p, install)?;
    for f in &p.files {
        if f.changed() && f.before.is_some() {
            if let Some(m) = fsx::meta(&f.real).filter(|m| m.mode & 0o222 == 0) {
                if !opts.force {
                    return Err(Refused::ReadOnly { path: f.path.clone(), mode: m.mode }.into());
                }
                p.warnings.push(format!(
                    "`{}` is read-only (mode {:03o}); edited anyway because of --force, and its mode kept",
                    f.path.display(),
                    m.mode
                ));
            }
        }
    }
    let records: Vec<Option<FileRecord>> = p.files.iter().map(|f| p.record(&f.path)).collect();
    for (f, rec) in p.files.iter_mut().zip(records) {
        let w = plan_backups(f, rec.as_ref(), verb);
        p.warnings.extend(w);
    }
    Ok(p)
}

/// At project scope, a file that is also the harness's user-scope file (the project is the home
/// directory: `~/.claude/settings.json` is both). Install refuses it, since two receipts would own
/// the same entries and uninstalling either scope would take out the other's; uninstall of the
/// project scope leaves it to the user scope's, with a warning.
fn same_as_user(p: &mut TargetPlan, install: bool) -> Result<()> {
    let t = p.target;
    if t.scope != crate::harness::Scope::Project || t.harness.scope(crate::harness::Scope::User).is_err() {
        return Ok(());
    }
    let user = Target { env: t.env, harness: t.harness, scope: crate::harness::Scope::User, project: None };
    let mut theirs: Vec<PathBuf> = user.hook_files().unwrap_or_default();
    theirs.extend(user.mcp_file().ok().flatten());
    theirs.extend(user.location().ok());
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    let theirs: Vec<PathBuf> = theirs.iter().filter_map(|p| real(p)).collect();
    let shared: Vec<usize> =
        (0..p.files.len()).filter(|&i| real(&p.files[i].real).is_some_and(|r| theirs.contains(&r))).collect();
    if let Some(&i) = shared.first() {
        if install {
            return Err(Refused::ProjectIsUser { path: p.files[i].path.clone() }.into());
        }
    }
    for i in shared.into_iter().rev() {
        let f = p.files.remove(i);
        p.warnings.push(format!(
            "`{}` is your user-scope file too (the project is your home directory); left as it is: `ovmem uninstall` \
             at user scope removes ovmem's entries from it",
            f.path.display()
        ));
    }
    Ok(())
}

/// A backup path ovmem may use: absent, or a regular file (never a link or anything else a
/// project could plant there).
fn backup_slot(path: &Path) -> Option<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Err(_) => Some(None),
        Ok(m) if m.is_file() => fsx::read_opt(path).ok(),
        Ok(_) => None,
    }
}

/// `<file>.ovmem.bak` is the file as it was before ovmem first changed it (only for files ovmem
/// did not create); `<file>.bak` the file before the latest change, unless that name holds a file
/// ovmem did not write. Once uninstall gives a file back exactly, both go.
pub fn plan_backups(f: &mut FilePlan, rec: Option<&FileRecord>, verb: Verb) -> Vec<String> {
    let mut warnings = Vec::new();
    let Some(before) = f.before.clone() else { return warnings };
    if f.edit.after.as_deref() == Some(before.as_str()) {
        return warnings;
    }
    let pristine_path = fsx::sibling(&f.real, ".ovmem.bak");
    let bak_path = fsx::sibling(&f.real, ".bak");
    let (Some(pristine), Some(bak)) = (backup_slot(&pristine_path), backup_slot(&bak_path)) else {
        warnings.push(format!(
            "`{}` or its `.bak` is not a regular file, so no backup of `{}` was made",
            pristine_path.display(),
            f.path.display()
        ));
        return warnings;
    };
    let bak_ours = match &bak {
        None => true,
        Some(b) => {
            rec.and_then(|r| r.backup_hash.as_deref()).is_some_and(|h| h == fsx::sha256_hex(b))
                || pristine.as_deref() == Some(&b[..])
        }
    };
    // A file ovmem only keeps trust records in has no file record and got no backups at install
    // (the receipt holds its snapshot): uninstall makes none either.
    if verb == Verb::Uninstall && rec.is_none() && pristine.is_none() {
        return warnings;
    }
    let restored = verb == Verb::Uninstall
        && (f.edit.after.is_none()
            || pristine.as_deref().is_some_and(|p| Some(p) == f.edit.after.as_deref().map(str::as_bytes)));
    if restored {
        if pristine.is_some() {
            f.backups.push(Backup { path: pristine_path, before: pristine, after: None });
        }
        if bak_ours && bak.is_some() {
            f.backups.push(Backup { path: bak_path, before: bak, after: None });
        }
        return warnings;
    }
    let created = rec.is_some_and(|r| r.created);
    if pristine.is_none() && !created {
        f.backups.push(Backup { path: pristine_path.clone(), before: None, after: Some(before.clone().into_bytes()) });
    }
    if bak_ours {
        f.backup_hash = Some(fsx::sha256_hex(before.as_bytes()));
        f.backups.push(Backup { path: bak_path, before: bak, after: Some(before.into_bytes()) });
    } else {
        warnings.push(format!(
            "`{}` exists and was not written by ovmem, so it was left alone (the pristine copy is `{}`)",
            bak_path.display(),
            pristine_path.display()
        ));
    }
    warnings
}
